"""The kernel registry behind every v2 functional: one kernel per input type.

A functional looks up the kernel for `type(inpt)` along its MRO (stopping at `TVTensor`, so a
tv_tensor never falls back to the plain-tensor kernel). Kernels for tv_tensors registered with
`wrap=True` receive the plain tensor and their result is re-wrapped like the input.
"""
import functools

from ember import Tensor

from .... import tv_tensors
from ....tv_tensors import TVTensor, _pure

try:
    from PIL import Image as _PILImage

    PILImage = _PILImage.Image
except ImportError:  # pragma: no cover
    PILImage = type("PILImageUnavailable", (), {})

_KERNEL_REGISTRY = {}
_BUILTIN_TV_TENSORS = (tv_tensors.Image, tv_tensors.Video, tv_tensors.Mask, tv_tensors.BoundingBoxes)


def is_pure_tensor(inpt):
    """A tensor that is not a tv_tensor (the v2 transforms treat it as an image)."""
    return isinstance(inpt, Tensor) and not isinstance(inpt, TVTensor)


def _wrapping(kernel):
    @functools.wraps(kernel)
    def wrapper(inpt, *args, **kwargs):
        return tv_tensors.wrap(kernel(_pure(inpt), *args, **kwargs), like=inpt)

    return wrapper


def _register(functional, *input_types, wrap=True):
    """Decorator registering `kernel` for `input_types` of `functional`."""

    def decorator(kernel):
        registry = _KERNEL_REGISTRY.setdefault(functional, {})
        for input_type in input_types:
            is_tv = isinstance(input_type, type) and issubclass(input_type, TVTensor)
            registry[input_type] = _wrapping(kernel) if wrap and is_tv else kernel
        return kernel

    return decorator


# The types an image kernel serves: plain tensors, `Image` and `Video`.
IMAGE_TYPES = (Tensor, tv_tensors.Image, tv_tensors.Video)


def _passthrough(inpt, *args, **kwargs):
    return inpt


def _get_kernel(functional, input_type, *, allow_passthrough=False):
    registry = _KERNEL_REGISTRY.get(functional)
    if not registry:
        raise ValueError(f"No kernel registered for functional {functional.__name__}.")
    for cls in input_type.__mro__:
        if cls in registry:
            return registry[cls]
        if cls is TVTensor:
            break
    if allow_passthrough:
        return _passthrough
    names = ", ".join(sorted(t.__name__ for t in registry))
    raise TypeError(
        f"Functional F.{functional.__name__} supports inputs of type {names}, but got {input_type} instead."
    )


def register_kernel(functional, tv_tensor_cls):
    """Decorator registering a kernel of `functional` for a custom TVTensor subclass.

    The kernel receives the tv_tensor itself (not unwrapped) and the functional's arguments.
    """
    if not callable(functional) or functional not in _KERNEL_REGISTRY:
        raise ValueError(f"Kernels can only be registered on v2 functionals, but got {functional}.")
    if not (isinstance(tv_tensor_cls, type) and issubclass(tv_tensor_cls, TVTensor)):
        raise ValueError(
            f"Kernels can only be registered for subclasses of embervision.tv_tensors.TVTensor, "
            f"but got {tv_tensor_cls}."
        )
    if tv_tensor_cls in _BUILTIN_TV_TENSORS:
        raise ValueError(f"Kernels cannot be registered for the builtin tv_tensor classes, but got {tv_tensor_cls}.")
    return _register(functional, tv_tensor_cls, wrap=False)
