import numpy as np
import pytest

import ember
from tensor_helpers import FLOATS, assert_close, to_np


@pytest.mark.parametrize("dtype", FLOATS + [ember.int32, ember.int64], ids=str)
@pytest.mark.parametrize("sa,sb", [((5, 7), (7, 3)), ((7,), (7,)), ((7,), (7, 2)), ((4, 7), (7,)),
                                   ((2, 5, 7), (7, 3)), ((3, 1, 5, 7), (2, 7, 4)), ((1, 1), (1, 1)), ((0, 3), (3, 2)),
                                   ((2, 3, 5, 7), (7, 4)), ((2, 3, 5, 7), (7,)), ((0, 3, 7), (7, 2))])
def test_matmul_parity(dtype, sa, sb):
    rng = np.random.default_rng(0)
    a, b = rng.integers(-3, 4, sa).astype(np.float64), rng.integers(-3, 4, sb).astype(np.float64)
    got = ember.tensor(a).to(dtype) @ ember.tensor(b).to(dtype)
    want = np.matmul(a, b)
    assert got.shape == want.shape and got.dtype == dtype
    assert_close(got, want, dtype, rtol=1e-2 if dtype in (ember.float16, ember.bfloat16) else 1e-6, atol=1e-2)


def test_matmul_of_transposed_and_strided_views():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((64, 48)), rng.standard_normal((96, 64))
    ta, tb = ember.tensor(a), ember.tensor(b)
    np.testing.assert_allclose((ta.t() @ tb.t()).numpy(), a.T @ b.T, rtol=1e-10)
    np.testing.assert_allclose((ta[::2, ::3] @ tb[:16, ::2]).numpy(), a[::2, ::3] @ b[:16, ::2], rtol=1e-10)
    big = rng.standard_normal((300, 300)).astype(np.float32)
    np.testing.assert_allclose((ember.tensor(big) @ ember.tensor(big)).numpy(), big @ big, rtol=1e-3, atol=1e-3)


def test_batched_rows_times_a_matrix_fold_into_one_product():
    """[..., m, k] @ [k, n] runs as one product of all rows (as PyTorch folds it): permuted
    (non-contiguous) inputs, a transposed weight, and the gradients of both."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 7, 3, 6))
    w = rng.standard_normal((5, 6))
    x = ember.tensor(a).permute(0, 2, 1, 3).requires_grad_()
    wt = ember.tensor(w).requires_grad_()
    y = x @ wt.t()
    want = np.matmul(a.transpose(0, 2, 1, 3), w.T)
    assert tuple(y.shape) == want.shape
    np.testing.assert_allclose(to_np(y.detach()), want, rtol=1e-5, atol=1e-5)
    y.sum().backward()
    np.testing.assert_allclose(to_np(x.grad), np.broadcast_to(w.sum(0), want.shape[:-1] + (6,)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(to_np(wt.grad), np.broadcast_to(a.sum((0, 1, 2)), (5, 6)), rtol=1e-5, atol=1e-5)


def test_mm_bmm_addmm():
    rng = np.random.default_rng(2)
    a, b, c = rng.standard_normal((3, 4)), rng.standard_normal((4, 5)), rng.standard_normal((3, 5))
    np.testing.assert_allclose(ember.mm(ember.tensor(a), ember.tensor(b)).numpy(), a @ b)
    np.testing.assert_allclose(ember.addmm(ember.tensor(c), ember.tensor(a), ember.tensor(b), beta=0.5, alpha=2).numpy(), 0.5 * c + 2 * (a @ b))
    x, y = rng.standard_normal((6, 3, 4)), rng.standard_normal((6, 4, 2))
    np.testing.assert_allclose(ember.bmm(ember.tensor(x), ember.tensor(y)).numpy(), x @ y)
    np.testing.assert_allclose(ember.dot(ember.tensor(a[0]), ember.tensor(a[1])).item(), a[0] @ a[1])
    np.testing.assert_allclose(ember.outer(ember.tensor(a[0]), ember.tensor(b[0])).numpy(), np.outer(a[0], b[0]))


def test_matmul_errors():
    with pytest.raises(RuntimeError, match=r"cannot be multiplied \(2x3 and 4x5\)"):
        ember.zeros(2, 3) @ ember.zeros(4, 5)
    with pytest.raises(RuntimeError, match="same dtype"):
        ember.zeros(2, 3) @ ember.zeros(3, 2, dtype=ember.float64)
    with pytest.raises(RuntimeError, match="at least 1D"):
        ember.matmul(ember.tensor(1.0), ember.zeros(2))
    with pytest.raises(RuntimeError, match="3D"):
        ember.bmm(ember.zeros(2, 3), ember.zeros(3, 2))
    with pytest.raises(RuntimeError, match="broadcast"):
        ember.zeros(2, 3, 4) @ ember.zeros(3, 4, 5)
