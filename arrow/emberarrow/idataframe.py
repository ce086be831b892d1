"""DataFrame: a column of structs (an Arrow StructArray), with TorchArrow's DataFrame API."""
from __future__ import annotations

import functools
import typing as ty

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from emberarrow import _arrow
from emberarrow import dtypes as dt
from emberarrow.icolumn import Column, _checked_percentiles, _check_device, _null_placement, _wrap, column
from emberarrow.expression import eval_expression


def dataframe(data=None, dtype=None, columns=None, device=""):
    """A frame from a dict of columns/lists, a list of tuples (with ``columns`` or ``dtype``), or a dtype."""
    _check_device(device)
    if isinstance(data, dt.DType):
        if dtype is not None:
            raise TypeError("Dataframe can only have one dtype parameter")
        data, dtype = None, data
    if dtype is not None and not dt.is_struct(dtype):
        raise TypeError(f"Dataframe takes a dt.Struct dtype as parameter (got {dtype})")
    if data is None:
        return _wrap(pa.array([], type=dt.dtype_to_arrowtype(dtype or dt.Struct([]))), dtype or dt.Struct([]))
    if isinstance(data, DataFrame):
        return data if dtype is None else data.cast(dtype)
    if isinstance(data, ty.Mapping):
        return _from_mapping(data, dtype)
    if isinstance(data, (list, tuple)):
        return _from_rows(list(data), dtype, columns)
    raise TypeError(f"dataframe does not support constructor for data of type {type(data).__name__}")


def _from_mapping(data, dtype):
    if dtype is not None:
        given = {f.name: f.dtype for f in dtype.fields}
        if set(given) != set(data):
            raise TypeError(f"dtype provides fields {list(given)} but data provides {list(data)}")
        cols = {}
        for name in given:
            value = data[name]
            if isinstance(value, Column) and value.dtype != given[name]:
                raise TypeError(f"Wrong type for column {name}: dtype specifies {given[name]} while column of {value.dtype} is provided")
            cols[name] = column(value, given[name])
    else:
        cols = {}
        for name, value in data.items():
            if not isinstance(name, str):
                raise TypeError(f"column names must be str, got {name!r}")
            cols[name] = column(value)
    return _frame_from_columns(cols)


def _from_rows(rows, dtype, columns):
    if dtype is None:
        present = [r for r in rows if r is not None]
        if columns is None:
            first = next(iter(present), None)
            if not hasattr(first, "_fields"):
                raise TypeError("DataFrame construction from tuples requires dtype or columns to be given")
            columns = list(first._fields)
        if any(not isinstance(r, tuple) or len(r) != len(columns) for r in present):
            raise TypeError("Dataframe column length must equal row length")
        field_types = [dt.infer_dtype_from_prefix(values) for values in zip(*present)] if present else []
        if len(field_types) != len(columns) or any(dt.is_void(t) or dt.contains_any(t) for t in field_types):
            raise ValueError("Dataframe cannot infer the column types from these rows; pass dtype")
        nullable = len(present) < len(rows)
        dtype = dt.Struct([dt.Field(n, t.with_null(t.nullable or nullable)) for n, t in zip(columns, field_types)], nullable)
    return _wrap(_arrow.to_arrow_array(rows, dtype), dtype)


def _frame_from_columns(cols, validity=None, length=0):
    """A frame over the given columns (name -> Column), all of one length (``length`` when none)."""
    lengths = {len(c) for c in cols.values()}
    if len(lengths) > 1:
        raise TypeError(f"all columns/lists must have equal length, got lengths {sorted(lengths)}")
    length = lengths.pop() if lengths else length
    return _frame_from_arrays({n: c._data for n, c in cols.items()}, {n: c.dtype for n, c in cols.items()}, length, validity)


def _frame_from_arrays(arrays, dtypes, length, validity=None):
    dtype = dt.Struct([dt.Field(n, dtypes[n]) for n in arrays])
    fields = [pa.field(n, a.type, nullable=dtypes[n].nullable) for n, a in arrays.items()]
    if arrays:
        array = pa.StructArray.from_arrays(list(arrays.values()), fields=fields, mask=validity)
    else:
        array = pa.Array.from_buffers(pa.struct([]), length, [None], children=[])
    return _wrap(array, dtype)


class DataFrame(Column):
    """Rows of named, typed columns; ``df["a"]`` is a column, ``df[0]`` a row (a named tuple).
    ``ta.DataFrame(...)`` takes ``ta.dataframe``'s arguments."""

    def __new__(cls, data=None, dtype=None, columns=None, device=""):
        return dataframe(data, dtype, columns, device)

    @property
    def columns(self):
        return [f.name for f in self._dtype.fields]

    def __contains__(self, key):
        return key in self.columns

    def _column(self, name):
        index = self._dtype.get_index(name) if isinstance(name, str) else None
        if index is None:
            raise KeyError(f"column {name!r} not among existing dataframe columns {self.columns}")
        return _wrap(self._data.field(index), self._dtype.fields[index].dtype)

    def _columns_dict(self):
        return {n: self._column(n) for n in self.columns}

    def _check_columns(self, names):
        if isinstance(names, str):
            raise TypeError("columns should be Iterable of str but not str")
        names = list(names)
        for n in names:
            if n not in self.columns:
                raise KeyError(f"column {n!r} not among existing dataframe columns {self.columns}")
        return names

    def _rebuild(self, cols):
        return _frame_from_columns(cols, self._validity_mask(), len(self))

    def _validity_mask(self):
        return None if self._data.null_count == 0 else pc.invert(self._data.is_valid())

    def __getitem__(self, arg):
        if isinstance(arg, str):
            return self._column(arg)
        if isinstance(arg, (list, tuple)) and arg and all(isinstance(a, str) for a in arg):
            names = self._check_columns(arg)
            return self._rebuild({n: self._column(n) for n in names})
        return super().__getitem__(arg)

    def __setitem__(self, name, value):
        """Add or replace column ``name``; the frame changes only when ``value`` fits."""
        if not isinstance(name, str):
            raise TypeError(f"column names must be str, got {type(name).__name__}")
        col = value if isinstance(value, Column) else column(value)
        if (self.columns or len(self)) and len(col) != len(self):
            raise TypeError(f"all columns/lists must have equal length: the frame has {len(self)} rows, the column {len(col)}")
        cols = self._columns_dict()
        cols[name] = col
        rebuilt = _frame_from_columns(cols, self._validity_mask() if self.columns else None)
        self._data, self._dtype = rebuilt._data, rebuilt._dtype

    def copy(self):
        return _wrap(self._data, self._dtype)

    def cast(self, dtype):
        if not dt.is_struct(dtype) or [f.name for f in dtype.fields] != self.columns:
            raise TypeError(f"cast: a frame with columns {self.columns} cannot become {dtype}")
        return self._rebuild({f.name: self._column(f.name).cast(f.dtype) for f in dtype.fields})

    def append(self, values):
        if isinstance(values, Column):
            return super().append(values)
        rows = list(values)
        nullable = any(r is None for r in rows)
        dtype = self._dtype.with_null(self._dtype.nullable or nullable)
        return super().append(_wrap(_arrow.to_arrow_array(rows, dtype), dtype))

    # ---- column-wise operations ----
    def _lift(self, op):
        return self._rebuild({n: op(c) for n, c in self._columns_dict().items()})

    def _binary(self, other, op):
        if isinstance(other, DataFrame):
            if other.columns != self.columns or len(other) != len(self):
                raise TypeError("frames in a binary operation must have the same columns and length")
            return self._rebuild({n: op(c, other._column(n)) for n, c in self._columns_dict().items()})
        return self._lift(lambda c: op(c, other))

    def _reflected(self, other, op):
        return self._lift(lambda c: op(other, c))

    def __add__(self, other):
        return self._binary(other, lambda a, b: a + b)

    def __radd__(self, other):
        return self._reflected(other, lambda a, b: a + b)

    def __sub__(self, other):
        return self._binary(other, lambda a, b: a - b)

    def __rsub__(self, other):
        return self._reflected(other, lambda a, b: a - b)

    def __mul__(self, other):
        return self._binary(other, lambda a, b: a * b)

    def __rmul__(self, other):
        return self._reflected(other, lambda a, b: a * b)

    def __truediv__(self, other):
        return self._binary(other, lambda a, b: a / b)

    def __rtruediv__(self, other):
        return self._reflected(other, lambda a, b: a / b)

    def __floordiv__(self, other):
        return self._binary(other, lambda a, b: a // b)

    def __rfloordiv__(self, other):
        return self._reflected(other, lambda a, b: a // b)

    def __mod__(self, other):
        return self._binary(other, lambda a, b: a % b)

    def __rmod__(self, other):
        return self._reflected(other, lambda a, b: a % b)

    def __pow__(self, other):
        return self._binary(other, lambda a, b: a ** b)

    def __rpow__(self, other):
        return self._reflected(other, lambda a, b: a ** b)

    def __eq__(self, other):
        return self._binary(other, lambda a, b: a == b)

    def __ne__(self, other):
        return self._binary(other, lambda a, b: a != b)

    def __lt__(self, other):
        return self._binary(other, lambda a, b: a < b)

    def __le__(self, other):
        return self._binary(other, lambda a, b: a <= b)

    def __gt__(self, other):
        return self._binary(other, lambda a, b: a > b)

    def __ge__(self, other):
        return self._binary(other, lambda a, b: a >= b)

    def __and__(self, other):
        return self._binary(other, lambda a, b: a & b)

    def __or__(self, other):
        return self._binary(other, lambda a, b: a | b)

    def __invert__(self):
        return self._lift(lambda c: ~c)

    def __neg__(self):
        return self._lift(lambda c: -c)

    __hash__ = None

    def log(self):
        return self._lift(lambda c: c.log())

    def abs(self):
        return self._lift(lambda c: c.abs())

    def cumsum(self):
        return self._lift(lambda c: c.cumsum())

    def _cummin(self):
        return self._lift(lambda c: c._cummin())

    def _cummax(self):
        return self._lift(lambda c: c._cummax())

    def _cumprod(self):
        return self._lift(lambda c: c._cumprod())

    def isin(self, values):
        """Per column: a list applies to every column, a dict or frame maps column name to values."""
        if isinstance(values, (dict, DataFrame)):
            keys = values.keys() if isinstance(values, dict) else values.columns
            self._check_columns(list(keys))
            return self._rebuild({n: c.isin(list(values[n]) if n in keys else []) for n, c in self._columns_dict().items()})
        if isinstance(values, (list, tuple)):
            return self._lift(lambda c: c.isin(values))
        raise ValueError(f"isin undefined for values of type {type(values).__name__}.")

    def fill_null(self, fill_value):
        """Nulls of every column replaced by ``fill_value``, or per column from a dict."""
        if fill_value is None:
            return self
        if isinstance(fill_value, dict):
            self._check_columns(list(fill_value))
            return self._rebuild({n: c.fill_null(fill_value[n]) if n in fill_value else c for n, c in self._columns_dict().items()})
        if not isinstance(fill_value, dt.ScalarTypes):
            raise TypeError(f"fill_null with {type(fill_value).__name__} is not supported")
        return self._lift(lambda c: c.fill_null(fill_value) if dt.is_primitive(c.dtype) else c)

    def drop_null(self, how="any"):
        """Rows without a null ('any') or not entirely null ('all')."""
        if how not in ("any", "all"):
            raise ValueError(f"drop_null: how must be 'any' or 'all', got {how!r}")
        valid = [c._data.is_valid() for c in self._columns_dict().values()]
        if not valid:
            return self
        keep = functools.reduce(pc.and_ if how == "any" else pc.or_, valid)
        keep = pc.and_(keep, self._data.is_valid())
        result = self._filter_mask(keep)
        if how == "any":
            return result._rebuild({n: c.cast(c.dtype.with_null(False)) for n, c in result._columns_dict().items()})
        return result

    def drop_duplicates(self, subset=None, keep="first"):
        """Rows whose ``subset`` columns (all by default) were not seen in an earlier row."""
        if keep != "first":
            raise ValueError(f"drop_duplicates supports keep='first' only, got {keep!r}")
        names = self._check_columns([subset] if isinstance(subset, str) else (subset or self.columns))
        return self._take(_first_rows(self, names))

    # ---- summaries ----
    def _summarize(self, reduce):
        return dataframe({n: [reduce(c)] for n, c in self._columns_dict().items()})

    def min(self):
        return self._summarize(lambda c: c.min())

    def max(self):
        return self._summarize(lambda c: c.max())

    def sum(self):
        return self._summarize(lambda c: c.sum())

    def mean(self):
        return self._summarize(lambda c: c.mean())

    def median(self):
        return self._summarize(lambda c: c.median())

    def mode(self):
        return self._summarize(lambda c: c.mode())

    def std(self):
        return self._summarize(lambda c: c.std())

    def all(self):
        return self._summarize(lambda c: c.all())

    def any(self):
        return self._summarize(lambda c: c.any())

    def describe(self, percentiles=None, include=None, exclude=None):
        """count, mean, std, min, percentiles (midpoint), max of the numerical columns."""
        for name, value in (("include", include), ("exclude", exclude)):
            if value is not None and not isinstance(value, list):
                raise TypeError(f"describe with {name} of type {type(value).__name__} is not supported")
        fields = [f for f in self._dtype.fields if (dt.is_numerical(f.dtype) if include is None else f.dtype in include)]
        fields = [f for f in fields if exclude is None or f.dtype not in exclude]
        percentiles = _checked_percentiles(percentiles)
        metrics = ["count", "mean", "std", "min"] + [f"{p}%" for p in percentiles] + ["max"]
        result = {"metric": column(metrics, dt.string)}
        for f in fields:
            c = self._column(f.name)
            values = [c._count(), c.mean(), c.std(), c.min()] + c.percentile(percentiles, "midpoint") + [c.max()]
            result[f.name] = column([None if v is None else float(v) for v in values], dt.Float64(True))
        return _frame_from_columns(result)

    # ---- reshaping ----
    def drop(self, columns):
        names = self._check_columns([columns] if isinstance(columns, str) else columns)
        return self._rebuild({n: c for n, c in self._columns_dict().items() if n not in names})

    def rename(self, mapper):
        self._check_columns(list(mapper))
        return self._rebuild({mapper.get(n, n): c for n, c in self._columns_dict().items()})

    def reorder(self, columns):
        names = self._check_columns(columns)
        return self._rebuild({n: self._column(n) for n in names})

    def pipe(self, func, *args, **kwargs):
        return func(self, *args, **kwargs)

    def select(self, *args, **kwargs):
        """Columns by name, ``"*"`` for all, ``"-name"`` to leave one out of ``"*"``, and new
        columns as keyword expressions on ``me``."""
        has_star, include, exclude = False, [], []
        for arg in args:
            if not isinstance(arg, str):
                raise TypeError("args must be column names")
            if arg == "*":
                if has_star:
                    raise ValueError("select received repeated stars")
                has_star = True
            elif arg in self.columns:
                if arg in include:
                    raise ValueError(f"select received a repeated column-include ({arg})")
                include.append(arg)
            elif arg.startswith("-") and arg[1:] in self.columns:
                if arg[1:] in exclude:
                    raise ValueError(f"select received a repeated column-exclude ({arg[1:]})")
                exclude.append(arg[1:])
            else:
                raise ValueError(f"argument ({arg}) does not denote an existing column")
        if exclude and not has_star:
            raise ValueError("select received column-exclude without a star")
        if has_star and include:
            raise ValueError("select received both a star and column-includes")
        kept = [n for n in (self.columns if has_star else include) if n not in exclude]
        cols = {n: self._column(n) for n in kept}
        for name, expr in kwargs.items():
            value = eval_expression(expr, {"me": self})
            cols[name] = value if isinstance(value, Column) else column([value] * len(self))
        return self._rebuild(cols)

    def where(self, *conditions):
        """Rows where every condition (boolean expressions on ``me`` or boolean columns) holds."""
        if not conditions:
            return self
        masks = [eval_expression(c, {"me": self}) for c in conditions]
        for m in masks:
            if not isinstance(m, Column) or not dt.is_boolean(m.dtype):
                raise TypeError("where: each condition must evaluate to a boolean column")
        return self[functools.reduce(lambda a, b: a & b, masks)]

    def map(self, arg, na_action=None, dtype=None, columns=None):
        """``arg`` applied to each row (as a tuple), or to the values of ``columns`` as arguments."""
        if columns is None:
            return super().map(arg, na_action, dtype)
        names = self._check_columns(columns)
        if len(names) == 1:
            return self._column(names[0]).map(arg, na_action, dtype)
        values = [self._column(n).to_pylist() for n in names]
        hint = None if isinstance(arg, dict) else dt.infer_dtype_from_callable_hint(arg)
        results = []
        for row in zip(*values):
            if na_action == "ignore" and any(v is None for v in row):
                results.append(None)
            else:
                results.append(arg.get(row) if isinstance(arg, dict) else arg(*row))
        from emberarrow.icolumn import _from_results

        given = dtype or hint
        return _from_results(results, given, None) if given else column(results)

    def transform(self, func, dtype=None, format="column", columns=None):
        """``func`` applied to whole columns at once: all of the frame, or ``columns`` as arguments."""
        from emberarrow.icolumn import _transform_input, _transform_result

        if columns is None:
            return super().transform(func, dtype, format)
        names = self._check_columns(columns)
        if dtype is None:
            hint = ty.get_type_hints(func).get("return") if hasattr(func, "__code__") else None
            if hint is None or ty.get_origin(hint) is not list:
                raise TypeError("transform over columns needs dtype or a List[...] return annotation")
            dtype = dt.dtype_of_type(ty.get_args(hint)[0])
        raw = func(*(_transform_input(self._column(n), format) for n in names))
        return _transform_result(raw, format, dtype, len(self))

    def sort(self, by=None, ascending=True, na_position="last"):
        """Rows ordered by the columns ``by`` (all, left to right, by default); stable."""
        names = self._check_columns([by] if isinstance(by, str) else (by or self.columns))
        order = "ascending" if ascending else "descending"
        table = pa.table({f"c{i}": self._column(n)._data for i, n in enumerate(names)})
        placement = _null_placement(na_position)
        indices = pc.sort_indices(table, sort_keys=[(f"c{i}", order, placement) for i in range(len(names))])
        return self._with(self._data.take(indices))

    def groupby(self, by, sort=False, drop_null=True):
        """Groups of rows with equal ``by`` values, in order of first appearance; null keys dropped."""
        if sort:
            raise ValueError("groupby(sort=True) is not supported: groups come in order of first appearance")
        if not drop_null:
            raise ValueError("groupby(drop_null=False) is not supported: rows with a null key are dropped")
        from emberarrow.groupby import GroupedDataFrame

        return GroupedDataFrame(self, self._check_columns([by] if isinstance(by, str) else by))

    def join(self, other, on=None, how="inner", lsuffix="", rsuffix="_right"):
        """Rows of this frame and ``other`` matched on the ``on`` columns (beyond TorchArrow).

        ``how`` is 'inner', 'left', 'right' or 'outer'; rows keep this frame's order (then
        ``other``'s for rows only it has). Non-key columns present in both get the suffixes.
        """
        from emberarrow.groupby import join_frames

        return join_frames(self, other, on, how, lsuffix, rsuffix)

    # ---- conversion ----
    def to_arrow(self):
        """A pyarrow Table (zero-copy: the columns are the frame's arrays)."""
        fields = [pa.field(f.name, dt.dtype_to_arrowtype(f.dtype), nullable=f.dtype.nullable) for f in self._dtype.fields]
        return pa.Table.from_arrays([self._data.field(i) for i in range(len(fields))], schema=pa.schema(fields))

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame({n: c.to_pandas() for n, c in self._columns_dict().items()})

    def to_tensor(self, conversion=None):
        """A named tuple of each column's tensors (per-column conversions from a dict), or the
        result of one conversion applied to the whole frame (e.g. ``Dense()``)."""
        from emberarrow import tensor_conversion

        return tensor_conversion.convert(self, conversion)

    def __repr__(self):
        header = "  ".join(["index"] + self.columns)
        rows = self.to_pylist()
        lines = [header] + [f"{i}  " + "  ".join(repr(v) if isinstance(v, str) else str(v) for v in (row or [None] * len(self.columns))) for i, row in enumerate(rows[:20])]
        if len(rows) > 20:
            lines.append("...")
        lines.append(f"dtype: {self._dtype}, count: {len(self)}, null_count: {self.null_count}")
        return "\n".join(lines)

    __str__ = __repr__


def _first_rows(frame, names):
    """Positions (ascending) of the first row of each distinct combination of ``names``' values."""
    table = pa.table({f"k{i}": frame._column(n)._data for i, n in enumerate(names)})
    table = table.append_column("__row", pa.array(np.arange(len(frame), dtype=np.int64)))
    try:
        firsts = table.group_by([f"k{i}" for i in range(len(names))], use_threads=False).aggregate([("__row", "min")])
        return np.sort(firsts["__row_min"].to_numpy())
    except pa.ArrowNotImplementedError:
        # Nested key types (lists, maps) have no Arrow hash kernel: compare their Python values.
        seen, rows = set(), []
        for i, key in enumerate(zip(*(frame._column(n).to_pylist() for n in names))):
            if repr(key) not in seen:
                seen.add(repr(key))
                rows.append(i)
        return np.array(rows, dtype=np.int64)
