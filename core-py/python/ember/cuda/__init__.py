"""`ember.cuda`: PyTorch's `torch.cuda` queries. The answers come from the core's CUDA backend,
so on a build or machine without CUDA `is_available()` is False (never raising) and asking for a
CUDA device raises a RuntimeError that says what is missing.

The CUDA libraries other than the driver come from NVIDIA's pip wheels (`pip install
ember[cuda13]`), which install under `site-packages/nvidia/`, off the loader's search path: at
import, the core is told where to look, and loads them by full path before its first CUDA call
(as PyTorch and JAX do). A CUDA toolkit on the library path works as well.
"""
import sys

from ember import _C
from ember.cuda import amp

# Where pip installs packages (`sys.path` holds site-packages, user site included).
_C._cuda_use_wheels([p for p in sys.path if p])

__all__ = ["amp", "is_available", "device_count", "current_device", "set_device", "synchronize", "is_initialized",
           "manual_seed", "manual_seed_all", "empty_cache", "get_device_name"]


def is_available():
    """Whether ops can run on a CUDA device here."""
    return device_count() > 0


def device_count():
    """How many CUDA devices ops can run on: 0 where the driver or a GPU is missing."""
    return _C._cuda_device_count()


def is_initialized():
    return is_available()


def _require(what):
    # The core's refusal names what is missing (the backend in this build, or the device).
    _C._check_device("cuda:0")
    raise NotImplementedError(f"ember.cuda.{what} is not implemented yet")


def current_device():
    return _require("current_device")


def set_device(device):
    _require("set_device")


def synchronize(device=None):
    _require("synchronize")


def get_device_name(device=None):
    return _require("get_device_name")


def manual_seed(seed):
    """Seeds CUDA's generator; without CUDA, ignored, as PyTorch does (every backend draws from
    the one Philox stream that `ember.manual_seed` seeds)."""


def manual_seed_all(seed):
    """As `manual_seed`, for every device."""


def empty_cache():
    """Frees cached device memory; nothing is cached without CUDA."""
