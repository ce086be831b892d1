"""Columns and frames to ember tensors (TorchArrow's ``torcharrow.pytorch`` conversions).

Numbers go through ``ember.from_numpy`` over the Arrow buffers: zero-copy for a column without
nulls; a null slot becomes 0 and a nullable column comes as ``WithPresence(values, presence)``.
Strings stay Python lists (a tensor cannot hold them).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

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

    Null slots hold ``fill_null`` (0 by default; TorchArrow copied whatever the null slot held);
    ``with_presence=True`` returns WithPresence(values, presence) with a presence tensor of the same
    shape. Beyond TorchArrow, ``log_offset=c`` gives log(x + c) of each value (after the fill), as
    ``(df + c).log()`` would, in the same pass that lays out the tensor: float32, or float64 when a
    column is Float64.
    """

    def __init__(self, *, batch_first=False, with_presence=False, fill_null=0, log_offset=None):
        if not isinstance(fill_null, (int, float)) or isinstance(fill_null, bool):
            raise TypeError(f"Dense: fill_null must be a number, got {fill_null!r}")
        if log_offset is not None and (not isinstance(log_offset, (int, float)) or isinstance(log_offset, bool)):
            raise TypeError(f"Dense: log_offset must be a number or None, got {log_offset!r}")
        self.batch_first = batch_first
        self.with_presence = with_presence
        self.fill_null = fill_null
        self.log_offset = log_offset

    def __call__(self, df):
        from emberarrow.idataframe import DataFrame

        if not isinstance(df, DataFrame) or not df.columns:
            raise ValueError(f"Dense needs a frame with columns, got {getattr(df, 'dtype', type(df).__name__)}")
        cols = [df._column(n) for n in df.columns]
        for name, c in zip(df.columns, cols):
            if not dt.is_boolean_or_numerical(c.dtype):
                raise TypeError(f"Dense: column {name!r} is {c.dtype}, not numerical")
        np_type = np.result_type(*(dt.np_typeof_dtype(c.dtype) for c in cols))
        if self.log_offset is not None:
            np_type = np.dtype(np.float64 if any(dt.is_float64(c.dtype) for c in cols) else np.float32)
        if np_type.kind == "f":
            values = self._floating_rows(cols, np_type)
            values = values if self.batch_first else values.T
        else:
            values = self._exact_columns(cols, np_type)
            values = values.T if self.batch_first else values
        if not self.with_presence:
            return _tensor(values)
        presence = np.stack([_arrow.validity(c._data) for c in cols])
        return WithPresence(_tensor(values), _tensor(presence.T if self.batch_first else presence))

    def _floating_rows(self, cols, np_type):
        """(rows, columns) in one pass of the Rust kernel, which computes in float64."""
        arrays = [c._data if c._data.type in _KERNEL_TYPES else c._data.cast(pa.float64()) for c in cols]
        values = np.empty((len(cols[0]), len(cols)), dtype=np_type)
        columns = [(_arrow.raw_values(a), *_arrow.validity_bits(a)) for a in arrays]
        _arrow.kernels().dense_rows(columns, float(self.fill_null), None if self.log_offset is None else float(self.log_offset), values)
        return values

    def _exact_columns(self, cols, np_type):
        """(columns, rows) of integers or booleans, copied exactly by NumPy."""
        values = np.empty((len(cols), len(cols[0])), dtype=np_type)
        for i, c in enumerate(cols):
            values[i] = _arrow.numpy_values(c._data, bool(self.fill_null) if dt.is_boolean(c.dtype) else self.fill_null)
        return values


_KERNEL_TYPES = (pa.int32(), pa.int64(), pa.float32(), pa.float64())


@dataclass
class JaggedFeatures:
    """The parts of a KeyedJaggedTensor in its key-major layout: ``values`` holds every row of key 0,
    then every row of key 1, ...; ``lengths[k * rows + r]`` is the number of ids of key k in row r."""

    keys: list
    values: Any
    lengths: Any


class KeyMajorJagged:
    """A frame of id columns as JaggedFeatures, written in one pass that reads each id once.

    A column holds lists of integer ids, or integer ids (one per row, as ``array_constructor``
    would wrap them); a null list, or a null id, gives a row no ids. Beyond TorchArrow, the steps of
    TorchRec's torcharrow example are applied while the ids are written, with no intermediate
    column: ``fill_null=v`` makes a null id (of a column of ids) the id v, ``sigrid_hash=(salt,
    max_value)`` hashes each id as ``functional.sigrid_hash``, ``firstx=n`` keeps the first n ids
    of each list as ``functional.firstx``. (TorchRec's example filled its KeyedJaggedTensor
    row-major, which interleaves the keys: a bug not copied.)"""

    def __init__(self, *, fill_null=None, sigrid_hash=None, firstx=None):
        if fill_null is not None and not _is_int(fill_null):
            raise TypeError(f"KeyMajorJagged: fill_null must be an integer id or None, got {fill_null!r}")
        if sigrid_hash is not None:
            if not (isinstance(sigrid_hash, tuple) and len(sigrid_hash) == 2 and all(map(_is_int, sigrid_hash))):
                raise TypeError(f"KeyMajorJagged: sigrid_hash must be a (salt, max_value) pair of integers, got {sigrid_hash!r}")
            if sigrid_hash[1] <= 0:
                raise ValueError(f"sigrid_hash: maxValue must be larger than 0, got {sigrid_hash[1]}")
        if firstx is not None and (not _is_int(firstx) or firstx < 0):
            raise ValueError(f"KeyMajorJagged: firstx must be an integer >= 0, got {firstx!r}")
        self.steps = {"fill_null": fill_null, "sigrid_hash": sigrid_hash, "firstx": firstx}

    def __call__(self, df):
        from emberarrow.idataframe import DataFrame

        if not isinstance(df, DataFrame):
            raise TypeError(f"KeyMajorJagged needs a DataFrame, got {type(df).__name__}")
        columns = [_id_buffers(name, df._column(name)) for name in df.columns]
        values, lengths = _arrow.kernels().key_major(columns, **self.steps)  # ember tensors
        return JaggedFeatures(df.columns, values, lengths)


def _is_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _id_buffers(name, col):
    """(offsets or None, int64 ids, validity bits, bit offset) of an id column, for the kernels."""
    if isinstance(col, ListColumn) and dt.is_integer(col.dtype.item_dtype):
        offsets, flat = _arrow.list_parts(col._data)
        if flat.null_count:
            raise ValueError(f"KeyMajorJagged: column {name!r} holds null ids; fill_null first")
        return (offsets.astype(np.int32, copy=False), _arrow.int64_values(flat), *_arrow.validity_bits(col._data))
    if isinstance(col, NumericalColumn) and dt.is_integer(col.dtype):
        return (None, _arrow.int64_values(col._data), *_arrow.validity_bits(col._data))
    raise TypeError(f"KeyMajorJagged: column {name!r} is {col.dtype}, not integer ids or lists of them")


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
