"""PIL kernels of `embervision.transforms.functional`: thin calls into Pillow, as TorchVision's."""
import numbers

import numpy as np

try:
    from PIL import Image, ImageEnhance, ImageOps
except ImportError:  # pragma: no cover - Pillow is a dependency, but keep tensors usable without it
    Image = ImageEnhance = ImageOps = None


def _is_pil_image(img):
    return Image is not None and isinstance(img, Image.Image)


def _check(img):
    if not _is_pil_image(img):
        raise TypeError(f"img should be PIL Image. Got {type(img)}")


def get_dimensions(img):
    if _is_pil_image(img):
        width, height = img.size
        return [len(img.getbands()), height, width]
    raise TypeError(f"Unexpected type {type(img)}")


def get_image_size(img):
    if _is_pil_image(img):
        return list(img.size)
    raise TypeError(f"Unexpected type {type(img)}")


def get_image_num_channels(img):
    if _is_pil_image(img):
        return len(img.getbands())
    raise TypeError(f"Unexpected type {type(img)}")


def hflip(img):
    _check(img)
    return img.transpose(Image.FLIP_LEFT_RIGHT)


def vflip(img):
    _check(img)
    return img.transpose(Image.FLIP_TOP_BOTTOM)


def _enhance(kind, img, factor):
    _check(img)
    return getattr(ImageEnhance, kind)(img).enhance(factor)


def adjust_brightness(img, brightness_factor):
    return _enhance("Brightness", img, brightness_factor)


def adjust_contrast(img, contrast_factor):
    return _enhance("Contrast", img, contrast_factor)


def adjust_saturation(img, saturation_factor):
    return _enhance("Color", img, saturation_factor)


def adjust_sharpness(img, sharpness_factor):
    return _enhance("Sharpness", img, sharpness_factor)


def adjust_hue(img, hue_factor):
    if not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    _check(img)
    mode = img.mode
    if mode in {"L", "1", "I", "F"}:
        return img
    h, s, v = img.convert("HSV").split()
    np_h = np.array(h, dtype=np.uint8)
    # uint8 addition wraps around, which is the hue rotation
    np_h += np.int32(hue_factor * 255).astype(np.uint8)
    h = Image.fromarray(np_h, "L")
    return Image.merge("HSV", (h, s, v)).convert(mode)


def adjust_gamma(img, gamma, gain=1.0):
    _check(img)
    if gamma < 0:
        raise ValueError("Gamma should be a non-negative real number")
    mode = img.mode
    img = img.convert("RGB")
    table = [int((255 + 1 - 1e-3) * gain * pow(v / 255.0, gamma)) for v in range(256)] * 3
    return img.point(table).convert(mode)


def _parse_fill(fill, img, name="fillcolor"):
    channels = get_image_num_channels(img)
    if fill is None:
        fill = 0
    if isinstance(fill, (int, float)) and channels > 1:
        fill = tuple([fill] * channels)
    if isinstance(fill, (list, tuple)):
        if len(fill) == 1:
            fill = fill * channels
        elif len(fill) != channels:
            raise ValueError(
                "The number of elements in 'fill' does not match the number of channels of the image "
                f"({len(fill)} != {channels})"
            )
        fill = tuple(fill)
    if img.mode != "F":
        fill = tuple(int(x) for x in fill) if isinstance(fill, (list, tuple)) else int(fill)
    return {name: fill}


def pad(img, padding, fill=0, padding_mode="constant"):
    _check(img)
    if not isinstance(padding, (numbers.Number, tuple, list)):
        raise TypeError("Got inappropriate padding arg")
    if fill is not None and not isinstance(fill, (numbers.Number, tuple, list)):
        raise TypeError("Got inappropriate fill arg")
    if not isinstance(padding_mode, str):
        raise TypeError("Got inappropriate padding_mode arg")
    if isinstance(padding, list):
        padding = tuple(padding)
    if isinstance(padding, tuple) and len(padding) not in [1, 2, 4]:
        raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element tuple")
    if isinstance(padding, tuple) and len(padding) == 1:
        padding = padding[0]
    if padding_mode not in ["constant", "edge", "reflect", "symmetric"]:
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
    if padding_mode == "constant":
        opts = _parse_fill(fill, img, name="fill")
        if img.mode == "P":
            palette = img.getpalette()
            out = ImageOps.expand(img, border=padding, **opts)
            out.putpalette(palette)
            return out
        return ImageOps.expand(img, border=padding, **opts)
    if isinstance(padding, int):
        p = [padding] * 4
    elif len(padding) == 2:
        p = [padding[0], padding[1], padding[0], padding[1]]
    else:
        p = list(padding)
    crop_l, crop_t, crop_r, crop_b = [-min(x, 0) for x in p]
    if crop_l or crop_t or crop_r or crop_b:
        img = img.crop((crop_l, crop_t, img.width - crop_r, img.height - crop_b))
    pl, pt, pr, pb = [max(x, 0) for x in p]
    palette = img.getpalette() if img.mode == "P" else None
    arr = np.asarray(img)
    widths = ((pt, pb), (pl, pr)) + (((0, 0),) if arr.ndim == 3 else ())
    out = Image.fromarray(np.pad(arr, widths, mode=padding_mode))
    if palette is not None:
        out.putpalette(palette)
    return out


def crop(img, top, left, height, width):
    _check(img)
    return img.crop((left, top, left + width, top + height))


def resize(img, size, interpolation=2):
    _check(img)
    if not (isinstance(size, list) and len(size) == 2):
        raise TypeError(f"Got inappropriate size arg: {size}")
    return img.resize(tuple(size[::-1]), interpolation)


def affine(img, matrix, interpolation=0, fill=None):
    _check(img)
    return img.transform(img.size, Image.AFFINE, matrix, interpolation, **_parse_fill(fill, img))


def rotate(img, angle, interpolation=0, expand=False, center=None, fill=None):
    _check(img)
    return img.rotate(angle, interpolation, expand, center, **_parse_fill(fill, img))


def perspective(img, perspective_coeffs, interpolation=3, fill=None):
    _check(img)
    return img.transform(img.size, Image.PERSPECTIVE, perspective_coeffs, interpolation, **_parse_fill(fill, img))


def to_grayscale(img, num_output_channels):
    _check(img)
    if num_output_channels == 1:
        return img.convert("L")
    if num_output_channels == 3:
        g = np.array(img.convert("L"), dtype=np.uint8)
        return Image.fromarray(np.dstack([g, g, g]), "RGB")
    raise ValueError("num_output_channels should be either 1 or 3")


def invert(img):
    _check(img)
    return ImageOps.invert(img)


def posterize(img, bits):
    _check(img)
    return ImageOps.posterize(img, bits)


def solarize(img, threshold):
    _check(img)
    return ImageOps.solarize(img, threshold)


def autocontrast(img):
    _check(img)
    return ImageOps.autocontrast(img)


def equalize(img):
    _check(img)
    return ImageOps.equalize(img)
