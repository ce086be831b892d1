"""`torchvision.transforms.v2.functional`: each functional dispatches on its input's type.

Plain tensors are images; `tv_tensors.Image`/`Video`/`Mask`/`BoundingBoxes` get their own kernel
(the `*_image`, `*_mask`, `*_bounding_boxes` functions, also callable directly); a type without a
kernel raises TypeError. `register_kernel` adds kernels for custom TVTensor subclasses.
"""
from ...functional import InterpolationMode
from ._deprecated import convert_image_dtype, get_image_num_channels, get_image_size, to_grayscale, to_tensor
from ._geometry import *  # noqa: F401,F403
from ._geometry import __all__ as _geometry_all
from ._meta import (
    clamp_bounding_boxes, convert_bounding_box_format, get_dimensions, get_num_channels, get_num_frames, get_size,
    to_dtype, to_dtype_image,
)
from ._misc import (
    adjust_brightness, adjust_contrast, adjust_gamma, adjust_hue, adjust_saturation, adjust_sharpness, autocontrast,
    equalize, erase, erase_image, gaussian_blur, gaussian_blur_image, gaussian_noise, gaussian_noise_image, jpeg,
    jpeg_image, grayscale_to_rgb, grayscale_to_rgb_image, invert,
    normalize, normalize_image, permute_channels, permute_channels_image, posterize, rgb_to_grayscale,
    sanitize_bounding_boxes, solarize, uniform_temporal_subsample, uniform_temporal_subsample_video,
)
from ._type_conversion import pil_to_tensor, to_image, to_pil_image
from ._utils import is_pure_tensor, register_kernel

# TorchVision v2 functionals not built here (vision/README.md lists them).
_MISSING = {"clamp_keypoints", "convert_bounding_boxes_to_points"}


def __getattr__(name):
    if name in _MISSING:
        raise NotImplementedError(
            f"embervision.transforms.v2.functional.{name} is not implemented yet (see vision/README.md)")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = list(_geometry_all) + [
    "InterpolationMode", "convert_image_dtype", "get_image_num_channels", "get_image_size", "to_grayscale",
    "to_tensor", "adjust_brightness", "adjust_contrast", "adjust_gamma", "adjust_hue", "adjust_saturation",
    "adjust_sharpness", "autocontrast", "clamp_bounding_boxes", "convert_bounding_box_format", "equalize", "erase",
    "erase_image", "gaussian_blur", "gaussian_blur_image", "get_dimensions", "get_num_channels", "get_num_frames",
    "gaussian_noise", "gaussian_noise_image", "jpeg", "jpeg_image", "get_size", "grayscale_to_rgb", "grayscale_to_rgb_image", "invert", "is_pure_tensor", "normalize",
    "normalize_image", "permute_channels", "permute_channels_image", "pil_to_tensor", "posterize",
    "register_kernel", "rgb_to_grayscale", "sanitize_bounding_boxes", "solarize", "to_dtype", "to_dtype_image",
    "to_image", "to_pil_image", "uniform_temporal_subsample", "uniform_temporal_subsample_video",
]
