"""Columns and frames to ember tensors (TorchArrow's ``torcharrow.pytorch`` conversions).

Numbers go through ``ember.from_numpy`` over the Arrow buffers: zero-copy for a column without
nulls; a null slot becomes 0 and a nullable column comes as ``WithPresence(values, presence)``.
Strings stay Python lists (a tensor cannot hold them). Sparse id features go through one Rust pass
into a key-major jagged layout: as its parts (KeyMajorJagged), as TorchArrow's ``rec`` conversions
(JaggedSparse, PackedSparse, IndividualSparse) or as emberrec's KeyedJaggedTensor.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np
import pyarrow as pa

from emberarrow import _arrow
from emberarrow import dtypes as dt
from emberarrow.icolumn import ListColumn, MapColumn, NumericalColumn, StringColumn, _wrap

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
        self.steps = _id_steps("KeyMajorJagged", fill_null, sigrid_hash, firstx)

    def __call__(self, df):
        features = _frame_features("KeyMajorJagged", df, False, self.steps)
        return JaggedFeatures(features.keys, features.values, features.lengths)


def _id_steps(who, fill_null, sigrid_hash, firstx):
    """The checked steps the kernel applies to the ids on the way (see KeyMajorJagged)."""
    if fill_null is not None and not _is_int(fill_null):
        raise TypeError(f"{who}: fill_null must be an integer id or None, got {fill_null!r}")
    if sigrid_hash is not None:
        if not (isinstance(sigrid_hash, tuple) and len(sigrid_hash) == 2 and all(map(_is_int, sigrid_hash))):
            raise TypeError(f"{who}: sigrid_hash must be a (salt, max_value) pair of integers, got {sigrid_hash!r}")
        if sigrid_hash[1] <= 0:
            raise ValueError(f"sigrid_hash: maxValue must be larger than 0, got {sigrid_hash[1]}")
    if firstx is not None and (not _is_int(firstx) or firstx < 0):
        raise ValueError(f"{who}: firstx must be an integer >= 0, got {firstx!r}")
    return {"fill_null": fill_null, "sigrid_hash": sigrid_hash, "firstx": firstx}


_NO_STEPS = {"fill_null": None, "sigrid_hash": None, "firstx": None}


def _is_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


# ---- the sparse conversions of TorchArrow's ``rec`` module, and emberrec's KeyedJaggedTensor ----
#
# All of them come from one key-major pass of the Rust kernel over the id columns (the same as
# KeyMajorJagged): ``values`` holds every id of key 0, then of key 1, ...; ``lengths[k * rows + r]``
# is the number of ids of key k in row r. A null list (or map) gives its row no ids; a null id or
# weight inside a list raises ValueError. Per-key parts are views of those two tensors. Weighted
# features are lists of (id, weight) structs, TorchArrow's ARRAY<ROW<BIGINT, REAL>>, or maps
# id -> weight; their weights come out float32 (REAL), in the same key-major order.

_IDS = "lists of integer ids (List(int64)) or integer ids"
_WEIGHTED_IDS = "lists of (id, weight) pairs (List(Struct([Field('id', int64), Field('weight', float32)]))) or Map(int64, float32)"


@dataclass
class _IdColumn:
    """One feature column as the kernel reads it (offsets or None, int64 ids, validity bits, bit
    offset) and, weighted, its flat weights (the items ``offsets`` index) and row validity."""

    buffers: tuple
    weights: Any = None
    valid: Any = None

    def kept_weights(self, firstx):
        """The weights of the ids the kernel keeps: none of a null row, the first ``firstx`` of a list."""
        offsets = self.buffers[0]
        lengths = np.diff(offsets)
        if self.valid.all() and (firstx is None or not len(lengths) or lengths.max() <= firstx):
            return self.weights
        rows = np.repeat(np.arange(len(lengths)), lengths)
        keep = self.valid[rows]
        if firstx is not None:
            keep &= np.arange(len(rows)) - offsets[:-1][rows] < firstx
        return self.weights[keep]


def _where(name):
    return "the column" if name is None else f"column {name!r}"


def _id_column(who, name, col):
    if isinstance(col, ListColumn) and dt.is_integer(col.dtype.item_dtype):
        offsets, flat = _arrow.list_parts(col._data)
        if flat.null_count:
            raise ValueError(f"{who}: {_where(name)} holds null ids; fill_null first")
        return _IdColumn((offsets.astype(np.int32, copy=False), _arrow.int64_values(flat), *_arrow.validity_bits(col._data)))
    if isinstance(col, NumericalColumn) and dt.is_integer(col.dtype):
        return _IdColumn((None, _arrow.int64_values(col._data), *_arrow.validity_bits(col._data)))
    hint = " (weighted features need weighted=True)" if _is_weighted_dtype(col.dtype) else ""
    raise TypeError(f"{who}: {_where(name)} is {col.dtype}, expected {_IDS}{hint}")


def _is_weighted_dtype(dtype):
    if dt.is_map(dtype):
        return dt.is_integer(dtype.key_dtype) and dt.is_floating(dtype.item_dtype)
    if dt.is_list(dtype) and dt.is_struct(dtype.item_dtype):
        fields = dtype.item_dtype.fields
        return len(fields) == 2 and dt.is_integer(fields[0].dtype) and dt.is_floating(fields[1].dtype)
    return False


def _weighted_id_column(who, name, col):
    if not _is_weighted_dtype(col.dtype):
        raise TypeError(f"{who}: {_where(name)} is {col.dtype}, expected {_WEIGHTED_IDS} (weighted=True)")
    if isinstance(col, MapColumn):
        offsets, ids, weights = _arrow.map_parts(col._data)
    else:
        offsets, pairs = _arrow.list_parts(col._data)
        if pairs.null_count:
            raise ValueError(f"{who}: {_where(name)} holds null (id, weight) pairs; drop or fill them first")
        ids, weights = pairs.field(0), pairs.field(1)
    if ids.null_count:
        raise ValueError(f"{who}: {_where(name)} holds null ids; fill_null first")
    if weights.null_count:
        raise ValueError(f"{who}: {_where(name)} holds null weights; fill_null first")
    buffers = (offsets.astype(np.int32, copy=False), _arrow.int64_values(ids), *_arrow.validity_bits(col._data))
    return _IdColumn(buffers, _arrow.numpy_values(weights).astype(np.float32, copy=False), _arrow.validity(col._data))


@dataclass
class _SparseFeatures:
    """The kernel's key-major ``values`` (int64) and ``lengths`` (int32) of ``keys`` over ``rows``
    rows, and the weights (float32) in the same order, or None."""

    keys: list
    rows: int
    values: Any
    lengths: Any
    weights: Any

    def length_per_key(self):
        return self._lengths_by_key().sum(1, dtype=np.int64).tolist()

    def _lengths_by_key(self):
        return self.lengths.numpy().reshape(len(self.keys), self.rows)

    def per_key(self):
        """Each key's (offsets, lengths, values, weights or None): views, but the offsets."""
        lengths = self._lengths_by_key()
        offsets = np.zeros((len(self.keys), self.rows + 1), dtype=np.int32)
        np.cumsum(lengths, axis=1, out=offsets[:, 1:])
        starts = np.concatenate([[0], np.cumsum(lengths.sum(1, dtype=np.int64))]).tolist()
        parts = []
        for k in range(len(self.keys)):
            span = slice(starts[k], starts[k + 1])
            weights = None if self.weights is None else self.weights[span]
            parts.append((_tensor(offsets[k]), self.lengths[k * self.rows:(k + 1) * self.rows], self.values[span], weights))
        return parts


def _features(who, named_columns, weighted, steps):
    """(name, column) pairs through one pass of the kernel into _SparseFeatures."""
    read = _weighted_id_column if weighted else _id_column
    columns = [read(who, name, col) for name, col in named_columns]
    values, lengths = _arrow.kernels().key_major([c.buffers for c in columns], **steps)  # ember tensors
    weights = None
    if weighted:
        weights = _tensor(np.concatenate([c.kept_weights(steps["firstx"]) for c in columns]).astype(np.float32, copy=False))
    rows = len(named_columns[0][1])
    return _SparseFeatures([name for name, _ in named_columns], rows, values, lengths, weights)


def _frame_features(who, df, weighted, steps=_NO_STEPS):
    from emberarrow.idataframe import DataFrame

    if not isinstance(df, DataFrame):
        raise TypeError(f"{who} needs a DataFrame of sparse feature columns, got {type(df).__name__}")
    if not df.columns:
        raise ValueError(f"{who} needs a DataFrame with at least one sparse feature column, got {df.dtype}")
    return _features(who, [(name, df._column(name)) for name in df.columns], weighted, steps)


def _check_weighted(who, weighted):
    if not isinstance(weighted, (bool, np.bool_)):
        raise TypeError(f"{who}: weighted must be True or False, got {weighted!r}")
    return bool(weighted)


def _check_option(who, option, kind):
    if not isinstance(option, kind):
        raise TypeError(f"{who}: expected a {kind.__name__}, got {option!r}")
    return option


def _with_weights(parts, weights):
    """``parts`` then ``weights`` when the features are weighted, as a tuple."""
    return (*parts, weights) if weights is not None else tuple(parts)


class IndividualSparse:
    """One sparse feature column as ``(offsets, lengths, values)``, or weighted
    ``(offsets, lengths, values, weights)`` (TorchArrow's ``rec.IndividualSparse``): from lists of
    integer ids (ARRAY<BIGINT>) or, ``weighted=True``, lists of (id, weight) pairs
    (ARRAY<ROW<BIGINT, REAL>>) or maps id -> weight. Offsets and lengths are int32, values int64,
    weights float32; a null row has no ids."""

    def __init__(self, *, weighted):
        self.weighted = _check_weighted("IndividualSparse", weighted)

    def __call__(self, col):
        from emberarrow.icolumn import Column
        from emberarrow.idataframe import DataFrame

        if isinstance(col, DataFrame) or not isinstance(col, Column):
            raise TypeError(f"IndividualSparse converts one column (a frame of features takes PackedSparse or "
                            f"JaggedSparse), got {getattr(col, 'dtype', type(col).__name__)}")
        features = _features("IndividualSparse", [(None, col)], self.weighted, _NO_STEPS)
        offsets, lengths, values, weights = features.per_key()[0]
        return _with_weights((offsets, lengths, values), weights)


class PackOption(Enum):
    """What PackedSparse returns.

    AS_PYDICT: ``{name: (offsets, lengths, values[, weights])}``, in column order.
    AS_PYLIST: ``[lengths, values[, weights]]`` of each feature in turn, in one flat list.
    """

    AS_PYDICT = 1
    AS_PYLIST = 2


class PackedSparse:
    """A frame of sparse feature columns, each converted alone as IndividualSparse would
    (TorchArrow's ``rec.PackedSparse``), laid out as ``pack_option`` says; the tensors of every
    feature are views of one key-major pass over all the columns."""

    def __init__(self, *, weighted, pack_option=PackOption.AS_PYDICT):
        self.weighted = _check_weighted("PackedSparse", weighted)
        self.pack_option = _check_option("PackedSparse", pack_option, PackOption)

    def __call__(self, df):
        features = _frame_features("PackedSparse", df, self.weighted)
        parts = features.per_key()
        if self.pack_option is PackOption.AS_PYDICT:
            return {key: _with_weights(p[:3], p[3]) for key, p in zip(features.keys, parts)}
        return [tensor for p in parts for tensor in _with_weights(p[1:3], p[3])]


class CombineOption(Enum):
    """What JaggedSparse returns.

    JAGGED: ``(keys, length_per_key, lengths, values[, weights])``, a KeyedJaggedTensor's parts.
    COMBINED: ``(lengths, values[, weights])``, lengths as a (keys, rows) tensor.
    JAGGED_WITH_OFFSET: ``(lengths, values[, weights], length_per_key, offset_per_key)``.
    """

    JAGGED = 1
    COMBINED = 2
    JAGGED_WITH_OFFSET = 3


class JaggedSparse:
    """A frame of sparse feature columns combined into one key-major jagged layout (TorchArrow's
    ``rec.JaggedSparse``), in the representation ``combine_option`` names: ``values`` holds every id
    of the first column, then of the second...; ``lengths`` (int32) the number of ids of each
    column in each row, column after column; ``length_per_key``/``offset_per_key`` Python lists."""

    def __init__(self, *, weighted, combine_option=CombineOption.JAGGED):
        self.weighted = _check_weighted("JaggedSparse", weighted)
        self.combine_option = _check_option("JaggedSparse", combine_option, CombineOption)

    def __call__(self, df):
        f = _frame_features("JaggedSparse", df, self.weighted)
        if self.combine_option is CombineOption.JAGGED:
            return _with_weights((f.keys, f.length_per_key(), f.lengths, f.values), f.weights)
        if self.combine_option is CombineOption.COMBINED:
            return _with_weights((f.lengths.view(len(f.keys), f.rows), f.values), f.weights)
        length_per_key = f.length_per_key()
        offset_per_key = np.concatenate([[0], np.cumsum(length_per_key, dtype=np.int64)]).tolist()
        return (*_with_weights((f.lengths, f.values), f.weights), length_per_key, offset_per_key)


class KeyedJaggedTensor:
    """A frame of sparse feature columns as emberrec's ``KeyedJaggedTensor``: keys the column
    names, values and lengths key-major (as TorchRec lays them out), stride the number of rows,
    weights from (id, weight) lists or maps when ``weighted=True``. ``fill_null``, ``sigrid_hash``
    and ``firstx`` apply the steps of TorchRec's torcharrow example to the ids on the way, as
    KeyMajorJagged does (for weighted features, ``firstx`` keeps the weights of the ids it keeps).
    Needs emberrec (``pip install emberrec``), imported when the conversion runs."""

    def __init__(self, *, weighted=False, fill_null=None, sigrid_hash=None, firstx=None):
        self.weighted = _check_weighted("KeyedJaggedTensor", weighted)
        self.steps = _id_steps("KeyedJaggedTensor", fill_null, sigrid_hash, firstx)

    def __call__(self, df):
        keyed_jagged_tensor = _emberrec_keyed_jagged_tensor()
        f = _frame_features("KeyedJaggedTensor", df, self.weighted, self.steps)
        # The kernel's output is consistent by construction (lengths >= 0 that add up to the ids of
        # each key), so the constructor's checks, a pass over every length, are skipped.
        return keyed_jagged_tensor._trusted(f.keys, f.values, f.weights, f.lengths, f.rows, f.length_per_key())


def _emberrec_keyed_jagged_tensor():
    """emberrec's class, imported here: emberarrow does not depend on emberrec."""
    try:
        from emberrec.sparse.jagged_tensor import KeyedJaggedTensor as keyed_jagged_tensor
    except ModuleNotFoundError as error:
        if error.name is not None and error.name.split(".")[0] != "emberrec":
            raise
        raise ImportError("tensor_conversion.KeyedJaggedTensor builds emberrec's KeyedJaggedTensor, and emberrec "
                          "is not installed: pip install emberrec (or emberarrow[rec])") from None
    return keyed_jagged_tensor


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
