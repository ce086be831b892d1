"""`torchvision.tv_tensors`: tensor subclasses that tell the v2 transforms what a tensor holds.

`Image`, `Video`, `Mask` and `BoundingBoxes` are ember tensors; an op on one returns a plain
tensor (as in TorchVision), except `clone`, `to`, `detach` and `requires_grad_`, which keep the
type and metadata. `wrap(tensor, like=...)` re-wraps the result of an op.
"""
from enum import Enum

import ember
from ember import Tensor

__all__ = ["BoundingBoxFormat", "BoundingBoxes", "Image", "Mask", "TVTensor", "Video", "wrap"]


def _as_tensor(data, dtype, device, requires_grad):
    if isinstance(data, Tensor):
        tensor = data
        if dtype is not None or device is not None:
            tensor = tensor.to(dtype=dtype, device=device)
    else:
        tensor = ember.as_tensor(data, dtype=dtype, device=device)
    if requires_grad is None:
        requires_grad = tensor.requires_grad
    return tensor, requires_grad


def _pure(tensor):
    """The plain-tensor view of a TVTensor (same memory, autograd kept)."""
    return tensor.view_as(tensor) if isinstance(tensor, TVTensor) else tensor


class TVTensor(Tensor):
    """Base of the tv_tensors. Subclasses carry their metadata in `_metadata()`."""

    @classmethod
    def _wrap(cls, tensor, requires_grad=None, **metadata):
        if requires_grad is None:
            requires_grad = tensor.requires_grad
        out = Tensor.__new__(cls, tensor, requires_grad)
        out._set_metadata(**metadata)
        return out

    def _set_metadata(self):
        """Image, Video and Mask carry no metadata; BoundingBoxes keeps its format and canvas size."""

    def _metadata(self):
        return {}

    def _rewrap(self, tensor):
        return type(self)._wrap(tensor, **self._metadata())

    def clone(self, *args, **kwargs):
        return self._rewrap(_pure(self).clone(*args, **kwargs))

    def to(self, *args, **kwargs):
        return self._rewrap(_pure(self).to(*args, **kwargs))

    def detach(self):
        return self._rewrap(_pure(self).detach())

    def requires_grad_(self, requires_grad=True):
        Tensor.requires_grad_(self, requires_grad)
        return self

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)._wrap(_pure(self).detach().clone(), self.requires_grad, **self._metadata())
        return memo[id(self)]

    def __reduce_ex__(self, protocol):
        return (_rebuild, (type(self), _pure(self).detach(), self.requires_grad, self._metadata()))

    def __repr__(self):
        text = repr(_pure(self))
        body = text[len("tensor("):-1] if text.startswith("tensor(") else text
        extra = "".join(f", {k}={v}" for k, v in self._metadata().items())
        return f"{type(self).__name__}({body}{extra})"

    __str__ = __repr__


def _rebuild(cls, tensor, requires_grad, metadata):
    return cls._wrap(tensor, requires_grad, **metadata)


class Image(TVTensor):
    """An image `[..., C, H, W]`; a PIL image is converted as `pil_to_tensor`, a 2-D tensor gains C=1."""

    def __new__(cls, data, *, dtype=None, device=None, requires_grad=None):
        if _is_pil(data):
            from ..transforms.functional import pil_to_tensor

            data = pil_to_tensor(data)
        tensor, requires_grad = _as_tensor(data, dtype, device, requires_grad)
        if tensor.ndim < 2:
            raise ValueError(f"Image must have at least 2 dimensions (H, W), got {tensor.ndim}")
        if tensor.ndim == 2:
            tensor = tensor.unsqueeze(0)
        return cls._wrap(tensor, requires_grad)


class Video(TVTensor):
    """A video `[..., T, C, H, W]`."""

    def __new__(cls, data, *, dtype=None, device=None, requires_grad=None):
        tensor, requires_grad = _as_tensor(data, dtype, device, requires_grad)
        if tensor.ndim < 4:
            raise ValueError(f"Video must have at least 4 dimensions (T, C, H, W), got {tensor.ndim}")
        return cls._wrap(tensor, requires_grad)


class Mask(TVTensor):
    """Segmentation masks `[..., H, W]` (one per object for detection: `[N, H, W]`)."""

    def __new__(cls, data, *, dtype=None, device=None, requires_grad=None):
        if _is_pil(data):
            from ..transforms.functional import pil_to_tensor

            data = pil_to_tensor(data)
        tensor, requires_grad = _as_tensor(data, dtype, device, requires_grad)
        return cls._wrap(tensor, requires_grad)


class BoundingBoxFormat(Enum):
    """XYXY: corners; XYWH: top-left corner and size; CXCYWH: centre and size."""

    XYXY = "XYXY"
    XYWH = "XYWH"
    CXCYWH = "CXCYWH"


def _parse_format(format):
    if isinstance(format, str):
        try:
            return BoundingBoxFormat[format.upper()]
        except KeyError:
            raise ValueError(
                f"Unknown bounding box format {format!r}; expected one of {[f.name for f in BoundingBoxFormat]}"
            ) from None
    if not isinstance(format, BoundingBoxFormat):
        raise TypeError(f"format must be a BoundingBoxFormat or a str, got {type(format).__name__}")
    return format


def _parse_canvas_size(canvas_size):
    if not (isinstance(canvas_size, (tuple, list)) and len(canvas_size) == 2
            and all(isinstance(s, int) and not isinstance(s, bool) for s in canvas_size)):
        raise ValueError(f"canvas_size must be a (height, width) pair of ints, got {canvas_size!r}")
    return (int(canvas_size[0]), int(canvas_size[1]))


class BoundingBoxes(TVTensor):
    """Boxes `[N, 4]` in `format`, on an image of `canvas_size` (height, width). A 1-D box becomes `[1, 4]`."""

    def __new__(cls, data, *, format, canvas_size, dtype=None, device=None, requires_grad=None):
        tensor, requires_grad = _as_tensor(data, dtype, device, requires_grad)
        if tensor.ndim == 1:
            tensor = tensor.unsqueeze(0)
        elif tensor.ndim != 2:
            raise ValueError(f"Expected a 1D or 2D tensor, got {tensor.ndim}D")
        if tensor.shape[-1] != 4:
            raise ValueError(f"Bounding boxes need 4 values each, got shape {tuple(tensor.shape)}")
        return cls._wrap(tensor, requires_grad, format=format, canvas_size=canvas_size)

    def _set_metadata(self, format, canvas_size):
        self.format = _parse_format(format)
        self.canvas_size = _parse_canvas_size(canvas_size)

    def _metadata(self):
        return {"format": self.format, "canvas_size": self.canvas_size}


def wrap(wrappee, *, like, **kwargs):
    """`wrappee` as the type of `like`, with `like`'s metadata unless overridden in kwargs."""
    if not isinstance(like, TVTensor):
        raise TypeError(f"like must be a TVTensor, got {type(like).__name__}")
    return type(like)._wrap(_pure(wrappee), **{**like._metadata(), **kwargs})


# TorchVision tv_tensors not built here (vision/README.md lists them).
_MISSING = {"KeyPoints", "set_return_type"}


def __getattr__(name):
    if name in _MISSING:
        raise NotImplementedError(f"embervision.tv_tensors.{name} is not implemented yet (see vision/README.md)")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _is_pil(data):
    try:
        from PIL import Image as PILImage
    except ImportError:  # pragma: no cover
        return False
    return isinstance(data, PILImage.Image)
