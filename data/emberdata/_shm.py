"""Large tensors from workers travel through shared memory instead of the result pipe.

Each worker keeps a few files under /dev/shm ("slots") and reuses them batch after batch: a fresh
shared page costs a page fault and zeroing on first touch (about 10 ms per 8 MB batch on a VM),
a reused one nothing. In a worker, `default_collate` stacks a big batch straight into a free slot
(`empty`) and only the slot's name crosses the pipe; other big tensors are copied into one. The
main process maps each slot once, wraps the batch zero-copy (`ember.from_numpy`), and hands the
slot back when that tensor and every view of it are gone.

The first byte of a slot says whose it is, and only its owner writes it: the worker sets BUSY
when it takes a FREE slot, the main process sets FREE when it lets go of the tensor, and the
worker sets RETIRED on a spare slot before deleting it (the main process then drops its mapping).
Every file carries the iterator's prefix and is removed when the iterator shuts down; mappings
still in use keep their memory until their tensors go.
"""
import collections.abc
import glob
import math
import mmap
import os
import uuid
import warnings
import weakref

import numpy as np

import ember

SHM_DIR = "/dev/shm"
MIN_BYTES = 64 * 1024  # below this, pickling through the pipe is as fast
HEADER = 64  # the state byte, padded so that the data stays 64-byte aligned (SIMD loads)
FREE, BUSY, RETIRED = 0, 1, 2
SPARE_SLOTS = 4  # free slots a worker keeps beyond those in use
# Map every page at once: one call instead of a page fault per 4 KiB on first touch.
_MAP_FLAGS = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)

_pool = None  # the SlotPool of this worker process; None in the main process


def available():
    return os.path.isdir(SHM_DIR) and os.access(SHM_DIR, os.W_OK)


def new_prefix():
    return f"emberdata-{os.getpid()}-{uuid.uuid4().hex[:12]}"


class SharedTensor:
    """A tensor parked in a slot: the slot's path, and the tensor's shape and dtype."""

    def __init__(self, path, shape, dtype):
        self.path, self.shape, self.dtype = path, shape, dtype


def _address(array):
    return array.__array_interface__["data"][0]


def _view(mm, shape, dtype):
    return np.frombuffer(mm, dtype, count=math.prod(shape), offset=HEADER).reshape(shape)


class _Slot:
    def __init__(self, path, mm):
        self.path, self.mm = path, mm
        self.size = len(mm) - HEADER

    def fits(self, nbytes):
        return self.mm[0] == FREE and nbytes <= self.size <= 2 * nbytes  # reuse, without hoarding a big slot


class SlotPool:
    """A worker's slots (see the module docstring)."""

    def __init__(self, prefix):
        self.prefix = prefix
        self.slots = []
        self.lent = {}  # data address of an array `empty` made -> its slot, until it is sent
        self.warned_full = False

    def take(self, nbytes):
        """A BUSY slot of at least `nbytes`; None when shared memory is full."""
        self._retire_spares()
        slot = next((s for s in self.slots if s.fits(nbytes)), None) or self._create(nbytes)
        if slot is not None:
            slot.mm[0] = BUSY
        return slot

    def _create(self, nbytes):
        path = os.path.join(SHM_DIR, f"{self.prefix}-{uuid.uuid4().hex}")
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        try:
            # Reserve the pages now: a full /dev/shm is an error here, not a SIGBUS on a later write.
            os.posix_fallocate(fd, 0, HEADER + nbytes)
            slot = _Slot(path, mmap.mmap(fd, HEADER + nbytes, flags=_MAP_FLAGS))
        except OSError as e:
            os.unlink(path)
            self._warn_full(e)
            return None
        finally:
            os.close(fd)
        self.slots.append(slot)
        return slot

    def _retire_spares(self):
        for slot in [s for s in self.slots if s.mm[0] == FREE][SPARE_SLOTS:]:
            slot.mm[0] = RETIRED
            os.unlink(slot.path)
            self.slots.remove(slot)  # the mapping goes with the last array still viewing it

    def _warn_full(self, error):
        if not self.warned_full:
            self.warned_full = True
            warnings.warn(
                f"emberdata: cannot allocate in {SHM_DIR} ({error.strerror}); DataLoader workers send big batches "
                "through the pipe instead, which is slower. Give the machine or container more shared memory "
                "(e.g. docker run --shm-size=2g)",
                RuntimeWarning, stacklevel=2,
            )

    def unlink_all(self):
        """The worker is leaving: its files go (mappings still in use keep their memory)."""
        for slot in self.slots:
            try:
                os.unlink(slot.path)
            except FileNotFoundError:
                pass
        self.slots = []

    def lend(self, slot, shape, dtype):
        array = _view(slot.mm, shape, dtype)
        self.lent[_address(array)] = slot
        weakref.finalize(array, self._unsent, _address(array), slot)
        return array

    def _unsent(self, address, slot):
        """An array `empty` made died in the worker without being sent: its slot is free again."""
        if self.lent.get(address) is slot:
            del self.lent[address]
            slot.mm[0] = FREE

    def share(self, array):
        """`array` as a SharedTensor: its own slot when `empty` made it, else a copy into a slot."""
        slot = self.lent.get(_address(array))
        if slot is not None and array.nbytes <= slot.size and array.flags.c_contiguous:
            del self.lent[_address(array)]
            return SharedTensor(slot.path, array.shape, array.dtype.str)
        slot = self.take(array.nbytes)
        if slot is None:
            return None
        _view(slot.mm, array.shape, array.dtype)[...] = array
        return SharedTensor(slot.path, array.shape, array.dtype.str)


def collate_into_shared_memory(prefix):
    """In a worker: from now on big batches go through slots named with `prefix` (None: never)."""
    global _pool
    _pool = SlotPool(prefix) if prefix is not None else None


def leave():
    """In a worker about to exit: removes its files, even when no main process is left to do it."""
    if _pool is not None:
        _pool.unlink_all()


def empty(shape, dtype):
    """An uninitialised array; in a worker, a big one lives in a slot, so the batch collated into
    it reaches the main process without another copy."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    slot = _pool.take(nbytes) if _pool is not None and nbytes >= MIN_BYTES else None
    if slot is None:
        return np.empty(shape, dtype)
    return _pool.lend(slot, shape, dtype)


def _walk(data, leaf):
    """Applies `leaf` to every leaf of dicts, namedtuples, tuples and lists (default_collate's shapes)."""
    if isinstance(data, collections.abc.Mapping):
        items = {k: _walk(v, leaf) for k, v in data.items()}
        try:
            return type(data)(items)
        except TypeError:
            return items
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_walk(v, leaf) for v in data))
    if type(data) in (list, tuple):
        return type(data)(_walk(v, leaf) for v in data)
    return leaf(data)


def export(data):
    """In a worker: big ember tensors in `data` replaced by SharedTensors (kept as they are when
    shared memory is full)."""

    def leaf(x):
        if isinstance(x, ember.Tensor) and x.dtype != ember.bfloat16 and x.numel() * x.element_size() >= MIN_BYTES:
            return _pool.share(np.asarray(x)) or x
        return x

    return data if _pool is None else _walk(data, leaf)


def _hand_back(mm):
    mm[0] = FREE


class Receiver:
    """The main process's side: each slot mapped once, and handed back when its tensor is gone."""

    def __init__(self):
        self.mappings = {}

    def _mapping(self, path):
        mm = self.mappings.get(path)
        if mm is None:
            fd = os.open(path, os.O_RDWR)
            try:
                mm = mmap.mmap(fd, 0, flags=_MAP_FLAGS)
            finally:
                os.close(fd)
            self._drop_retired()
            self.mappings[path] = mm
        return mm

    def _drop_retired(self):
        for path in [p for p, mm in self.mappings.items() if mm[0] == RETIRED]:
            del self.mappings[path]  # unmapped when no array views it any more

    def _import(self, shared):
        array = _view(self._mapping(shared.path), shared.shape, shared.dtype)
        # The tensor keeps `array` alive, and every view of the tensor keeps the tensor's storage.
        weakref.finalize(array, _hand_back, self.mappings[shared.path])
        return ember.from_numpy(array)

    def restore(self, data):
        """SharedTensors in `data` back into ember tensors."""
        return _walk(data, lambda x: self._import(x) if isinstance(x, SharedTensor) else x)


def cleanup(prefix):
    """Removes the files of `prefix` (tensors still using one keep its memory until they go)."""
    for path in glob.glob(os.path.join(SHM_DIR, glob.escape(prefix) + "-*")):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
