"""The v1 names TorchVision keeps in v2.functional (deprecated there, kept for old code)."""
import warnings

import ember

from ... import functional as F1
from ._meta import get_dimensions, get_num_channels, to_dtype
from ._misc import rgb_to_grayscale


def to_tensor(inpt):
    """v1's `to_tensor` (PIL image / ndarray → float tensor in [0, 1])."""
    warnings.warn("The function `to_tensor(...)` is deprecated and will be removed in a future release. "
                  "Instead, please use `to_image(...)` followed by `to_dtype(..., dtype=ember.float32, scale=True)`.")
    return F1.to_tensor(inpt)


def get_image_size(inpt):
    """[width, height] (the v1 order)."""
    _, height, width = get_dimensions(inpt)
    return [width, height]


get_image_num_channels = get_num_channels


def convert_image_dtype(image, dtype=ember.float32):
    """`to_dtype(image, dtype, scale=True)`."""
    return to_dtype(image, dtype, scale=True)


def to_grayscale(inpt, num_output_channels=1):
    """`rgb_to_grayscale`."""
    return rgb_to_grayscale(inpt, num_output_channels=num_output_channels)
