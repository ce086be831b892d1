"""Colour, normalisation, blur, erasing and bounding-box sanitising functionals (images and videos only,
except `sanitize_bounding_boxes`)."""
import io

import PIL.Image

import ember
from ember import Tensor

from ... import functional as F1
from .... import tv_tensors
from ....io import decode_jpeg, encode_jpeg
from ._meta import _box_metadata, _to_xyxy
from ._utils import IMAGE_TYPES, PILImage, _get_kernel, _register


def _color_functional(name, v1_op, doc):
    """A functional `name(inpt, factor)` whose image/video/PIL kernel is the v1 op."""

    def functional(inpt, *args, **kwargs):
        return _get_kernel(functional, type(inpt))(inpt, *args, **kwargs)

    functional.__name__ = functional.__qualname__ = name
    functional.__doc__ = doc
    _register(functional, *IMAGE_TYPES, PILImage)(v1_op)
    return functional


adjust_brightness = _color_functional("adjust_brightness", F1.adjust_brightness,
                                      "Multiplies by `brightness_factor` (0 gives black).")
adjust_contrast = _color_functional("adjust_contrast", F1.adjust_contrast,
                                    "Blends with the mean grey level (0 gives solid grey).")
adjust_saturation = _color_functional("adjust_saturation", F1.adjust_saturation,
                                      "Blends with the greyscale image (0 gives greyscale).")
adjust_hue = _color_functional("adjust_hue", F1.adjust_hue, "Shifts hue by `hue_factor` in [-0.5, 0.5].")
adjust_gamma = _color_functional("adjust_gamma", F1.adjust_gamma, "`gain * x ** gamma` on [0, 1] values.")
adjust_sharpness = _color_functional("adjust_sharpness", F1.adjust_sharpness,
                                     "Blends with a smoothed image (0 blurs, 2 doubles the sharpness).")
rgb_to_grayscale = _color_functional("rgb_to_grayscale", F1.rgb_to_grayscale,
                                     "ITU-R 601-2 luma, repeated to `num_output_channels` (1 or 3).")
invert = _color_functional("invert", F1.invert, "`max - x` for each value.")
posterize = _color_functional("posterize", F1.posterize, "Keeps the top `bits` bits of uint8 values.")
solarize = _color_functional("solarize", F1.solarize, "Inverts the values at or above `threshold`.")
autocontrast = _color_functional("autocontrast", F1.autocontrast, "Stretches each channel to the full range.")
equalize = _color_functional("equalize", F1.equalize, "Equalises each channel's histogram (uint8).")


def permute_channels(inpt, permutation):
    """Reorders the channels: output channel i is input channel `permutation[i]`."""
    return _get_kernel(permute_channels, type(inpt))(inpt, permutation=permutation)


@_register(permute_channels, *IMAGE_TYPES)
def permute_channels_image(image, permutation):
    index = ember.as_tensor(permutation, dtype=ember.int64)
    return image.index_select(-3, index)


@_register(permute_channels, PILImage)
def _permute_channels_image_pil(image, permutation):
    return F1.to_pil_image(permute_channels_image(F1.pil_to_tensor(image), permutation))


def grayscale_to_rgb(inpt):
    """One-channel images → three equal channels (three-channel images are returned as they are)."""
    return _get_kernel(grayscale_to_rgb, type(inpt))(inpt)


@_register(grayscale_to_rgb, *IMAGE_TYPES)
def grayscale_to_rgb_image(image):
    if image.shape[-3] >= 3:
        return image
    return image.expand(*image.shape[:-3], 3, *image.shape[-2:]).contiguous()


@_register(grayscale_to_rgb, PILImage)
def _grayscale_to_rgb_image_pil(image):
    return image.convert("RGB")


def normalize(inpt, mean, std, inplace=False):
    """`(x - mean) / std` per channel of a float image or video."""
    return _get_kernel(normalize, type(inpt))(inpt, mean=mean, std=std, inplace=inplace)


@_register(normalize, *IMAGE_TYPES)
def normalize_image(image, mean, std, inplace=False):
    return F1.normalize(image, mean, std, inplace)


def gaussian_blur(inpt, kernel_size, sigma=None):
    """Gaussian blur with reflect padding; `sigma` defaults to `0.15 * ksize + 0.35`."""
    return _get_kernel(gaussian_blur, type(inpt))(inpt, kernel_size=kernel_size, sigma=sigma)


@_register(gaussian_blur, *IMAGE_TYPES, PILImage)
def gaussian_blur_image(image, kernel_size, sigma=None):
    if not isinstance(image, Tensor) or image.ndim <= 4:
        return F1.gaussian_blur(image, kernel_size, sigma)
    shape = list(image.shape)
    return F1.gaussian_blur(image.reshape([-1] + shape[-3:]), kernel_size, sigma).reshape(shape)


def erase(inpt, i, j, h, w, v, inplace=False):
    """Sets the box (i, j, h, w) of an image or video to `v`."""
    return _get_kernel(erase, type(inpt))(inpt, i=i, j=j, h=h, w=w, v=v, inplace=inplace)


@_register(erase, *IMAGE_TYPES)
def erase_image(image, i, j, h, w, v, inplace=False):
    return F1.erase(image, i, j, h, w, v, inplace)


@_register(erase, PILImage)
def _erase_image_pil(image, i, j, h, w, v, inplace=False):
    tensor = F1.pil_to_tensor(image)
    return F1.to_pil_image(erase_image(tensor, i, j, h, w, v), mode=image.mode)


def sanitize_bounding_boxes(bounding_boxes, format=None, canvas_size=None, min_size=1.0, min_area=1.0):
    """(valid boxes, boolean mask of those kept): drops boxes smaller than `min_size` on a side, under
    `min_area`, or reaching outside the canvas."""
    boxes, format, canvas_size = _box_metadata(bounding_boxes, "sanitize_bounding_boxes", format, canvas_size)
    valid = _valid_boxes_mask(boxes, format, canvas_size, min_size, min_area)
    kept = bounding_boxes[valid]
    if isinstance(bounding_boxes, tv_tensors.BoundingBoxes):
        kept = tv_tensors.wrap(kept, like=bounding_boxes)
    return kept, valid


def _valid_boxes_mask(boxes, format, canvas_size, min_size, min_area):
    xyxy = _to_xyxy(boxes, format)
    if xyxy.numel() == 0:
        return ember.zeros(xyxy.shape[0], dtype=ember.bool)
    x1, y1, x2, y2 = xyxy.unbind(-1)
    widths, heights = x2 - x1, y2 - y1
    height, width = canvas_size
    valid = (widths >= min_size) & (heights >= min_size) & (widths * heights >= min_area)
    valid = valid & (xyxy >= 0).all(dim=-1) & (x1 <= width) & (x2 <= width) & (y1 <= height) & (y2 <= height)
    return valid


def uniform_temporal_subsample(inpt, num_samples):
    """`num_samples` frames evenly spaced over a video `[..., T, C, H, W]` (first and last included)."""
    return _get_kernel(uniform_temporal_subsample, type(inpt))(inpt, num_samples=num_samples)


@_register(uniform_temporal_subsample, Tensor, tv_tensors.Video)
def uniform_temporal_subsample_video(video, num_samples):
    t_max = video.shape[-4] - 1
    indices = ember.linspace(0, t_max, num_samples).to(ember.int64)
    return video.index_select(-4, indices)


def gaussian_noise(inpt, mean=0.0, sigma=0.1, clip=True):
    """Adds normal noise (`mean`, `sigma`) to float images and videos, clipped to [0, 1] unless `clip=False`."""
    return _get_kernel(gaussian_noise, type(inpt))(inpt, mean=mean, sigma=sigma, clip=clip)


@_register(gaussian_noise, *IMAGE_TYPES)
def gaussian_noise_image(image, mean=0.0, sigma=0.1, clip=True):
    if not image.is_floating_point():
        raise ValueError(f"Input tensor is expected to be in float dtype, got dtype={image.dtype}")
    if sigma < 0:
        raise ValueError(f"sigma shouldn't be negative. Got {sigma}")
    noisy = image + (mean + ember.randn(*image.shape, dtype=image.dtype) * sigma)
    return noisy.clamp(0, 1) if clip else noisy


def jpeg(inpt, quality):
    """Round-trips uint8 images through JPEG compression at `quality` (1-100)."""
    return _get_kernel(jpeg, type(inpt))(inpt, quality=quality)


def _check_quality(quality):
    if not 1 <= quality <= 100:
        raise ValueError(f"quality must be an integer from 1 to 100, got quality={quality}")


@_register(jpeg, *IMAGE_TYPES)
def jpeg_image(image, quality):
    _check_quality(quality)
    if image.dtype != ember.uint8:
        raise TypeError(f"Input image should be of dtype uint8, but got {image.dtype}")
    if image.ndim == 3:
        return decode_jpeg(encode_jpeg(image, quality=quality))
    shape = list(image.shape)
    frames = list(image.reshape([-1] + shape[-3:]).unbind(0))
    return ember.stack(decode_jpeg(encode_jpeg(frames, quality=quality))).reshape(shape)


@_register(jpeg, PILImage)
def _jpeg_image_pil(image, quality):
    _check_quality(quality)
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=quality)
    buffer.seek(0)
    return PIL.Image.open(buffer).convert(image.mode)
