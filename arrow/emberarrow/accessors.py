"""``.str``, ``.list`` and ``.maps``: the methods of string, list and map columns."""
from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from emberarrow import _arrow
from emberarrow import dtypes as dt
from emberarrow.icolumn import Column, _wrap, column


def _list_array(offsets, values, valid):
    """A list array over ``values`` with int32 ``offsets``, null where ``valid`` is False."""
    mask = None if valid is None or valid.all() else pa.array(~valid)
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32, copy=False)), values, mask=mask)


class StringMethods:
    """Vectorised string methods (pyarrow.compute's UTF-8 kernels); nulls stay null."""

    def __init__(self, col):
        self._col = col
        self._data = col._data

    def _same(self, array):
        return _wrap(array, self._col.dtype)

    def _typed(self, array, dtype):
        return _wrap(array.cast(dt.dtype_to_arrowtype(dtype)), dtype.with_null(self._col.dtype.nullable))

    def length(self):
        return self._typed(pc.utf8_length(self._data), dt.int64)

    def slice(self, start=None, stop=None):
        return self._same(pc.utf8_slice_codeunits(self._data, start or 0, stop))

    def split(self, pat=None, n=-1):
        """Lists of the parts around ``pat`` (whitespace runs when None), at most ``n`` splits
        (``n`` of 0 or -1: all, as TorchArrow and pandas)."""
        max_splits = None if n is None or n <= 0 else n
        if pat is not None:
            return self._typed(pc.split_pattern(self._data, _pattern(pat), max_splits=max_splits), dt.List(dt.string))
        # str.split(): no empty parts (Arrow's whitespace split yields one for leading/trailing space)
        parts = pc.utf8_split_whitespace(pc.utf8_ltrim_whitespace(self._data), max_splits=max_splits)
        offsets, values = _arrow.list_parts(parts)
        keep = _arrow.numpy_values(pc.not_equal(values, ""), True)
        kept_before = np.concatenate([[0], np.cumsum(keep)])
        rebuilt = _list_array(kept_before[offsets], values.filter(pa.array(keep)), _arrow.validity(parts))
        return self._typed(rebuilt, dt.List(dt.string))

    def strip(self):
        return self._same(pc.utf8_trim_whitespace(self._data))

    def lower(self):
        return self._same(pc.utf8_lower(self._data))

    def upper(self):
        return self._same(pc.utf8_upper(self._data))

    def _test(self, name):
        return self._typed(getattr(pc, name)(self._data), dt.boolean)

    def isalpha(self):
        return self._test("utf8_is_alpha")

    def isnumeric(self):
        return self._test("utf8_is_numeric")

    def isalnum(self):
        return self._test("utf8_is_alnum")

    def isdigit(self):
        return self._test("utf8_is_digit")

    def isdecimal(self):
        return self._test("utf8_is_decimal")

    def isspace(self):
        return self._test("utf8_is_space")

    def islower(self):
        return self._test("utf8_is_lower")

    def isupper(self):
        return self._test("utf8_is_upper")

    def istitle(self):
        return self._test("utf8_is_title")

    def startswith(self, pat):
        return self._typed(pc.starts_with(self._data, _pattern(pat)), dt.boolean)

    def endswith(self, pat):
        return self._typed(pc.ends_with(self._data, _pattern(pat)), dt.boolean)

    def count(self, pat):
        """Non-overlapping occurrences of the regular expression ``pat``."""
        return self._typed(pc.count_substring_regex(self._data, _pattern(pat)), dt.int64)

    def find(self, sub):
        """Index of the first ``sub`` (-1 when absent), as str.find."""
        return self._typed(pc.find_substring(self._data, _pattern(sub)), dt.int64)

    def replace(self, pat, repl, regex=True):
        replace = pc.replace_substring_regex if regex else pc.replace_substring
        return self._same(replace(self._data, _pattern(pat), replacement=repl))

    def match(self, pat):
        """True where the regular expression ``pat`` matches at the start (re.match)."""
        return self._typed(pc.match_substring_regex(self._data, f"^(?:{_pattern(pat)})"), dt.boolean)

    def contains(self, pat, regex=True):
        match = pc.match_substring_regex if regex else pc.match_substring
        return self._typed(match(self._data, _pattern(pat)), dt.boolean)

    def findall(self, pat):
        """Lists of every whole match of ``pat`` (groups in ``pat`` do not narrow what is returned, as in
        TorchArrow; Arrow has no such kernel, so it runs per row)."""
        compiled = re.compile(_pattern(pat))
        matches = [None if s is None else [m.group(0) for m in compiled.finditer(s)] for s in self._col]
        return column(matches, dt.List(dt.string, nullable=self._col.dtype.nullable))

    def cat(self, col):
        """This column's strings followed by ``col``'s (a string column or one string)."""
        other = col._data if isinstance(col, Column) else pa.scalar(_pattern(col))
        if isinstance(col, Column):
            if not dt.is_string(col.dtype):
                raise TypeError(f"cat: needs a string column, got {col.dtype}")
            if len(col) != len(self._col):
                raise TypeError(f"columns must have equal length, got {len(self._col)} and {len(col)}")
        nullable = self._col.dtype.nullable or (isinstance(col, Column) and col.dtype.nullable)
        return _wrap(pc.binary_join_element_wise(self._data, other, ""), dt.String(nullable))


def _pattern(pat):
    if not isinstance(pat, str):
        raise TypeError(f"pattern must be a str, got {type(pat).__name__}")
    return pat


class ListMethods:
    """Methods of list columns; structure-only methods run on the offsets and flat values."""

    def __init__(self, col):
        self._col = col
        self._data = col._data
        self._item = col.dtype.item_dtype

    def _parts(self):
        offsets, values = _arrow.list_parts(self._data)
        return offsets, values, _arrow.validity(self._data)

    def length(self):
        return _wrap(pc.list_value_length(self._data).cast(pa.int64()), dt.Int64(self._col.dtype.nullable))

    def slice(self, start=0, stop=None):
        return _wrap(pc.list_slice(self._data, start or 0, stop), self._col.dtype)

    def get(self, i):
        """Item ``i`` of each list (negative counts from the end); IndexError when a list is too short."""
        offsets, values, valid = self._parts()
        lengths = np.diff(offsets)
        positions = (offsets[:-1] + i) if i >= 0 else (offsets[1:] + i)
        in_range = (i < lengths) if i >= 0 else (-i <= lengths)
        if np.any(valid & ~in_range):
            raise IndexError(f"list index {i} out of range for a list of length {int(lengths[valid & ~in_range][0])}")
        taken = values.take(pa.array(np.where(valid, positions, 0), type=pa.int64()))
        result = pc.if_else(pa.array(valid), taken, pa.nulls(len(valid), type=taken.type)) if not valid.all() else taken
        return _wrap(result, self._item.with_null(self._item.nullable or self._col.dtype.nullable))

    def join(self, sep):
        if not dt.is_string(self._item):
            raise TypeError(f"join needs lists of strings, got {self._col.dtype}")
        return _wrap(pc.binary_join(self._data, sep), dt.String(self._col.dtype.nullable))

    def _rebuild(self, offsets, values, valid, item_dtype):
        return _wrap(_list_array(offsets, values, valid), dt.List(item_dtype, self._col.dtype.nullable))

    def map(self, fun, dtype=None):
        """``fun`` applied to every item (Python per item); lists keep their lengths. ``dtype`` is
        the result's List dtype, as in TorchArrow."""
        offsets, values, valid = self._parts()
        mapped = _wrap(values, self._item).map(fun, dtype=_item_dtype(dtype, "map"))
        return self._rebuild(offsets, mapped._data, valid, mapped.dtype)

    def vmap(self, fun):
        """``fun`` applied once to the column of all items; it must return as many items."""
        offsets, values, valid = self._parts()
        mapped = fun(_wrap(values, self._item))
        if not isinstance(mapped, Column) or len(mapped) != len(values):
            raise ValueError("vmap: fun must return a column with one value per list item")
        return self._rebuild(offsets, mapped._data, valid, mapped.dtype)

    def filter(self, pred):
        """Items for which ``pred`` holds, per list."""
        offsets, values, valid = self._parts()
        keep = np.array([bool(pred(v)) for v in _arrow.to_pylist(values, self._item)], dtype=bool)
        kept_before = np.concatenate([[0], np.cumsum(keep)])
        return self._rebuild(kept_before[offsets], values.filter(pa.array(keep, type=pa.bool_())), valid, self._item)

    def reduce(self, fun, initializer=None, dtype=None):
        """Each list folded with ``fun`` (Python per list)."""
        def fold(xs):
            if not xs and initializer is None:
                raise TypeError("reduce of empty sequence with no initial value")
            acc, rest = (xs[0], xs[1:]) if initializer is None else (initializer, xs)
            for x in rest:
                acc = fun(acc, x)
            return acc
        results = [None if xs is None else fold(xs) for xs in self._col]
        return column(results, dtype or self._item.with_null(self._col.dtype.nullable))

    def flatmap(self, fun, dtype=None):
        """Each item to a list through ``fun``; a row's lists are concatenated. ``dtype`` is the
        result's List dtype."""
        results = [None if xs is None else [y for x in xs for y in fun(x)] for xs in self._col]
        return column(results, dt.List(_item_dtype(dtype, "flatmap") or self._item, self._col.dtype.nullable))


def _item_dtype(dtype, name):
    if dtype is None:
        return None
    if not dt.is_list(dtype):
        raise TypeError(f"list.{name}: dtype is the result's List dtype, got {dtype}")
    return dtype.item_dtype


class MapMethods:
    """Methods of map columns."""

    def __init__(self, col):
        self._col = col
        self._data = col._data

    def keys(self):
        offsets, keys, _ = _arrow.map_parts(self._data)
        return _wrap(_list_array(offsets, keys, _arrow.validity(self._data)), dt.List(self._col.dtype.key_dtype, self._col.dtype.nullable))

    def values(self):
        offsets, _, items = _arrow.map_parts(self._data)
        return _wrap(_list_array(offsets, items, _arrow.validity(self._data)), dt.List(self._col.dtype.item_dtype, self._col.dtype.nullable))

    def get(self, key, fill_value=None):
        """The value at ``key`` in each map, ``fill_value`` where the key is absent (null maps stay null)."""
        item = self._col.dtype.item_dtype
        found = pc.map_lookup(self._data, pa.scalar(key, type=self._data.type.key_type), "first")
        if fill_value is not None:
            # a null map stays null; an absent key (or a null value) takes fill_value
            filled = pc.fill_null(found, pa.scalar(fill_value).cast(found.type))
            found = filled if self._data.null_count == 0 else pc.if_else(self._data.is_valid(), filled, pa.nulls(len(found), found.type))
        return _wrap(found, item.with_null(found.null_count > 0 or item.nullable))
