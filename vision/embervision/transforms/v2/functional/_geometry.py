"""Geometry functionals: each moves images, videos, masks and bounding boxes alike.

Image kernels run the v1 functional ops (tensor or Pillow); masks use nearest-neighbour sampling;
boxes are moved arithmetically and clamped to their new canvas, as TorchVision's are.
"""
import numbers

import ember

from ... import _functional_pil as F_pil
from ... import _functional_tensor as F_t
from ... import functional as F1
from ...functional import (
    InterpolationMode, _get_inverse_affine_matrix, _get_perspective_coeffs, _interp, pil_modes_mapping,
)
from .... import tv_tensors
from ....tv_tensors import BoundingBoxFormat, _parse_format, _pure
from ._meta import _from_xyxy, _to_xyxy, clamp_bounding_boxes_tensor
from ._utils import IMAGE_TYPES, PILImage, _get_kernel, _register

_BOXES = tv_tensors.BoundingBoxes
_MASK = tv_tensors.Mask


def _on_mask(mask, image_op):
    """Runs an image op on a mask, giving a `[H, W]` mask the channel dimension it needs."""
    if mask.ndim < 3:
        return image_op(mask.unsqueeze(0)).squeeze(0)
    return image_op(mask)


def _rewrap_boxes(inpt, box_op):
    """Runs `box_op(boxes, format, canvas_size) -> (boxes, canvas_size)` on a BoundingBoxes."""
    out, canvas_size = box_op(_pure(inpt), inpt.format, inpt.canvas_size)
    return tv_tensors.wrap(out, like=inpt, canvas_size=canvas_size)


def _float_boxes(boxes):
    return boxes if boxes.is_floating_point() else boxes.to(ember.float32)


# ---- flips ----

def horizontal_flip(inpt):
    """Mirrors left to right."""
    return _get_kernel(horizontal_flip, type(inpt))(inpt)


@_register(horizontal_flip, *IMAGE_TYPES, _MASK, PILImage)
def horizontal_flip_image(image):
    return F1.hflip(image)


def horizontal_flip_bounding_boxes(bounding_boxes, format, canvas_size):
    format = _parse_format(format)
    width = canvas_size[1]
    a, b, c, d = bounding_boxes.unbind(-1)
    if format == BoundingBoxFormat.XYXY:
        return ember.stack([width - c, b, width - a, d], -1)
    if format == BoundingBoxFormat.XYWH:
        return ember.stack([width - a - c, b, c, d], -1)
    return ember.stack([width - a, b, c, d], -1)


@_register(horizontal_flip, _BOXES, wrap=False)
def _horizontal_flip_boxes(inpt):
    return _rewrap_boxes(inpt, lambda b, f, s: (horizontal_flip_bounding_boxes(b, f, s), s))


def vertical_flip(inpt):
    """Mirrors top to bottom."""
    return _get_kernel(vertical_flip, type(inpt))(inpt)


@_register(vertical_flip, *IMAGE_TYPES, _MASK, PILImage)
def vertical_flip_image(image):
    return F1.vflip(image)


def vertical_flip_bounding_boxes(bounding_boxes, format, canvas_size):
    format = _parse_format(format)
    height = canvas_size[0]
    a, b, c, d = bounding_boxes.unbind(-1)
    if format == BoundingBoxFormat.XYXY:
        return ember.stack([a, height - d, c, height - b], -1)
    if format == BoundingBoxFormat.XYWH:
        return ember.stack([a, height - b - d, c, d], -1)
    return ember.stack([a, height - b, c, d], -1)


@_register(vertical_flip, _BOXES, wrap=False)
def _vertical_flip_boxes(inpt):
    return _rewrap_boxes(inpt, lambda b, f, s: (vertical_flip_bounding_boxes(b, f, s), s))


hflip = horizontal_flip
vflip = vertical_flip


# ---- resize ----

def _output_size(canvas_size, size, max_size):
    if size is None:
        return _fit_longer_edge(canvas_size, max_size)
    if isinstance(size, int):
        size = [size]
    elif not (isinstance(size, (list, tuple)) and len(size) in (1, 2)):
        raise ValueError(f"size can either be an integer or a sequence of one or two integers, but got {size} instead.")
    elif max_size is not None and len(size) != 1:
        raise ValueError(
            "max_size should only be passed if size specifies the length of the smaller edge, "
            "i.e. size should be an int or a sequence of length 1 in torchscript mode.")
    return F1._compute_resized_output_size(canvas_size, list(size), max_size)


def _fit_longer_edge(canvas_size, max_size):
    """(h, w) with the longer edge at `max_size` and the aspect ratio kept (`size=None`)."""
    if max_size is None:
        raise ValueError("max_size must be an integer when size is None, but got None instead.")
    height, width = canvas_size
    short, long = (width, height) if width <= height else (height, width)
    new_short = int(max_size * short / long)
    return [max_size, new_short] if width <= height else [new_short, max_size]


def resize(inpt, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    """Resizes to `size` (h, w), or the shorter edge to `size` when it is an int / 1-sequence; the longer
    edge is capped at `max_size` (with `size=None`, set to it)."""
    kernel = _get_kernel(resize, type(inpt))
    return kernel(inpt, size=size, interpolation=interpolation, max_size=max_size, antialias=antialias)


@_register(resize, *IMAGE_TYPES, PILImage)
def resize_image(image, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    _, height, width = F1.get_dimensions(image)
    return F1.resize(image, _output_size((height, width), size, max_size), _interp(interpolation),
                     antialias=antialias)


def resize_mask(mask, size, max_size=None):
    return _on_mask(mask, lambda m: resize_image(m, size, InterpolationMode.NEAREST, max_size))


@_register(resize, _MASK)
def _resize_mask(mask, size, max_size=None, **kwargs):
    return resize_mask(mask, size, max_size)


def resize_bounding_boxes(bounding_boxes, canvas_size, size, max_size=None):
    """Scales boxes to the resized canvas; returns (boxes, new canvas_size)."""
    new_height, new_width = _output_size(tuple(canvas_size), size, max_size)
    if (new_height, new_width) == tuple(canvas_size):
        return bounding_boxes, tuple(canvas_size)
    w_ratio, h_ratio = new_width / canvas_size[1], new_height / canvas_size[0]
    ratios = ember.tensor([w_ratio, h_ratio, w_ratio, h_ratio])
    return bounding_boxes.mul(ratios).to(bounding_boxes.dtype), (new_height, new_width)


@_register(resize, _BOXES, wrap=False)
def _resize_boxes(inpt, size, max_size=None, **kwargs):
    return _rewrap_boxes(inpt, lambda b, f, s: resize_bounding_boxes(b, s, size, max_size))


# ---- crops ----

def crop(inpt, top, left, height, width):
    """Crops the box at (top, left); parts outside the input are zero (boxes are clamped)."""
    return _get_kernel(crop, type(inpt))(inpt, top=top, left=left, height=height, width=width)


@_register(crop, *IMAGE_TYPES, PILImage)
def crop_image(image, top, left, height, width):
    return F1.crop(image, top, left, height, width)


def crop_mask(mask, top, left, height, width):
    return _on_mask(mask, lambda m: crop_image(m, top, left, height, width))


_register(crop, _MASK)(crop_mask)


def crop_bounding_boxes(bounding_boxes, format, top, left, height, width):
    """Moves boxes into the crop's frame and clamps them; returns (boxes, (height, width))."""
    format = _parse_format(format)
    shift = [left, top, left, top] if format == BoundingBoxFormat.XYXY else [left, top, 0, 0]
    moved = bounding_boxes - ember.tensor(shift, dtype=bounding_boxes.dtype)
    canvas_size = (height, width)
    return clamp_bounding_boxes_tensor(moved, format, canvas_size), canvas_size


@_register(crop, _BOXES, wrap=False)
def _crop_boxes(inpt, top, left, height, width):
    return _rewrap_boxes(inpt, lambda b, f, s: crop_bounding_boxes(b, f, top, left, height, width))


def _crop_size(output_size):
    if isinstance(output_size, numbers.Number):
        return [int(output_size), int(output_size)]
    if isinstance(output_size, (tuple, list)) and len(output_size) == 1:
        return [output_size[0], output_size[0]]
    return list(output_size)


def center_crop(inpt, output_size):
    """Crops the centre (padding with zeros where the input is smaller)."""
    return _get_kernel(center_crop, type(inpt))(inpt, output_size=output_size)


@_register(center_crop, *IMAGE_TYPES, PILImage)
def center_crop_image(image, output_size):
    return F1.center_crop(image, _crop_size(output_size))


def center_crop_mask(mask, output_size):
    return _on_mask(mask, lambda m: center_crop_image(m, output_size))


_register(center_crop, _MASK)(center_crop_mask)


def center_crop_bounding_boxes(bounding_boxes, format, canvas_size, output_size):
    crop_height, crop_width = _crop_size(output_size)
    top = int(round((canvas_size[0] - crop_height) / 2.0))
    left = int(round((canvas_size[1] - crop_width) / 2.0))
    return crop_bounding_boxes(bounding_boxes, format, top, left, crop_height, crop_width)


@_register(center_crop, _BOXES, wrap=False)
def _center_crop_boxes(inpt, output_size):
    return _rewrap_boxes(inpt, lambda b, f, s: center_crop_bounding_boxes(b, f, s, output_size))


def resized_crop(inpt, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR, antialias=True):
    """`crop` then `resize` to `size`."""
    kernel = _get_kernel(resized_crop, type(inpt))
    return kernel(inpt, top=top, left=left, height=height, width=width, size=size, interpolation=interpolation,
                  antialias=antialias)


@_register(resized_crop, *IMAGE_TYPES, PILImage)
def resized_crop_image(image, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR,
                       antialias=True):
    return resize_image(crop_image(image, top, left, height, width), size, interpolation, antialias=antialias)


def resized_crop_mask(mask, top, left, height, width, size):
    return resize_mask(crop_mask(mask, top, left, height, width), size)


@_register(resized_crop, _MASK)
def _resized_crop_mask(mask, top, left, height, width, size, **kwargs):
    return resized_crop_mask(mask, top, left, height, width, size)


def resized_crop_bounding_boxes(bounding_boxes, format, top, left, height, width, size):
    boxes, canvas_size = crop_bounding_boxes(bounding_boxes, format, top, left, height, width)
    return resize_bounding_boxes(boxes, canvas_size, size)


@_register(resized_crop, _BOXES, wrap=False)
def _resized_crop_boxes(inpt, top, left, height, width, size, **kwargs):
    return _rewrap_boxes(inpt, lambda b, f, s: resized_crop_bounding_boxes(b, f, top, left, height, width, size))


# ---- pad ----

def _parse_padding(padding):
    """[left, top, right, bottom] from an int or a 1-, 2- or 4-sequence."""
    if isinstance(padding, int):
        return [padding] * 4
    if not isinstance(padding, (tuple, list)):
        raise TypeError(f"`padding` should be an integer or tuple or list of integers, but got {padding}")
    if len(padding) == 1:
        return [padding[0]] * 4
    if len(padding) == 2:
        return [padding[0], padding[1], padding[0], padding[1]]
    if len(padding) == 4:
        return list(padding)
    raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element tuple")


def pad(inpt, padding, fill=None, padding_mode="constant"):
    """Pads each border: int, (lr, tb) or (left, top, right, bottom); modes constant/edge/reflect/symmetric."""
    return _get_kernel(pad, type(inpt))(inpt, padding=padding, fill=fill, padding_mode=padding_mode)


@_register(pad, *IMAGE_TYPES)
def pad_image(image, padding, fill=None, padding_mode="constant"):
    ltrb = _parse_padding(padding)
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError("`padding_mode` should be either `'constant'`, `'edge'`, `'reflect'` or `'symmetric'`, "
                         f"but got `'{padding_mode}'`.")
    fill = 0 if fill is None else fill
    if isinstance(fill, (tuple, list)) and len(fill) == 1:
        fill = fill[0]
    shape = list(image.shape)
    flat = image.reshape([-1] + shape[-3:])
    if isinstance(fill, (tuple, list)):
        out = _pad_vector_fill(flat, ltrb, fill, padding_mode)
    else:
        out = F_t.pad(flat, ltrb, fill=fill, padding_mode=padding_mode)
    return out.reshape(shape[:-2] + list(out.shape[-2:]))


def _pad_vector_fill(image, ltrb, fill, padding_mode):
    # Per-channel fill: pad with zeros, then paint the new borders.
    if padding_mode != "constant":
        raise ValueError(f"Padding mode '{padding_mode}' is not supported if fill is not scalar")
    out = F_t.pad(image, ltrb, fill=0, padding_mode="constant")
    left, top, right, bottom = ltrb
    value = ember.tensor([float(f) for f in fill]).to(image.dtype).reshape(-1, 1, 1)
    height, width = out.shape[-2], out.shape[-1]
    for rows, cols in (((0, top), (0, width)), ((height - bottom, height), (0, width)),
                       ((0, height), (0, left)), ((0, height), (width - right, width))):
        if rows[1] > rows[0] and cols[1] > cols[0]:
            out[..., rows[0]:rows[1], cols[0]:cols[1]] = value
    return out


@_register(pad, PILImage)
def _pad_image_pil(image, padding, fill=None, padding_mode="constant"):
    return F1.pad(image, padding, fill=0 if fill is None else fill, padding_mode=padding_mode)


def pad_mask(mask, padding, fill=None, padding_mode="constant"):
    if isinstance(fill, (tuple, list)):
        raise ValueError("Non-scalar fill value is not supported")
    return _on_mask(mask, lambda m: pad_image(m, padding, fill, padding_mode))


_register(pad, _MASK)(pad_mask)


def pad_bounding_boxes(bounding_boxes, format, canvas_size, padding, padding_mode="constant"):
    """Moves boxes onto the padded canvas; returns (boxes, new canvas_size)."""
    format = _parse_format(format)
    if padding_mode != "constant":
        raise ValueError(f"Padding mode '{padding_mode}' is not supported with bounding boxes")
    left, top, right, bottom = _parse_padding(padding)
    shift = [left, top, left, top] if format == BoundingBoxFormat.XYXY else [left, top, 0, 0]
    moved = bounding_boxes + ember.tensor(shift, dtype=bounding_boxes.dtype)
    canvas_size = (canvas_size[0] + top + bottom, canvas_size[1] + left + right)
    return clamp_bounding_boxes_tensor(moved, format, canvas_size), canvas_size


@_register(pad, _BOXES, wrap=False)
def _pad_boxes(inpt, padding, padding_mode="constant", **kwargs):
    return _rewrap_boxes(inpt, lambda b, f, s: pad_bounding_boxes(b, f, s, padding, padding_mode))


# ---- affine and rotate ----

def affine(inpt, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST, fill=None, center=None):
    """Rotation (degrees, clockwise), translation, scale and shear about `center` (default: the middle)."""
    kernel = _get_kernel(affine, type(inpt))
    return kernel(inpt, angle=angle, translate=translate, scale=scale, shear=shear, interpolation=interpolation,
                  fill=fill, center=center)


@_register(affine, *IMAGE_TYPES, PILImage)
def affine_image(image, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST, fill=None,
                 center=None):
    angle, translate, shear, center = F1._affine_args(angle, translate, scale, shear, center)
    return _grid_op(image, lambda img: F1.affine(img, angle, translate, scale, shear, _interp(interpolation),
                                                 fill=fill, center=center))


def _grid_op(image, op):
    """Runs a grid-sampling op on a `[..., C, H, W]` tensor as a batch (PIL images as they are)."""
    if not isinstance(image, ember.Tensor):
        return op(image)
    if image.numel() == 0:
        return image
    shape = list(image.shape)
    out = op(image.reshape([-1] + shape[-3:]))
    return out.reshape(shape[:-2] + list(out.shape[-2:]))


def affine_mask(mask, angle, translate, scale, shear, fill=None, center=None):
    return _on_mask(mask, lambda m: affine_image(m, angle, translate, scale, shear, InterpolationMode.NEAREST,
                                                 fill, center))


@_register(affine, _MASK)
def _affine_mask(mask, angle, translate, scale, shear, fill=None, center=None, **kwargs):
    return affine_mask(mask, angle, translate, scale, shear, fill, center)


def _affine_boxes_with_expand(boxes, format, canvas_size, angle, translate, scale, shear, center, expand):
    """The axis-aligned boxes around the transformed corners of each box, clamped to the (expanded) canvas."""
    format = _parse_format(format)
    if boxes.numel() == 0:
        return boxes, tuple(canvas_size)
    angle, translate, shear, center = F1._affine_args(angle, translate, scale, shear, center)
    height, width = canvas_size
    center = [width * 0.5, height * 0.5] if center is None else [float(c) for c in center]
    shape, in_dtype = boxes.shape, boxes.dtype
    xyxy = _to_xyxy(_float_boxes(boxes), format).reshape(-1, 4)
    dtype = xyxy.dtype
    forward = ember.tensor(_get_inverse_affine_matrix(center, angle, translate, scale, shear, inverted=False),
                           dtype=dtype).reshape(2, 3).T
    corners = xyxy[:, [0, 1, 2, 1, 2, 3, 0, 3]].reshape(-1, 2)
    points = ember.cat([corners, ember.ones(corners.shape[0], 1, dtype=dtype)], -1)
    moved = ember.matmul(points, forward).reshape(-1, 4, 2)
    out = ember.cat([moved.amin(dim=1), moved.amax(dim=1)], -1)
    if expand:
        frame = ember.tensor([[0.0, 0.0, 1.0], [0.0, float(height), 1.0], [float(width), float(height), 1.0],
                              [float(width), 0.0, 1.0]], dtype=dtype)
        origin = ember.matmul(frame, forward).amin(dim=0, keepdim=True)
        out = out - origin.repeat(1, 2)
        inverse = _get_inverse_affine_matrix(center, angle, translate, scale, shear)
        new_width, new_height = F_t._compute_affine_output_size(inverse, width, height)
        canvas_size = (new_height, new_width)
    out = clamp_bounding_boxes_tensor(out, BoundingBoxFormat.XYXY, tuple(canvas_size))
    return _from_xyxy(out, format).reshape(shape).to(in_dtype), tuple(canvas_size)


def affine_bounding_boxes(bounding_boxes, format, canvas_size, angle, translate, scale, shear, center=None):
    out, _ = _affine_boxes_with_expand(bounding_boxes, format, canvas_size, angle, translate, scale, shear, center,
                                       expand=False)
    return out


@_register(affine, _BOXES, wrap=False)
def _affine_boxes(inpt, angle, translate, scale, shear, center=None, **kwargs):
    return _rewrap_boxes(inpt, lambda b, f, s: _affine_boxes_with_expand(
        b, f, s, angle, translate, scale, shear, center, expand=False))


def rotate(inpt, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=None):
    """Rotates counter-clockwise by `angle` degrees; `expand=True` grows the canvas to hold the whole input."""
    kernel = _get_kernel(rotate, type(inpt))
    return kernel(inpt, angle=angle, interpolation=interpolation, expand=expand, center=center, fill=fill)


@_register(rotate, *IMAGE_TYPES, PILImage)
def rotate_image(image, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=None):
    return _grid_op(image, lambda img: F1.rotate(img, angle, _interp(interpolation), expand, center, fill))


def rotate_mask(mask, angle, expand=False, center=None, fill=None):
    return _on_mask(mask, lambda m: rotate_image(m, angle, InterpolationMode.NEAREST, expand, center, fill))


@_register(rotate, _MASK)
def _rotate_mask(mask, angle, expand=False, center=None, fill=None, **kwargs):
    return rotate_mask(mask, angle, expand, center, fill)


def rotate_bounding_boxes(bounding_boxes, format, canvas_size, angle, expand=False, center=None):
    """Returns (boxes, canvas_size): the canvas grows with `expand`."""
    # rotate turns counter-clockwise, affine clockwise
    return _affine_boxes_with_expand(bounding_boxes, format, canvas_size, -angle, [0.0, 0.0], 1.0, [0.0, 0.0],
                                     center, expand)


@_register(rotate, _BOXES, wrap=False)
def _rotate_boxes(inpt, angle, expand=False, center=None, **kwargs):
    return _rewrap_boxes(inpt, lambda b, f, s: rotate_bounding_boxes(b, f, s, angle, expand, center))


# ---- perspective ----

def _perspective_coefficients(startpoints, endpoints, coefficients):
    if coefficients is not None:
        if startpoints is not None and endpoints is not None:
            raise ValueError("The startpoints/endpoints and the coefficients shouldn't be defined concurrently.")
        if len(coefficients) != 8:
            raise ValueError("Argument coefficients should have 8 float values")
        return list(coefficients)
    if startpoints is not None and endpoints is not None:
        return _get_perspective_coeffs(startpoints, endpoints)
    raise ValueError("Either the startpoints/endpoints or the coefficients must have non `None` values.")


def perspective(inpt, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR, fill=None,
                coefficients=None):
    """Perspective transform taking the 4 `startpoints` to `endpoints` (or given its 8 `coefficients`)."""
    kernel = _get_kernel(perspective, type(inpt))
    return kernel(inpt, startpoints=startpoints, endpoints=endpoints, interpolation=interpolation, fill=fill,
                  coefficients=coefficients)


@_register(perspective, *IMAGE_TYPES, PILImage)
def perspective_image(image, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR, fill=None,
                      coefficients=None):
    coeffs = _perspective_coefficients(startpoints, endpoints, coefficients)
    interpolation = _interp(interpolation)
    if not isinstance(image, ember.Tensor):
        return F_pil.perspective(image, coeffs, interpolation=pil_modes_mapping[interpolation], fill=fill)
    return _grid_op(image, lambda img: F_t.perspective(img, coeffs, interpolation=interpolation.value, fill=fill))


def perspective_mask(mask, startpoints, endpoints, fill=None, coefficients=None):
    return _on_mask(mask, lambda m: perspective_image(m, startpoints, endpoints, InterpolationMode.NEAREST, fill,
                                                      coefficients))


@_register(perspective, _MASK)
def _perspective_mask(mask, startpoints, endpoints, fill=None, coefficients=None, **kwargs):
    return perspective_mask(mask, startpoints, endpoints, fill, coefficients)


def _invert_perspective(c):
    # The coefficients map output to input pixels; boxes need input to output.
    denom = c[0] * c[4] - c[1] * c[3]
    if denom == 0:
        raise RuntimeError(f"Provided perspective_coeffs {c} can not be inverted to transform bounding boxes. "
                           f"Denominator is zero, denom={denom}")
    return [
        (c[4] - c[5] * c[7]) / denom, (-c[1] + c[2] * c[7]) / denom, (c[1] * c[5] - c[2] * c[4]) / denom,
        (-c[3] + c[5] * c[6]) / denom, (c[0] - c[2] * c[6]) / denom, (-c[0] * c[5] + c[2] * c[3]) / denom,
        (-c[4] * c[6] + c[3] * c[7]) / denom, (-c[0] * c[7] + c[1] * c[6]) / denom,
    ]


def perspective_bounding_boxes(bounding_boxes, format, canvas_size, startpoints, endpoints, coefficients=None):
    """The axis-aligned boxes around the moved corners of each box, clamped to the canvas."""
    format = _parse_format(format)
    if bounding_boxes.numel() == 0:
        return bounding_boxes
    inv = _invert_perspective(_perspective_coefficients(startpoints, endpoints, coefficients))
    shape, in_dtype = bounding_boxes.shape, bounding_boxes.dtype
    xyxy = _to_xyxy(_float_boxes(bounding_boxes), format).reshape(-1, 4)
    dtype = xyxy.dtype
    corners = xyxy[:, [0, 1, 2, 1, 2, 3, 0, 3]].reshape(-1, 2)
    points = ember.cat([corners, ember.ones(corners.shape[0], 1, dtype=dtype)], -1)
    numer = ember.tensor([inv[0:3], inv[3:6]], dtype=dtype)
    denom = ember.tensor([[inv[6], inv[7], 1.0], [inv[6], inv[7], 1.0]], dtype=dtype)
    moved = (ember.matmul(points, numer.T) / ember.matmul(points, denom.T)).reshape(-1, 4, 2)
    out = clamp_bounding_boxes_tensor(ember.cat([moved.amin(dim=1), moved.amax(dim=1)], -1),
                                      BoundingBoxFormat.XYXY, tuple(canvas_size))
    return _from_xyxy(out, format).reshape(shape).to(in_dtype)


@_register(perspective, _BOXES, wrap=False)
def _perspective_boxes(inpt, startpoints, endpoints, coefficients=None, **kwargs):
    return _rewrap_boxes(inpt, lambda b, f, s: (perspective_bounding_boxes(b, f, s, startpoints, endpoints,
                                                                           coefficients), s))


# ---- elastic ----

def elastic(inpt, displacement, interpolation=InterpolationMode.BILINEAR, fill=None):
    """Moves each pixel by `displacement` (`[1, H, W, 2]`, in the [-1, 1] grid units of `grid_sample`)."""
    kernel = _get_kernel(elastic, type(inpt))
    return kernel(inpt, displacement=displacement, interpolation=interpolation, fill=fill)


elastic_transform = elastic


@_register(elastic, *IMAGE_TYPES, PILImage)
def elastic_image(image, displacement, interpolation=InterpolationMode.BILINEAR, fill=None):
    interpolation = _interp(interpolation)
    if not isinstance(image, ember.Tensor):
        return F1.elastic_transform(image, displacement, interpolation, fill)
    return _grid_op(image, lambda img: F1.elastic_transform(img, displacement, interpolation, fill))


def elastic_mask(mask, displacement, fill=None):
    return _on_mask(mask, lambda m: elastic_image(m, displacement, InterpolationMode.NEAREST, fill))


@_register(elastic, _MASK)
def _elastic_mask(mask, displacement, fill=None, **kwargs):
    return elastic_mask(mask, displacement, fill)


def _identity_grid(height, width, dtype):
    xs = ember.linspace((1 - width) / width, (width - 1) / width, width, dtype=dtype)
    ys = ember.linspace((1 - height) / height, (height - 1) / height, height, dtype=dtype)
    return ember.stack([xs.expand(height, width), ys.unsqueeze(-1).expand(height, width)], -1).unsqueeze(0)


def elastic_bounding_boxes(bounding_boxes, format, canvas_size, displacement):
    """Moves each box corner by the approximate inverse of the displacement (`identity - displacement`,
    as TorchVision), then takes the box around the moved corners. Approximate for large displacements."""
    format = _parse_format(format)
    height, width = canvas_size
    expected = (1, height, width, 2)
    if not isinstance(displacement, ember.Tensor):
        raise TypeError("Argument displacement should be a Tensor")
    if tuple(displacement.shape) != expected:
        raise ValueError(f"Argument displacement shape should be {expected}, but given {tuple(displacement.shape)}")
    if bounding_boxes.numel() == 0:
        return bounding_boxes
    shape, in_dtype = bounding_boxes.shape, bounding_boxes.dtype
    xyxy = _to_xyxy(_float_boxes(bounding_boxes), format).reshape(-1, 4)
    dtype = xyxy.dtype
    inverse = _identity_grid(height, width, dtype) - displacement.to(dtype)
    corners = ember.ceil(xyxy[:, [0, 1, 2, 1, 2, 3, 0, 3]].reshape(-1, 2)).to(ember.int64)
    # corners on the far edges (x = W, y = H) read the last row/column of the grid
    index_x = corners[:, 0].clamp(0, width - 1)
    index_y = corners[:, 1].clamp(0, height - 1)
    size = ember.tensor([float(width), float(height)], dtype=dtype)
    moved = ((inverse[0, index_y, index_x, :] + 1) * (0.5 * size) - 0.5).reshape(-1, 4, 2)
    out = clamp_bounding_boxes_tensor(ember.cat([moved.amin(dim=1), moved.amax(dim=1)], -1),
                                      BoundingBoxFormat.XYXY, tuple(canvas_size))
    return _from_xyxy(out, format).reshape(shape).to(in_dtype)


@_register(elastic, _BOXES, wrap=False)
def _elastic_boxes(inpt, displacement, **kwargs):
    return _rewrap_boxes(inpt, lambda b, f, s: (elastic_bounding_boxes(b, f, s, displacement), s))


# ---- five and ten crops (images and videos only) ----

def five_crop(inpt, size):
    """The four corner crops and the centre crop of `size`, as a tuple."""
    return _get_kernel(five_crop, type(inpt))(inpt, size=size)


def ten_crop(inpt, size, vertical_flip=False):
    """`five_crop` of the input and of its (horizontally, or vertically) flipped copy."""
    return _get_kernel(ten_crop, type(inpt))(inpt, size=size, vertical_flip=vertical_flip)


def _wrap_each(kernel):
    def wrapper(inpt, *args, **kwargs):
        return tuple(tv_tensors.wrap(out, like=inpt) for out in kernel(_pure(inpt), *args, **kwargs))

    return wrapper


@_register(five_crop, ember.Tensor, PILImage)
def five_crop_image(image, size):
    return F1.five_crop(image, size)


@_register(ten_crop, ember.Tensor, PILImage)
def ten_crop_image(image, size, vertical_flip=False):
    return F1.ten_crop(image, size, vertical_flip)


for _tv in (tv_tensors.Image, tv_tensors.Video):
    _register(five_crop, _tv, wrap=False)(_wrap_each(five_crop_image))
    _register(ten_crop, _tv, wrap=False)(_wrap_each(ten_crop_image))


__all__ = [
    "affine", "affine_bounding_boxes", "affine_image", "affine_mask", "center_crop", "center_crop_bounding_boxes",
    "center_crop_image", "center_crop_mask", "crop", "crop_bounding_boxes", "crop_image", "crop_mask", "elastic",
    "elastic_bounding_boxes", "elastic_image", "elastic_mask", "elastic_transform", "five_crop", "five_crop_image",
    "hflip", "horizontal_flip", "horizontal_flip_bounding_boxes", "horizontal_flip_image", "pad",
    "pad_bounding_boxes", "pad_image", "pad_mask", "perspective", "perspective_bounding_boxes", "perspective_image",
    "perspective_mask", "resize", "resize_bounding_boxes", "resize_image", "resize_mask", "resized_crop",
    "resized_crop_bounding_boxes", "resized_crop_image", "resized_crop_mask", "rotate", "rotate_bounding_boxes",
    "rotate_image", "rotate_mask", "ten_crop", "ten_crop_image", "vertical_flip", "vertical_flip_bounding_boxes",
    "vertical_flip_image", "vflip",
]
