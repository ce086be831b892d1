"""groupby(...) aggregates (Arrow's hash aggregation, groups in order of first appearance) and join."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from emberarrow import dtypes as dt
from emberarrow.icolumn import _wrap, column

_ROW = "__emberarrow_row"

# op -> (Arrow hash aggregate, its options, result dtype from the source dtype)
_ARROW_AGGREGATES = {
    "sum": ("sum", None, lambda t: t),
    "min": ("min", None, lambda t: t),
    "max": ("max", None, lambda t: t),
    "mean": ("mean", None, lambda t: dt.Float64(t.nullable)),
    "count": ("count", pc.CountOptions(mode="only_valid"), lambda t: dt.Int64(t.nullable)),
    "std": ("stddev", pc.VarianceOptions(ddof=1), lambda t: dt.Float64(True)),
    "all": ("all", None, lambda t: dt.Boolean(t.nullable)),
    "any": ("any", None, lambda t: dt.Boolean(t.nullable)),
}
# Exact median and mode have no Arrow hash kernel: they run per group on the group's values.
_LIST_AGGREGATES = {
    "median": (lambda c: c.median(), lambda t: dt.Float64(t.nullable)),
    "mode": (lambda c: c.mode(), lambda t: t),
}


class GroupedDataFrame:
    """The groups of a frame; aggregates name their columns ``"<column>.<op>"`` as TorchArrow."""

    def __init__(self, parent, keys, items=None, values_only=False):
        # values_only: grouped["col"] aggregates to the bare column of values, as TorchArrow's does
        self._parent, self._keys, self._values_only = parent, list(keys), values_only
        self._items = items if items is not None else [n for n in parent.columns if n not in self._keys]
        table = pa.table({n: parent._column(n)._data for n in parent.columns})
        table = table.append_column(_ROW, pa.array(np.arange(len(parent), dtype=np.int64)))
        keep = None
        for k in self._keys:
            valid = table[k].is_valid()
            keep = valid if keep is None else pc.and_(keep, valid)
        self._table = table.filter(keep) if keep is not None else table

    def _aggregate(self, specs):
        """The grouped Arrow table for [(column, arrow_op, options)], groups by first appearance."""
        aggregations = [(c, op) if options is None else (c, op, options) for c, op, options in specs]
        for c, op, _ in specs:
            if c != _ROW and op not in ("list", "count"):
                dtype = self._parent._column(c).dtype
                if not (dt.is_boolean_or_numerical(dtype) or (dt.is_string(dtype) and op in ("min", "max"))):
                    raise TypeError(f"groupby: cannot {op} column {c!r} of dtype {dtype}")
        grouped = self._table.group_by(self._keys, use_threads=False).aggregate(aggregations + [(_ROW, "min")])
        return grouped.take(pc.sort_indices(grouped[f"{_ROW}_min"]))

    def _result(self, grouped, named):
        """A frame of the key columns then ``named`` = [(out name, Arrow column name, dtype)]."""
        from emberarrow.idataframe import _frame_from_columns

        cols = {k: _wrap(grouped[k].combine_chunks(), self._parent._column(k).dtype) for k in self._keys}
        for out, arrow_name, dtype in named:
            values = grouped[arrow_name].combine_chunks()
            cols[out] = _wrap(values.cast(dt.dtype_to_arrowtype(dtype)), dtype.with_null(dtype.nullable or values.null_count > 0))
        return _frame_from_columns(cols)

    def _apply(self, requests):
        """requests: [(out name, column, op)] -> frame with the keys and each aggregate."""
        arrow_specs, named, by_list = [], [], []
        for out, name, op in requests:
            source = self._parent._column(name).dtype
            if op in _ARROW_AGGREGATES:
                arrow_op, options, result = _ARROW_AGGREGATES[op]
                arrow_specs.append((name, arrow_op, options))
                named.append((out, f"{name}_{arrow_op}", result(source)))
            elif op in _LIST_AGGREGATES:
                arrow_specs.append((name, "list", None))
                by_list.append((out, f"{name}_list", op, source))
                named.append((out, None, None))
            else:
                raise ValueError(f"undefined aggregation operator ({op})")
        grouped = self._aggregate(_unique(arrow_specs))
        frame = self._result(grouped, [n for n in named if n[1] is not None])
        for out, list_name, op, source in by_list:
            reduce, result = _LIST_AGGREGATES[op]
            values = [reduce(column(v, source.with_null(True))) if any(x is not None for x in v) else None for v in grouped[list_name].to_pylist()]
            frame[out] = column(values, result(source).with_null(True))
        return frame.reorder(self._keys + [n[0] for n in named]) if by_list else frame

    def _lift(self, op):
        if self._values_only:
            return self._apply([("value", self._items[0], op)])._column("value")
        return self._apply([(f"{n}.{op}", n, op) for n in self._items])

    def sum(self):
        return self._lift("sum")

    def min(self, numeric_only=None):
        return self._lift("min")

    def max(self, numeric_only=None):
        # TorchArrow's grouped max called min; this one is the maximum.
        return self._lift("max")

    def mean(self):
        return self._lift("mean")

    def median(self):
        return self._lift("median")

    def mode(self):
        return self._lift("mode")

    def std(self):
        return self._lift("std")

    def count(self):
        return self._lift("count")

    def all(self, boolean_only=None):
        return self._lift("all")

    def any(self, skipna=True, boolean_only=None):
        return self._lift("any")

    @property
    def size(self):
        """The key columns and ``size``, the number of rows in each group."""
        grouped = self._aggregate([(_ROW, "count", pc.CountOptions(mode="all"))])
        return self._result(grouped, [("size", f"{_ROW}_count", dt.int64)])

    def agg(self, arg):
        """Aggregates by name: 'sum', ['sum', 'min'] (every column), or {'col': op or [ops]}."""
        return self._apply(self._normalize(arg))

    aggregate = agg

    def _normalize(self, arg):
        if isinstance(arg, str):
            arg = [arg]
        if isinstance(arg, list):
            return [(f"{n}.{op}", n, op) for op in arg for n in self._items]
        if isinstance(arg, dict):
            requests = []
            for name, ops in arg.items():
                if name not in self._items:
                    raise ValueError(f"column ({name}) does not exist")
                for op in [ops] if isinstance(ops, str) else ops:
                    requests.append((f"{name}.{op}", name, op))
            return requests
        raise TypeError(f"unexpected arg type ({type(arg).__name__})")

    def __contains__(self, key):
        return key in self._items or key in self._keys

    def __getitem__(self, name):
        if name in self._items:
            return GroupedDataFrame(self._parent, self._keys, [name], values_only=True)
        if name in self._keys:
            return self.size._column(name)
        raise ValueError(f"no column named ({name}) in grouped dataframe")

    def __iter__(self):
        """(key tuple, frame of the group's other columns) for each group."""
        grouped = self._aggregate([(_ROW, "list", None)])
        keys = list(zip(*(grouped[k].to_pylist() for k in self._keys)))
        for key, rows in zip(keys, grouped[f"{_ROW}_list"].to_pylist()):
            yield key, self._parent[self._items]._take(np.asarray(rows, dtype=np.int64))


def _unique(specs):
    seen, out = set(), []
    for c, op, options in specs:
        if (c, op) not in seen:
            seen.add((c, op))
            out.append((c, op, options))
    return out


_JOIN_TYPES = {"inner": "inner", "left": "left outer", "right": "right outer", "outer": "full outer"}


def join_frames(left, right, on, how, lsuffix, rsuffix):
    from emberarrow.idataframe import DataFrame
    from emberarrow.interop import _frame_from_table

    if not isinstance(right, DataFrame):
        raise TypeError(f"join: other must be a DataFrame, got {type(right).__name__}")
    if how not in _JOIN_TYPES:
        raise ValueError(f"join: how must be one of {list(_JOIN_TYPES)}, got {how!r}")
    on = [on] if isinstance(on, str) else list(on or [c for c in left.columns if c in right.columns])
    if not on:
        raise ValueError("join: the frames share no column to join on; pass on=")
    left._check_columns(on)
    right._check_columns(on)
    # Arrow joins the keys and row numbers only (its join cannot carry list or map columns); the
    # other columns are then taken from each frame by row number (null where a side has no row).
    rows_l = pa.array(np.arange(len(left), dtype=np.int64))
    rows_r = pa.array(np.arange(len(right), dtype=np.int64))
    lt = pa.table({**{k: left._column(k)._data for k in on}, "__l": rows_l})
    rt = pa.table({**{k: right._column(k)._data for k in on}, "__r": rows_r})
    joined = lt.join(rt, keys=on, join_type=_JOIN_TYPES[how], coalesce_keys=True, use_threads=False)
    order = pc.sort_indices(joined, sort_keys=[("__l", "ascending", "at_end"), ("__r", "ascending", "at_end")])
    joined = joined.take(order)
    picked_l, picked_r = joined["__l"].combine_chunks(), joined["__r"].combine_chunks()
    arrays = {k: joined[k].combine_chunks() for k in on}
    for frame, picked, suffix, other in ((left, picked_l, lsuffix, right), (right, picked_r, rsuffix, left)):
        for name in frame.columns:
            if name in on:
                continue
            out = name + suffix if name in other.columns else name
            if out in arrays:
                raise ValueError(f"join: column {out!r} would appear twice; pass lsuffix/rsuffix")
            arrays[out] = frame._column(name)._data.take(picked)
    ordered = [n for n in left.columns if n in on] + [n for n in arrays if n not in on]
    return _frame_from_table(pa.table({n: arrays[n] for n in ordered}), nullable_from_data=True)
