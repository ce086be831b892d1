"""Ember: a small, fast tensor core in Rust with PyTorch's Python API.

`import ember as torch` is meant to work for the ops Ember implements; where Ember differs
from PyTorch the docstring says so.
"""
import builtins as _builtins
import os as _os

# `_C` allocates with mimalloc, which reads its options once, when the library loads. Committing
# arena memory only as it is touched keeps RSS to what tensors use (about 8 MiB less in a
# training loop) at no measured cost in speed.
_os.environ.setdefault("MIMALLOC_ARENA_EAGER_COMMIT", "0")

from ember import _C
from ember._C import Generator, Tensor, dtype
from ember._C import from_dlpack
from ember._C import (
    can_cast,
    get_num_threads,
    get_rng_state,
    initial_seed,
    promote_types,
    result_type,
    set_num_threads,
    set_rng_state,
)

bool = _C.bool
uint8 = _C.uint8
int8 = _C.int8
int16 = short = _C.int16
int32 = int = _C.int32
int64 = long = _C.int64
float16 = half = _C.float16
bfloat16 = _C.bfloat16
float32 = float = _C.float32
float64 = double = _C.float64
complex32 = chalf = _C.complex32
complex64 = cfloat = _C.complex64
complex128 = cdouble = _C.complex128

_DTYPES = {d.name: d for d in (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
                               complex32, complex64, complex128)}


def _dtype_by_name(name):
    return _DTYPES[name]


from ember._device import device  # noqa: E402
from ember._size import Size  # noqa: E402
from ember._creation import *  # noqa: E402,F401,F403
from ember._memory_format import *  # noqa: E402,F401,F403
from ember._ops import *  # noqa: E402,F401,F403
from ember._shape import *  # noqa: E402,F401,F403
from ember._index_api import *  # noqa: E402,F401,F403
from ember._sort_api import *  # noqa: E402,F401,F403
from ember._einsum import einsum  # noqa: E402,F401
from ember._compare import *  # noqa: E402,F401,F403
from ember._complex import *  # noqa: E402,F401,F403
from ember import fft  # noqa: E402,F401
from ember import linalg  # noqa: E402,F401
from ember._linalg_api import *  # noqa: E402,F401,F403
from ember._spectral import *  # noqa: E402,F401,F403
from ember._precision import get_float32_matmul_precision, set_float32_matmul_precision  # noqa: E402,F401
from ember import _foreach as _foreach_module  # noqa: E402

# PyTorch's private multi-tensor ops live at the top level: ember._foreach_add_ ...
globals().update({name: getattr(_foreach_module, name) for name in dir(_foreach_module) if name.startswith("_foreach_")})
from ember import _tensor  # noqa: E402,F401  (adds the methods to Tensor)
from ember import _functorch  # noqa: E402

_functorch.install()  # BatchedTensor (vmap) takes the Tensor methods just added
from ember import autograd, backends, func, nn, optim, return_types, utils  # noqa: E402,F401
from ember import hub, safetensors, serialization  # noqa: E402,F401
from ember.serialization import load, save  # noqa: E402,F401
from ember.autograd.grad_mode import (  # noqa: E402,F401
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled,
)
from ember.nn.functional import log_softmax, softmax  # noqa: E402,F401


def manual_seed(seed):
    """Seeds the default generator; every draw after it is reproducible on any thread count."""
    if not isinstance(seed, _builtins.int):
        raise TypeError(f"manual_seed(): seed must be an int, got {type(seed).__name__}")
    _C.manual_seed(seed)
    return default_generator


def seed():
    """Seeds the default generator from the clock and returns the seed."""
    return default_generator.seed()


class _DefaultGenerator:
    """`ember.default_generator`: the generator used when none is passed."""

    def manual_seed(self, seed):
        _C.manual_seed(seed)
        return self

    def initial_seed(self):
        return _C.initial_seed()

    def seed(self):
        import time

        s = time.time_ns() & ((1 << 63) - 1)
        _C.manual_seed(s)
        return s

    def get_state(self):
        return _C.get_rng_state()

    def set_state(self, state):
        _C.set_rng_state(tuple(state))


default_generator = _DefaultGenerator()
__version__ = "0.1.0"
from ember.nn._spatial import (  # noqa: E402,F401  (PyTorch's top-level aliases)
    adaptive_avg_pool1d, avg_pool1d, conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d,
    conv_transpose3d, max_pool1d, max_pool2d, max_pool3d,
)
from ember import amp, cpu, cuda  # noqa: E402,F401
from ember.amp import autocast  # noqa: E402,F401
from ember.amp.autocast_mode import (  # noqa: E402,F401  (PyTorch's autocast state functions)
    autocast_decrement_nesting, autocast_increment_nesting, clear_autocast_cache, get_autocast_cpu_dtype,
    get_autocast_dtype, get_autocast_gpu_dtype, is_autocast_cache_enabled, is_autocast_cpu_enabled,
    is_autocast_enabled, set_autocast_cache_enabled, set_autocast_cpu_dtype, set_autocast_cpu_enabled,
    set_autocast_dtype, set_autocast_enabled, set_autocast_gpu_dtype,
)
