"""Columns and frames to ember tensors (TorchArrow's ``torcharrow.pytorch`` conversions).

Numbers go through ``ember.from_numpy`` over the Arrow buffers: zero-copy for a column without
nulls; a null slot becomes 0 and a nullable column comes as ``WithPresence(values, presence)``.
Strings stay Python lists (a tensor cannot hold them).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from emberarrow import _arrow
from emberarrow import dtypes as dt
from emberarrow.icolumn import ListColumn, MapColumn, NumericalColumn, StringColumn, _wrap

_REC_ISSUE = (
    "the sparse conversions (KeyedJaggedTensor) need emberrec's jagged tensors, which are not built "
    "yet (issue 24, emberrec and ember-rec)"
)


@dataclass
class WithPresence:
    values: Any
    presence: Any


@dataclass
class PackedList:
    offsets: Any
    values: Any


@dataclass
class PackedMap:
    offsets: Any
    keys: Any
    values: Any


def _tensor(values):
    import ember

    return ember.from_numpy(np.ascontiguousarray(values))


def _numbers(col):
    """(values tensor with nulls as 0, presence tensor or None when the dtype is not nullable)."""
    values = _arrow.numpy_values(col._data, False if dt.is_boolean(col.dtype) else 0)
    tensor = _tensor(values.astype(dt.np_typeof_dtype(col.dtype), copy=False))
    return tensor, (_tensor(_arrow.validity(col._data)) if col.dtype.nullable else None)


def _default(col):
    from emberarrow.idataframe import DataFrame

    if isinstance(col, DataFrame):
        return to_tensor_tuple(col, {})
    if isinstance(col, StringColumn):
        return col.to_pylist()
    if isinstance(col, NumericalColumn):
        values, presence = _numbers(col)
    elif isinstance(col, ListColumn):
        offsets, flat = _arrow.list_parts(col._data)
        values = PackedList(_tensor(offsets.astype(np.int32, copy=False)), _default(_wrap(flat, col.dtype.item_dtype)))
        presence = _tensor(_arrow.validity(col._data)) if col.dtype.nullable else None
    elif isinstance(col, MapColumn):
        offsets, keys, items = _arrow.map_parts(col._data)
        values = PackedMap(_tensor(offsets.astype(np.int32, copy=False)), _default(_wrap(keys, col.dtype.key_dtype)), _default(_wrap(items, col.dtype.item_dtype)))
        presence = _tensor(_arrow.validity(col._data)) if col.dtype.nullable else None
    else:
        raise TypeError(f"no tensor conversion for {col.dtype}")
    return values if presence is None else WithPresence(values, presence)


class TensorConversion:
    """Base of conversions with a ``to_tensor(col)`` method."""

    def to_tensor(self, col):
        raise NotImplementedError(f"{type(self).__name__} does not define to_tensor")


class DefaultTensorConversion(TensorConversion):
    """Numbers to a tensor (WithPresence when nullable), lists to PackedList, maps to PackedMap,
    strings to a Python list, frames to a named tuple of their columns' conversions."""

    def to_tensor(self, col):
        return _default(col)


class PadSequence:
    """Lists of numbers to one padded 2-D tensor: (rows, longest) or, batch_first=False, (longest, rows)."""

    def __init__(self, *, batch_first=True, padding_value=0.0):
        self.batch_first = batch_first
        self.padding_value = padding_value

    def __call__(self, col):
        if not isinstance(col, ListColumn) or not dt.is_numerical(col.dtype.item_dtype):
            raise TypeError(f"PadSequence needs a list column of numbers, got {col.dtype}")
        offsets, flat = _arrow.list_parts(col._data)
        if col.null_count or flat.null_count:
            raise ValueError("PadSequence: the column holds nulls; fill_null or drop_null first")
        lengths = np.diff(offsets)
        values = flat.to_numpy(zero_copy_only=False)
        out = np.full((len(col), int(lengths.max()) if len(col) else 0), self.padding_value, dtype=values.dtype)
        rows = np.repeat(np.arange(len(col)), lengths)
        out[rows, np.arange(len(values)) - offsets[:-1][rows]] = values
        return _tensor(out if self.batch_first else out.T)


class Dense:
    """The frame's numerical columns as one tensor, (columns, rows) or, batch_first, (rows, columns).

    Null slots are 0 (TorchArrow copied whatever the null slot held); ``with_presence=True``
    returns WithPresence(values, presence) with a presence tensor of the same shape.
    """

    def __init__(self, *, batch_first=False, with_presence=False):
        self.batch_first = batch_first
        self.with_presence = with_presence

    def __call__(self, df):
        from emberarrow.idataframe import DataFrame

        if not isinstance(df, DataFrame) or not df.columns:
            raise ValueError(f"Dense needs a frame with columns, got {getattr(df, 'dtype', type(df).__name__)}")
        cols = [df._column(n) for n in df.columns]
        for name, c in zip(df.columns, cols):
            if not dt.is_boolean_or_numerical(c.dtype):
                raise TypeError(f"Dense: column {name!r} is {c.dtype}, not numerical")
        np_type = np.result_type(*(dt.np_typeof_dtype(c.dtype) for c in cols))
        values = np.empty((len(cols), len(df)), dtype=np_type)
        presence = np.empty((len(cols), len(df)), dtype=bool)
        for i, c in enumerate(cols):
            values[i] = _arrow.numpy_values(c._data)
            presence[i] = _arrow.validity(c._data)
        if self.batch_first:
            values, presence = values.T, presence.T
        return WithPresence(_tensor(values), _tensor(presence)) if self.with_presence else _tensor(values)


@dataclass
class JaggedFeatures:
    """The parts of a KeyedJaggedTensor in its key-major layout: ``values`` holds every row of key 0,
    then every row of key 1, ...; ``lengths[k * rows + r]`` is the number of ids of key k in row r."""

    keys: list
    values: Any
    lengths: Any


class KeyMajorJagged:
    """A frame of id-list columns (lists of integers) as JaggedFeatures, built in one pass that
    copies each column's ids once (a copy is memory-bound: more threads do not help). A null list
    has length 0. (TorchRec's torcharrow
    example filled its KeyedJaggedTensor row-major, which interleaves the keys: a bug not copied.)"""

    def __call__(self, df):
        from emberarrow.idataframe import DataFrame

        if not isinstance(df, DataFrame):
            raise TypeError(f"KeyMajorJagged needs a DataFrame, got {type(df).__name__}")
        parts = []
        for name in df.columns:
            col = df._column(name)
            if not isinstance(col, ListColumn) or not dt.is_integer(col.dtype.item_dtype):
                raise TypeError(f"KeyMajorJagged: column {name!r} is {col.dtype}, not a list of integers")
            offsets, flat = _arrow.list_parts(col._data)
            if flat.null_count:
                raise ValueError(f"KeyMajorJagged: column {name!r} holds null ids; fill_null first")
            parts.append((offsets, flat.to_numpy(zero_copy_only=False)))
        rows = len(df)
        values = np.empty(sum(len(ids) for _, ids in parts), dtype=np.int64)
        lengths = np.empty(rows * len(parts), dtype=np.int32)
        start = 0
        for k, (offsets, ids) in enumerate(parts):
            np.subtract(offsets[1:], offsets[:-1], out=lengths[k * rows:(k + 1) * rows], casting="unsafe")
            np.copyto(values[start:start + len(ids)], ids, casting="unsafe")
            start += len(ids)
        return JaggedFeatures(df.columns, _tensor(values), _tensor(lengths))


class _Sparse:
    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs

    def __call__(self, df):
        raise NotImplementedError(f"{type(self).__name__}: {_REC_ISSUE}")


class KeyedJaggedTensor(_Sparse):
    """The frame's id-list columns as emberrec's KeyedJaggedTensor (not built yet: raises)."""


class JaggedSparse(_Sparse):
    """TorchArrow's rec.JaggedSparse (not built yet: raises)."""


class PackedSparse(_Sparse):
    """TorchArrow's rec.PackedSparse (not built yet: raises)."""


class IndividualSparse(_Sparse):
    """TorchArrow's rec.IndividualSparse (not built yet: raises)."""


def to_tensor_tuple(df, conversions):
    """A named tuple with each column converted by ``conversions[name]`` (default otherwise)."""
    unknown = [n for n in conversions if n not in df.columns]
    if unknown:
        raise KeyError(f"to_tensor: no columns {unknown} in the frame {df.columns}")
    row = df.dtype.py_type
    return row(*(_apply(conversions.get(n), df._column(n)) for n in df.columns))


def _apply(conversion, col):
    if conversion is None:
        return _default(col)
    if isinstance(conversion, TensorConversion):
        return conversion.to_tensor(col)
    if callable(conversion):
        return conversion(col)
    raise TypeError(f"a conversion must be a TensorConversion or a callable, got {type(conversion).__name__}")


def convert(col, conversion):
    """What ``Column.to_tensor`` / ``DataFrame.to_tensor`` return."""
    from emberarrow.idataframe import DataFrame

    if isinstance(conversion, dict):
        if not isinstance(col, DataFrame):
            raise TypeError("to_tensor: a dict of conversions needs a DataFrame")
        return to_tensor_tuple(col, conversion)
    return _apply(conversion, col)


def from_tensor(data, dtype):
    """A column of ``dtype`` from a tensor (or WithPresence of one) that a transform returned."""
    from emberarrow.icolumn import column

    if isinstance(data, WithPresence):
        values = np.asarray(data.values.numpy()).tolist()
        presence = np.asarray(data.presence.numpy()).tolist()
        return column([v if p else None for v, p in zip(values, presence)], dtype.with_null(True))
    if hasattr(data, "numpy"):
        return column(np.asarray(data.numpy()).tolist(), dtype)
    return column(data, dtype)
