"""Columns: an Arrow array and a dtype, with TorchArrow's Column API.

Every operation returns a new column (columns are immutable, like Arrow arrays). Vectorised work
runs in pyarrow.compute or NumPy; Python runs per row only for user functions (map, filter with a
callable, flatmap, reduce).
"""
from __future__ import annotations

import math
import typing as ty

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from emberarrow import _arrow
from emberarrow import dtypes as dt


# ---- construction ----

def column(data=None, dtype=None, device=""):
    """A column from a list/tuple/iterable of Python values, an Arrow array, or another column.

    ``dtype`` is inferred when omitted (see ``emberarrow.dtypes``); ``ta.column(dtype)`` is an
    empty column of that type.
    """
    _check_device(device)
    if isinstance(data, dt.DType):
        if dtype is not None:
            raise TypeError("Column can only have one dtype parameter")
        data, dtype = None, data
    if data is None:
        if dtype is None:
            raise TypeError("Column requires data and/or dtype parameter")
        return _wrap(pa.array([], type=dt.dtype_to_arrowtype(dtype)), dtype)
    if isinstance(data, Column):
        return data if dtype is None or dtype == data.dtype else data.cast(dtype)
    if isinstance(data, np.ndarray) and data.ndim == 1 and data.dtype.kind in "bif":
        data = pa.array(data)  # zero-copy for numbers; the NumPy dtype is kept (int32 stays Int32)
    if isinstance(data, (pa.Array, pa.ChunkedArray)):
        from emberarrow.interop import from_arrow
        return from_arrow(data, dtype)
    if isinstance(data, np.ndarray):
        data = data.tolist()
    if not isinstance(data, (list, tuple)):
        try:
            data = list(data)
        except TypeError:
            raise TypeError(f"column: data must be a list, tuple, iterable, Arrow array or Column, got {type(data).__name__}") from None
    if dtype is None:
        dtype = dt.infer_dtype_from_prefix(data)
        if dt.is_void(dtype) or dt.contains_any(dtype):
            raise ValueError("Column cannot infer type from data; pass dtype")
        if dt.is_struct(dtype):
            raise TypeError("Column cannot be used to created structs, use Dataframe constructor instead")
    elif not isinstance(dtype, dt.DType):
        raise TypeError(f"column: dtype must be an emberarrow dtype, got {type(dtype).__name__}")
    return _wrap(_arrow.to_arrow_array(data, dtype), dtype)


def _check_device(device):
    if device not in ("", "cpu"):
        raise ValueError(f"device must be 'cpu' (emberarrow frames live in host memory), got {device!r}")


def _wrap(array, dtype):
    """The column class for ``dtype`` around ``array`` (which must already be of that Arrow type)."""
    if dt.is_struct(dtype):
        from emberarrow.idataframe import DataFrame
        cls = DataFrame
    elif dt.is_boolean_or_numerical(dtype):
        cls = NumericalColumn
    elif dt.is_string(dtype):
        cls = StringColumn
    elif dt.is_list(dtype):
        cls = ListColumn
    elif dt.is_map(dtype):
        cls = MapColumn
    else:
        raise TypeError(f"no column type for dtype {dtype}")
    col = object.__new__(cls)
    col._data, col._dtype = array, dtype
    return col


def concat(columns):
    """One column (or frame) holding ``columns`` one after the other; dtypes must agree."""
    columns = list(columns)
    if not columns:
        raise ValueError("concat: needs at least one column")
    dtype = columns[0].dtype
    for c in columns[1:]:
        joined = dt.common_dtype(dtype, c.dtype)
        if joined is None or joined.with_null(False) != dtype.with_null(False):
            raise TypeError(f"concat: all columns must have dtype {dtype}, got {c.dtype}")
        dtype = joined
    arrow_type = dt.dtype_to_arrowtype(dtype)
    return _wrap(pa.concat_arrays([c._data.cast(arrow_type) for c in columns]), dtype)


def if_else(cond, left, right):
    """``left`` where ``cond`` is True, ``right`` where False, null where ``cond`` is null."""
    if not isinstance(cond, Column) or not dt.is_boolean(cond.dtype):
        raise TypeError("condition must be a boolean vector")
    left = left if isinstance(left, Column) else column(left)
    right = right if isinstance(right, Column) else column(right)
    for branch in (left, right):
        if len(branch) != len(cond):
            raise TypeError(f"if_else: branches must have the condition's length {len(cond)}, got {len(branch)}")
    dtype = dt.common_dtype(left.dtype, right.dtype)
    if dtype is None:
        raise TypeError(f"then and else branches must have compatible types, got {left.dtype} and {right.dtype}, respectively")
    dtype = dtype.with_null(dtype.nullable or cond.dtype.nullable)
    arrow_type = dt.dtype_to_arrowtype(dtype)
    return _wrap(pc.if_else(cond._data, left._data.cast(arrow_type), right._data.cast(arrow_type)), dtype)


class Column:
    """An immutable column of one dtype, held as an Arrow array (``to_arrow`` hands it out)."""

    _data: pa.Array
    _dtype: dt.DType

    def __new__(cls, data=None, dtype=None, device=""):
        built = column(data, dtype, device)
        if not isinstance(built, cls):
            raise TypeError(f"{cls.__name__} cannot hold dtype {built.dtype}; use ta.column")
        return built

    # ---- properties ----
    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return "cpu"

    @property
    def is_nullable(self):
        return self._dtype.nullable

    @property
    def length(self):
        return len(self)

    @property
    def null_count(self):
        return self._data.null_count

    def __len__(self):
        return len(self._data)

    def __iter__(self):
        return iter(self.to_pylist())

    def __bool__(self):
        raise ValueError(f"The truth value of a {type(self).__name__} is ambiguous. Use a.any() or a.all().")

    def __repr__(self):
        values = self.to_pylist()
        shown = list(enumerate(values)) if len(values) <= 20 else list(enumerate(values))[:10] + [("...", "...")] + list(enumerate(values))[-10:]
        width = max((len(str(i)) for i, _ in shown), default=1)
        lines = [f"{str(i):>{width}}  {_show(v) if i != '...' else v}" for i, v in shown]
        lines.append(f"dtype: {self._dtype}, length: {len(self)}, null_count: {self.null_count}, device: cpu")
        return "\n".join(lines)

    def __str__(self):
        return f"Column([{', '.join(_show(v) for v in self.to_pylist())}])"

    def __reduce__(self):
        return (_wrap, (self._data, self._dtype))

    def copy(self):
        return _wrap(self._data, self._dtype)

    def is_valid_at(self, index):
        return self._data[self._position(index)].is_valid

    # ---- indexing ----
    def __getitem__(self, arg):
        if isinstance(arg, (int, np.integer)) and not isinstance(arg, (bool, np.bool_)):
            return self._get(int(arg))
        if isinstance(arg, slice):
            return self._slice(arg)
        if isinstance(arg, Column):
            if not dt.is_boolean(arg.dtype):
                raise TypeError(f"a column index must be boolean, got {arg.dtype}")
            return self._filter_mask(arg._data)
        if isinstance(arg, np.ndarray):
            arg = arg.tolist()
        if isinstance(arg, (list, tuple)):
            return self._get_list(list(arg))
        raise TypeError(f"{type(self).__name__} index must be an int, slice, list of int/bool or boolean column, got {type(arg).__name__}")

    def _position(self, index):
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"index {index} out of range for a column of length {n}")
        return index + n if index < 0 else index

    def _get(self, index):
        return _arrow.to_pylist(self._data.slice(self._position(index), 1), self._dtype)[0]

    def _slice(self, arg):
        start, stop, step = arg.indices(len(self))
        if step == 1:
            return self._with(self._data.slice(start, max(stop - start, 0)))
        return self._take(np.arange(start, stop, step, dtype=np.int64))

    def _get_list(self, arg):
        if arg and all(isinstance(a, (bool, np.bool_)) for a in arg):
            if len(arg) != len(self):
                raise ValueError(f"boolean index has length {len(arg)}, the column {len(self)}")
            return self._filter_mask(pa.array(arg, type=pa.bool_()))
        if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in arg):
            positions = np.array([self._position(int(a)) for a in arg], dtype=np.int64)
            return self._take(positions)
        raise TypeError("index should be list of int or list of bool")

    def _take(self, positions):
        return self._with(self._data.take(pa.array(positions, type=pa.int64())))

    def _filter_mask(self, mask):
        if len(mask) != len(self):
            raise ValueError(f"boolean index has length {len(mask)}, the column {len(self)}")
        return self._with(self._data.filter(mask, null_selection_behavior="drop"))

    def _with(self, array, dtype=None):
        """A column of this class over ``array`` (its dtype, unless ``dtype`` is given)."""
        return _wrap(array, dtype or self._dtype)

    def head(self, n=5):
        return self[:n]

    def tail(self, n=5):
        return self[-n:] if n else self[:0]

    def batch(self, n):
        if n <= 0:
            raise ValueError(f"batch: n must be positive, got {n}")
        for start in range(0, len(self), n):
            yield self[start:start + n]

    @staticmethod
    def unbatch(batches):
        batches = list(batches)
        if not batches:
            raise ValueError("can't determine column type")
        return concat(batches)

    # ---- building new columns ----
    def append(self, values):
        """This column followed by ``values`` (a list or a column); None widens to nullable."""
        if isinstance(values, Column):
            other = values
        else:
            values = list(values)
            dtype = self._dtype.with_null(True) if any(v is None for v in values) else self._dtype
            other = _wrap(_arrow.to_arrow_array(values, dtype), dtype)
        return concat([self, other])

    def cast(self, dtype):
        """This column as ``dtype``; nulls into a non-nullable dtype raise ValueError."""
        if not isinstance(dtype, dt.DType):
            raise TypeError(f"cast: dtype must be an emberarrow dtype, got {type(dtype).__name__}")
        if self.null_count and not dtype.nullable:
            raise ValueError("Cannot cast a column with nulls to a non-nullable type")
        target = dt.dtype_to_arrowtype(dtype)
        if self._data.type == target:
            return _wrap(self._data, dtype)  # only the nullability changes: zero-copy
        source = self._data
        if dt.is_floating(self._dtype) and dt.is_integer(dtype):
            source = pc.round(source, round_mode="half_towards_infinity")  # Velox rounds: 4.51 -> 5, -2.5 -> -3
        try:
            return _wrap(pc.cast(source, target), dtype)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
            raise TypeError(f"cast: {self._dtype} for {type(self).__name__} is not supported as {dtype} ({error})") from None

    def map(self, arg, na_action=None, dtype=None, columns=None):
        """Each value through ``arg`` (a dict or a function); nulls go to it too unless na_action='ignore'."""
        if columns is not None:
            raise TypeError("columns parameter for flat columns not supported")
        _check_na_action(na_action)
        if isinstance(arg, dict):
            results = [_dict_lookup(arg, v, na_action) for v in self]
            return _from_results(results, dtype, self._dtype)
        if not callable(arg):
            raise TypeError(f"map: arg must be a dict or a callable, got {type(arg).__name__}")
        given = dtype or dt.infer_dtype_from_callable_hint(arg)
        results = [None if v is None and na_action == "ignore" else arg(v) for v in self]
        return _from_results(results, given, self._dtype)

    def flatmap(self, arg, na_action=None, dtype=None, columns=None):
        """Each value to a list through ``arg``; the lists' items, concatenated, form the result."""
        if columns is not None:
            raise TypeError("columns parameter for flat columns not supported")
        _check_na_action(na_action)
        func = (lambda v: arg.get(v, None)) if isinstance(arg, dict) else arg
        results = []
        for v in self:
            if v is None and na_action == "ignore":
                results.append(None)
            else:
                results.extend(func(v))
        return _from_results(results, dtype, self._dtype)

    def filter(self, predicate, columns=None):
        """Rows where ``predicate`` (a function of the value, or booleans/boolean column) holds."""
        if columns is not None:
            raise TypeError("columns parameter for flat columns not supported")
        if isinstance(predicate, Column):
            return self[predicate]
        if callable(predicate):
            return self._filter_mask(pa.array([bool(predicate(v)) for v in self], type=pa.bool_()))
        if isinstance(predicate, ty.Iterable):
            mask = [bool(p) for p in predicate]
            return self._filter_mask(pa.array(mask, type=pa.bool_()))
        raise TypeError("predicate must be a unary boolean predicate or iterable of booleans")

    def reduce(self, fun, initializer=None, finalizer=None):
        values = self.to_pylist()
        if not values and initializer is None:
            raise TypeError("reduce of empty sequence with no initial value")
        acc, rest = (values[0], values[1:]) if initializer is None else (initializer, values)
        for v in rest:
            acc = fun(acc, v)
        return finalizer(acc) if finalizer is not None else acc

    def transform(self, func, dtype=None, format="column", columns=None):
        """``func`` applied to the whole column at once (as a column, a Python list, or a tensor)."""
        if columns is not None:
            raise TypeError("columns parameter for flat columns not supported")
        if dtype is None:
            hint = ty.get_type_hints(func).get("return") if hasattr(func, "__code__") else None
            dtype = dt.dtype_of_type(ty.get_args(hint)[0]) if hint is not None and ty.get_origin(hint) is list else self._dtype
        return _transform_result(func(_transform_input(self, format)), format, dtype, len(self))

    def sort(self, by=None, ascending=True, na_position="last"):
        """Values in ascending (or descending) order, nulls first or last."""
        if by is not None:
            raise TypeError("sorting a non-structured column can't have 'by' parameter")
        order = pc.array_sort_indices(self._data, order="ascending" if ascending else "descending", null_placement=_null_placement(na_position))
        return self._with(self._data.take(order))

    def isin(self, values):
        """True where the value is one of ``values``; False at nulls."""
        values = list(values)
        if not values:
            return _wrap(pa.array(np.zeros(len(self), dtype=bool)), dt.Boolean(self._dtype.nullable))
        value_set = _arrow.to_arrow_array(values, self._dtype.with_null(True)) if dt.is_primitive(self._dtype) else pa.array(values)
        found = pc.fill_null(pc.is_in(self._data, value_set=value_set, skip_nulls=True), False)
        return _wrap(found, dt.Boolean(self._dtype.nullable))

    def fill_null(self, fill_value):
        """Nulls replaced by ``fill_value`` (a scalar of the column's kind); the result is non-nullable."""
        if not isinstance(fill_value, dt.ScalarTypes):
            raise TypeError(f"fill_null with {type(fill_value).__name__} is not supported")
        if not self._dtype.nullable:
            return self
        try:
            scalar = pa.scalar(fill_value).cast(self._data.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            raise TypeError(f"fill_null: {fill_value!r} does not fit dtype {self._dtype}") from None
        return _wrap(pc.fill_null(self._data, scalar), self._dtype.with_null(False))

    def drop_null(self, how=None):
        if how is not None:
            raise TypeError("how parameter for flat columns not supported")
        return _wrap(self._data.drop_null(), self._dtype.with_null(False))

    def drop_duplicates(self, subset=None, keep="first"):
        """Each distinct value once, at its first appearance (null counts as one value)."""
        if subset is not None:
            raise TypeError("subset parameter for flat columns not supported")
        if keep != "first":
            raise ValueError(f"drop_duplicates supports keep='first' only, got {keep!r}")
        if dt.is_primitive(self._dtype):
            return self._with(pc.unique(self._data))
        seen, keep_rows = set(), []
        for i, v in enumerate(self):
            key = repr(v)
            if key not in seen:
                seen.add(key)
                keep_rows.append(i)
        return self._take(np.array(keep_rows, dtype=np.int64))

    def all(self):
        """True when every non-null value is truthy (TorchArrow ignores nulls)."""
        if dt.is_boolean_or_numerical(self._dtype):
            return bool(pc.all(self._data.cast(pa.bool_()), skip_nulls=True, min_count=0).as_py())
        return all(v for v in self if v is not None)

    def any(self):
        if dt.is_boolean_or_numerical(self._dtype):
            return bool(pc.any(self._data.cast(pa.bool_()), skip_nulls=True, min_count=0).as_py())
        return any(v for v in self if v is not None)

    @property
    def is_unique(self):
        return len(pc.unique(self._data)) == len(self) if dt.is_primitive(self._dtype) else len(self.drop_duplicates()) == len(self)

    @property
    def is_monotonic_increasing(self):
        return self._monotonic(np.greater_equal)

    @property
    def is_monotonic_decreasing(self):
        return self._monotonic(np.less_equal)

    def _monotonic(self, compare):
        values = self._data.drop_null().to_numpy(zero_copy_only=False)
        return bool(np.all(compare(values[1:], values[:-1]))) if len(values) > 1 else True

    def _nunique(self, drop_null=True):
        return len(pc.unique(self._data.drop_null() if drop_null else self._data))

    def _count(self):
        return len(self) - self.null_count

    # ---- comparisons (every comparable dtype) ----
    def __eq__(self, other):
        return self._compare(other, "equal")

    def __ne__(self, other):
        return self._compare(other, "not_equal")

    def __lt__(self, other):
        return self._compare(other, "less")

    def __le__(self, other):
        return self._compare(other, "less_equal")

    def __gt__(self, other):
        return self._compare(other, "greater")

    def __ge__(self, other):
        return self._compare(other, "greater_equal")

    __hash__ = None

    def _compare(self, other, name):
        if _is_frame(other):
            return NotImplemented
        nested = dt.is_list(self._dtype) or dt.is_map(self._dtype)
        if nested and isinstance(other, (list, dict)):  # one list or dict, compared with every row
            return self._compare_values([other] * len(self), name, dt.Boolean(self._dtype.nullable))
        right, right_dtype = self._operand(other)
        dtype = dt.Boolean(self._dtype.nullable or right_dtype.nullable)
        if nested and right_dtype.with_null(False) == self._dtype.with_null(False):
            return self._compare_values(_arrow.to_pylist(right, right_dtype), name, dtype)
        try:
            left, right = _aligned(self._data, self._dtype, right, right_dtype)
            return _wrap(getattr(pc, name)(left, right), dtype)
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError):
            raise TypeError(f"cannot compare {self._dtype} with {right_dtype}") from None

    def _compare_values(self, right_values, name, dtype):
        """Comparisons of lists (and ==/!= of maps), which Arrow cannot do: per row, in Python."""
        compare = _PY_COMPARISONS[name]
        try:
            result = [None if a is None or b is None else compare(a, b) for a, b in zip(self.to_pylist(), right_values)]
        except TypeError:
            raise TypeError(f"cannot compare {self._dtype} values with {name}") from None
        return column(result, dtype.with_null(dtype.nullable or any(r is None for r in result)))

    def _operand(self, other):
        """(Arrow array or scalar, dtype) for the right-hand side of a binary operation."""
        if isinstance(other, list):
            other = column(other)
        if isinstance(other, Column):
            if len(other) != len(self):
                raise TypeError(f"columns must have equal length, got {len(self)} and {len(other)}")
            return other._data, other.dtype
        if isinstance(other, (bool, np.bool_)):
            return pa.scalar(bool(other)), dt.boolean
        if isinstance(other, (int, np.integer)):
            # A Python int takes the column's integer type, as a literal does in TorchArrow.
            kind = self._dtype.with_null(False) if dt.is_numerical(self._dtype) else dt.int64
            return pa.scalar(int(other)), kind
        if isinstance(other, (float, np.floating)):
            kind = self._dtype.with_null(False) if dt.is_floating(self._dtype) else dt.float32
            return pa.scalar(float(other)), kind
        if isinstance(other, str):
            return pa.scalar(other), dt.string
        raise TypeError(f"unsupported operand of type {type(other).__name__} for a {type(self).__name__}")

    # ---- conversion ----
    def to_arrow(self):
        return self._data

    def to_pylist(self):
        return _arrow.to_pylist(self._data, self._dtype)

    def to_pandas(self):
        import pandas as pd

        if dt.is_primitive(self._dtype):
            return self._data.to_pandas()
        return pd.Series(self.to_pylist(), dtype=object)

    def to_tensor(self, conversion=None):
        """This column as ember tensors (see emberarrow.tensor_conversion)."""
        from emberarrow import tensor_conversion

        return tensor_conversion.convert(self, conversion)


_PY_COMPARISONS = {
    "equal": lambda a, b: a == b, "not_equal": lambda a, b: a != b, "less": lambda a, b: a < b,
    "less_equal": lambda a, b: a <= b, "greater": lambda a, b: a > b, "greater_equal": lambda a, b: a >= b,
}


def _show(value):
    return f"'{value}'" if isinstance(value, str) else str(value)


def _dict_lookup(mapping, value, na_action):
    """TorchArrow's map with a dict: a missing key gives None (a defaultdict its default); a null
    looks up the key None unless na_action='ignore'."""
    if value is None and (na_action == "ignore" or (None not in mapping and not hasattr(mapping, "default_factory"))):
        return None
    return mapping[value] if hasattr(mapping, "default_factory") else mapping.get(value)


def _check_na_action(na_action):
    if na_action not in (None, "ignore"):
        raise ValueError(f"na_action must be None or 'ignore', got {na_action!r}")


def _null_placement(na_position):
    if na_position not in ("last", "first"):
        raise ValueError(f"na_position must be 'last' or 'first', got {na_position!r}")
    return "at_end" if na_position == "last" else "at_start"


def _is_frame(other):
    from emberarrow.idataframe import DataFrame
    return isinstance(other, DataFrame)


def _from_results(results, dtype, fallback):
    """A column of user-function results: ``dtype`` when given, else the input's dtype when the
    results fit it (TorchArrow's default), else the dtype inferred from the results. A None
    result (na_action='ignore', or the function's) makes the dtype nullable."""
    has_none = any(r is None for r in results)
    if dtype is not None:
        return column(results, dtype.with_null(dtype.nullable or has_none))
    nullable = fallback.nullable or has_none
    try:
        return column(results, fallback.with_null(nullable))
    except (TypeError, ValueError):
        return column(results)


def _aligned(left, left_dtype, right, right_dtype):
    """Both operands cast to their common type (comparisons of ints with floats etc.)."""
    common = dt.common_dtype(left_dtype, right_dtype)
    if common is None:
        raise TypeError(f"incompatible dtypes {left_dtype} and {right_dtype}")
    target = dt.dtype_to_arrowtype(common)
    return left.cast(target), right.cast(target)


def _transform_input(col, format):
    if format == "column":
        return col
    if format == "python":
        return col.to_pylist()
    if format == "torch":
        return col.to_tensor()
    raise ValueError(f"Invalid value for `format` argument: {format}")


def _transform_result(raw, format, dtype, length):
    if format == "torch":
        from emberarrow.tensor_conversion import from_tensor
        result = from_tensor(raw, dtype)
    elif format in ("python", "column"):
        result = column(raw, dtype)
    else:
        raise ValueError(f"Invalid value for `format` argument: {format}")
    if len(result) != length:
        raise ValueError(f"Output of transform must return the same number of rows: got {len(result)} instead of {length}")
    return result


class NumericalColumn(Column):
    """Boolean and numerical columns: arithmetic, math and statistics."""

    # ---- arithmetic ----
    def __add__(self, other):
        return self._arith(other, "add")

    def __radd__(self, other):
        return self._arith(other, "add", reflected=True)

    def __sub__(self, other):
        return self._arith(other, "subtract")

    def __rsub__(self, other):
        return self._arith(other, "subtract", reflected=True)

    def __mul__(self, other):
        return self._arith(other, "multiply")

    def __rmul__(self, other):
        return self._arith(other, "multiply", reflected=True)

    def __truediv__(self, other):
        return self._arith(other, "divide", true_division=True)

    def __rtruediv__(self, other):
        return self._arith(other, "divide", reflected=True, true_division=True)

    def __floordiv__(self, other):
        return self._numpy_arith(other, np.floor_divide)

    def __rfloordiv__(self, other):
        return self._numpy_arith(other, np.floor_divide, reflected=True)

    def __mod__(self, other):
        return self._numpy_arith(other, np.mod)

    def __rmod__(self, other):
        return self._numpy_arith(other, np.mod, reflected=True)

    def __pow__(self, other):
        return self._arith(other, "power")

    def __rpow__(self, other):
        return self._arith(other, "power", reflected=True)

    def __and__(self, other):
        return self._bitwise(other, "and_", "bit_wise_and")

    def __rand__(self, other):
        return self._bitwise(other, "and_", "bit_wise_and")

    def __or__(self, other):
        return self._bitwise(other, "or_", "bit_wise_or")

    def __ror__(self, other):
        return self._bitwise(other, "or_", "bit_wise_or")

    def __xor__(self, other):
        return self._bitwise(other, "xor", "bit_wise_xor")

    def __rxor__(self, other):
        return self._bitwise(other, "xor", "bit_wise_xor")

    def __invert__(self):
        if dt.is_boolean(self._dtype):
            return self._with(pc.invert(self._data))
        if dt.is_integer(self._dtype):
            return self._with(pc.bit_wise_not(self._data))
        raise TypeError(f"~ is not defined for {self._dtype}")

    def __neg__(self):
        if not dt.is_numerical(self._dtype):
            raise TypeError(f"- is not defined for {self._dtype}")
        return self._with(pc.negate(self._data))

    def __pos__(self):
        return self

    def _result_dtype(self, other_dtype, true_division):
        if not dt.is_boolean_or_numerical(other_dtype):
            raise TypeError(f"{self._dtype} and {other_dtype} are incompatible")
        dtype = dt.promote(self._dtype, other_dtype)
        if true_division and not dt.is_floating(dtype):
            dtype = dt.Float32(dtype.nullable)  # TorchArrow divides integers in float32
        if dt.is_boolean(dtype):
            raise TypeError("arithmetic on two boolean operands is not supported; cast one to an integer dtype first")
        return dtype

    def _arith(self, other, name, reflected=False, true_division=False):
        if _is_frame(other):
            return NotImplemented
        right, right_dtype = self._operand(other)
        dtype = self._result_dtype(right_dtype, true_division)
        target = dt.dtype_to_arrowtype(dtype)
        try:
            left, right = self._data.cast(target), right.cast(target)
        except pa.ArrowInvalid as error:
            raise ValueError(f"operand out of range for {dtype}: {error}") from None
        if reflected:
            left, right = right, left
        if name == "power" and dt.is_integer(dtype) and pc.any(pc.less(right, 0)).as_py():
            raise ValueError("Integers to negative integer powers are not allowed.")
        result = getattr(pc, name)(left, right)
        if isinstance(result, pa.Scalar):
            result = pa.array([result.as_py()] * len(self), type=target)
        return _wrap(result, dtype)

    def _numpy_arith(self, other, ufunc, reflected=False):
        """Floor division and modulo with Python's signs, which pyarrow.compute does not offer."""
        if _is_frame(other):
            return NotImplemented
        right, right_dtype = self._operand(other)
        dtype = self._result_dtype(right_dtype, False)
        np_type = dt.np_typeof_dtype(dtype)
        left_valid = _arrow.validity(self._data)
        a = _arrow.numpy_values(self._data.cast(dt.dtype_to_arrowtype(dtype)), 1).astype(np_type, copy=False)
        if isinstance(right, pa.Scalar):
            b, right_valid = np_type(right.as_py()), left_valid
        else:
            right_valid = _arrow.validity(right)
            b = _arrow.numpy_values(right.cast(dt.dtype_to_arrowtype(dtype)), 1).astype(np_type, copy=False)
        valid = left_valid & right_valid
        if reflected:
            a, b = b, a
        if dt.is_integer(dtype) and np.any((np.asarray(b) == 0) & valid):
            raise ZeroDivisionError("integer division or modulo by zero")
        with np.errstate(divide="ignore", invalid="ignore"):
            values = ufunc(a, b)
        values = np.broadcast_to(values, (len(self),)).astype(np_type, copy=False)
        return _wrap(_arrow.from_numpy(values, valid), dtype)

    def _bitwise(self, other, logical, bitwise):
        if _is_frame(other):
            return NotImplemented
        right, right_dtype = self._operand(other)
        dtype = dt.promote(self._dtype, right_dtype) if dt.is_boolean_or_numerical(right_dtype) else None
        if dtype is None or dt.is_floating(dtype):
            raise TypeError(f"bitwise operations need boolean or integer operands, got {self._dtype} and {right_dtype}")
        target = dt.dtype_to_arrowtype(dtype)
        function = getattr(pc, logical if dt.is_boolean(dtype) else bitwise)
        result = function(self._data.cast(target), right.cast(target))
        return _wrap(result, dtype)

    # ---- math ----
    def abs(self):
        self._require_numerical("abs")
        return self._with(pc.abs(self._data))

    def ceil(self):
        self._require_numerical("ceil")
        return self._with(self._data if dt.is_integer(self._dtype) else pc.ceil(self._data))

    def floor(self):
        self._require_numerical("floor")
        return self._with(self._data if dt.is_integer(self._dtype) else pc.floor(self._data))

    def round(self, decimals=0):
        """Rounded half to even, as Python's round() and TorchArrow; integers with decimals < 0 too."""
        self._require_numerical("round")
        if dt.is_integer(self._dtype) and decimals >= 0:
            return self
        return self._with(pc.round(self._data, ndigits=decimals, round_mode="half_to_even"))

    def log(self):
        """Natural logarithm; integers give Float32, as in TorchArrow; log(0) is -inf."""
        self._require_numerical("log")
        dtype = self._dtype if dt.is_floating(self._dtype) else dt.Float32(self._dtype.nullable)
        values = self._data.cast(dt.dtype_to_arrowtype(dtype))
        with np.errstate(divide="ignore", invalid="ignore"):
            result = np.log(_arrow.numpy_values(values, 1))
        return _wrap(_arrow.from_numpy(result, _arrow.validity(values)), dtype)

    def _require_numerical(self, name):
        if not dt.is_numerical(self._dtype):
            raise TypeError(f"{name} is not defined for {self._dtype}")

    # ---- statistics (nulls skipped) ----
    def min(self):
        return pc.min_max(self._data)["min"].as_py()

    def max(self):
        return pc.min_max(self._data)["max"].as_py()

    def sum(self):
        return pc.sum(self._data).as_py()

    def mean(self):
        self._require_numerical("mean")
        return pc.mean(self._data).as_py()

    def std(self):
        """Sample standard deviation (ddof=1), as TorchArrow and pandas."""
        self._require_numerical("std")
        return pc.stddev(self._data, ddof=1).as_py()

    def median(self):
        self._require_numerical("median")
        values = self._data.drop_null().to_numpy(zero_copy_only=False)
        if len(values) == 0:
            raise ValueError("median of a column with no values")
        return float(np.median(values.astype(np.float64)))

    def mode(self):
        """The most frequent value (the smallest one among ties); None for an empty column."""
        self._require_numerical("mode")
        modes = pc.mode(self._data)
        return modes[0]["mode"].as_py() if len(modes) else None

    def quantile(self, q, interpolation="linear"):
        """pandas' Series.quantile on the non-null values: a float for a float q, a list for a list."""
        self._require_numerical("quantile")
        many = isinstance(q, ty.Iterable)
        qs = np.asarray(list(q) if many else [q], dtype=np.float64)
        if np.any((qs < 0) | (qs > 1)):
            raise ValueError(f"quantile: q must be within [0, 1], got {q}")
        if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
            raise ValueError(f"quantile: unknown interpolation {interpolation!r}")
        values = self._data.drop_null().to_numpy(zero_copy_only=False).astype(np.float64)
        result = np.quantile(values, qs, method=interpolation).tolist() if len(values) else [math.nan] * len(qs)
        return result if many else result[0]

    def percentile(self, q, interpolation="linear"):
        many = isinstance(q, ty.Iterable)
        return self.quantile([p / 100 for p in q] if many else q / 100, interpolation)

    def cumsum(self):
        """Running sum; a null stays null and does not stop the sum (pandas' skipna)."""
        self._require_numerical("cumsum")
        return self._with(pc.cumulative_sum(self._data, skip_nulls=True))

    def _cummin(self):
        return self._with(pc.cumulative_min(self._data, skip_nulls=True))

    def _cummax(self):
        return self._with(pc.cumulative_max(self._data, skip_nulls=True))

    def _cumprod(self):
        return self._with(pc.cumulative_prod(self._data, skip_nulls=True))

    def describe(self, percentiles=None, include=None, exclude=None):
        """count, mean, std, min, percentiles (midpoint), max as a two-column frame."""
        if include is not None or exclude is not None:
            raise TypeError(f"'include/exclude columns' parameter for '{type(self).__name__}' not supported ")
        self._require_numerical("describe")
        percentiles = _checked_percentiles(percentiles)
        from emberarrow.idataframe import dataframe
        stats = [("count", self._count()), ("mean", self.mean()), ("std", self.std()), ("min", self.min())]
        stats += list(zip([f"{p}%" for p in percentiles], self.percentile(percentiles, "midpoint")))
        stats.append(("max", self.max()))
        return dataframe(
            {"statistic": [s for s, _ in stats], "value": [None if v is None else float(v) for _, v in stats]},
            dtype=dt.Struct([dt.Field("statistic", dt.string), dt.Field("value", dt.Float64(True))]),
        )


def _checked_percentiles(percentiles):
    percentiles = sorted(set([25, 50, 75] if percentiles is None else percentiles))
    if percentiles and (percentiles[0] < 0 or percentiles[-1] > 100):
        raise ValueError("percentiles must be betwen 0 and 100")
    return percentiles


class StringColumn(Column):
    """String columns; string methods live under ``.str``."""

    @property
    def str(self):
        from emberarrow.accessors import StringMethods
        return StringMethods(self)

    def __add__(self, other):
        return self.str.cat(other)

    def __radd__(self, other):
        if not isinstance(other, str):
            return NotImplemented
        return _wrap(pc.binary_join_element_wise(pa.scalar(other), self._data, ""), self._dtype)


class ListColumn(Column):
    """List columns; list methods live under ``.list``."""

    @property
    def list(self):
        from emberarrow.accessors import ListMethods
        return ListMethods(self)


class MapColumn(Column):
    """Map columns; map methods live under ``.maps``."""

    @property
    def maps(self):
        from emberarrow.accessors import MapMethods
        return MapMethods(self)
