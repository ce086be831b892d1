"""Large tensors from workers travel through shared memory instead of the result pipe.

Pickling an 8 MB batch through a pipe costs two copies and two (de)serialisations; here the
worker copies it once into a file under /dev/shm, and the main process maps that file and wraps
it zero-copy (`ember.from_numpy`). The file is unlinked as soon as it is mapped, so the memory
goes away with the tensor. Files a main process never picked up (an early break, an error) all
carry the iterator's prefix and are removed when it shuts its workers down.
"""
import collections.abc
import glob
import mmap
import os
import uuid

import numpy as np

import ember

SHM_DIR = "/dev/shm"
MIN_BYTES = 64 * 1024  # below this, pickling through the pipe is as fast


def available():
    return os.path.isdir(SHM_DIR) and os.access(SHM_DIR, os.W_OK)


def new_prefix():
    return f"emberdata-{os.getpid()}-{uuid.uuid4().hex[:12]}"


class SharedTensor:
    """A tensor parked in a /dev/shm file: its path, shape and dtype."""

    def __init__(self, path, shape, dtype):
        self.path, self.shape, self.dtype = path, shape, dtype


def _export(tensor, prefix):
    array = np.asarray(tensor)
    path = os.path.join(SHM_DIR, f"{prefix}-{uuid.uuid4().hex}")
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        os.ftruncate(fd, array.nbytes)
        with mmap.mmap(fd, array.nbytes) as mm:
            np.frombuffer(mm, dtype=array.dtype).reshape(array.shape)[...] = array
    finally:
        os.close(fd)
    return SharedTensor(path, array.shape, array.dtype.str)


def _import(shared):
    fd = os.open(shared.path, os.O_RDWR)
    try:
        size = int(np.prod(shared.shape)) * np.dtype(shared.dtype).itemsize
        mm = mmap.mmap(fd, size)
    finally:
        os.close(fd)
        os.unlink(shared.path)
    return ember.from_numpy(np.frombuffer(mm, dtype=shared.dtype).reshape(shared.shape))


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


def export(data, prefix):
    """In a worker: big ember tensors in `data` replaced by SharedTensors."""

    def leaf(x):
        if isinstance(x, ember.Tensor) and x.dtype != ember.bfloat16 and x.numel() * x.element_size() >= MIN_BYTES:
            return _export(x, prefix)
        return x

    return _walk(data, leaf)


def restore(data):
    """In the main process: SharedTensors back into ember tensors."""
    return _walk(data, lambda x: _import(x) if isinstance(x, SharedTensor) else x)


def cleanup(prefix):
    """Removes the files of `prefix` that nobody picked up."""
    for path in glob.glob(os.path.join(SHM_DIR, glob.escape(prefix) + "-*")):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
