"""`torchvision.transforms.functional` on ember tensors (`[..., C, H, W]`) and PIL images.

Every function takes either kind of image and returns the same kind; tensors go to
`_functional_tensor`, PIL images to Pillow (`_functional_pil`).
"""
import math
import numbers
import sys
import warnings
from enum import Enum

import numpy as np

import ember
from ember import Tensor

from . import _functional_pil as F_pil
from . import _functional_tensor as F_t

try:
    from PIL import Image
except ImportError:  # pragma: no cover
    Image = None


class InterpolationMode(Enum):
    """Interpolation modes; the values are ember/PyTorch `interpolate` mode names."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    # PIL only
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


def _interpolation_modes_from_int(i):
    return {0: InterpolationMode.NEAREST, 2: InterpolationMode.BILINEAR, 3: InterpolationMode.BICUBIC,
            4: InterpolationMode.BOX, 5: InterpolationMode.HAMMING, 1: InterpolationMode.LANCZOS}[i]


pil_modes_mapping = {
    InterpolationMode.NEAREST: 0,
    InterpolationMode.BILINEAR: 2,
    InterpolationMode.BICUBIC: 3,
    InterpolationMode.NEAREST_EXACT: 0,
    InterpolationMode.BOX: 4,
    InterpolationMode.HAMMING: 5,
    InterpolationMode.LANCZOS: 1,
}

_is_pil_image = F_pil._is_pil_image


def _interp(interpolation):
    if isinstance(interpolation, int):
        return _interpolation_modes_from_int(interpolation)
    if not isinstance(interpolation, InterpolationMode):
        raise TypeError("Argument interpolation should be a InterpolationMode or a corresponding Pillow integer constant")
    return interpolation


def get_dimensions(img):
    """[channels, height, width] of a tensor or PIL image."""
    return F_t.get_dimensions(img) if isinstance(img, Tensor) else F_pil.get_dimensions(img)


def get_image_size(img):
    """[width, height]."""
    return F_t.get_image_size(img) if isinstance(img, Tensor) else F_pil.get_image_size(img)


def get_image_num_channels(img):
    return F_t.get_image_num_channels(img) if isinstance(img, Tensor) else F_pil.get_image_num_channels(img)


def _is_numpy(img):
    return isinstance(img, np.ndarray)


def to_tensor(pic):
    """PIL image or `HxWxC` ndarray → `CxHxW` tensor; uint8 data is scaled to float in [0, 1]."""
    if not (F_pil._is_pil_image(pic) or _is_numpy(pic)):
        raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    if _is_numpy(pic) and pic.ndim not in (2, 3):
        raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
    default_float = ember.get_default_dtype()
    if isinstance(pic, np.ndarray):
        if pic.ndim == 2:
            pic = pic[:, :, None]
        img = ember.from_numpy(np.ascontiguousarray(pic.transpose((2, 0, 1))))
        if img.dtype == ember.uint8:
            return img.to(default_float).div(255)
        return img
    mode_to_nptype = {"I": np.int32, "I;16" if sys.byteorder == "little" else "I;16B": np.int16, "F": np.float32}
    arr = np.array(pic, mode_to_nptype.get(pic.mode, np.uint8), copy=True)
    if pic.mode == "1":
        arr = 255 * arr
    arr = arr.reshape(pic.size[1], pic.size[0], F_pil.get_image_num_channels(pic))
    img = ember.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))
    if img.dtype == ember.uint8:
        return img.to(default_float).div(255)
    return img


def pil_to_tensor(pic):
    """PIL image → `CxHxW` tensor of the image's own dtype (no scaling)."""
    if not F_pil._is_pil_image(pic):
        raise TypeError(f"pic should be PIL Image. Got {type(pic)}")
    arr = np.array(pic, copy=True)
    if arr.dtype == np.uint16:  # 'I;16' images: ember has no uint16, values fit int32
        arr = arr.astype(np.int32)
    arr = arr.reshape(pic.size[1], pic.size[0], F_pil.get_image_num_channels(pic))
    return ember.from_numpy(np.ascontiguousarray(arr)).permute((2, 0, 1))


def convert_image_dtype(image, dtype=ember.float32):
    """Converts dtype and rescales values (uint8 255 ↔ float 1.0)."""
    if not isinstance(image, Tensor):
        raise TypeError("Input img should be Tensor Image")
    return F_t.convert_image_dtype(image, dtype)


def to_pil_image(pic, mode=None):
    """`CxHxW` tensor or `HxWxC` ndarray → PIL image (floats are scaled by 255 unless mode 'F')."""
    if isinstance(pic, Tensor):
        if pic.ndim == 3:
            pic = pic.permute((1, 2, 0))
        pic = pic.detach().cpu().contiguous().numpy()
    elif not isinstance(pic, np.ndarray):
        raise TypeError(f"pic should be Tensor or ndarray. Got {type(pic)}.")
    if pic.ndim == 2:
        pic = np.expand_dims(pic, 2)
    if pic.ndim != 3:
        raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
    if pic.shape[-1] > 4:
        raise ValueError(f"pic should not have > 4 channels. Got {pic.shape[-1]} channels.")
    npimg = pic
    if np.issubdtype(npimg.dtype, np.floating) and mode != "F":
        npimg = (npimg * 255).astype(np.uint8)
    if npimg.shape[2] == 1:
        expected = None
        npimg = npimg[:, :, 0]
        if npimg.dtype == np.uint8:
            expected = "L"
        elif npimg.dtype == np.int16:
            expected = "I;16" if sys.byteorder == "little" else "I;16B"
        elif npimg.dtype == np.int32:
            expected = "I"
        elif npimg.dtype == np.float32:
            expected = "F"
        if mode is not None and mode != expected:
            raise ValueError(f"Incorrect mode ({mode}) supplied for input type {np.dtype}. Should be {expected}")
        mode = expected
    elif npimg.shape[2] == 2:
        if mode is not None and mode not in ["LA"]:
            raise ValueError("Only modes ['LA'] are supported for 2D inputs")
        if mode is None and npimg.dtype == np.uint8:
            mode = "LA"
    elif npimg.shape[2] == 4:
        if mode is not None and mode not in ["RGBA", "CMYK", "RGBX"]:
            raise ValueError("Only modes ['RGBA', 'CMYK', 'RGBX'] are supported for 4D inputs")
        if mode is None and npimg.dtype == np.uint8:
            mode = "RGBA"
    else:
        if mode is not None and mode not in ["RGB", "YCbCr", "HSV"]:
            raise ValueError("Only modes ['RGB', 'YCbCr', 'HSV'] are supported for 3D inputs")
        if mode is None and npimg.dtype == np.uint8:
            mode = "RGB"
    if mode is None:
        raise TypeError(f"Input type {npimg.dtype} is not supported")
    if mode in ("I;16", "I;16B"):
        return Image.fromarray(npimg.astype("<u2" if mode == "I;16" else ">u2"), mode)
    if mode in ("RGB", "RGBA", "L", "LA", "F", "I") or npimg.ndim == 2:
        return Image.fromarray(npimg, mode)
    return Image.frombuffer(mode, (npimg.shape[1], npimg.shape[0]), np.ascontiguousarray(npimg).tobytes(), "raw", mode, 0, 1)


def normalize(tensor, mean, std, inplace=False):
    """`(x - mean) / std` per channel of a float `[..., C, H, W]` tensor."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
    return F_t.normalize(tensor, mean=mean, std=std, inplace=inplace)


def _compute_resized_output_size(image_size, size, max_size=None):
    h, w = image_size
    short, long = (w, h) if w <= h else (h, w)
    if len(size) == 1:
        requested = size[0]
        new_short, new_long = requested, int(requested * long / short)
        if max_size is not None:
            if max_size <= requested:
                raise ValueError(
                    f"max_size = {max_size} must be strictly greater than the requested "
                    f"size for the smaller edge size = {size}"
                )
            if new_long > max_size:
                new_short, new_long = int(max_size * new_short / new_long), max_size
        new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
    else:
        new_w, new_h = size[1], size[0]
    return [new_h, new_w]


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    """Resizes to `size` (h, w), or the smaller edge to `size` when it is an int / 1-sequence."""
    interpolation = _interp(interpolation)
    if isinstance(size, (list, tuple)):
        if len(size) not in [1, 2]:
            raise ValueError(f"Size must be an int or a 1 or 2 element tuple/list, not a {len(size)} element tuple/list")
        if max_size is not None and len(size) != 1:
            raise ValueError(
                "max_size should only be passed if size specifies the length of the smaller edge, "
                "i.e. size should be an int or a sequence of length 1 in torchscript mode."
            )
    _, image_height, image_width = get_dimensions(img)
    if isinstance(size, int):
        size = [size]
    output_size = _compute_resized_output_size((image_height, image_width), list(size), max_size)
    if [image_height, image_width] == output_size:
        return img
    if not isinstance(img, Tensor):
        if antialias is False:
            warnings.warn("Anti-alias option is always applied for PIL Image input. Argument antialias is ignored.")
        return F_pil.resize(img, size=output_size, interpolation=pil_modes_mapping[interpolation])
    if interpolation not in (InterpolationMode.NEAREST, InterpolationMode.NEAREST_EXACT,
                             InterpolationMode.BILINEAR, InterpolationMode.BICUBIC):
        raise ValueError(f"Interpolation mode '{interpolation.value}' is unsupported with Tensor input")
    return F_t.resize(img, size=output_size, interpolation=interpolation.value, antialias=antialias)


def pad(img, padding, fill=0, padding_mode="constant"):
    """Pads each border: int, (lr, tb) or (left, top, right, bottom); modes constant/edge/reflect/symmetric."""
    if not isinstance(img, Tensor):
        return F_pil.pad(img, padding=padding, fill=fill, padding_mode=padding_mode)
    return F_t.pad(img, padding=padding, fill=fill, padding_mode=padding_mode)


def crop(img, top, left, height, width):
    """Crops the box at (top, left); parts outside the image are zero."""
    if not isinstance(img, Tensor):
        return F_pil.crop(img, top, left, height, width)
    return F_t.crop(img, top, left, height, width)


def center_crop(img, output_size):
    """Crops the centre (padding with zeros when the image is smaller)."""
    if isinstance(output_size, numbers.Number):
        output_size = (int(output_size), int(output_size))
    elif isinstance(output_size, (tuple, list)) and len(output_size) == 1:
        output_size = (output_size[0], output_size[0])
    _, image_height, image_width = get_dimensions(img)
    crop_height, crop_width = output_size
    if crop_width > image_width or crop_height > image_height:
        padding_ltrb = [
            (crop_width - image_width) // 2 if crop_width > image_width else 0,
            (crop_height - image_height) // 2 if crop_height > image_height else 0,
            (crop_width - image_width + 1) // 2 if crop_width > image_width else 0,
            (crop_height - image_height + 1) // 2 if crop_height > image_height else 0,
        ]
        img = pad(img, padding_ltrb, fill=0)
        _, image_height, image_width = get_dimensions(img)
        if crop_width == image_width and crop_height == image_height:
            return img
    crop_top = int(round((image_height - crop_height) / 2.0))
    crop_left = int(round((image_width - crop_width) / 2.0))
    return crop(img, crop_top, crop_left, crop_height, crop_width)


def resized_crop(img, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR, antialias=True):
    img = crop(img, top, left, height, width)
    return resize(img, size, interpolation, antialias=antialias)


def hflip(img):
    return F_t.hflip(img) if isinstance(img, Tensor) else F_pil.hflip(img)


def vflip(img):
    return F_t.vflip(img) if isinstance(img, Tensor) else F_pil.vflip(img)


def _get_perspective_coeffs(startpoints, endpoints):
    if len(startpoints) != 4 or len(endpoints) != 4:
        raise ValueError(
            f"Please provide exactly four corners, got {len(startpoints)} startpoints and {len(endpoints)} endpoints."
        )
    a = np.zeros((8, 8), dtype=np.float64)
    for i, (p1, p2) in enumerate(zip(endpoints, startpoints)):
        a[2 * i] = [p1[0], p1[1], 1, 0, 0, 0, -p2[0] * p1[0], -p2[0] * p1[1]]
        a[2 * i + 1] = [0, 0, 0, p1[0], p1[1], 1, -p2[1] * p1[0], -p2[1] * p1[1]]
    b = np.asarray(startpoints, dtype=np.float64).reshape(8)
    res = np.linalg.lstsq(a, b, rcond=None)[0].astype(np.float32)
    return [float(v) for v in res]


def perspective(img, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR, fill=None):
    """Perspective transform taking `startpoints` (4 corners) to `endpoints`."""
    coeffs = _get_perspective_coeffs(startpoints, endpoints)
    interpolation = _interp(interpolation)
    if not isinstance(img, Tensor):
        return F_pil.perspective(img, coeffs, interpolation=pil_modes_mapping[interpolation], fill=fill)
    return F_t.perspective(img, coeffs, interpolation=interpolation.value, fill=fill)


def five_crop(img, size):
    if isinstance(size, numbers.Number):
        size = (int(size), int(size))
    elif isinstance(size, (tuple, list)) and len(size) == 1:
        size = (size[0], size[0])
    if len(size) != 2:
        raise ValueError("Please provide only two dimensions (h, w) for size.")
    _, image_height, image_width = get_dimensions(img)
    crop_height, crop_width = size
    if crop_width > image_width or crop_height > image_height:
        raise ValueError(f"Requested crop size {size} is bigger than input size {(image_height, image_width)}")
    tl = crop(img, 0, 0, crop_height, crop_width)
    tr = crop(img, 0, image_width - crop_width, crop_height, crop_width)
    bl = crop(img, image_height - crop_height, 0, crop_height, crop_width)
    br = crop(img, image_height - crop_height, image_width - crop_width, crop_height, crop_width)
    center = center_crop(img, [crop_height, crop_width])
    return tl, tr, bl, br, center


def ten_crop(img, size, vertical_flip=False):
    if isinstance(size, numbers.Number):
        size = (int(size), int(size))
    elif isinstance(size, (tuple, list)) and len(size) == 1:
        size = (size[0], size[0])
    if len(size) != 2:
        raise ValueError("Please provide only two dimensions (h, w) for size.")
    first = five_crop(img, size)
    img = vflip(img) if vertical_flip else hflip(img)
    return first + five_crop(img, size)


def adjust_brightness(img, brightness_factor):
    if not isinstance(img, Tensor):
        return F_pil.adjust_brightness(img, brightness_factor)
    return F_t.adjust_brightness(img, brightness_factor)


def adjust_contrast(img, contrast_factor):
    if not isinstance(img, Tensor):
        return F_pil.adjust_contrast(img, contrast_factor)
    return F_t.adjust_contrast(img, contrast_factor)


def adjust_saturation(img, saturation_factor):
    if not isinstance(img, Tensor):
        return F_pil.adjust_saturation(img, saturation_factor)
    return F_t.adjust_saturation(img, saturation_factor)


def adjust_hue(img, hue_factor):
    if not isinstance(img, Tensor):
        return F_pil.adjust_hue(img, hue_factor)
    return F_t.adjust_hue(img, hue_factor)


def adjust_gamma(img, gamma, gain=1):
    if not isinstance(img, Tensor):
        return F_pil.adjust_gamma(img, gamma, gain)
    return F_t.adjust_gamma(img, gamma, gain)


def _get_inverse_affine_matrix(center, angle, translate, scale, shear, inverted=True):
    # Affine matrix M = T * C * RotateScaleShear * C^-1 (T translation, C centre); returns M^-1
    # (the map from output to input pixels) unless inverted=False.
    rot = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    if inverted:
        m = [x / scale for x in [d, -b, 0.0, -c, a, 0.0]]
        m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty)
        m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty)
        m[2] += cx
        m[5] += cy
    else:
        m = [x * scale for x in [a, b, 0.0, c, d, 0.0]]
        m[2] += m[0] * -cx + m[1] * -cy
        m[5] += m[3] * -cx + m[4] * -cy
        m[2] += cx + tx
        m[5] += cy + ty
    return m


def rotate(img, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=None):
    """Rotates counter-clockwise by `angle` degrees."""
    interpolation = _interp(interpolation)
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError("Argument center should be a sequence")
    if not isinstance(img, Tensor):
        return F_pil.rotate(img, angle=angle, interpolation=pil_modes_mapping[interpolation], expand=expand,
                            center=center, fill=fill)
    center_f = [0.0, 0.0]
    if center is not None:
        _, height, width = get_dimensions(img)
        center_f = [1.0 * (c - s * 0.5) for c, s in zip(center, [width, height])]
    matrix = _get_inverse_affine_matrix(center_f, -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
    return F_t.rotate(img, matrix=matrix, interpolation=interpolation.value, expand=expand, fill=fill)


def _affine_args(angle, translate, scale, shear, center):
    """TorchVision's checks of `affine`'s arguments: (angle, translate, shear as two values, center)."""
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if not isinstance(translate, (list, tuple)):
        raise TypeError("Argument translate should be a sequence")
    if len(translate) != 2:
        raise ValueError("Argument translate should be a sequence of length 2")
    if scale <= 0.0:
        raise ValueError("Argument scale should be positive")
    if not isinstance(shear, (numbers.Number, list, tuple)):
        raise TypeError("Shear should be either a single value or a sequence of two values")
    shear = [shear, 0.0] if isinstance(shear, numbers.Number) else list(shear)
    if len(shear) == 1:
        shear = [shear[0], shear[0]]
    if len(shear) != 2:
        raise ValueError(f"Shear should be a sequence containing two values. Got {shear}")
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError("Argument center should be a sequence")
    return float(angle), [float(t) for t in translate], shear, center


def affine(img, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST, fill=None, center=None):
    """Affine transform keeping the centre fixed: rotation (clockwise degrees), translation, scale, shear."""
    interpolation = _interp(interpolation)
    angle, translate, shear, center = _affine_args(angle, translate, scale, shear, center)
    _, height, width = get_dimensions(img)
    if not isinstance(img, Tensor):
        if center is None:
            center = [width * 0.5, height * 0.5]
        matrix = _get_inverse_affine_matrix(center, angle, translate, scale, shear)
        return F_pil.affine(img, matrix=matrix, interpolation=pil_modes_mapping[interpolation], fill=fill)
    center_f = [0.0, 0.0]
    if center is not None:
        center_f = [1.0 * (c - s * 0.5) for c, s in zip(center, [width, height])]
    translate_f = [1.0 * t for t in translate]
    matrix = _get_inverse_affine_matrix(center_f, angle, translate_f, scale, shear)
    return F_t.affine(img, matrix=matrix, interpolation=interpolation.value, fill=fill)


def to_grayscale(img, num_output_channels=1):
    if F_pil._is_pil_image(img):
        return F_pil.to_grayscale(img, num_output_channels)
    raise TypeError("Input should be PIL Image")


def rgb_to_grayscale(img, num_output_channels=1):
    if not isinstance(img, Tensor):
        return F_pil.to_grayscale(img, num_output_channels)
    return F_t.rgb_to_grayscale(img, num_output_channels)


def erase(img, i, j, h, w, v, inplace=False):
    """Sets the box (i, j, h, w) of a tensor image to `v`."""
    if not isinstance(img, Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(img)}")
    return F_t.erase(img, i, j, h, w, v, inplace=inplace)


def gaussian_blur(img, kernel_size, sigma=None):
    """Gaussian blur with reflect padding; `sigma` defaults to `0.15 * ksize + 0.35`."""
    if not isinstance(kernel_size, (int, list, tuple)):
        raise TypeError(f"kernel_size should be int or a sequence of integers. Got {type(kernel_size)}")
    if isinstance(kernel_size, int):
        kernel_size = [kernel_size, kernel_size]
    if len(kernel_size) != 2:
        raise ValueError(f"If kernel_size is a sequence its length should be 2. Got {len(kernel_size)}")
    for k in kernel_size:
        if k % 2 == 0 or k < 0:
            raise ValueError(f"kernel_size should have odd and positive integers. Got {kernel_size}")
    if sigma is None:
        sigma = [k * 0.15 + 0.35 for k in kernel_size]
    if not isinstance(sigma, (int, float, list, tuple)):
        raise TypeError(f"sigma should be either float or sequence of floats. Got {type(sigma)}")
    if isinstance(sigma, (int, float)):
        sigma = [float(sigma), float(sigma)]
    if isinstance(sigma, (list, tuple)) and len(sigma) == 1:
        sigma = [sigma[0], sigma[0]]
    if len(sigma) != 2:
        raise ValueError(f"If sigma is a sequence, its length should be 2. Got {len(sigma)}")
    for s in sigma:
        if s <= 0.0:
            raise ValueError(f"sigma should have positive values. Got {sigma}")
    t_img = img
    if not isinstance(img, Tensor):
        if not F_pil._is_pil_image(img):
            raise TypeError(f"img should be PIL Image or Tensor. Got {type(img)}")
        t_img = pil_to_tensor(img)
    out = F_t.gaussian_blur(t_img, list(kernel_size), list(sigma))
    if not isinstance(img, Tensor):
        out = to_pil_image(out, mode=img.mode)
    return out


def invert(img):
    return F_t.invert(img) if isinstance(img, Tensor) else F_pil.invert(img)


def posterize(img, bits):
    if not 0 <= bits <= 8:
        raise ValueError(f"The number if bits should be between 0 and 8. Got {bits}")
    return F_t.posterize(img, bits) if isinstance(img, Tensor) else F_pil.posterize(img, bits)


def solarize(img, threshold):
    return F_t.solarize(img, threshold) if isinstance(img, Tensor) else F_pil.solarize(img, threshold)


def adjust_sharpness(img, sharpness_factor):
    if not isinstance(img, Tensor):
        return F_pil.adjust_sharpness(img, sharpness_factor)
    return F_t.adjust_sharpness(img, sharpness_factor)


def autocontrast(img):
    return F_t.autocontrast(img) if isinstance(img, Tensor) else F_pil.autocontrast(img)


def equalize(img):
    return F_t.equalize(img) if isinstance(img, Tensor) else F_pil.equalize(img)


def elastic_transform(img, displacement, interpolation=InterpolationMode.BILINEAR, fill=None):
    if isinstance(interpolation, int):
        warnings.warn("Argument interpolation should be of type InterpolationMode instead of int. "
                      "Please, use InterpolationMode enum.")
        interpolation = _interpolation_modes_from_int(interpolation)
    if not isinstance(displacement, Tensor):
        raise TypeError("Argument displacement should be a Tensor")
    t_img = img
    if not isinstance(img, Tensor):
        if not F_pil._is_pil_image(img):
            raise TypeError(f"img should be PIL Image or Tensor. Got {type(img)}")
        t_img = pil_to_tensor(img)
    shape = (1,) + tuple(t_img.shape[-2:]) + (2,)
    if shape != tuple(displacement.shape):
        raise ValueError(f"Argument displacement shape should be {shape}, but given {displacement.shape}")
    out = F_t.elastic_transform(t_img, displacement, interpolation=interpolation.value, fill=fill)
    if not isinstance(img, Tensor):
        out = to_pil_image(out, mode=img.mode)
    return out
