"""Geometric v2 transforms: images, videos, masks and bounding boxes move together.

Random parameters are drawn from ember's generator in the same order as the v1 transforms, so a
seed gives a v2 transform the same crop, angle or flip as its v1 counterpart.
"""
import math
import numbers
import warnings
from collections.abc import Sequence

import ember

from ... import tv_tensors
from ...tv_tensors import _pure
from ..functional import InterpolationMode, _interpolation_modes_from_int
from ..transforms import _check_sequence_input, _randint, _setup_angle, _uniform
from . import functional as F
from ._transform import (
    Transform, _get_fill, _RandomApplyTransform, _setup_fill_arg, _setup_size, get_bounding_boxes, has_any,
    query_size,
)
from .functional._geometry import _parse_padding
from .functional._meta import _to_xyxy
from .functional._utils import PILImage, is_pure_tensor

_SIZE_ERROR = "Please provide only two dimensions (h, w) for size."


def _check_interpolation(interpolation):
    if isinstance(interpolation, int):
        return _interpolation_modes_from_int(interpolation)
    if not isinstance(interpolation, InterpolationMode):
        raise ValueError(f"Argument interpolation should be an `InterpolationMode` or a corresponding Pillow "
                         f"integer constant, but got {interpolation}.")
    return interpolation


def _check_padding_mode(padding_mode):
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")


class RandomHorizontalFlip(_RandomApplyTransform):
    """Mirrors the sample left to right with probability `p`."""

    def transform(self, inpt, params):
        return self._call_kernel(F.horizontal_flip, inpt)


class RandomVerticalFlip(_RandomApplyTransform):
    """Mirrors the sample top to bottom with probability `p`."""

    def transform(self, inpt, params):
        return self._call_kernel(F.vertical_flip, inpt)


class Resize(Transform):
    """Resizes to `size` (h, w), or the shorter edge to `size` when it is an int / 1-sequence; the longer
    edge is capped at `max_size` (with `size=None`, set to it)."""

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
        super().__init__()
        if isinstance(size, int):
            size = [size]
        elif isinstance(size, Sequence) and len(size) in (1, 2):
            size = list(size)
        elif size is None:
            if not isinstance(max_size, int):
                raise ValueError(f"max_size must be an integer when size is None, but got {max_size} instead.")
        else:
            raise ValueError(f"size can be None, an integer or a sequence of one or two integers, but got {size} "
                             "instead.")
        self.size = size
        self.interpolation = _check_interpolation(interpolation)
        self.max_size = max_size
        self.antialias = antialias

    def transform(self, inpt, params):
        return self._call_kernel(F.resize, inpt, self.size, interpolation=self.interpolation,
                                 max_size=self.max_size, antialias=self.antialias)


class CenterCrop(Transform):
    """Crops the centre `size` (h, w), padding with zeros where the input is smaller."""

    def __init__(self, size):
        super().__init__()
        self.size = _setup_size(size, error_msg=_SIZE_ERROR)

    def transform(self, inpt, params):
        return self._call_kernel(F.center_crop, inpt, output_size=self.size)


class RandomResizedCrop(Transform):
    """Crops a random area (fraction `scale` of the input, aspect `ratio`) and resizes it to `size`."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=True):
        super().__init__()
        self.size = _setup_size(size, error_msg=_SIZE_ERROR)
        if not isinstance(scale, Sequence):
            raise TypeError("Scale should be a sequence")
        if not isinstance(ratio, Sequence):
            raise TypeError("Ratio should be a sequence")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            warnings.warn("Scale and ratio should be of kind (min, max)")
        self.scale = scale
        self.ratio = ratio
        self.interpolation = _check_interpolation(interpolation)
        self.antialias = antialias

    def make_params(self, flat_inputs):
        height, width = query_size(flat_inputs)
        area = height * width
        log_ratio = (math.log(self.ratio[0]), math.log(self.ratio[1]))
        for _ in range(10):
            target_area = area * _uniform(self.scale[0], self.scale[1])
            aspect_ratio = math.exp(_uniform(log_ratio[0], log_ratio[1]))
            w = int(round(math.sqrt(target_area * aspect_ratio)))
            h = int(round(math.sqrt(target_area / aspect_ratio)))
            if 0 < w <= width and 0 < h <= height:
                return dict(top=_randint(0, height - h + 1), left=_randint(0, width - w + 1), height=h, width=w)
        # Fallback: the largest centred crop whose aspect lies within `ratio`.
        in_ratio = width / height
        if in_ratio < min(self.ratio):
            w, h = width, int(round(width / min(self.ratio)))
        elif in_ratio > max(self.ratio):
            w, h = int(round(height * max(self.ratio))), height
        else:
            w, h = width, height
        return dict(top=(height - h) // 2, left=(width - w) // 2, height=h, width=w)

    def transform(self, inpt, params):
        return self._call_kernel(F.resized_crop, inpt, **params, size=self.size, interpolation=self.interpolation,
                                 antialias=self.antialias)


class Pad(Transform):
    """Pads each border by `padding` (int, (lr, tb) or (left, top, right, bottom)); `fill` may be a
    {type: value} dict, e.g. `{tv_tensors.Image: 127, tv_tensors.Mask: 0}`."""

    def __init__(self, padding, fill=0, padding_mode="constant"):
        super().__init__()
        if not isinstance(padding, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate padding arg")
        if isinstance(padding, Sequence) and len(padding) not in (1, 2, 4):
            raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element "
                             "tuple")
        _check_padding_mode(padding_mode)
        self.padding = padding
        self.fill = fill
        self._fill = _setup_fill_arg(fill)
        self.padding_mode = padding_mode

    def transform(self, inpt, params):
        fill = _get_fill(self._fill, type(inpt))
        return self._call_kernel(F.pad, inpt, padding=self.padding, fill=fill, padding_mode=self.padding_mode)


class RandomCrop(Transform):
    """Crops a random `size` (h, w) window, after optional `padding` and `pad_if_needed` padding."""

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        super().__init__()
        self.size = _setup_size(size, error_msg=_SIZE_ERROR)
        if padding is not None:
            _parse_padding(padding)
        _check_padding_mode(padding_mode)
        self.padding = padding
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        self._fill = _setup_fill_arg(fill)
        self.padding_mode = padding_mode

    def make_params(self, flat_inputs):
        height, width = query_size(flat_inputs)
        left, top, right, bottom = _parse_padding(self.padding) if self.padding is not None else [0, 0, 0, 0]
        height, width = height + top + bottom, width + left + right
        crop_height, crop_width = self.size
        if self.pad_if_needed and height < crop_height:
            extra = crop_height - height
            top, bottom, height = top + extra, bottom + extra, height + 2 * extra
        if self.pad_if_needed and width < crop_width:
            extra = crop_width - width
            left, right, width = left + extra, right + extra, width + 2 * extra
        if height < crop_height or width < crop_width:
            raise ValueError(
                f"Required crop size {(crop_height, crop_width)} is larger than input image size {(height, width)}")
        if (height, width) == (crop_height, crop_width):
            crop_top = crop_left = 0
        else:
            crop_top, crop_left = _randint(0, height - crop_height + 1), _randint(0, width - crop_width + 1)
        return dict(padding=[left, top, right, bottom], top=crop_top, left=crop_left, height=crop_height,
                    width=crop_width)

    def transform(self, inpt, params):
        if any(params["padding"]):
            fill = _get_fill(self._fill, type(inpt))
            inpt = self._call_kernel(F.pad, inpt, padding=params["padding"], fill=fill,
                                     padding_mode=self.padding_mode)
        return self._call_kernel(F.crop, inpt, top=params["top"], left=params["left"], height=params["height"],
                                 width=params["width"])


def _check_fill_type(fill):
    if fill is not None and not isinstance(fill, (Sequence, numbers.Number, dict)):
        raise TypeError("Fill should be either a sequence or a number.")


class RandomRotation(Transform):
    """Rotates by an angle drawn from `degrees` (counter-clockwise); boxes become the box around their
    rotated corners."""

    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=0):
        super().__init__()
        self.degrees = _setup_angle(degrees, name="degrees", req_sizes=(2,))
        self.interpolation = _check_interpolation(interpolation)
        self.expand = expand
        _check_fill_type(fill)
        self.fill = fill
        self._fill = _setup_fill_arg(fill)
        if center is not None:
            _check_sequence_input(center, "center", req_sizes=(2,))
        self.center = center

    def make_params(self, flat_inputs):
        return dict(angle=_uniform(self.degrees[0], self.degrees[1]))

    def transform(self, inpt, params):
        fill = _get_fill(self._fill, type(inpt))
        return self._call_kernel(F.rotate, inpt, **params, interpolation=self.interpolation, expand=self.expand,
                                 center=self.center, fill=fill)


class RandomAffine(Transform):
    """Random rotation (`degrees`), translation (fractions of the size), `scale` and `shear`."""

    def __init__(self, degrees, translate=None, scale=None, shear=None, interpolation=InterpolationMode.NEAREST,
                 fill=0, center=None):
        super().__init__()
        self.degrees = _setup_angle(degrees, name="degrees", req_sizes=(2,))
        if translate is not None:
            _check_sequence_input(translate, "translate", req_sizes=(2,))
            if not all(0.0 <= t <= 1.0 for t in translate):
                raise ValueError("translation values should be between 0 and 1")
        self.translate = translate
        if scale is not None:
            _check_sequence_input(scale, "scale", req_sizes=(2,))
            if not all(s > 0 for s in scale):
                raise ValueError("scale values should be positive")
        self.scale = scale
        self.shear = _setup_angle(shear, name="shear", req_sizes=(2, 4)) if shear is not None else None
        self.interpolation = _check_interpolation(interpolation)
        _check_fill_type(fill)
        self.fill = fill
        self._fill = _setup_fill_arg(fill)
        if center is not None:
            _check_sequence_input(center, "center", req_sizes=(2,))
        self.center = center

    def make_params(self, flat_inputs):
        height, width = query_size(flat_inputs)
        angle = _uniform(self.degrees[0], self.degrees[1])
        translate = (0, 0)
        if self.translate is not None:
            max_dx, max_dy = float(self.translate[0] * width), float(self.translate[1] * height)
            translate = (int(round(_uniform(-max_dx, max_dx))), int(round(_uniform(-max_dy, max_dy))))
        scale = _uniform(self.scale[0], self.scale[1]) if self.scale is not None else 1.0
        shear_x = shear_y = 0.0
        if self.shear is not None:
            shear_x = _uniform(self.shear[0], self.shear[1])
            if len(self.shear) == 4:
                shear_y = _uniform(self.shear[2], self.shear[3])
        return dict(angle=angle, translate=translate, scale=scale, shear=(shear_x, shear_y))

    def transform(self, inpt, params):
        fill = _get_fill(self._fill, type(inpt))
        return self._call_kernel(F.affine, inpt, **params, interpolation=self.interpolation, fill=fill,
                                 center=self.center)


class RandomPerspective(_RandomApplyTransform):
    """With probability `p`, moves each corner inwards by up to `distortion_scale` of half the size."""

    def __init__(self, distortion_scale=0.5, p=0.5, interpolation=InterpolationMode.BILINEAR, fill=0):
        super().__init__(p=p)
        if not (0 <= distortion_scale <= 1):
            raise ValueError("Argument distortion_scale value should be between 0 and 1")
        self.distortion_scale = distortion_scale
        self.interpolation = _check_interpolation(interpolation)
        _check_fill_type(fill)
        self.fill = fill
        self._fill = _setup_fill_arg(fill)

    def make_params(self, flat_inputs):
        height, width = query_size(flat_inputs)
        bound_h = int(self.distortion_scale * (height // 2)) + 1
        bound_w = int(self.distortion_scale * (width // 2)) + 1
        topleft = [_randint(0, bound_w), _randint(0, bound_h)]
        topright = [_randint(width - bound_w, width), _randint(0, bound_h)]
        botright = [_randint(width - bound_w, width), _randint(height - bound_h, height)]
        botleft = [_randint(0, bound_w), _randint(height - bound_h, height)]
        startpoints = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
        return dict(startpoints=startpoints, endpoints=[topleft, topright, botright, botleft])

    def transform(self, inpt, params):
        fill = _get_fill(self._fill, type(inpt))
        return self._call_kernel(F.perspective, inpt, **params, interpolation=self.interpolation, fill=fill)


class _MultiCrop(Transform):
    def _call_kernel(self, functional, inpt, *args, **kwargs):
        if isinstance(inpt, (tv_tensors.BoundingBoxes, tv_tensors.Mask)):
            warnings.warn(f"{type(self).__name__}() is currently passing through inputs of type "
                          f"tv_tensors.{type(inpt).__name__}. This will likely change in the future.")
        return super()._call_kernel(functional, inpt, *args, **kwargs)


class FiveCrop(_MultiCrop):
    """The four corner crops and the centre crop of `size`, as a tuple, for each image or video."""

    def __init__(self, size):
        super().__init__()
        self.size = _setup_size(size, error_msg=_SIZE_ERROR)

    def transform(self, inpt, params):
        return self._call_kernel(F.five_crop, inpt, self.size)


class TenCrop(_MultiCrop):
    """`FiveCrop` of the input and of its flipped copy (vertically with `vertical_flip=True`)."""

    def __init__(self, size, vertical_flip=False):
        super().__init__()
        self.size = _setup_size(size, error_msg=_SIZE_ERROR)
        self.vertical_flip = vertical_flip

    def transform(self, inpt, params):
        return self._call_kernel(F.ten_crop, inpt, self.size, vertical_flip=self.vertical_flip)


class RandomZoomOut(_RandomApplyTransform):
    """With probability `p`, places the input at a random spot of a canvas `side_range` times larger
    (filled with `fill`), as in SSD."""

    def __init__(self, fill=0, side_range=(1.0, 4.0), p=0.5):
        super().__init__(p=p)
        _check_fill_type(fill)
        self.fill = fill
        self._fill = _setup_fill_arg(fill)
        _check_sequence_input(side_range, "side_range", req_sizes=(2,))
        if side_range[0] < 1.0 or side_range[0] > side_range[1]:
            raise ValueError(f"Invalid side range provided {side_range}.")
        self.side_range = side_range

    def make_params(self, flat_inputs):
        orig_h, orig_w = query_size(flat_inputs)
        r = _uniform(self.side_range[0], self.side_range[1])
        canvas_w, canvas_h = int(orig_w * r), int(orig_h * r)
        rx, ry = ember.rand(2).tolist()
        left, top = int((canvas_w - orig_w) * rx), int((canvas_h - orig_h) * ry)
        return dict(padding=[left, top, canvas_w - (left + orig_w), canvas_h - (top + orig_h)])

    def transform(self, inpt, params):
        fill = _get_fill(self._fill, type(inpt))
        return self._call_kernel(F.pad, inpt, **params, fill=fill)


def _iou_with(boxes_xyxy, box):
    """IoU of each XYXY box with one XYXY `box`."""
    left, top, right, bottom = box
    x1, y1, x2, y2 = boxes_xyxy.unbind(-1)
    inter = (x2.clamp(max=right) - x1.clamp(min=left)).clamp(min=0) * \
        (y2.clamp(max=bottom) - y1.clamp(min=top)).clamp(min=0)
    union = (x2 - x1) * (y2 - y1) + (right - left) * (bottom - top) - inter
    return inter / union


class RandomIoUCrop(Transform):
    """SSD's random crop: a crop whose IoU with some box (centred inside it) reaches a threshold drawn
    from `sampler_options`; boxes whose centre falls outside are zeroed (follow with
    SanitizeBoundingBoxes)."""

    def __init__(self, min_scale=0.3, max_scale=1.0, min_aspect_ratio=0.5, max_aspect_ratio=2.0,
                 sampler_options=None, trials=40):
        super().__init__()
        self.min_scale = min_scale
        self.max_scale = max_scale
        self.min_aspect_ratio = min_aspect_ratio
        self.max_aspect_ratio = max_aspect_ratio
        self.options = [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0] if sampler_options is None else list(sampler_options)
        self.trials = trials

    def check_inputs(self, flat_inputs):
        if not (has_any(flat_inputs, tv_tensors.BoundingBoxes)
                and has_any(flat_inputs, PILImage, tv_tensors.Image, is_pure_tensor)):
            raise TypeError(f"{type(self).__name__}() requires input sample to contain tensor or PIL images "
                            "and bounding boxes. Sample can also contain masks.")

    def make_params(self, flat_inputs):
        orig_h, orig_w = query_size(flat_inputs)
        boxes = get_bounding_boxes(flat_inputs)
        xyxy = _to_xyxy(_pure(boxes).to(ember.float32), boxes.format)
        cx, cy = (xyxy[:, 0] + xyxy[:, 2]) * 0.5, (xyxy[:, 1] + xyxy[:, 3]) * 0.5
        while True:
            min_iou = self.options[_randint(0, len(self.options))]
            if min_iou >= 1.0:  # the "leave as is" option
                return {}
            for _ in range(self.trials):
                params = self._try_crop(orig_h, orig_w, xyxy, cx, cy, min_iou)
                if params is not None:
                    return params

    def _try_crop(self, orig_h, orig_w, xyxy, cx, cy, min_iou):
        scale_w, scale_h = (self.min_scale + (self.max_scale - self.min_scale) * ember.rand(2)).tolist()
        new_w, new_h = int(orig_w * scale_w), int(orig_h * scale_h)
        if new_h == 0 or not (self.min_aspect_ratio <= new_w / new_h <= self.max_aspect_ratio):
            return None
        rx, ry = ember.rand(2).tolist()
        left, top = int((orig_w - new_w) * rx), int((orig_h - new_h) * ry)
        right, bottom = left + new_w, top + new_h
        if left == right or top == bottom:
            return None
        inside = (left < cx) & (cx < right) & (top < cy) & (cy < bottom)
        if not bool(inside.any()):
            return None
        if float(_iou_with(xyxy[inside], (left, top, right, bottom)).max()) < min_iou:
            return None
        return dict(top=top, left=left, height=new_h, width=new_w, is_within_crop_area=inside)

    def transform(self, inpt, params):
        if not params:
            return inpt
        output = self._call_kernel(F.crop, inpt, top=params["top"], left=params["left"], height=params["height"],
                                   width=params["width"])
        if isinstance(output, tv_tensors.BoundingBoxes):
            # Marks the boxes left outside as degenerate, for SanitizeBoundingBoxes to remove.
            plain = _pure(output).clone()
            plain[~params["is_within_crop_area"]] = 0
            output = tv_tensors.wrap(plain, like=output)
        return output


class ScaleJitter(Transform):
    """Large Scale Jitter: resizes to fit `target_size` (h, w) times a factor drawn from `scale_range`."""

    def __init__(self, target_size, scale_range=(0.1, 2.0), interpolation=InterpolationMode.BILINEAR,
                 antialias=True):
        super().__init__()
        self.target_size = target_size
        self.scale_range = scale_range
        self.interpolation = _check_interpolation(interpolation)
        self.antialias = antialias

    def make_params(self, flat_inputs):
        orig_h, orig_w = query_size(flat_inputs)
        scale = _uniform(self.scale_range[0], self.scale_range[1])
        r = min(self.target_size[1] / orig_h, self.target_size[0] / orig_w) * scale
        return dict(size=(int(orig_h * r), int(orig_w * r)))

    def transform(self, inpt, params):
        return self._call_kernel(F.resize, inpt, size=params["size"], interpolation=self.interpolation,
                                 antialias=self.antialias)


class RandomShortestSize(Transform):
    """Resizes the shorter edge to one of `min_size` (picked at random), the longer at most `max_size`."""

    def __init__(self, min_size, max_size=None, interpolation=InterpolationMode.BILINEAR, antialias=True):
        super().__init__()
        self.min_size = [min_size] if isinstance(min_size, int) else list(min_size)
        self.max_size = max_size
        self.interpolation = _check_interpolation(interpolation)
        self.antialias = antialias

    def make_params(self, flat_inputs):
        orig_h, orig_w = query_size(flat_inputs)
        min_size = self.min_size[_randint(0, len(self.min_size))]
        r = min_size / min(orig_h, orig_w)
        if self.max_size is not None:
            r = min(r, self.max_size / max(orig_h, orig_w))
        return dict(size=(int(orig_h * r), int(orig_w * r)))

    def transform(self, inpt, params):
        return self._call_kernel(F.resize, inpt, size=params["size"], interpolation=self.interpolation,
                                 antialias=self.antialias)


class RandomResize(Transform):
    """Resizes the shorter edge to a size drawn from [min_size, max_size)."""

    def __init__(self, min_size, max_size, interpolation=InterpolationMode.BILINEAR, antialias=True):
        super().__init__()
        self.min_size = min_size
        self.max_size = max_size
        self.interpolation = _check_interpolation(interpolation)
        self.antialias = antialias

    def make_params(self, flat_inputs):
        return dict(size=[_randint(self.min_size, self.max_size)])

    def transform(self, inpt, params):
        return self._call_kernel(F.resize, inpt, params["size"], interpolation=self.interpolation,
                                 antialias=self.antialias)


def _pair_of_floats(value, name):
    if isinstance(value, numbers.Number):
        return [float(value), float(value)]
    if isinstance(value, Sequence) and len(value) in (1, 2):
        return [float(v) for v in value] * (2 // len(value))
    raise TypeError(f"{name} should be a single number or a sequence of one or two numbers, got {value!r}.")


def _odd_kernel(sigma):
    size = int(8 * sigma + 1)
    return size + 1 if size % 2 == 0 else size


class ElasticTransform(Transform):
    """Displaces each pixel by smoothed random noise (strength `alpha`, smoothness `sigma`); boxes use
    TorchVision's approximate inverse of the displacement."""

    def __init__(self, alpha=50.0, sigma=5.0, interpolation=InterpolationMode.BILINEAR, fill=0):
        super().__init__()
        self.alpha = _pair_of_floats(alpha, "alpha")
        self.sigma = _pair_of_floats(sigma, "sigma")
        self.interpolation = _check_interpolation(interpolation)
        _check_fill_type(fill)
        self.fill = fill
        self._fill = _setup_fill_arg(fill)

    def make_params(self, flat_inputs):
        size = list(query_size(flat_inputs))
        fields = []
        for axis in (0, 1):
            d = ember.rand([1, 1] + size) * 2 - 1
            if self.sigma[axis] > 0.0:
                k = _odd_kernel(self.sigma[axis])
                d = F.gaussian_blur(d, [k, k], list(self.sigma))
            fields.append(d * self.alpha[axis] / size[axis])
        return dict(displacement=ember.cat(fields, 1).permute([0, 2, 3, 1]))

    def transform(self, inpt, params):
        fill = _get_fill(self._fill, type(inpt))
        return self._call_kernel(F.elastic, inpt, **params, interpolation=self.interpolation, fill=fill)
