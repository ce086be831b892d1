import numpy as np
import pytest

import ember
from tensor_helpers import ALL, FLOATS, INTS, assert_close, layouts, to_np

DIMS = [None, 0, 1, -1, (0, 1), (0, 2), (2, 0, 1)]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name,ref", [("sum", np.sum), ("mean", np.mean), ("prod", np.prod), ("amax", np.max), ("amin", np.min)])
def test_float_reductions(name, ref, dtype):
    for layout, t, a in layouts((4, 5, 6), dtype, 0.5, 1.5):
        for dim in DIMS:
            for keepdim in (False, True):
                if name in ("amax", "amin"):
                    got = getattr(ember, name)(t, () if dim is None else dim, keepdim)
                else:
                    got = getattr(ember, name)(t, dim, keepdim)
                want = ref(a.astype(np.float64), axis=dim if not isinstance(dim, tuple) else tuple(d % 3 for d in dim), keepdims=keepdim)
                assert got.dtype == dtype and got.shape == np.shape(want), (layout, dim)
                tol = {"float16": 4e-3, "bfloat16": 3e-2, "float32": 2e-5, "float64": 1e-12}[dtype.name]
                assert_close(got, want, dtype, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", INTS + [ember.bool], ids=str)
def test_integer_sums_promote_to_int64(dtype):
    for _, t, a in layouts((3, 7), dtype):
        assert ember.sum(t).dtype == ember.int64
        assert ember.sum(t, 1).tolist() == a.astype(np.int64).sum(1).tolist()
        assert ember.prod(t, 0).tolist() == a.astype(np.int64).prod(0).tolist()
        assert ember.amax(t, 1).tolist() == a.max(1).tolist() and ember.amax(t, 1).dtype == dtype


def test_large_full_reduction_is_parallel_and_accurate():
    x = ember.ones(3_000_000)
    assert ember.sum(x).item() == 3_000_000.0
    r = np.random.default_rng(0).standard_normal(1_000_003)
    assert ember.tensor(r).sum().item() == pytest.approx(r.sum(), rel=1e-10)
    assert ember.tensor(r, dtype=ember.float32).sum().item() == pytest.approx(r.sum(), abs=2e-2)


def test_mean_requires_floats_and_empty_rules():
    with pytest.raises(RuntimeError, match="Input dtype must be either a floating point"):
        ember.mean(ember.tensor([1, 2]))
    assert ember.mean(ember.tensor([1, 2]), dtype=ember.float32).item() == 1.5
    assert ember.sum(ember.zeros(0)).item() == 0.0 and ember.prod(ember.zeros(0)).item() == 1.0
    assert ember.mean(ember.zeros(0)).isnan().item()
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):  # as PyTorch
        ember.amax(ember.zeros(0))
    assert ember.sum(ember.zeros(0, 3), 0).tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(RuntimeError, match="appears multiple times"):
        ember.sum(ember.zeros(2, 3), (0, 0))
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.sum(ember.zeros(2, 3), 2)


def test_nan_propagates_through_max():
    x = ember.tensor([[1.0, float("nan"), 3.0], [1.0, 2.0, 3.0]])
    assert np.isnan(to_np(ember.amax(x, 1))[0]) and to_np(ember.amax(x, 1))[1] == 3.0
    v, i = ember.max(x, 1)
    assert np.isnan(to_np(v)[0]) and i.tolist() == [1, 2]


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_max_min_argmax(dtype):
    for _, t, a in layouts((5, 4), dtype):
        v, i = ember.max(t, 1)
        assert to_np(v).tolist() == a.max(1).tolist() and i.tolist() == a.argmax(1).tolist()
        v, i = ember.min(t, 0, keepdim=True)
        assert v.shape == (1, 4) and i.squeeze(0).tolist() == a.argmin(0).tolist()
        assert ember.argmax(t).item() == int(np.argmax(a)) and ember.argmin(t).item() == int(np.argmin(a))
        assert to_np(ember.max(t)).item() == a.max()
    with pytest.raises(IndexError, match="non-zero size"):
        ember.max(ember.zeros(0, 3), 0)


def test_all_any_count_nonzero():
    x = ember.tensor([[0, 1, 2], [3, 4, 5]])
    assert ember.all(x).item() is False and ember.any(x).item() is True
    assert ember.all(x, 0).tolist() == [False, True, True] and ember.any(x == 0, 1).tolist() == [True, False]
    assert ember.count_nonzero(x).item() == 5 and ember.count_nonzero(x, 1).tolist() == [2, 3]
    assert ember.all(ember.tensor([1, 0], dtype=ember.uint8)).dtype == ember.uint8


def test_var_std_norm_logsumexp():
    a = np.random.default_rng(0).standard_normal((6, 7))
    t = ember.tensor(a)
    np.testing.assert_allclose(ember.var(t).item(), a.var(ddof=1))
    np.testing.assert_allclose(ember.var(t, 1, correction=0).numpy(), a.var(1))
    np.testing.assert_allclose(ember.std(t, (0, 1), keepdim=True).numpy(), a.std(ddof=1, keepdims=True))
    np.testing.assert_allclose(ember.var(t, 0, unbiased=False).numpy(), a.var(0))
    np.testing.assert_allclose(ember.norm(t).item(), np.linalg.norm(a))
    np.testing.assert_allclose(ember.norm(t, 1, 1).numpy(), np.abs(a).sum(1))
    np.testing.assert_allclose(ember.norm(t, float("inf"), 0).numpy(), np.abs(a).max(0))
    np.testing.assert_allclose(ember.norm(t, 3, 1).numpy(), (np.abs(a) ** 3).sum(1) ** (1 / 3))
    from scipy.special import logsumexp

    np.testing.assert_allclose(ember.logsumexp(t, 1).numpy(), logsumexp(a, 1))
    big = ember.tensor([[1000.0, 1000.0], [-float("inf"), -float("inf")]])
    np.testing.assert_allclose(ember.logsumexp(big, 1).numpy(), [1000 + np.log(2), -np.inf])
