"""Sizes, dtypes and bounding-box formats."""
import ember
from ember import Tensor

from ... import _functional_tensor as F_t
from ... import functional as F1
from .... import tv_tensors
from ....tv_tensors import BoundingBoxFormat, _parse_format, _pure
from ._utils import IMAGE_TYPES, PILImage, _get_kernel, _register, is_pure_tensor


def get_dimensions(inpt):
    """[channels, height, width] of an image or video (tensor, tv_tensor or PIL)."""
    return _get_kernel(get_dimensions, type(inpt))(inpt)


@_register(get_dimensions, *IMAGE_TYPES, PILImage, wrap=False)
def get_dimensions_image(image):
    if isinstance(image, Tensor) and image.ndim < 2:
        raise TypeError(f"Input tensor should have at least two dimensions, but got {image.ndim}")
    return list(F1.get_dimensions(image))


def get_num_channels(inpt):
    return get_dimensions(inpt)[0]


def get_size(inpt):
    """[height, width] of an image, video, mask (tensor, tv_tensor or PIL) or bounding boxes' canvas."""
    return _get_kernel(get_size, type(inpt))(inpt)


@_register(get_size, *IMAGE_TYPES, tv_tensors.Mask, PILImage, wrap=False)
def get_size_image(image):
    if isinstance(image, Tensor):
        if image.ndim < 2:
            raise TypeError(f"Input tensor should have at least two dimensions, but got {image.ndim}")
        return [int(image.shape[-2]), int(image.shape[-1])]
    return [image.height, image.width]


@_register(get_size, tv_tensors.BoundingBoxes, wrap=False)
def get_size_bounding_boxes(bounding_boxes):
    return list(bounding_boxes.canvas_size)


def get_num_frames(inpt):
    return _get_kernel(get_num_frames, type(inpt))(inpt)


@_register(get_num_frames, Tensor, tv_tensors.Video, wrap=False)
def get_num_frames_video(video):
    return int(video.shape[-4])


# ---- bounding-box formats ----

def _floor_half(x, floating):
    return x / 2 if floating else x.div(2, rounding_mode="floor")


def _to_xyxy(boxes, old_format):
    """Boxes in `old_format` → XYXY; integer boxes stay integer (TorchVision's rounding)."""
    if old_format == BoundingBoxFormat.XYXY:
        return boxes
    floating = boxes.is_floating_point()
    a, b, w, h = boxes.unbind(-1)
    if old_format == BoundingBoxFormat.XYWH:
        return ember.stack([a, b, a + w, b + h], -1)
    # CXCYWH: the top-left corner is the centre minus ceil(size / 2) for integer boxes
    half_w = w / 2 if floating else (-w).div(2, rounding_mode="floor").abs()
    half_h = h / 2 if floating else (-h).div(2, rounding_mode="floor").abs()
    x1, y1 = a - half_w, b - half_h
    return ember.stack([x1, y1, x1 + w, y1 + h], -1)


def _from_xyxy(boxes, new_format):
    if new_format == BoundingBoxFormat.XYXY:
        return boxes
    floating = boxes.is_floating_point()
    x1, y1, x2, y2 = boxes.unbind(-1)
    w, h = x2 - x1, y2 - y1
    if new_format == BoundingBoxFormat.XYWH:
        return ember.stack([x1, y1, w, h], -1)
    return ember.stack([x1 + _floor_half(w, floating), y1 + _floor_half(h, floating), w, h], -1)


def _box_metadata(inpt, functional, format, canvas_size):
    """(plain tensor, format, canvas_size): from a BoundingBoxes, or from the arguments for a plain tensor."""
    if isinstance(inpt, tv_tensors.BoundingBoxes):
        if format is not None or canvas_size is not None:
            raise ValueError("For bounding box tv_tensor inputs, `format` and `canvas_size` must not be passed.")
        return _pure(inpt), inpt.format, inpt.canvas_size
    if not is_pure_tensor(inpt):
        raise TypeError(
            f"{functional}() only supports inputs of type Tensor and BoundingBoxes, but got {type(inpt)} instead.")
    if format is None or canvas_size is None:
        raise ValueError("For pure tensor inputs, `format` and `canvas_size` have to be passed.")
    return inpt, _parse_format(format), tuple(canvas_size)


def convert_bounding_box_format(inpt, old_format=None, new_format=None, inplace=False):
    """Converts boxes between XYXY, XYWH and CXCYWH (`old_format` only for plain tensors)."""
    if new_format is None:
        raise TypeError("convert_bounding_box_format() missing 1 required argument: 'new_format'")
    if isinstance(inpt, tv_tensors.BoundingBoxes):
        if old_format is not None:
            raise ValueError("For bounding box tv_tensor inputs, `old_format` must not be passed.")
        new_format = _parse_format(new_format)
        out = convert_bounding_boxes_format_tensor(_pure(inpt), inpt.format, new_format, inplace)
        return tv_tensors.wrap(out, like=inpt, format=new_format)
    if not is_pure_tensor(inpt):
        raise TypeError(
            "convert_bounding_box_format() only supports inputs of type Tensor and BoundingBoxes, "
            f"but got {type(inpt)} instead.")
    if old_format is None:
        raise ValueError("For pure tensor inputs, `old_format` has to be passed.")
    return convert_bounding_boxes_format_tensor(inpt, _parse_format(old_format), _parse_format(new_format), inplace)


def convert_bounding_boxes_format_tensor(boxes, old_format, new_format, inplace=False):
    if old_format == new_format:
        return boxes
    out = _from_xyxy(_to_xyxy(boxes, old_format), new_format)
    if inplace:
        boxes.copy_(out)
        return boxes
    return out


def clamp_bounding_boxes(inpt, format=None, canvas_size=None):
    """Clamps boxes to their canvas (format and canvas_size only for plain tensors)."""
    boxes, format, canvas_size = _box_metadata(inpt, "clamp_bounding_boxes", format, canvas_size)
    out = clamp_bounding_boxes_tensor(boxes, format, canvas_size)
    return tv_tensors.wrap(out, like=inpt) if isinstance(inpt, tv_tensors.BoundingBoxes) else out


def clamp_bounding_boxes_tensor(boxes, format, canvas_size):
    in_dtype = boxes.dtype
    work = boxes if boxes.is_floating_point() else boxes.to(ember.float32)
    x1, y1, x2, y2 = _to_xyxy(work, format).unbind(-1)
    height, width = canvas_size
    clamped = ember.stack([x1.clamp(0, width), y1.clamp(0, height), x2.clamp(0, width), y2.clamp(0, height)], -1)
    return _from_xyxy(clamped, format).to(in_dtype)


# ---- dtype ----

def to_dtype(inpt, dtype=ember.float32, scale=False):
    """Casts to `dtype`; with `scale=True` image values are rescaled (uint8 255 ↔ float 1.0)."""
    return _get_kernel(to_dtype, type(inpt))(inpt, dtype=dtype, scale=scale)


@_register(to_dtype, *IMAGE_TYPES)
def to_dtype_image(image, dtype=ember.float32, scale=False):
    if not scale:
        return image.to(dtype)
    return F_t.convert_image_dtype(image, dtype)


@_register(to_dtype, tv_tensors.BoundingBoxes, tv_tensors.Mask, wrap=False)
def _to_dtype_keep_values(inpt, dtype=ember.float32, scale=False):
    # Boxes and masks hold coordinates and labels, never scaled; `to` keeps the tv_tensor type.
    return inpt.to(dtype)
