"""`autocast`: a context manager (and decorator) under which the ops of PyTorch's CPU autocast
policy (`_policy.py`) cast their floating-point tensor arguments first.

State is per thread, as PyTorch's (a thread started inside an autocast region runs without it).
The op wrappers are installed the first time an autocast region is entered, so programs that
never use autocast keep calling the ops directly; afterwards a disabled wrapper costs one global
read before it calls the op."""
import functools
import threading
import warnings

from ember import _C

__all__ = ["autocast", "is_autocast_available"]

_SUPPORTED_CPU = (_C.bfloat16, _C.float16)
# Device types PyTorch knows; only "cpu" has a backend here.
_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia", "xla",
                 "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")


class _State(threading.local):
    def __init__(self):
        self.enabled = False
        self.dtype = _C.bfloat16
        self.cache_enabled = True
        self.nesting = 0
        self.cache = {}


_state = _State()
# How many threads are inside an enabled autocast region: wrappers skip the thread-local read
# while it is zero.
_active = [0]
_active_lock = threading.Lock()


def _count_active(delta):
    with _active_lock:
        _active[0] += delta


def is_autocast_available(device_type):
    """Whether autocast has a backend for `device_type` (only "cpu" here)."""
    return device_type == "cpu"


def _check_device_type(device_type):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type.split(":")[0] not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of device string: {device_type}")


class autocast:
    """`autocast(device_type, dtype=None, enabled=True, cache_enabled=None)`.

    On "cpu" the default dtype is bfloat16; float16 is allowed too, any other dtype warns and
    disables autocast (as PyTorch). Other device types have no backend in Ember: "cuda" warns
    and disables it, as PyTorch does on a machine without CUDA. Regions nest; each restores
    the state it found. `cache_enabled` keeps the lower-precision copies of leaf tensors that
    require grad (the parameters) for the region, so a weight used many times is cast once."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        _check_device_type(device_type)
        if dtype is not None and not isinstance(dtype, _C.dtype):
            raise TypeError(f"set_autocast_dtype(): argument 'dtype' (position 2) must be ember.dtype, not {type(dtype).__name__}")
        self.device = device_type
        self.fast_dtype = _C.bfloat16 if device_type == "cpu" else _C.float16
        if dtype is not None:
            self.fast_dtype = dtype
        self._cache_enabled = True if cache_enabled is None else bool(cache_enabled)
        self._enabled = bool(enabled)
        if device_type == "cuda" and self._enabled:
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.")
            self._enabled = False
        elif device_type != "cpu":
            self._enabled = False
        elif self._enabled and self.fast_dtype not in _SUPPORTED_CPU:
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                          "CPU Autocast only supports dtypes of ember.bfloat16, ember.float16 currently.")
            self._enabled = False

    def __enter__(self):
        if self.device != "cpu":
            return self
        self._prev = (_state.enabled, _state.dtype, _state.cache_enabled)
        if self._enabled:
            from ember.amp import _policy
            _policy.install()
        _state.enabled, _state.dtype, _state.cache_enabled = self._enabled, self.fast_dtype, self._cache_enabled
        _state.nesting += 1
        _count_active(int(_state.enabled) - int(self._prev[0]))
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if self.device != "cpu":
            return False
        _state.nesting -= 1
        if _state.nesting == 0:
            _state.cache.clear()
        _count_active(int(self._prev[0]) - int(_state.enabled))
        _state.enabled, _state.dtype, _state.cache_enabled = self._prev
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(func).__name__}. Did you mean to use autocast "
                            "as a context manager? For example:\n    with ember.autocast(device_type=...):\n        output = model(input)")

        @functools.wraps(func)
        def decorated(*args, **kwargs):
            with autocast(self.device, dtype=self.fast_dtype, enabled=self._enabled, cache_enabled=self._cache_enabled):
                return func(*args, **kwargs)

        return decorated


# ---- PyTorch's state functions (`torch.is_autocast_enabled`, ...) ----

def _require_device(device_type):
    _check_device_type(device_type)
    return device_type == "cpu"


def is_autocast_enabled(device_type=None):
    """Whether autocast is on for `device_type` in this thread; with no argument PyTorch asks
    about CUDA, which Ember lacks (always False)."""
    return device_type is not None and _require_device(device_type) and _state.enabled


def set_autocast_enabled(device_type, enabled=None):
    if enabled is None:  # the one-argument CUDA form
        return
    if _require_device(device_type):
        if enabled:
            from ember.amp import _policy
            _policy.install()
        _count_active(int(bool(enabled)) - int(_state.enabled))
        _state.enabled = bool(enabled)


def get_autocast_dtype(device_type):
    return _state.dtype if _require_device(device_type) else _C.float16


def set_autocast_dtype(device_type, dtype):
    if _require_device(device_type):
        _state.dtype = dtype


def is_autocast_cpu_enabled():
    return _state.enabled


def set_autocast_cpu_enabled(enabled):
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    return _state.dtype


def set_autocast_cpu_dtype(dtype):
    _state.dtype = dtype


def is_autocast_cache_enabled():
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled):
    _state.cache_enabled = bool(enabled)


def clear_autocast_cache():
    _state.cache.clear()


def autocast_increment_nesting():
    _state.nesting += 1
    return _state.nesting


def autocast_decrement_nesting():
    _state.nesting -= 1
    return _state.nesting
