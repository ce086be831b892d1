"""Type conversion, dtype, normalisation, blur and bounding-box housekeeping v2 transforms."""
import numbers
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

import ember
from ember import Tensor

from ... import tv_tensors
from ...tv_tensors import TVTensor, _parse_format, _pure
from .. import functional as F1
from ..transforms import _uniform
from . import functional as F
from ._transform import Transform, _setup_size, get_bounding_boxes, tree_flatten, tree_unflatten
from .functional._misc import _valid_boxes_mask
from .functional._utils import PILImage, is_pure_tensor


class Identity(Transform):
    """Returns its inputs unchanged."""

    def transform(self, inpt, params):
        return inpt


class Lambda(Transform):
    """Applies `lambd` to the inputs of `types` (every input when none are given)."""

    def __init__(self, lambd, *types):
        super().__init__()
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {repr(type(lambd).__name__)}")
        self.lambd = lambd
        self.types = types or (object,)
        self._transformed_types = self.types

    def transform(self, inpt, params):
        return self.lambd(inpt)

    def extra_repr(self):
        names = ", ".join(t.__name__ for t in self.types)
        return f"{getattr(self.lambd, '__name__', type(self.lambd).__name__)}, types=[{names}]"


# ---- type conversion ----

class ToImage(Transform):
    """Plain tensors, numpy `HxWxC` arrays and PIL images → `tv_tensors.Image` (values unchanged)."""

    _transformed_types = (is_pure_tensor, PILImage, np.ndarray)

    def transform(self, inpt, params):
        return F.to_image(inpt)


class PILToTensor(Transform):
    """PIL images → plain `CxHxW` tensors of the image's dtype."""

    _transformed_types = (PILImage,)

    def transform(self, inpt, params):
        return F.pil_to_tensor(inpt)


class ToPILImage(Transform):
    """Images (tensors, tv_tensors or numpy arrays) → PIL images in `mode`."""

    _transformed_types = (is_pure_tensor, tv_tensors.Image, np.ndarray)

    def __init__(self, mode=None):
        super().__init__()
        self.mode = mode

    def transform(self, inpt, params):
        return F.to_pil_image(_pure(inpt), mode=self.mode)


class ToPureTensor(Transform):
    """Every tv_tensor → a plain tensor (same memory); metadata is dropped."""

    _transformed_types = (TVTensor,)

    def transform(self, inpt, params):
        return _pure(inpt)


class ToTensor(Transform):
    """v1's `ToTensor` (PIL images / ndarrays → float tensors in [0, 1]); deprecated in TorchVision for
    `Compose([ToImage(), ToDtype(float32, scale=True)])`."""

    _transformed_types = (PILImage, np.ndarray)

    def __init__(self):
        warnings.warn("The transform `ToTensor()` is deprecated and will be removed in a future release. Instead, "
                      "please use `v2.Compose([v2.ToImage(), v2.ToDtype(ember.float32, scale=True)])`.")
        super().__init__()

    def transform(self, inpt, params):
        return F1.to_tensor(inpt)


class UniformTemporalSubsample(Transform):
    """Keeps `num_samples` evenly spaced frames of videos `[..., T, C, H, W]`."""

    _transformed_types = (is_pure_tensor, tv_tensors.Video)

    def __init__(self, num_samples):
        super().__init__()
        self.num_samples = num_samples

    def transform(self, inpt, params):
        return self._call_kernel(F.uniform_temporal_subsample, inpt, self.num_samples)


class LinearTransformation(Transform):
    """Flattens each image `(C, H, W)`, subtracts `mean_vector` and multiplies by
    `transformation_matrix` (e.g. ZCA whitening)."""

    _transformed_types = (is_pure_tensor, tv_tensors.Image, tv_tensors.Video)

    def __init__(self, transformation_matrix, mean_vector):
        super().__init__()
        if transformation_matrix.shape[0] != transformation_matrix.shape[1]:
            raise ValueError("transformation_matrix should be square. Got "
                             f"{tuple(transformation_matrix.shape)} rectangular matrix.")
        if mean_vector.shape[0] != transformation_matrix.shape[0]:
            raise ValueError(f"mean_vector should have the same length {mean_vector.shape[0]} as any one of the "
                             f"dimensions of the transformation_matrix [{tuple(transformation_matrix.shape)}]")
        if transformation_matrix.dtype != mean_vector.dtype:
            raise ValueError(f"Input tensors should have the same dtype. Got {transformation_matrix.dtype} and "
                             f"{mean_vector.dtype}")
        self.transformation_matrix = transformation_matrix
        self.mean_vector = mean_vector

    def check_inputs(self, flat_inputs):
        if any(isinstance(inpt, PILImage) for inpt in flat_inputs):
            raise TypeError(f"{type(self).__name__}() does not support PIL images.")

    def transform(self, inpt, params):
        shape = inpt.shape
        n = shape[-3] * shape[-2] * shape[-1]
        if n != self.transformation_matrix.shape[0]:
            raise ValueError("Input tensor and transformation matrix have incompatible shape."
                             f"[{shape[-3]} x {shape[-2]} x {shape[-1]}] != {self.transformation_matrix.shape[0]}")
        flat = _pure(inpt).reshape(-1, n) - self.mean_vector
        output = ember.mm(flat, self.transformation_matrix.to(flat.dtype)).reshape(shape)
        return tv_tensors.wrap(output, like=inpt) if isinstance(inpt, TVTensor) else output


# ---- dtype ----

class ToDtype(Transform):
    """Converts dtypes. A single dtype applies to images and videos (and the plain-tensor image); a dict
    maps tv_tensor types (or "others") to dtypes, None meaning "leave as is". `scale=True` rescales
    image values between integer and float ranges (uint8 255 ↔ 1.0)."""

    def __init__(self, dtype, scale=False):
        super().__init__()
        if not isinstance(dtype, (Mapping, ember.dtype)):
            raise ValueError(f"dtype must be a dict or a ember.dtype, got {type(dtype)} instead")
        if (isinstance(dtype, Mapping) and Tensor in dtype
                and any(cls in dtype for cls in (tv_tensors.Image, tv_tensors.Video))):
            warnings.warn(
                "Got `dtype` values for `ember.Tensor` and either `tv_tensors.Image` or `tv_tensors.Video`. "
                "Note that a plain `ember.Tensor` will *not* be transformed by this (or any other transformation) "
                "in case a `tv_tensors.Image` or `tv_tensors.Video` is present in the input.")
        self.dtype = dtype
        self.scale = scale

    def _dtype_for(self, inpt):
        if isinstance(self.dtype, ember.dtype):
            # A single dtype is for images and videos only (as ConvertImageDtype was).
            is_image = is_pure_tensor(inpt) or isinstance(inpt, (tv_tensors.Image, tv_tensors.Video))
            return self.dtype if is_image else None
        if type(inpt) in self.dtype:
            return self.dtype[type(inpt)]
        if "others" in self.dtype:
            return self.dtype["others"]
        raise ValueError(
            f"No dtype was specified for type {type(inpt)}. If you only need to convert the dtype of images or "
            "videos, you can just pass e.g. dtype=ember.float32. If you're passing a dict as dtype, you can use "
            '"others" as a catch-all key e.g. dtype={tv_tensors.Mask: ember.int64, "others": None} to pass-through '
            "the rest of the inputs.")

    def transform(self, inpt, params):
        dtype = self._dtype_for(inpt)
        if dtype is None:
            is_image = is_pure_tensor(inpt) or isinstance(inpt, (tv_tensors.Image, tv_tensors.Video))
            if self.scale and is_image:
                warnings.warn("scale was set to True but no dtype was specified for images or videos: "
                              "no scaling will be done.")
            return inpt
        return self._call_kernel(F.to_dtype, inpt, dtype=dtype, scale=self.scale)


class ConvertImageDtype(ToDtype):
    """`ToDtype(dtype, scale=True)`, the v1 name."""

    def __init__(self, dtype=ember.float32):
        super().__init__(dtype, scale=True)


# ---- normalise and blur ----

class Normalize(Transform):
    """`(x - mean) / std` per channel of float images and videos."""

    def __init__(self, mean, std, inplace=False):
        super().__init__()
        self.mean = list(mean)
        self.std = list(std)
        self.inplace = inplace

    def check_inputs(self, flat_inputs):
        if any(isinstance(inpt, PILImage) for inpt in flat_inputs):
            raise TypeError(f"{type(self).__name__}() does not support PIL images.")

    def transform(self, inpt, params):
        return self._call_kernel(F.normalize, inpt, mean=self.mean, std=self.std, inplace=self.inplace)


class GaussianBlur(Transform):
    """Gaussian blur of `kernel_size` with sigma drawn from `sigma` (min, max)."""

    def __init__(self, kernel_size, sigma=(0.1, 2.0)):
        super().__init__()
        self.kernel_size = _setup_size(kernel_size, "Kernel size should be a tuple/list of two integers")
        for ks in self.kernel_size:
            if ks <= 0 or ks % 2 == 0:
                raise ValueError("Kernel size value should be an odd and positive number.")
        if isinstance(sigma, numbers.Number):
            if sigma <= 0:
                raise ValueError("If sigma is a single number, it must be positive.")
            sigma = (float(sigma), float(sigma))
        elif isinstance(sigma, Sequence) and len(sigma) == 2:
            if not 0.0 < sigma[0] <= sigma[1]:
                raise ValueError("sigma values should be positive and of the form (min, max).")
        else:
            raise TypeError("sigma should be a single int or float or a list/tuple with length 2 floats.")
        self.sigma = sigma

    def make_params(self, flat_inputs):
        sigma = _uniform(self.sigma[0], self.sigma[1])
        return dict(sigma=[sigma, sigma])

    def transform(self, inpt, params):
        return self._call_kernel(F.gaussian_blur, inpt, self.kernel_size, **params)


# ---- bounding boxes ----

class ClampBoundingBoxes(Transform):
    """Clamps bounding boxes to their canvas."""

    _transformed_types = (tv_tensors.BoundingBoxes,)

    def transform(self, inpt, params):
        return F.clamp_bounding_boxes(inpt)


class ConvertBoundingBoxFormat(Transform):
    """Converts bounding boxes to `format` ("XYXY", "XYWH", "CXCYWH" or a BoundingBoxFormat)."""

    _transformed_types = (tv_tensors.BoundingBoxes,)

    def __init__(self, format):
        super().__init__()
        self.format = _parse_format(format)

    def transform(self, inpt, params):
        return F.convert_bounding_box_format(inpt, new_format=self.format)


def _find_labels_default_heuristic(inputs):
    """The labels of a sample: the second item of a (image, target) pair when it is a tensor, else the
    "labels" key (or the first key containing "label") of the target dict."""
    if isinstance(inputs, (tuple, list)) and len(inputs) > 1:
        inputs = inputs[1]
    if is_pure_tensor(inputs):
        return inputs
    if not isinstance(inputs, Mapping):
        raise ValueError(
            "When using the default labels_getter, the input passed to forward must be a dictionary or a two-tuple "
            f"whose second item is a dictionary or a tensor, but got {inputs} instead.")
    keys = [k for k in inputs if isinstance(k, str)]
    candidate = next((k for k in keys if k.lower() == "labels"), None)
    if candidate is None:
        candidate = next((k for k in keys if "label" in k.lower()), None)
    if candidate is None:
        raise ValueError(
            "Could not infer where the labels are in the sample. Try passing a callable as the labels_getter "
            "parameter?If there are no labels in the sample by design, pass labels_getter=None.")
    return inputs[candidate]


def _no_labels(sample):
    return None


def _parse_labels_getter(labels_getter):
    if labels_getter == "default":
        return _find_labels_default_heuristic
    if callable(labels_getter):
        return labels_getter
    if labels_getter is None:
        return _no_labels
    raise ValueError(f"labels_getter should either be 'default', a callable, or None, but got {labels_getter}.")


class SanitizeBoundingBoxes(Transform):
    """Drops degenerate boxes (a side under `min_size`, area under `min_area`, or reaching outside the
    canvas) together with their labels and masks."""

    def __init__(self, min_size=1.0, min_area=1.0, labels_getter="default"):
        super().__init__()
        if min_size < 1:
            raise ValueError(f"min_size must be >= 1, got {min_size}.")
        if min_area < 1:
            raise ValueError(f"min_area must be >= 1, got {min_area}.")
        self.min_size = min_size
        self.min_area = min_area
        self.labels_getter = labels_getter
        self._labels_getter = _parse_labels_getter(labels_getter)

    def forward(self, *inputs):
        sample = inputs if len(inputs) > 1 else inputs[0]
        labels = self._labels_getter(sample)
        if labels is not None and not isinstance(labels, (Tensor, tuple, list)):
            raise ValueError(f"The labels in the input to forward() must be a tensor or None, got {type(labels)} "
                             "instead.")
        label_tensors = () if labels is None else (labels,) if isinstance(labels, Tensor) else tuple(labels)
        flat_inputs, spec = tree_flatten(sample)
        boxes = get_bounding_boxes(flat_inputs)
        for label in label_tensors:
            if boxes.shape[0] != label.shape[0]:
                raise ValueError(f"Number of boxes (shape={tuple(boxes.shape)}) and must match the number of labels."
                                 f"Found labels with shape={tuple(label.shape)}).")
        valid = _valid_boxes_mask(_pure(boxes), boxes.format, boxes.canvas_size, self.min_size, self.min_area)
        params = dict(valid=valid, labels=label_tensors)
        return tree_unflatten([self.transform(inpt, params) for inpt in flat_inputs], spec)

    def transform(self, inpt, params):
        is_label = any(inpt is label for label in params["labels"])
        if not (is_label or isinstance(inpt, (tv_tensors.BoundingBoxes, tv_tensors.Mask))):
            return inpt
        output = _pure(inpt)[params["valid"]]
        return output if is_label else tv_tensors.wrap(output, like=inpt)



class GaussianNoise(Transform):
    """Adds normal noise (`mean`, `sigma`) to float images and videos, clipped to [0, 1] unless `clip=False`."""

    def __init__(self, mean=0.0, sigma=0.1, clip=True):
        super().__init__()
        self.mean = mean
        self.sigma = sigma
        self.clip = clip

    def transform(self, inpt, params):
        return self._call_kernel(F.gaussian_noise, inpt, mean=self.mean, sigma=self.sigma, clip=self.clip)
