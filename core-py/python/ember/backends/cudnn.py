"""`torch.backends.cudnn`: cuDNN's flags. Ember's CUDA backend runs convolutions on cuDNN, loaded
at run time from NVIDIA's wheel (`pip install ember[cuda13]`). `allow_tf32` (default True, as
PyTorch) lets float32 convolutions use TF32 tensor cores. `benchmark`, `benchmark_limit`,
`deterministic` and `enabled` can be set, so scripts that set them run unchanged; Ember always
takes cuDNN's heuristic first choice of algorithm."""
import sys
import types

from ember import _C
from ember.backends import _set_flags

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False


def is_available():
    """Whether cuDNN can be loaded here (a CUDA build and the library present)."""
    return version() is not None


def version():
    """cuDNN's version as an int (90800 for 9.8.0), or None where it cannot be loaded."""
    return _C._cudnn_version()


def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """Sets the flags for a `with` block and restores them after, as `torch.backends.cudnn.flags`."""
    return _set_flags(sys.modules[__name__], enabled=enabled, benchmark=benchmark, benchmark_limit=benchmark_limit,
                      deterministic=deterministic, allow_tf32=allow_tf32)


class _CudnnModule(types.ModuleType):
    """Makes `allow_tf32` a flag the core reads."""

    @property
    def allow_tf32(self):
        return _C._cudnn_allow_tf32()

    @allow_tf32.setter
    def allow_tf32(self, value):
        _C._cudnn_set_allow_tf32(bool(value))


sys.modules[__name__].__class__ = _CudnnModule
