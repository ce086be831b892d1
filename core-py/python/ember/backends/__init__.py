"""`torch.backends`: flags that choose how the backends compute, under PyTorch's names.

Scripts set these at start-up (`ember.backends.cudnn.benchmark = True`); each submodule's
docstring says what the flag does on Ember. Flags for libraries Ember does not use (cuDNN,
oneDNN, MKL, OpenMP) are kept and can be set, so such scripts run; `is_available()` says False.
"""
from contextlib import contextmanager


@contextmanager
def _set_flags(module, **flags):
    """Sets a module's flags for the duration of a `with` block."""
    saved = {name: getattr(module, name) for name in flags}
    try:
        for name, value in flags.items():
            setattr(module, name, value)
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)


# After `_set_flags`: the submodules import it.
from ember.backends import cuda, cudnn, mkl, mkldnn, mps, openmp  # noqa: E402,F401

__all__ = ["cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp"]
