import pickle
import typing as ty

import numpy as np
import pyarrow as pa
import pytest

import emberarrow as ta
import emberarrow.dtypes as dt


def test_names_and_nullability():
    assert str(dt.int64) == "int64"
    assert str(dt.Int64(nullable=True)) == "Int64(nullable=True)"
    assert str(dt.List(dt.Int64(True), nullable=True)) == "List(Int64(nullable=True), nullable=True)"
    assert str(dt.Map(dt.string, dt.float32)) == "Map(string, float32)"
    assert str(dt.Struct([dt.Field("a", dt.int64)])) == "Struct([Field('a', int64)])"
    assert dt.int64 != dt.Int64(True) and dt.int64.with_null() == dt.Int64(True)
    assert pickle.loads(pickle.dumps(dt.Struct([dt.Field("a", dt.List(dt.string))]))) == dt.Struct([dt.Field("a", dt.List(dt.string))])


@pytest.mark.parametrize("values, expected", [
    ([1, 2], dt.int64),
    ([1.0, 2], dt.float32),  # a Python float is Float32 in TorchArrow
    ([1, None], dt.Int64(True)),
    ([True, 1], dt.int64),
    (["a", None], dt.String(True)),
    ([[1], [2, None]], dt.List(dt.Int64(True))),
    ([[1], None], dt.List(dt.int64, nullable=True)),
    ([{"a": 1.5}], dt.Map(dt.string, dt.float32)),
    ([np.int32(1), np.int32(2)], dt.int32),
    ([np.float64(1)], dt.float64),
])
def test_inference(values, expected):
    assert dt.infer_dtype_from_prefix(values) == expected
    assert ta.column(values).dtype == expected


def test_inference_looks_past_the_first_values():
    # TorchArrow looked at 7 values only and then failed on a later None.
    assert ta.column([1] * 10 + [None]).dtype == dt.Int64(True)


def test_inference_errors():
    with pytest.raises(TypeError, match="cannot infer one dtype"):
        dt.infer_dtype_from_prefix([1, "a"])
    with pytest.raises(ValueError, match="cannot infer"):
        ta.column([None, None])
    with pytest.raises(TypeError):
        ta.column([object()])
    with pytest.raises(ValueError, match="infer"):
        ta.column([[], []])
    assert ta.column([[1], []]).dtype == dt.List(dt.int64)  # an empty list says nothing of the items


def test_promotion():
    assert dt.promote(dt.int8, dt.Int32(True)) == dt.Int32(True)
    assert dt.promote(dt.int64, dt.float32) == dt.float32
    assert dt.promote(dt.boolean, dt.float64) == dt.float64
    assert dt.promote(dt.string, dt.int64) is None
    assert dt.common_dtype(dt.List(dt.int8), dt.List(dt.Int64(True))) == dt.List(dt.Int64(True))


def test_type_hints():
    assert dt.dtype_of_type(ty.List[int]) == dt.List(dt.int64)
    assert dt.dtype_of_type(ty.Optional[float]) == dt.Float32(True)
    assert dt.dtype_of_type(ty.Dict[str, bool]) == dt.Map(dt.string, dt.boolean)


def test_arrow_types_round_trip():
    for t in [dt.Int8(True), dt.float64, dt.List(dt.String(True)), dt.Map(dt.string, dt.Int64(True)),
              dt.Struct([dt.Field("x", dt.List(dt.Int32(True), True)), dt.Field("y", dt.Boolean(True))])]:
        assert dt.arrowtype_to_dtype(dt.dtype_to_arrowtype(t), t.nullable) == t
    # from data: nullable exactly where nulls occur, at every level
    data = pa.array([{"x": [1, None], "y": "a"}, {"x": [], "y": "b"}])
    assert dt.dtype_of_arrow_array(data) == dt.Struct([dt.Field("x", dt.List(dt.Int64(True))), dt.Field("y", dt.string)])
    assert dt.arrowtype_to_dtype(pa.large_string(), False) == dt.string
    with pytest.raises(TypeError, match="no emberarrow dtype"):
        dt.arrowtype_to_dtype(pa.uint32(), False)
