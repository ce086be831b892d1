from collections import namedtuple

import numpy as np
import pytest

import ember
from emberdata import default_collate, default_convert

Pair = namedtuple("Pair", "a b")


def test_numbers_and_arrays():
    t = default_collate([1, 2, 3])
    assert t.dtype == ember.int64 and t.tolist() == [1, 2, 3]
    assert default_collate([1.5, 2.0]).dtype == ember.float64
    assert default_collate([True, False]).dtype == ember.bool
    arrs = default_collate([np.ones((2, 3), np.float32), np.zeros((2, 3), np.float32)])
    assert tuple(arrs.shape) == (2, 2, 3) and arrs.dtype == ember.float32
    scalars = default_collate([np.float32(1), np.float32(2)])
    assert tuple(scalars.shape) == (2,) and scalars.dtype == ember.float32


def test_ember_tensors_including_bfloat16():
    batch = [ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0])]
    out = default_collate(batch)
    assert out.tolist() == [[1.0, 2.0], [3.0, 4.0]] and out.dtype == ember.float32
    bf = default_collate([t.to(ember.bfloat16) for t in batch])
    assert bf.dtype == ember.bfloat16 and bf.to(ember.float32).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([ember.zeros(2), ember.zeros(3)])
    with pytest.raises(TypeError, match="share a dtype"):
        default_collate([ember.zeros(2), ember.zeros(2, dtype=ember.int32)])


def test_nested_structures():
    batch = [{"x": np.arange(2), "name": "a", "p": Pair(1, 2.0)}, {"x": np.arange(2), "name": "b", "p": Pair(3, 4.0)}]
    out = default_collate(batch)
    assert out["name"] == ["a", "b"] and tuple(out["x"].shape) == (2, 2)
    assert isinstance(out["p"], Pair) and out["p"].a.tolist() == [1, 3]
    tuples = default_collate([(1, "x"), (2, "y")])
    assert isinstance(tuples, list) and tuples[0].tolist() == [1, 2] and tuples[1] == ["x", "y"]
    lists = default_collate([[1, 2], [3, 4]])
    assert [t.tolist() for t in lists] == [[1, 3], [2, 4]]
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [3]])


def test_bad_input():
    with pytest.raises(TypeError, match="found <class 'object'>"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(TypeError, match="non-empty sequence"):
        default_collate([])


def test_default_convert():
    a = np.arange(3)
    t = default_convert(a)
    assert isinstance(t, ember.Tensor) and t.tolist() == [0, 1, 2]
    out = default_convert({"a": a, "s": "x", "p": Pair(np.float64(1.0), 2)})
    assert out["s"] == "x" and isinstance(out["a"], ember.Tensor) and isinstance(out["p"].a, ember.Tensor)
    assert isinstance(default_convert((a, 1)), list)
    assert default_convert(np.array(["s"]))[0] == "s"
    assert default_convert(5) == 5
