"""TorchArrow's dtypes: names, nullability as part of the type, inference and promotion rules.

A dtype says whether its column may hold nulls: ``Int64()`` may not, ``Int64(nullable=True)`` may.
Python values infer as TorchArrow infers them: ``int`` is Int64, ``float`` is Float32 (not
Float64), ``str`` String, ``bool`` Boolean, ``list`` List, ``dict`` Map, ``None`` makes the type
nullable. Unlike TorchArrow, which looked at the first 7 values only, the whole sequence is looked
at, so a ``None`` late in the data makes the column nullable instead of failing.
"""
from __future__ import annotations

import dataclasses
import re
import typing as ty
from collections import namedtuple
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

ScalarTypes = (int, float, bool, str)


@dataclass(frozen=True)
class Field:
    name: str
    dtype: "DType"
    metadata: ty.Optional[ty.Dict[str, str]] = None

    def __str__(self):
        return f"Field('{self.name}', {self.dtype})"


@dataclass(frozen=True)
class DType:
    """Base of every dtype; ``typecode`` follows TorchArrow (and Arrow's C format) letters."""

    typecode: ty.ClassVar[str] = ""
    name: ty.ClassVar[str] = ""
    default: ty.ClassVar[ty.Any] = None

    def __str__(self):
        return f"{self.name.title()}(nullable=True)" if self.nullable else self.name

    def with_null(self, nullable=True):
        return dataclasses.replace(self, nullable=nullable)

    def constructor(self, nullable):
        return self.with_null(nullable)

    def default_value(self):
        return type(self).default

    @property
    def py_type(self):
        return type(self.default_value())


def _primitive(class_name, typecode, name, default, arrow_type):
    cls = dataclasses.make_dataclass(
        class_name,
        [("nullable", bool, dataclasses.field(default=False))],
        bases=(DType,),
        frozen=True,
        namespace={"typecode": typecode, "name": name, "default": default, "_arrow": arrow_type},
    )
    cls.__module__ = __name__
    return cls


Boolean = _primitive("Boolean", "b", "boolean", False, pa.bool_())
Int8 = _primitive("Int8", "c", "int8", 0, pa.int8())
Int16 = _primitive("Int16", "s", "int16", 0, pa.int16())
Int32 = _primitive("Int32", "i", "int32", 0, pa.int32())
Int64 = _primitive("Int64", "l", "int64", 0, pa.int64())
Float32 = _primitive("Float32", "f", "float32", 0.0, pa.float32())
Float64 = _primitive("Float64", "g", "float64", 0.0, pa.float64())
String = _primitive("String", "u", "string", "", pa.string())


@dataclass(frozen=True)
class Void(DType):
    """The type of ``None`` alone; it joins any other type as that type made nullable."""

    nullable: bool = True
    typecode: ty.ClassVar[str] = "n"
    name: ty.ClassVar[str] = "void"


@dataclass(frozen=True)
class Any(DType):
    """The item type of an empty list or dict: it joins any other type as that type, unchanged."""

    nullable: bool = True
    typecode: ty.ClassVar[str] = "?"
    name: ty.ClassVar[str] = "any"


@dataclass(frozen=True)
class List(DType):
    item_dtype: DType
    nullable: bool = False
    fixed_size: int = -1
    typecode: ty.ClassVar[str] = "+l"
    name: ty.ClassVar[str] = "List"

    def __str__(self):
        nullable = f", nullable={self.nullable}" if self.nullable else ""
        fixed = f", fixed_size={self.fixed_size}" if self.fixed_size >= 0 else ""
        return f"List({self.item_dtype}{nullable}{fixed})"

    def default_value(self):
        return []

    @property
    def py_type(self):
        return ty.List[self.item_dtype.py_type]


@dataclass(frozen=True)
class Map(DType):
    key_dtype: DType
    item_dtype: DType
    nullable: bool = False
    keys_sorted: bool = False
    typecode: ty.ClassVar[str] = "+m"
    name: ty.ClassVar[str] = "Map"

    def __str__(self):
        nullable = f", nullable={self.nullable}" if self.nullable else ""
        return f"Map({self.key_dtype}, {self.item_dtype}{nullable})"

    def default_value(self):
        return {}

    @property
    def py_type(self):
        return ty.Dict[self.key_dtype.py_type, self.item_dtype.py_type]


@dataclass(frozen=True)
class Struct(DType):
    fields: ty.List[Field]
    nullable: bool = False
    is_dataframe: bool = False
    metadata: ty.Optional[ty.Dict[str, str]] = None
    typecode: ty.ClassVar[str] = "+s"
    name: ty.ClassVar[str] = "Struct"

    def __post_init__(self):
        object.__setattr__(self, "fields", list(self.fields))
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            raise ValueError(f"Struct: field names must be unique, got {names}")
        for f in self.fields:
            if self.nullable and not f.dtype.nullable:
                raise TypeError(f"nullable structs require each field (like {f.name}) to be nullable as well.")

    def __hash__(self):
        return hash((tuple(self.fields), self.nullable))

    def __str__(self):
        nullable = f", nullable={self.nullable}" if self.nullable else ""
        return f"Struct([{', '.join(str(f) for f in self.fields)}]{nullable})"

    def get_index(self, name):
        for i, f in enumerate(self.fields):
            if f.name == name:
                return i
        return None

    def get(self, name):
        for f in self.fields:
            if f.name == name:
                return f.dtype
        raise KeyError(f"{name} not among fields")

    def default_value(self):
        return tuple(f.dtype.default_value() for f in self.fields)

    @property
    def py_type(self):
        return _row_type(tuple(f.name for f in self.fields))


def _row_type(names):
    """A namedtuple class for rows with these field names (one class per name list). Rows pickle
    by their names and values, so they reach DataLoader workers and come back."""
    if names not in _ROW_TYPES:
        fixed = [_identifier(n, i) for i, n in enumerate(names)]
        base = namedtuple("Row", fixed, rename=True)
        _ROW_TYPES[names] = type("Row", (base,), {"__slots__": (), "__reduce__": lambda row: (_rebuild_row, (names, tuple(row)))})
    return _ROW_TYPES[names]


def _rebuild_row(names, values):
    return _row_type(names)(*values)


_ROW_TYPES: dict = {}


def _identifier(name, index):
    name = re.sub("[^a-zA-Z0-9_]", "_", name)
    if name == "" or name[0].isdigit() or name[0] == "_":
        name = f"f_{name}" if name else f"f_{index}"
    return name


boolean = Boolean()
int8 = Int8()
int16 = Int16()
int32 = Int32()
int64 = Int64()
float32 = Float32()
float64 = Float64()
string = String()


# ---- predicates (TorchArrow's names) ----

def is_void(t):
    return t.typecode == "n"


def is_boolean(t):
    return t.typecode == "b"


def is_integer(t):
    return t.typecode != "" and t.typecode in "csil"


def is_signed_integer(t):
    return is_integer(t)


def is_floating(t):
    return t.typecode != "" and t.typecode in "fg"


def is_numerical(t):
    return is_integer(t) or is_floating(t)


def is_boolean_or_numerical(t):
    return is_boolean(t) or is_numerical(t)


def is_int8(t):
    return t.typecode == "c"


def is_int16(t):
    return t.typecode == "s"


def is_int32(t):
    return t.typecode == "i"


def is_int64(t):
    return t.typecode == "l"


def is_float32(t):
    return t.typecode == "f"


def is_float64(t):
    return t.typecode == "g"


def is_string(t):
    return t.typecode == "u"


def is_any(t):
    return t.typecode == "?"


def contains_any(t):
    """True when some part of ``t`` is still unknown (only empty lists/dicts were seen)."""
    if is_any(t):
        return True
    if is_list(t):
        return contains_any(t.item_dtype)
    if is_map(t):
        return contains_any(t.key_dtype) or contains_any(t.item_dtype)
    if is_struct(t):
        return any(contains_any(f.dtype) for f in t.fields)
    return False


def is_list(t):
    return t.typecode == "+l"


def is_map(t):
    return t.typecode == "+m"


def is_struct(t):
    return t.typecode == "+s"


def is_primitive(t):
    return not t.typecode.startswith("+")


# ---- promotion ----

_PROMOTION_ORDER = "bcsilfg"  # boolean < int8 < ... < float32 < float64, TorchArrow's lattice
_BY_TYPECODE = {t.typecode: t for t in (boolean, int8, int16, int32, int64, float32, float64)}


def promote(l, r):
    """The common type of two boolean/numerical dtypes; nullable when either is."""
    if not (is_boolean_or_numerical(l) and is_boolean_or_numerical(r)):
        return None
    code = max(l.typecode, r.typecode, key=_PROMOTION_ORDER.index)
    return _BY_TYPECODE[code].with_null(l.nullable or r.nullable)


def common_dtype(l, r):
    """The least type both ``l`` and ``r`` fit in, or None (TorchArrow's join of two types)."""
    if is_any(l):
        return r
    if is_any(r):
        return l
    if is_void(l):
        return r.with_null()
    if is_void(r):
        return l.with_null()
    nullable = l.nullable or r.nullable
    if is_string(l) and is_string(r):
        return String(nullable)
    if is_boolean_or_numerical(l) and is_boolean_or_numerical(r):
        return promote(l, r)
    if is_list(l) and is_list(r):
        item = common_dtype(l.item_dtype, r.item_dtype)
        return None if item is None else List(item, nullable)
    if is_map(l) and is_map(r):
        key, item = common_dtype(l.key_dtype, r.key_dtype), common_dtype(l.item_dtype, r.item_dtype)
        return None if key is None or item is None else Map(key, item, nullable)
    if is_struct(l) and is_struct(r) and [f.name for f in l.fields] == [f.name for f in r.fields]:
        joined = [common_dtype(a.dtype, b.dtype) for a, b in zip(l.fields, r.fields)]
        if any(j is None for j in joined):
            return None
        return Struct([Field(f.name, j) for f, j in zip(l.fields, joined)], nullable)
    return None


# ---- inference from Python values ----

_NUMPY_SCALARS = (
    (np.bool_, boolean), (np.int8, int8), (np.int16, int16), (np.int32, int32),
    (np.integer, int64), (np.float64, float64), (np.float32, float32),
)


def infer_dtype_from_value(value):
    """The dtype of one Python value (TorchArrow's rules: a Python float is Float32)."""
    if value is None:
        return Void()
    if isinstance(value, (bool, np.bool_)):
        return boolean
    for np_type, dtype in _NUMPY_SCALARS:
        if isinstance(value, np_type):
            return dtype
    if isinstance(value, int):
        return int64
    if isinstance(value, float):
        return float32
    if isinstance(value, str):
        return string
    if isinstance(value, list):
        return List(infer_dtype_from_prefix(value))
    if isinstance(value, dict):
        return Map(infer_dtype_from_prefix(list(value.keys())), infer_dtype_from_prefix(list(value.values())))
    if isinstance(value, tuple):
        names = getattr(value, "_fields", None)
        if names is None:
            raise TypeError("Cannot infer type from nested Python tuple: a plain tuple has no field names; pass dtype")
        return Struct([Field(n, infer_dtype_from_value(v)) for n, v in zip(names, value)])
    raise TypeError(f"cannot infer a dtype for {value!r} of type {type(value).__name__}")


def infer_dtype_from_prefix(values):
    """The join of the dtypes of ``values`` (every value, not a prefix; see the module docstring)."""
    values = list(values)
    if not values:
        return Any()
    kinds = {type(v) for v in values}
    if len(kinds) == 1 and (kind := next(iter(kinds))) in _FAST_KINDS:
        return _FAST_KINDS[kind]
    dtype = infer_dtype_from_value(values[0])
    for v in values[1:]:
        joined = common_dtype(dtype, infer_dtype_from_value(v))
        if joined is None:
            raise TypeError(f"cannot infer one dtype for values of types {dtype} and {infer_dtype_from_value(v)}")
        dtype = joined
    return dtype


_FAST_KINDS = {int: int64, float: float32, str: string, bool: boolean}


def dtype_of_type(typ):
    """The dtype of a Python type hint: int, float, str, bool, List[...], Dict[...], Optional[...]."""
    if isinstance(typ, DType):
        return typ
    simple = {int: int64, float: float32, str: string, bool: boolean}
    if typ in simple:
        return simple[typ]
    if isinstance(typ, type) and issubclass(typ, tuple) and hasattr(typ, "_fields"):
        hints = ty.get_type_hints(typ)
        if any(n not in hints for n in typ._fields):
            raise TypeError(f"Can't infer type from namedtuple without type hints: {typ}")
        return Struct([Field(n, dtype_of_type(hints[n])) for n in typ._fields])
    if dataclasses.is_dataclass(typ):
        return Struct([Field(f.name, dtype_of_type(f.type)) for f in dataclasses.fields(typ)])
    origin, args = ty.get_origin(typ), ty.get_args(typ)
    if origin is list:
        return List(dtype_of_type(args[0]))
    if origin is dict:
        return Map(dtype_of_type(args[0]), dtype_of_type(args[1]))
    if origin is ty.Union and len(args) == 2 and type(None) in args:
        return dtype_of_type(next(a for a in args if a is not type(None))).with_null()
    raise TypeError(f"cannot infer a dtype from the type hint {typ!r}")


def infer_dtype_from_callable_hint(func):
    """The dtype of ``func``'s return annotation, or None when it has none."""
    target = func if callable(func) and hasattr(func, "__code__") else getattr(func, "__call__", func)
    try:
        hints = ty.get_type_hints(target)
    except Exception:  # builtins and C functions have no inspectable hints
        return None
    ret = hints.get("return")
    return None if ret is None else dtype_of_type(ret)


# ---- Arrow <-> dtype ----

def dtype_to_arrowtype(t):
    """The Arrow type that stores dtype ``t``. Nested fields are always nullable in the Arrow type
    (Arrow's default, which its kernels expect); the dtype alone says whether nulls may occur."""
    if is_primitive(t) and not is_void(t):
        return t._arrow
    if is_list(t):
        item = dtype_to_arrowtype(t.item_dtype)
        return pa.list_(item, t.fixed_size) if t.fixed_size >= 0 else pa.list_(item)
    if is_map(t):
        return pa.map_(dtype_to_arrowtype(t.key_dtype), dtype_to_arrowtype(t.item_dtype))
    if is_struct(t):
        return pa.struct([pa.field(f.name, dtype_to_arrowtype(f.dtype)) for f in t.fields])
    if is_void(t):
        return pa.null()
    raise TypeError(f"no Arrow type for dtype {t}")


def dtype_of_arrow_array(array, nullable=None):
    """The narrowest dtype of ``array``'s data: nullable exactly where nulls occur (at every level);
    ``nullable`` overrides the top level."""
    top = array.null_count > 0 if nullable is None else nullable
    t = array.type
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        fixed = t.list_size if pa.types.is_fixed_size_list(t) else -1
        return List(dtype_of_arrow_array(array.flatten()), top, fixed)
    if pa.types.is_map(t):
        return Map(dtype_of_arrow_array(array.keys), dtype_of_arrow_array(array.items), top)
    if pa.types.is_struct(t):
        # a nullable struct needs nullable fields (TorchArrow's rule)
        return Struct([Field(f.name, dtype_of_arrow_array(array.field(i), True if top else None)) for i, f in enumerate(t)], top)
    return arrowtype_to_dtype(t, top)


def arrowtype_to_dtype(t, nullable):
    """The dtype of Arrow type ``t`` (large and dictionary-encoded variants map to the plain one)."""
    for dtype in (boolean, int8, int16, int32, int64, float32, float64):
        if t == dtype._arrow:
            return dtype.with_null(nullable)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return String(nullable)
    if pa.types.is_dictionary(t):
        return arrowtype_to_dtype(t.value_type, nullable)
    if pa.types.is_map(t):
        return Map(arrowtype_to_dtype(t.key_type, False), arrowtype_to_dtype(t.item_type, t.item_field.nullable), nullable)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return List(arrowtype_to_dtype(t.value_type, t.value_field.nullable), nullable)
    if pa.types.is_fixed_size_list(t):
        return List(arrowtype_to_dtype(t.value_type, t.value_field.nullable), nullable, t.list_size)
    if pa.types.is_struct(t):
        return Struct([Field(f.name, arrowtype_to_dtype(f.type, f.nullable or nullable)) for f in t], nullable)
    if pa.types.is_null(t):
        return Void()
    raise TypeError(f"Arrow type {t} has no emberarrow dtype (supported: bool, int8-64, float32/64, string, list, map, struct)")


def np_typeof_dtype(t):
    """The NumPy scalar type of a primitive dtype (object for strings)."""
    if is_string(t):
        return object
    if is_boolean_or_numerical(t):
        return np.dtype(t._arrow.to_pandas_dtype()).type
    raise TypeError(f"dtype {t} has no NumPy type")


def get_underlying_dtype(dtype):
    return dtype.with_null(False)


def get_nullable_dtype(dtype):
    return dtype.with_null(True)
