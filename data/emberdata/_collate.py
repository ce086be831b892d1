"""default_collate and default_convert (PyTorch 1.12 semantics), producing ember tensors.

Batches are stacked with NumPy and handed to ember zero-copy (`ember.from_numpy`); bfloat16,
which NumPy lacks, goes through float32 and back. In a DataLoader worker a big batch is stacked
straight into shared memory (`_shm.empty`), so it reaches the main process without another copy.
"""
import collections.abc
import re

import numpy as np

import ember

from emberdata import _shm

_NOT_NUMERIC = re.compile(r"[SaUO]")
_COLLATE_ERROR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _is_namedtuple(obj):
    return isinstance(obj, tuple) and hasattr(obj, "_fields")


def _stack_tensors(batch):
    dtype = batch[0].dtype
    shapes = {tuple(t.shape) for t in batch}
    if len(shapes) > 1:
        raise RuntimeError(f"stack expects each tensor to be equal size, but got {sorted(shapes)} in the batch")
    for t in batch:
        if t.dtype != dtype:
            raise TypeError(f"default_collate: all tensors of a batch must share a dtype, got {dtype} and {t.dtype}")
    if dtype == ember.bfloat16:
        return ember.from_numpy(np.stack([np.asarray(t.to(ember.float32)) for t in batch])).to(ember.bfloat16)
    return _stack_arrays([np.asarray(t) for t in batch])


def _stack_arrays(batch):
    shapes = {a.shape for a in batch}
    if len(shapes) > 1:
        raise RuntimeError(f"stack expects each array to be equal size, but got {sorted(shapes)} in the batch")
    out = _shm.empty((len(batch), *batch[0].shape), np.result_type(*{a.dtype for a in batch}))
    return ember.from_numpy(np.stack(batch, out=out))


def _map_type(elem, values):
    """Rebuilds a mapping or sequence of `elem`'s type, falling back to a plain dict/list."""
    try:
        return type(elem)(values)
    except TypeError:
        return values


def default_collate(batch):
    """Stacks a list of samples into a batch: tensors, arrays and numbers become ember tensors with a
    leading batch dimension; dicts, namedtuples and lists are collated field by field (tuples give
    lists, as in PyTorch 1.12); strings and bytes stay lists."""
    if not isinstance(batch, collections.abc.Sequence) or isinstance(batch, (str, bytes)) or len(batch) == 0:
        raise TypeError(f"default_collate: batch must be a non-empty sequence of samples, got {type(batch).__name__}")
    elem = batch[0]
    if isinstance(elem, ember.Tensor):
        return _stack_tensors(batch)
    if isinstance(elem, np.ndarray) or (isinstance(elem, np.generic) and not isinstance(elem, (np.str_, np.bytes_))):
        if _NOT_NUMERIC.search(np.asarray(elem).dtype.str) is not None:
            raise TypeError(_COLLATE_ERROR.format(np.asarray(elem).dtype))
        return _stack_arrays([np.asarray(a) for a in batch])
    if isinstance(elem, bool):
        return ember.tensor(batch, dtype=ember.bool)
    if isinstance(elem, float):
        return ember.tensor(batch, dtype=ember.float64)
    if isinstance(elem, int):
        return ember.tensor(batch, dtype=ember.int64)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return _map_type(elem, {key: default_collate([d[key] for d in batch]) for key in elem})
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = [default_collate(list(samples)) for samples in zip(*batch)]
        return transposed if isinstance(elem, tuple) else _map_type(elem, transposed)
    raise TypeError(_COLLATE_ERROR.format(type(elem)))


def default_convert(data):
    """Turns numpy arrays and numpy scalars (nested in dicts, namedtuples and lists) into ember tensors,
    without adding a batch dimension; everything else passes through."""
    if isinstance(data, ember.Tensor):
        return data
    if isinstance(data, (np.ndarray, np.generic)) and not isinstance(data, (np.str_, np.bytes_)):
        if _NOT_NUMERIC.search(np.asarray(data).dtype.str) is not None:
            return data
        return ember.from_numpy(np.ascontiguousarray(data))
    if isinstance(data, collections.abc.Mapping):
        return _map_type(data, {key: default_convert(v) for key, v in data.items()})
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _map_type(data, [default_convert(d) for d in data])
    return data
