"""`autocast`: a context manager (and decorator) under which the ops of PyTorch's autocast
policies (`_policy.py`) cast their floating-point tensor arguments first.

State is per thread, as PyTorch's (a thread started inside an autocast region runs without it),
and per device type: "cpu" and "cuda" each have their own enabled flag and dtype (bfloat16 and
float16 by default), and a region of one device type casts only the tensors on that device type.
The op wrappers of a device type's policy are installed the first time a region of that device
type is entered, so programs that never use autocast keep calling the ops directly; afterwards a
wrapper outside every region costs one global read before it calls the op."""
import functools
import threading
import warnings

from ember import _C

__all__ = ["autocast", "is_autocast_available"]

_SUPPORTED_CPU = (_C.bfloat16, _C.float16)
# Device types PyTorch knows; "cpu" and "cuda" have a backend here (see `is_autocast_available`).
_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia", "xla",
                 "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")
# PyTorch's default autocast dtype per device type (bfloat16 where its table says so, float16
# elsewhere).
_DEFAULT_DTYPES = {t: _C.bfloat16 if t in ("cpu", "xla", "hpu") else _C.float16 for t in _DEVICE_TYPES}
_BACKENDS = ("cpu", "cuda")


class _State(threading.local):
    def __init__(self):
        self.enabled = dict.fromkeys(_BACKENDS, False)
        self.dtypes = dict(_DEFAULT_DTYPES)
        # The device types whose region is enabled, as the op wrappers read them: empty while a
        # wrapped op runs, so the ops it calls do not cast again.
        self.active = ()
        self.cache_enabled = True
        self.nesting = 0
        self.cache = {}


_state = _State()
# How many threads have an enabled autocast region: wrappers skip the thread-local read while
# it is zero.
_active = [0]
_active_lock = threading.Lock()


def _set_enabled(device_type, enabled):
    """Turns `device_type`'s region on or off in this thread (installing its policy the first
    time it is turned on), keeping `_active` and `_state.active` in step."""
    enabled = bool(enabled)
    if enabled:
        from ember.amp import _policy
        _policy.install(device_type)
    was_any = any(_state.enabled.values())
    _state.enabled[device_type] = enabled
    now_any = any(_state.enabled.values())
    if was_any != now_any:
        with _active_lock:
            _active[0] += 1 if now_any else -1
    _state.active = tuple(t for t, on in _state.enabled.items() if on)


def is_autocast_available(device_type):
    """Whether autocast has a backend for `device_type`: "cpu", and "cuda" in a build with
    CUDA support (whether or not this machine has a GPU, as PyTorch answers)."""
    return device_type == "cpu" or (device_type == "cuda" and _C._cuda_build()[0])


def _check_device_type(device_type):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type.split(":")[0] not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of device string: {device_type}")


def _usable(device_type, dtype):
    """Whether a region of `device_type` in `dtype` can be enabled here, warning (or raising,
    for bfloat16 on a GPU without it) as PyTorch does when it cannot."""
    if device_type == "cuda":
        from ember import cuda
        if not cuda.is_available():
            warnings.warn("User provided device_type of 'cuda', but CUDA is not available. Disabling")
            return False
        if dtype == _C.bfloat16 and not cuda.is_bf16_supported():
            raise RuntimeError("Current CUDA Device does not support bfloat16. Please switch dtype to float16.")
        return True
    if device_type == "cpu":
        if dtype not in _SUPPORTED_CPU:
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                          "CPU Autocast only supports dtypes of ember.bfloat16, ember.float16 currently.")
            return False
        return True
    return False  # no backend for this device type in Ember


class autocast:
    """`autocast(device_type, dtype=None, enabled=True, cache_enabled=None)`.

    `dtype` defaults to the device type's current autocast dtype (`get_autocast_dtype`:
    bfloat16 on "cpu", float16 on "cuda"). On "cpu" only bfloat16 and float16 are allowed
    (another dtype warns and disables autocast); on "cuda" bfloat16 needs a GPU that supports it
    (else a RuntimeError), and without a usable GPU autocast warns and disables itself, as
    PyTorch does. Other device types have no backend in Ember: their regions do nothing.
    Regions nest; each restores the state it found. `cache_enabled` keeps the lower-precision
    copies of leaf tensors that require grad (the parameters) for the region, so a weight used
    many times is cast once."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        _check_device_type(device_type)
        if dtype is not None and not isinstance(dtype, _C.dtype):
            raise TypeError(f"set_autocast_dtype(): argument 'dtype' (position 2) must be ember.dtype, not {type(dtype).__name__}")
        self.device = device_type
        self._type = device_type.split(":")[0]
        self.fast_dtype = _state.dtypes[self._type] if dtype is None else dtype
        self._cache_enabled = _state.cache_enabled if cache_enabled is None else bool(cache_enabled)
        self._enabled = bool(enabled) and _usable(self._type, self.fast_dtype)

    def __enter__(self):
        self._prev = (_state.enabled.get(self._type, False), _state.dtypes[self._type], _state.cache_enabled)
        if self._type in _BACKENDS:
            _set_enabled(self._type, self._enabled)
        _state.dtypes[self._type] = self.fast_dtype
        _state.cache_enabled = self._cache_enabled
        _state.nesting += 1
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        _state.nesting -= 1
        if _state.nesting == 0:
            _state.cache.clear()
        enabled, _state.dtypes[self._type], _state.cache_enabled = self._prev
        if self._type in _BACKENDS:
            _set_enabled(self._type, enabled)
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

def is_autocast_enabled(device_type=None):
    """Whether autocast is on for `device_type` in this thread (with no argument: "cuda", as
    PyTorch asks). False inside an op the policy wraps, as in PyTorch."""
    if device_type is None:
        device_type = "cuda"
    _check_device_type(device_type)
    return device_type.split(":")[0] in _state.active


def set_autocast_enabled(device_type, enabled=None):
    """`set_autocast_enabled(device_type, enabled)`, or PyTorch's older one-argument form
    `set_autocast_enabled(enabled)` for "cuda"."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    _check_device_type(device_type)
    if device_type.split(":")[0] in _BACKENDS:
        _set_enabled(device_type.split(":")[0], enabled)


def get_autocast_dtype(device_type):
    _check_device_type(device_type)
    return _state.dtypes[device_type.split(":")[0]]


def set_autocast_dtype(device_type, dtype):
    _check_device_type(device_type)
    _state.dtypes[device_type.split(":")[0]] = dtype


def is_autocast_cpu_enabled():
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled):
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype):
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype):
    set_autocast_dtype("cuda", dtype)


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
