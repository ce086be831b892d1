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

__all__ = ["amp", "is_available", "device_count", "current_device", "set_device", "device", "synchronize",
           "is_initialized", "init", "manual_seed", "manual_seed_all", "seed", "empty_cache", "get_device_name",
           "get_device_capability", "get_device_properties", "is_bf16_supported", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats",
           "reset_max_memory_allocated", "Event", "Stream", "current_stream", "default_stream", "stream",
           "set_stream"]


def is_available():
    """Whether ops can run on a CUDA device here."""
    return device_count() > 0


def device_count():
    """How many CUDA devices ops can run on: 0 where the driver or a GPU is missing."""
    return _C._cuda_device_count()


def is_initialized():
    return is_available()


def init():
    """Sets up the current device now rather than at its first use."""
    _C._check_device(f"cuda:{current_device()}")


def _index(device):
    """The device index a `device=` argument names: None is the current device; an int, a
    "cuda:N" string or an `ember.device` of type cuda name one."""
    if device is None:
        return current_device()
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    from ember._device import device as Device
    d = Device(device)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return current_device() if d.index is None else d.index


def current_device():
    """The index of the device that "cuda" with no index means (a RuntimeError saying why
    where CUDA cannot be used)."""
    index = _C._cuda_current_device()
    _C._check_device(f"cuda:{index}")
    return index


def set_device(device):
    """Makes `device` the one "cuda" with no index means."""
    _C._cuda_set_device(_index(device))


class device:
    """Context manager that makes `device` current inside the block."""

    def __init__(self, device):
        self.idx = _index(device)
        self.prev_idx = None

    def __enter__(self):
        self.prev_idx = current_device()
        set_device(self.idx)

    def __exit__(self, *exc):
        set_device(self.prev_idx)
        return False


def synchronize(device=None):
    """Waits for all work queued on the device."""
    _C._cuda_synchronize(_index(device))


class _CudaDeviceProperties:
    __slots__ = ("name", "major", "minor", "total_memory", "multi_processor_count")

    def __init__(self, name, major, minor, total_memory, multi_processor_count):
        self.name, self.major, self.minor = name, major, minor
        self.total_memory, self.multi_processor_count = total_memory, multi_processor_count

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1 << 20)}MB, multi_processor_count={self.multi_processor_count})")


def get_device_properties(device=None):
    return _CudaDeviceProperties(*_C._cuda_properties(_index(device)))


def get_device_name(device=None):
    return get_device_properties(device).name


def get_device_capability(device=None):
    p = get_device_properties(device)
    return p.major, p.minor


def is_bf16_supported():
    """Whether the current device computes in bfloat16 natively (compute capability 8.0 on)."""
    return is_available() and get_device_capability()[0] >= 8


def manual_seed(seed):
    """Seeds the generator CUDA draws from. Ember draws on every device from the one Philox
    stream `ember.manual_seed` seeds (so a seed gives the same numbers on CPU and GPU): with
    CUDA present this seeds that stream; without CUDA it is ignored, as PyTorch ignores it."""
    if is_available():
        from ember import manual_seed as seed_all_devices
        seed_all_devices(seed)


def manual_seed_all(seed):
    """As `manual_seed`, for every device."""
    manual_seed(seed)


def seed():
    """Seeds CUDA's generator from the clock (the shared stream; see `manual_seed`)."""
    if is_available():
        from ember import seed as seed_from_clock
        seed_from_clock()


def memory_allocated(device=None):
    """Bytes the device's tensors hold now."""
    return _C._cuda_memory_stats(_index(device))[0]


def max_memory_allocated(device=None):
    """The most bytes the device's tensors held since the start or the last reset."""
    return _C._cuda_memory_stats(_index(device))[1]


def memory_reserved(device=None):
    """Bytes the device's memory pool holds from the driver, freed memory kept for reuse
    included."""
    return _C._cuda_memory_stats(_index(device))[2]


def max_memory_reserved(device=None):
    """Ember's pool reports only what it holds now: the same as `memory_reserved`."""
    return memory_reserved(device)


def reset_peak_memory_stats(device=None):
    _C._cuda_reset_peak_memory_stats(_index(device))


def reset_max_memory_allocated(device=None):
    reset_peak_memory_stats(device)


def empty_cache():
    """Returns the memory the pool keeps for reuse to the driver; without CUDA nothing is
    cached, and it does nothing."""
    if is_available():
        _C._cuda_empty_cache(current_device())


class Event:
    """A point in a device's queued work, for timing (`enable_timing=True`) and waiting."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        if interprocess:
            raise NotImplementedError("ember.cuda.Event(interprocess=True) is not implemented yet")
        self.enable_timing = enable_timing
        self._device = None
        self._event = None

    def record(self, stream=None):
        index = current_device() if stream is None else stream.device_index
        if self._event is None:
            self._device, self._event = index, _C._CudaEvent(index, self.enable_timing)
        elif index != self._device:
            raise RuntimeError(f"Event device {self._device} does not match recording stream's device {index}.")
        self._event.record()

    def synchronize(self):
        if self._event is not None:
            self._event.synchronize()

    def query(self):
        return True if self._event is None else self._event.query()

    def wait(self, stream=None):
        """Makes `stream` wait for this event: every op runs in order on the device's one
        stream (see `Stream`), so the work is already ordered."""

    def elapsed_time(self, end_event):
        """Milliseconds between this event's record and `end_event`'s."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._event is None or end_event._event is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return self._event.elapsed_time(end_event._event)


class Stream:
    """A CUDA stream. Ember queues all of a device's work on one stream, in program order, so
    every `Stream` of a device stands for that one: code written for several streams gets the
    same results, with no overlap between them. `wait_stream` / `wait_event` are therefore
    already satisfied."""

    def __init__(self, device=None, priority=0):
        self.device_index = _index(device)
        self.priority = priority

    @property
    def device(self):
        from ember._device import device as Device
        return Device("cuda", self.device_index)

    def synchronize(self):
        synchronize(self.device_index)

    def query(self):
        event = self.record_event()
        return event.query()

    def record_event(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event):
        """Already satisfied: the event's work was queued before this stream's next op."""

    def wait_stream(self, stream):
        """Already satisfied: `stream` is this device's one stream, which runs in order."""

    def __eq__(self, other):
        return isinstance(other, Stream) and other.device_index == self.device_index

    def __hash__(self):
        return hash(("cuda-stream", self.device_index))

    def __repr__(self):
        return f"<ember.cuda.Stream device=cuda:{self.device_index}>"


def current_stream(device=None):
    return Stream(device)


def default_stream(device=None):
    return Stream(device)


def set_stream(stream):
    """Nothing to switch: a device's work runs on its one stream (see `Stream`)."""


class stream:
    """Context manager selecting `stream` (see `Stream`: a device has one)."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        return self.stream

    def __exit__(self, *exc):
        return False
