"""TorchArrow's recsys and text functions (``torcharrow.functional``) over the Arrow buffers: list
columns are handled as offsets plus one flat array of values; sigrid_hash, bucketize and firstx run
in Rust (``ember._C.arrow``), the rest vectorised with NumPy and ``pyarrow.compute``.

Results follow TorchArrow's (Velox's) definitions exactly, sigrid_hash bit for bit; as there, a
row whose argument is null, or holds a null item, gives null, and result dtypes are nullable.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from emberarrow import _arrow
from emberarrow import dtypes as dt
from emberarrow.icolumn import Column, ListColumn, NumericalColumn, StringColumn, _check_device, _wrap
from emberarrow.text import GPT2BPEEncoder

__all__ = [
    "add_tokens", "array_constructor", "array_except", "bpe_tokenize", "bucketize", "clamp_list",
    "firstx", "get_cosine_similarity", "get_jaccard_similarity", "get_max_count", "get_score_max",
    "get_score_min", "get_score_sum", "has_id_overlap", "hex_to_int", "id_overlap_count",
    "lookup_indices", "rand", "scale_to_0_1", "scale_to_z_score", "sigmoid", "sigrid_hash",
]

_U64 = np.uint64


def _nullable(dtype):
    """``dtype`` with every level nullable, as Velox's result types read back in TorchArrow."""
    if dt.is_list(dtype):
        return dt.List(_nullable(dtype.item_dtype), True)
    return dtype.with_null(True)


def _require(col, kinds, name, what):
    if not isinstance(col, kinds):
        raise TypeError(f"{name}: expected {what}, got {type(col).__name__}")


def _list_of(col, name, item_check, what):
    _require(col, ListColumn, name, f"a list column of {what}")
    if not item_check(col.dtype.item_dtype):
        raise TypeError(f"{name}: expected a list column of {what}, got {col.dtype}")


def _same_length(name, *cols):
    lengths = {len(c) for c in cols}
    if len(lengths) > 1:
        raise TypeError(f"{name}: columns must have equal length, got {[len(c) for c in cols]}")


def _with_nulls(values, valid):
    return _arrow.from_numpy(values, valid)


def _null_free_rows(offsets, values, array):
    """Rows that are not null and hold no null item: Velox's callNullFree gives null for the others."""
    valid = _arrow.validity(array)
    if values.null_count:
        rows = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
        valid = valid & ~(np.bincount(rows[~_arrow.validity(values)], minlength=len(valid)) > 0)
    return valid


def _list_result(offsets, values, valid, dtype):
    mask = None if valid.all() else pa.array(~valid)
    return _wrap(pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32, copy=False)), values, mask=mask), dtype)


# ---- sigrid_hash ----

def _sigrid_hash_values(values, salt, max_value):
    """Velox's sigrid_hash of int64 ``values`` (any NumPy integers): hash_combine(salt,
    twang_mix64(v)), then the floor remainder by ``max_value``. The Rust kernel, on all cores."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    out = np.empty(len(values), dtype=np.int64)
    _arrow.kernels().sigrid_hash(values, salt, max_value, out)
    return out


def _fnv1a_utf8(array):
    """64-bit FNV-1a of each string's UTF-8 bytes, vectorised over byte positions."""
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int32, count=len(array) + 1, offset=array.offset * 4).astype(np.int64)
    data = np.frombuffer(array.buffers()[2], dtype=np.uint8) if array.buffers()[2] is not None else np.zeros(0, np.uint8)
    lengths = np.diff(offsets)
    h = np.full(len(array), 0xCBF29CE484222325, dtype=_U64)
    prime = _U64(0x100000001B3)
    with np.errstate(over="ignore"):
        for position in range(int(lengths.max()) if len(lengths) else 0):
            active = lengths > position
            byte = data[offsets[:-1][active] + position].astype(_U64)
            h[active] = (h[active] ^ byte) * prime
    return h.view(np.int64)


def sigrid_hash(value_col, salt, max_value):
    """Hash ids (an integer column, or lists of them) into [0, max_value), bit-exact with TorchArrow.

    A string column is accepted too (beyond TorchArrow, for Criteo's categorical columns): each
    string is first hashed to 64 bits with FNV-1a over its UTF-8 bytes.
    """
    if not isinstance(salt, (int, np.integer)) or not isinstance(max_value, (int, np.integer)):
        raise TypeError("sigrid_hash: salt and max_value must be integers")
    if max_value <= 0:
        raise ValueError(f"sigrid_hash: maxValue must be larger than 0, got {max_value}")
    salt, max_value = int(salt), int(max_value)
    if isinstance(value_col, ListColumn) and dt.is_integer(value_col.dtype.item_dtype):
        offsets, values = _arrow.list_parts(value_col._data)
        hashed = _sigrid_hash_values(_arrow.int64_values(values), salt, max_value)
        return _list_result(offsets, pa.array(hashed), _null_free_rows(offsets, values, value_col._data), dt.List(dt.Int64(True), True))
    if isinstance(value_col, StringColumn):
        ids = pa.array(_fnv1a_utf8(value_col._data), mask=~_arrow.validity(value_col._data))
    elif isinstance(value_col, NumericalColumn) and dt.is_integer(value_col.dtype):
        ids = value_col._data
    else:
        raise TypeError(f"sigrid_hash: expected an integer, list-of-integer or string column, got {getattr(value_col, 'dtype', type(value_col).__name__)}")
    raw = _arrow.int64_values(ids)
    hashed = _arrow.sharing_validity(ids, np.int64, lambda out: _arrow.kernels().sigrid_hash(raw, salt, max_value, out))
    return _wrap(hashed, dt.Int64(True))


_HEX = np.full(256, 255, dtype=np.uint8)
for _c in range(10):
    _HEX[ord("0") + _c] = _c
for _c in range(6):
    _HEX[ord("a") + _c] = _HEX[ord("A") + _c] = 10 + _c


def hex_to_int(col):
    """Hexadecimal strings (Criteo's categorical ids, e.g. '68fd1e64') to Int64; empty strings and
    nulls give null. Up to 16 hex digits (read as two's complement beyond 15); other characters
    raise ValueError."""
    _require(col, StringColumn, "hex_to_int", "a string column")
    array = col._data
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int32, count=len(array) + 1, offset=array.offset * 4).astype(np.int64)
    data = np.frombuffer(array.buffers()[2], dtype=np.uint8) if array.buffers()[2] is not None else np.zeros(0, np.uint8)
    lengths = np.diff(offsets)
    valid = _arrow.validity(array) & (lengths > 0)
    if np.any(lengths[valid] > 16):
        raise ValueError("hex_to_int: a string has more than 16 hex digits")
    starts = offsets[:-1]
    result = np.zeros(len(array), dtype=_U64)
    for position in range(int(lengths.max()) if len(lengths) else 0):
        active = valid & (lengths > position)
        nibbles = _HEX[data[starts[active] + position]]
        if np.any(nibbles == 255):
            bad = data[starts[active] + position][nibbles == 255][0]
            raise ValueError(f"hex_to_int: {chr(bad)!r} is not a hex digit")
        result[active] = (result[active] << _U64(4)) | nibbles.astype(_U64)
    return _wrap(_with_nulls(result.view(np.int64), valid), dt.Int64(True))


# ---- bucketize, firstx, clamp_list ----

def _check_borders(borders):
    if len(borders) == 0:
        raise ValueError("bucketize: Borders should not be empty.")
    if np.any(borders[1:] < borders[:-1]):
        raise ValueError("bucketize: Borders should have non-decreasing sequence.")
    if len(borders) > 2 and np.any((borders[2:] == borders[1:-1]) & (borders[1:-1] == borders[:-2])):
        raise ValueError("bucketize: Borders should not have more than 2 repeated values")


def _bucket_ids(array, borders, out):
    """Velox's computeBucketId of each value of ``array`` into ``out``: the lower bound of the
    value, moved one right when the next border equals the value (a border repeated twice makes a
    bucket of its own). Null slots get a bucket that nothing reads."""
    values = _arrow.raw_values(array if pa.types.is_floating(array.type) or pa.types.is_integer(array.type) else array.cast(pa.float64()))
    _arrow.kernels().bucketize(np.asarray(values, dtype=np.float64), borders, out)


def bucketize(value_col, borders):
    """The bucket of each value (or each item of lists) given sorted ``borders``: Int32."""
    if isinstance(borders, Column):
        borders = borders.to_pylist()
    borders = np.asarray(list(borders), dtype=np.float64)
    _check_borders(borders)
    if isinstance(value_col, ListColumn) and dt.is_numerical(value_col.dtype.item_dtype):
        offsets, values = _arrow.list_parts(value_col._data)
        ids = np.empty(len(values), dtype=np.int32)
        _bucket_ids(values, borders, ids)
        return _list_result(offsets, pa.array(ids), _null_free_rows(offsets, values, value_col._data), dt.List(dt.Int32(True), True))
    _require(value_col, NumericalColumn, "bucketize", "a numerical column or a list column of numbers")
    if not dt.is_numerical(value_col.dtype):
        raise TypeError(f"bucketize: expected numbers, got {value_col.dtype}")
    array = value_col._data
    return _wrap(_arrow.sharing_validity(array, np.int32, lambda out: _bucket_ids(array, borders, out)), dt.Int32(True))


def firstx(col, num_to_copy):
    """The first ``num_to_copy`` items of each list (zero-copy when no list is longer and none
    holds a null)."""
    _require(col, ListColumn, "firstx", "a list column")
    if num_to_copy < 0:
        raise ValueError(f"firstx: num_to_copy must be >= 0, got {num_to_copy}")
    offsets, values = _arrow.list_parts(col._data)
    lengths = np.diff(offsets)
    valid = _null_free_rows(offsets, values, col._data)
    if valid.all() and (not len(lengths) or lengths.max() <= num_to_copy):
        return _wrap(col._data, _nullable(col.dtype))  # nothing to cut: zero-copy
    keep = np.empty(len(values), dtype=np.uint8)
    new_offsets = np.empty(len(offsets), dtype=np.int32)
    _arrow.kernels().firstx(offsets.astype(np.int32, copy=False), int(num_to_copy), keep, new_offsets)
    return _list_result(new_offsets, values.filter(pa.array(keep.view(bool))), valid, _nullable(col.dtype))


def clamp_list(col, lo, hi):
    """Each item of each list clamped into [lo, hi]."""
    _list_of(col, "clamp_list", dt.is_numerical, "numbers")
    if lo > hi:
        raise ValueError("clamp_list: Lo > hi in clamp.")
    offsets, values = _arrow.list_parts(col._data)
    np_type = dt.np_typeof_dtype(col.dtype.item_dtype)
    clamped = np.clip(_arrow.numpy_values(values), lo, hi).astype(np_type)
    return _list_result(offsets, pa.array(clamped), _null_free_rows(offsets, values, col._data), _nullable(col.dtype))


def add_tokens(input_col, tokens, begin):
    """``tokens`` put before (``begin=True``) or after each list, e.g. BOS/EOS markers."""
    _require(input_col, ListColumn, "add_tokens", "a list column")
    tokens = tokens.to_pylist() if isinstance(tokens, Column) else list(tokens)
    item = input_col.dtype.item_dtype
    offsets, values = _arrow.list_parts(input_col._data)
    token_array = _arrow.to_arrow_array(tokens, item.with_null(True)).cast(values.type)
    k, n_values = len(tokens), len(values)
    new_offsets = offsets + k * np.arange(len(offsets), dtype=np.int64)
    source = np.empty(int(new_offsets[-1]), dtype=np.int64)
    first_token = new_offsets[:-1] if begin else new_offsets[1:] - k
    token_slots = (first_token[:, None] + np.arange(k)).ravel()
    is_token = np.zeros(len(source), dtype=bool)
    is_token[token_slots] = True
    source[token_slots] = n_values + np.tile(np.arange(k), len(offsets) - 1)
    source[~is_token] = np.arange(n_values)
    flat = pa.concat_arrays([values, token_array]).take(pa.array(source))
    return _list_result(new_offsets, flat, _arrow.validity(input_col._data), _nullable(input_col.dtype))


def array_constructor(*args):
    """Lists of one item from each column, row by row (all columns of one dtype)."""
    if not args or not all(isinstance(a, Column) for a in args):
        raise TypeError("array_constructor: expects one or more columns")
    _same_length("array_constructor", *args)
    dtype = args[0].dtype.with_null(False)
    for a in args[1:]:
        if a.dtype.with_null(False) != dtype:
            raise TypeError(f"array_constructor: all columns must have dtype {dtype}, got {a.dtype}")
    n, k = len(args[0]), len(args)
    arrow_type = dt.dtype_to_arrowtype(dtype)
    if k == 1:
        flat = args[0]._data.cast(arrow_type)  # one item per list: the column itself, zero-copy
    else:
        interleave = (np.arange(k)[None, :] * n + np.arange(n)[:, None]).ravel()
        flat = pa.concat_arrays([a._data.cast(arrow_type) for a in args]).take(pa.array(interleave))
    offsets = np.arange(0, n * k + 1, k, dtype=np.int32)
    return _wrap(pa.ListArray.from_arrays(pa.array(offsets), flat), dt.List(dtype.with_null(True), True))


def array_except(x, y):
    """The items of each list of ``x`` that its row of ``y`` does not hold, each once, in the order
    they first appear in ``x`` (Velox's ``array_except``). A null item is an item like any other
    (``[1, None, None]`` except ``[1, 1, None]`` is ``[]``); a null list on either side gives null."""
    _require(x, ListColumn, "array_except", "list columns")
    _require(y, ListColumn, "array_except", "list columns")
    item = x.dtype.item_dtype
    if not (dt.is_boolean_or_numerical(item) or dt.is_string(item)):
        raise TypeError(f"array_except: expected lists of numbers, booleans or strings, got {x.dtype}")
    if y.dtype.item_dtype.with_null(False) != item.with_null(False):
        raise TypeError(f"array_except: both columns must hold lists of one item dtype, got {x.dtype} and {y.dtype}")
    _same_length("array_except", x, y)
    x_offsets, x_values = _arrow.list_parts(x._data)
    y_offsets, y_values = _arrow.list_parts(y._data)
    n = len(x)
    x_rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(x_offsets))
    y_rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(y_offsets))
    # one code per distinct item (null included), so that (row, item) pairs become single integers
    codes = pc.dictionary_encode(pa.concat_arrays([x_values, y_values.cast(x_values.type)]), null_encoding="encode")
    codes = codes.indices.to_numpy().astype(np.int64)
    n_codes = int(codes.max()) + 1 if len(codes) else 1
    x_keys = x_rows * n_codes + codes[:len(x_values)]
    y_keys = y_rows * n_codes + codes[len(x_values):]
    first_seen = np.zeros(len(x_keys), dtype=bool)
    first_seen[np.unique(x_keys, return_index=True)[1]] = True
    valid = _arrow.validity(x._data) & _arrow.validity(y._data)
    keep = first_seen & ~np.isin(x_keys, y_keys) & valid[x_rows]
    offsets = np.concatenate([[0], np.cumsum(np.bincount(x_rows[keep], minlength=n))])
    return _list_result(offsets, x_values.filter(pa.array(keep)), valid, _nullable(x.dtype))


# ---- text: BPE tokens and vocabulary indices ----

def bpe_tokenize(tokenizer, input_col):
    """Each string's GPT-2 BPE token ids, as strings (TorchArrow's results), by ``tokenizer`` (an
    ``emberarrow.text.GPT2BPEEncoder``): ``List(String)``, null for a null string."""
    if not isinstance(tokenizer, GPT2BPEEncoder):
        raise TypeError(f"bpe_tokenize: tokenizer must be an emberarrow.text.GPT2BPEEncoder, got {type(tokenizer).__name__}")
    _require(input_col, StringColumn, "bpe_tokenize", "a string column")
    return _wrap(tokenizer._tokenize(input_col._data), dt.List(dt.String(True), True))


def lookup_indices(vocab, input_col):
    """Each list of tokens as the indices ``vocab`` gives them: ``List(Int64)``. ``vocab`` is a
    torchtext-style vocab (``embertext.vocab.Vocab``, ``torchtext.vocab.Vocab``, TorchArrow's
    ``Vocab``: anything with ``get_itos()`` and ``get_default_index()``); a token it lacks takes
    its default index, or raises RuntimeError when it has none. A null list, or one holding a null
    token, gives null."""
    if not (callable(getattr(vocab, "get_itos", None)) and callable(getattr(vocab, "get_default_index", None))):
        raise TypeError(f"lookup_indices: vocab must have get_itos() and get_default_index() (a Vocab), got {type(vocab).__name__}")
    _list_of(input_col, "lookup_indices", dt.is_string, "string tokens")
    itos, default_index = vocab.get_itos(), vocab.get_default_index()
    offsets, tokens = _arrow.list_parts(input_col._data)
    valid = _null_free_rows(offsets, tokens, input_col._data)
    indices = pc.index_in(tokens, value_set=pa.array(itos, pa.string()))
    missing = ~_arrow.validity(indices) & valid[np.repeat(np.arange(len(valid)), np.diff(offsets))]
    if missing.any():
        if default_index is None:
            token = tokens[int(np.flatnonzero(missing)[0])].as_py()
            raise RuntimeError(f"lookup_indices: Token {token} not found and default index is not set")
        indices = pc.fill_null(indices, default_index)
    return _list_result(offsets, indices.cast(pa.int64()), valid, dt.List(dt.Int64(True), True))


# ---- id overlap and score features ----

class _Ids:
    """A list column of ids (and optional scores) as flat NumPy arrays with each item's row."""

    def __init__(self, col, name, scores=None):
        _list_of(col, name, dt.is_integer, "integer ids")
        offsets, values = _arrow.list_parts(col._data)
        self.n = len(col)
        self.lengths = np.diff(offsets)
        self.rows = np.repeat(np.arange(self.n), self.lengths)
        self.ids = _arrow.numpy_values(values).astype(np.int64)
        self.valid = _arrow.validity(col._data) & ~_rows_with_null_items(values, self.rows, self.n)
        self.scores = None
        if scores is not None:
            _list_of(scores, name, dt.is_numerical, "numerical scores")
            s_offsets, s_values = _arrow.list_parts(scores._data)
            s_lengths = np.diff(s_offsets)
            s_valid = _arrow.validity(scores._data) & ~_rows_with_null_items(s_values, np.repeat(np.arange(self.n), s_lengths), self.n)
            both = self.valid & s_valid
            if np.any(both & (s_lengths != self.lengths)):
                raise ValueError(f"{name}: ids and scores should have the same len in every row")
            self.valid = both
            self.scores = _arrow.numpy_values(s_values).astype(np.float32)

    def grouped(self):
        """Distinct (row, id) pairs with their count, score sum, min and max."""
        order = np.lexsort((self.ids, self.rows))
        rows, ids = self.rows[order], self.ids[order]
        change = np.ones(len(rows), dtype=bool)
        change[1:] = (rows[1:] != rows[:-1]) | (ids[1:] != ids[:-1])
        starts = np.flatnonzero(change)
        counts = np.diff(np.append(starts, len(rows)))
        result = {"rows": rows[starts], "ids": ids[starts], "count": counts.astype(np.float32)}
        if self.scores is not None and len(starts):
            scores = self.scores[order]
            result["sum"] = np.add.reduceat(scores, starts)
            result["min"] = np.minimum.reduceat(scores, starts)
            result["max"] = np.maximum.reduceat(scores, starts)
        elif self.scores is not None:
            result["sum"] = result["min"] = result["max"] = np.zeros(0, np.float32)
        return result


def _rows_with_null_items(values, rows, n):
    if values.null_count == 0:
        return np.zeros(n, dtype=bool)
    return np.bincount(rows[~_arrow.validity(values)], minlength=n) > 0


def _matches(a, b):
    """Indices into a's and b's distinct pairs where the same (row, id) appears on both sides."""
    rows = np.concatenate([a["rows"], b["rows"]])
    ids = np.concatenate([a["ids"], b["ids"]])
    side = np.concatenate([np.zeros(len(a["rows"]), np.int8), np.ones(len(b["rows"]), np.int8)])
    index = np.concatenate([np.arange(len(a["rows"])), np.arange(len(b["rows"]))])
    order = np.lexsort((side, ids, rows))
    rows, ids, side, index = rows[order], ids[order], side[order], index[order]
    same = (rows[1:] == rows[:-1]) & (ids[1:] == ids[:-1])
    return index[:-1][same], index[1:][same]


def _overlap(input_ids, matching_ids, name, input_scores=None, matching_scores=None):
    _same_length(name, *(c for c in (input_ids, matching_ids, input_scores, matching_scores) if c is not None))
    a = _Ids(input_ids, name, input_scores)
    b = _Ids(matching_ids, name, matching_scores)
    ga, gb = a.grouped(), b.grouped()
    ia, ib = _matches(ga, gb)
    return a, b, ga, gb, ia, ib


def _per_row(n, rows, weights):
    return np.bincount(rows, weights=weights, minlength=n).astype(np.float32)


def _float_result(values, valid):
    return _wrap(_with_nulls(values.astype(np.float32), valid), dt.Float32(True))


def has_id_overlap(input_ids, matching_ids):
    """1.0 where the two lists share an id, else 0.0."""
    a, b, ga, _, ia, _ = _overlap(input_ids, matching_ids, "has_id_overlap")
    found = _per_row(a.n, ga["rows"][ia], None) > 0
    return _float_result(found.astype(np.float32), a.valid & b.valid)


def id_overlap_count(input_ids, matching_ids):
    """The size of the multiset intersection of the two lists."""
    a, b, ga, gb, ia, ib = _overlap(input_ids, matching_ids, "id_overlap_count")
    count = _per_row(a.n, ga["rows"][ia], np.minimum(ga["count"][ia], gb["count"][ib]))
    return _float_result(count, a.valid & b.valid)


def get_max_count(input_ids, matching_ids):
    """Over ids in both lists, the sum of the larger of their two counts."""
    a, b, ga, gb, ia, ib = _overlap(input_ids, matching_ids, "get_max_count")
    count = _per_row(a.n, ga["rows"][ia], np.maximum(ga["count"][ia], gb["count"][ib]))
    return _float_result(count, a.valid & b.valid)


def get_jaccard_similarity(input_ids, matching_ids):
    """|intersection| / |union| of the two lists as multisets (0/0 is NaN, as in Velox)."""
    a, b, ga, gb, ia, ib = _overlap(input_ids, matching_ids, "get_jaccard_similarity")
    overlap = _per_row(a.n, ga["rows"][ia], np.minimum(ga["count"][ia], gb["count"][ib]))
    with np.errstate(divide="ignore", invalid="ignore"):
        similarity = overlap / (a.lengths + b.lengths - overlap).astype(np.float32)
    return _float_result(similarity, a.valid & b.valid)


def get_cosine_similarity(input_ids, input_id_scores, matching_ids, matching_id_scores):
    """Cosine between the two id lists as vectors weighted by their (per-id summed) scores."""
    a, b, ga, gb, ia, ib = _overlap(input_ids, matching_ids, "get_cosine_similarity", input_id_scores, matching_id_scores)
    dot = _per_row(a.n, ga["rows"][ia], ga["sum"][ia].astype(np.float64) * gb["sum"][ib])
    norm_a = np.sqrt(_per_row(a.n, ga["rows"], ga["sum"].astype(np.float64) ** 2))
    norm_b = np.sqrt(_per_row(b.n, gb["rows"], gb["sum"].astype(np.float64) ** 2))
    valid = a.valid & b.valid
    if np.any(valid & ((norm_a == 0) | (norm_b == 0))):
        raise ValueError("get_cosine_similarity: inner product should not be zero")
    with np.errstate(divide="ignore", invalid="ignore"):
        return _float_result(dot / norm_a / norm_b, valid)


def get_score_sum(input_ids, input_id_scores, matching_ids, matching_id_scores):
    """Sum of the matching scores of the ids both lists hold."""
    a, b, ga, gb, ia, ib = _overlap(input_ids, matching_ids, "get_score_sum", input_id_scores, matching_id_scores)
    return _float_result(_per_row(a.n, ga["rows"][ia], gb["sum"][ib]), a.valid & b.valid)


def _score_extreme(input_ids, matching_ids, matching_id_scores, name, kind):
    _same_length(name, input_ids, matching_ids, matching_id_scores)
    a = _Ids(input_ids, name)
    b = _Ids(matching_ids, name, matching_id_scores)
    ga, gb = a.grouped(), b.grouped()
    ia, ib = _matches(ga, gb)
    out = np.full(a.n, np.inf if kind == "min" else -np.inf, dtype=np.float64)
    (np.minimum if kind == "min" else np.maximum).at(out, ga["rows"][ia], gb[kind][ib])
    found = _per_row(a.n, ga["rows"][ia], None) > 0
    return _float_result(np.where(found, out, 0.0), a.valid & b.valid)


def get_score_min(input_ids, matching_ids, matching_id_scores):
    """The smallest matching score among ids both lists hold (0 when none)."""
    return _score_extreme(input_ids, matching_ids, matching_id_scores, "get_score_min", "min")


def get_score_max(input_ids, matching_ids, matching_id_scores):
    """The largest matching score among ids both lists hold (0 when none)."""
    return _score_extreme(input_ids, matching_ids, matching_id_scores, "get_score_max", "max")


# ---- scaling ----

def sigmoid(col):
    """1 / (1 + exp(-x)), stable for large |x| (TorchArrow's was wrong for x >= 0); Float32 for
    integer input."""
    _require(col, NumericalColumn, "sigmoid", "a numerical column")
    dtype = col.dtype if dt.is_floating(col.dtype) else dt.Float32(col.dtype.nullable)
    x = _arrow.numpy_values(col._data.cast(dt.dtype_to_arrowtype(dtype)))
    with np.errstate(over="ignore"):
        e = np.exp(-np.abs(x))
        values = np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)
    return _wrap(_with_nulls(values, _arrow.validity(col._data)), dtype)


def scale_to_0_1(col):
    """(x - min) / (max - min); the sigmoid when all values are equal."""
    _require(col, NumericalColumn, "scale_to_0_1", "a numerical column")
    lo, hi = col.min(), col.max()
    if lo is not None and lo < hi:
        return (col - lo) / (hi - lo)
    return sigmoid(col)


def scale_to_z_score(col):
    """(x - mean) / std with TorchArrow's std (the sample one, ddof=1, whatever its docstring says);
    a column of one distinct value (or fewer than two values) comes back unscaled (integers as
    Float32)."""
    _require(col, NumericalColumn, "scale_to_z_score", "a numerical column")
    std = col.std()
    if std is None or std == 0:  # fewer than two values, or one distinct value: nothing to scale
        return col.cast(dt.Float32(col.dtype.nullable)) if dt.is_integer(col.dtype) else col
    return (col - col.mean()) / std


# ---- factories ----

def rand(*, size, device="cpu"):
    """A column of ``size`` random numbers drawn uniformly from [0, 1): Float64 (nullable, as every
    result of TorchArrow's functions), from a generator seeded by the operating system."""
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        raise TypeError(f"rand: size must be an int, got {type(size).__name__}")
    if size < 0:
        raise ValueError(f"rand: size must be >= 0, got {size}")
    _check_device(device)
    return _wrap(pc.random(int(size), initializer="system"), dt.Float64(True))
