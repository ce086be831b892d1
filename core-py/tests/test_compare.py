"""`isclose` / `allclose` / `equal` and `Tensor.new_*` against NumPy's equivalents."""
import ember
import numpy as np
import pytest

SPECIAL = [0.0, 1.0, 1.0 + 1e-6, 1.1, -2.0, np.inf, -np.inf, np.nan, 1e-9, 0.0]


@pytest.mark.parametrize("equal_nan", [False, True])
@pytest.mark.parametrize("rtol,atol", [(1e-5, 1e-8), (0.0, 0.0), (0.2, 0.0), (0.0, 0.5)])
def test_isclose_matches_numpy_on_special_values(rtol, atol, equal_nan):
    a = np.array(SPECIAL * len(SPECIAL))
    b = np.repeat(np.array(SPECIAL), len(SPECIAL))
    got = ember.isclose(ember.from_numpy(a), ember.from_numpy(b), rtol, atol, equal_nan).numpy()
    np.testing.assert_array_equal(got, np.isclose(a, b, rtol, atol, equal_nan))


def test_isclose_on_integers_uses_fractional_tolerance():
    a, b = ember.tensor([100, 100, 7]), ember.tensor([101, 102, 7])
    assert ember.isclose(a, b, rtol=0.01, atol=0).tolist() == [True, False, True]
    assert ember.isclose(ember.tensor([True, False]), ember.tensor([True, True])).tolist() == [True, False]


def test_isclose_refuses_mixed_dtypes_and_negative_tolerances():
    with pytest.raises(RuntimeError, match="did not match"):
        ember.isclose(ember.ones(2), ember.ones(2, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero"):
        ember.isclose(ember.ones(2), ember.ones(2), rtol=-1)


def test_allclose_and_equal():
    a = ember.tensor([1.0, float("nan")])
    assert not ember.allclose(a, a) and ember.allclose(a, a, equal_nan=True) and a.allclose(a, equal_nan=True)
    assert not ember.equal(a, a)
    assert ember.equal(ember.arange(3), ember.arange(3)) and not ember.equal(ember.ones(2), ember.ones(3))
    assert ember.ones(2).equal(ember.ones(2))


def test_new_factories_take_the_tensors_dtype_unless_given():
    x = ember.ones(2, dtype=ember.float64)
    assert x.new_zeros(2, 3).shape == (2, 3) and x.new_zeros((2, 3)).dtype == ember.float64
    assert x.new_ones(2, dtype=ember.int32).dtype == ember.int32
    assert x.new_full((2,), 3.0).tolist() == [3.0, 3.0]
    assert x.new_empty((1,)).dtype == ember.float64
    t = x.new_tensor([1, 2])
    assert t.dtype == ember.float64 and t.tolist() == [1.0, 2.0]
    assert x.new_zeros(2, requires_grad=True).requires_grad
