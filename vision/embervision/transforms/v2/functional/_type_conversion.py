"""Conversions between PIL images, numpy arrays, plain tensors and `tv_tensors.Image`."""
import numpy as np

import ember
from ember import Tensor

from ... import functional as F1
from .... import tv_tensors
from ._utils import PILImage


def to_image(inpt):
    """A `tv_tensors.Image` from a plain tensor, an `HxWxC` numpy array or a PIL image (values unchanged)."""
    if isinstance(inpt, np.ndarray):
        output = ember.from_numpy(np.ascontiguousarray(np.atleast_3d(inpt))).permute((2, 0, 1)).contiguous()
    elif isinstance(inpt, PILImage):
        output = F1.pil_to_tensor(inpt)
    elif isinstance(inpt, Tensor):
        output = inpt
    else:
        raise TypeError(
            f"Input can either be a pure Tensor, a numpy array, or a PIL image, but got {type(inpt)} instead.")
    return tv_tensors.Image(output)


pil_to_tensor = F1.pil_to_tensor
to_pil_image = F1.to_pil_image
