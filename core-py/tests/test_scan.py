import numpy as np
import pytest

import ember
from tensor_helpers import ALL, FLOATS, INTS, assert_close, layouts, rounded, to_np

NAN = float("nan")


def wide(a):
    """The NumPy accumulator PyTorch uses: int64 for bool and integers, float64 for floats."""
    return a.astype(np.float64 if a.dtype.kind == "f" else np.int64)


@pytest.mark.parametrize("dtype", ALL, ids=str)
@pytest.mark.parametrize("name,ref", [("cumsum", np.cumsum), ("cumprod", np.cumprod)])
def test_cumsum_cumprod_match_numpy(name, ref, dtype):
    for layout, t, a in layouts((4, 6), dtype, -1.5, 1.5):
        for dim in (0, 1, -1):
            got = getattr(ember, name)(t, dim)
            want_dtype = dtype if dtype in FLOATS else ember.int64
            assert got.dtype == want_dtype and got.shape == t.shape, layout
            want = ref(wide(a), axis=dim % 2)
            if dtype in FLOATS:
                assert_close(got, want, dtype)
            else:
                np.testing.assert_array_equal(to_np(got), want, err_msg=f"{layout} dim={dim}")
            np.testing.assert_array_equal(to_np(getattr(t, name)(dim)), to_np(got))


def test_scan_dtype_argument_out_and_inplace():
    t = ember.tensor([[1, 2, 3], [4, 5, 6]], dtype=ember.int32)
    got = ember.cumsum(t, 1, dtype=ember.float64)
    assert got.dtype == ember.float64 and got.tolist() == [[1.0, 3.0, 6.0], [4.0, 9.0, 15.0]]
    assert ember.cumprod(t, 0, dtype=ember.int16).dtype == ember.int16  # an explicit dtype is the result's
    out = ember.empty(2, 3, dtype=ember.int64)
    assert ember.cumsum(t, 0, out=out) is out and out.tolist() == [[1, 2, 3], [5, 7, 9]]
    x = ember.tensor([1.0, 2.0, 3.0])
    assert x.cumsum_(0) is x and x.tolist() == [1.0, 3.0, 6.0]
    assert x.cumprod_(0).tolist() == [1.0, 3.0, 18.0]
    b = ember.tensor([True, False, True])
    assert ember.cumsum(b, 0).tolist() == [1, 1, 2] and ember.cumsum(b, 0).dtype == ember.int64


def test_scan_zero_dim_empty_and_errors():
    assert ember.cumsum(ember.tensor(3.0), 0).shape == () and ember.cumsum(ember.tensor(3.0), -1).item() == 3.0
    assert ember.cumsum(ember.zeros(0, 3), 0).shape == (0, 3)
    assert ember.cummax(ember.zeros(0), 0).values.shape == (0,)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.cumsum(ember.zeros(2, 3), 2)
    with pytest.raises(TypeError, match="argument 'dim' must be int"):
        ember.cumsum(ember.zeros(2), None)
    with pytest.raises(RuntimeError, match="logcumsumexp"):
        ember.logcumsumexp(ember.tensor([1, 2]), 0)


def test_large_scan_rows_run_in_parallel():
    a = np.random.default_rng(0).standard_normal((64, 4096))
    t = ember.tensor(a)
    np.testing.assert_allclose(ember.cumsum(t, 1).numpy(), np.cumsum(a, 1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ember.cumsum(t, 0).numpy(), np.cumsum(a, 0), rtol=1e-12, atol=1e-12)


def ref_cum_extreme(a, axis, is_max):
    """Running extreme with PyTorch's rules: ties move to the later index, NaN sticks."""
    moved = np.moveaxis(np.asarray(a, dtype=np.float64), axis, -1)
    values, indices = np.empty(moved.shape), np.empty(moved.shape, dtype=np.int64)
    for idx in np.ndindex(moved.shape[:-1]):
        best, at = moved[idx][0], 0
        for k, v in enumerate(moved[idx]):
            if not np.isnan(best) and (np.isnan(v) or (v >= best if is_max else v <= best)):
                best, at = v, k
            values[idx + (k,)], indices[idx + (k,)] = best, at
    return np.moveaxis(values, -1, axis), np.moveaxis(indices, -1, axis)


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_cummax_cummin(dtype):
    for layout, t, a in layouts((4, 6), dtype):
        for dim in (0, 1):
            for name, is_max, acc in (("cummax", True, np.maximum), ("cummin", False, np.minimum)):
                v, i = getattr(ember, name)(t, dim)
                assert v.dtype == dtype and i.dtype == ember.int64
                np.testing.assert_array_equal(to_np(v), acc.accumulate(a, axis=dim), err_msg=layout)
                np.testing.assert_array_equal(to_np(i), ref_cum_extreme(a, dim, is_max)[1], err_msg=f"{layout} {name}")


def test_cummax_nan_and_namedtuple():
    t = ember.tensor([1.0, 3.0, NAN, 5.0, 3.0])
    r = ember.cummax(t, 0)
    assert type(r).__name__ == "cummax" and r.indices.tolist() == [0, 1, 2, 2, 2]
    assert np.isnan(to_np(r.values)[2:]).all()
    r = t.cummin(0)
    assert type(r).__name__ == "cummin" and r.indices.tolist() == [0, 0, 2, 2, 2]
    v, i = ember.empty(5), ember.empty(5, dtype=ember.int64)
    assert ember.cummax(ember.tensor([1.0, 1.0, 0.0, 2.0, 2.0]), 0, out=(v, i)).indices is i
    assert i.tolist() == [0, 1, 1, 3, 4]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_logcumsumexp(dtype):
    for layout, t, a in layouts((3, 7), dtype):
        for dim in (0, 1):
            assert_close(ember.logcumsumexp(t, dim), np.logaddexp.accumulate(a, axis=dim), dtype)
            assert_close(t.logcumsumexp(dim), np.logaddexp.accumulate(a, axis=dim), dtype)
    edge = ember.tensor([-float("inf"), -float("inf"), 1000.0, 1000.0, float("inf"), float("inf")])
    np.testing.assert_allclose(ember.logcumsumexp(edge, 0).numpy(), [-np.inf, -np.inf, 1000, 1000 + np.log(2), np.inf, np.inf])
    assert np.isnan(ember.logcumsumexp(ember.tensor([0.0, NAN, 1.0]), 0).numpy()[1:]).all()


def ref_diff(a, n, dim, dtype):
    """np.diff one order at a time, rounding each order to `dtype` as ember stores it."""
    for _ in range(n):
        a = np.diff(a, axis=dim)
        if dtype in FLOATS:
            a = rounded(a, dtype)
    return a


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_diff_matches_numpy(dtype):
    for layout, t, a in layouts((4, 6), dtype):
        for n in (1, 2, 7):
            for dim in (0, 1, -1):
                got = ember.diff(t, n, dim)
                want = ref_diff(a, n, dim, dtype)
                assert got.dtype == dtype and got.shape == want.shape, (layout, n, dim)
                if dtype in FLOATS:
                    assert_close(got, want, dtype)
                elif dtype in INTS:
                    np.testing.assert_array_equal(to_np(got), want.astype(to_np(t).dtype), err_msg=layout)
                else:
                    np.testing.assert_array_equal(to_np(got), want)


def test_diff_prepend_append():
    a = np.array([[1, 4, 9], [2, 3, 7]])
    t = ember.tensor(a)
    got = ember.diff(t, dim=1, prepend=ember.tensor([[0], [0]]), append=ember.tensor([[10, 11], [8, 8]]))
    np.testing.assert_array_equal(got.numpy(), np.diff(a, axis=1, prepend=[[0], [0]], append=[[10, 11], [8, 8]]))
    np.testing.assert_array_equal(t.diff(2, 0, prepend=5).numpy(), np.diff(a, 2, axis=0, prepend=5))
    np.testing.assert_array_equal(ember.diff(t, 0).numpy(), a)
    with pytest.raises(RuntimeError, match="at least one-dimensional"):
        ember.diff(ember.tensor(1.0))
    with pytest.raises(RuntimeError, match="order must be non-negative"):
        ember.diff(t, -1)
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        ember.diff(t, prepend=ember.tensor([1, 2]))
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.diff(t, dim=2)
