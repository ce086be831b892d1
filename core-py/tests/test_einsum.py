import numpy as np
import pytest

import ember
from tensor_helpers import assert_close, to_np

CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("i,i->", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ijk->kji", [(2, 3, 4)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,jk", [(2, 2, 3, 4), (4, 5)]),
    ("i...->...", [(3, 2, 4)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("iij->j", [(3, 3, 4)]),
    ("ab,cd,ef->abcdef", [(1, 2), (2, 1), (1, 2)]),
    ("i j , j k -> i k", [(3, 4), (4, 2)]),
    ("ijk,ik->j", [(2, 3, 4), (2, 4)]),
    ("Ab,bC->AC", [(2, 3), (3, 2)]),
]


@pytest.mark.parametrize("equation,shapes", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int64], ids=str)
def test_einsum_matches_numpy(equation, shapes, dtype):
    rng = np.random.default_rng(0)
    arrays = [rng.integers(-4, 5, s) if dtype == ember.int64 else rng.standard_normal(s) for s in shapes]
    tensors = [ember.tensor(a).to(dtype) for a in arrays]
    want = np.einsum(equation, *[to_np(t) for t in tensors])
    got = ember.einsum(equation, *tensors)
    assert got.shape == want.shape and got.dtype == dtype
    assert_close(got, want, dtype, rtol=1e-5 if dtype == ember.float32 else None)
    assert_close(ember.einsum(equation, tensors), want, dtype, rtol=1e-5 if dtype == ember.float32 else None)


def test_einsum_on_non_contiguous_and_broadcast_operands():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((5, 4)), rng.standard_normal((6, 5))
    ta = ember.tensor(a).t()  # (4, 5), transposed view
    tb = ember.tensor(b).flip(0).t()  # (5, 6), flipped and transposed
    np.testing.assert_allclose(ember.einsum("ij,jk->ik", ta, tb).numpy(), a.T @ b[::-1].T, rtol=1e-12)
    row = ember.tensor(rng.standard_normal((1, 5)))
    np.testing.assert_allclose(ember.einsum("ij,jk->ik", row.expand(3, 5), tb).numpy(), np.broadcast_to(row.numpy(), (3, 5)) @ b[::-1].T, rtol=1e-12)
    strided = ember.tensor(rng.standard_normal((8, 10)))[::2, ::2]
    np.testing.assert_allclose(ember.einsum("ij->j", strided).numpy(), strided.numpy().sum(0), rtol=1e-12)
    # Size-1 dims broadcast against full ones, as in PyTorch.
    x, y = rng.standard_normal((3, 1)), rng.standard_normal((1, 4))
    np.testing.assert_allclose(ember.einsum("ij,ij->ij", ember.tensor(x), ember.tensor(y)).numpy(), x * y)


def test_einsum_mixed_dtypes_promote_and_zero_size():
    a = ember.tensor([[1, 2], [3, 4]])
    b = ember.tensor([[0.5, 0.0], [0.0, 0.5]])
    assert ember.einsum("ij,jk->ik", a, b).tolist() == [[0.5, 1.0], [1.5, 2.0]]
    z = ember.einsum("ij,jk->ik", ember.zeros(2, 0), ember.zeros(0, 3))
    assert z.shape == (2, 3) and z.tolist() == [[0.0] * 3] * 2
    assert ember.einsum("i->", ember.zeros(0)).item() == 0.0


def test_einsum_errors():
    a = ember.zeros(2, 3)
    with pytest.raises(RuntimeError, match="more operands were provided"):
        ember.einsum("ij", a, a)
    with pytest.raises(RuntimeError, match="fewer operands were provided"):
        ember.einsum("ij,jk", a)
    with pytest.raises(RuntimeError, match=r"number of subscripts in the equation \(3\) does not match"):
        ember.einsum("ijk", a)
    with pytest.raises(RuntimeError, match="subscript j has size 2 for operand 1 which does not broadcast with previously seen size 3"):
        ember.einsum("ij,jk", a, a)
    with pytest.raises(RuntimeError, match="invalid subscript given at index 1"):
        ember.einsum("i1", a)
    with pytest.raises(RuntimeError, match="output subscript k does not appear"):
        ember.einsum("ij->k", a)
    with pytest.raises(RuntimeError, match="appears more than once in the output"):
        ember.einsum("ij->ii", a)
    with pytest.raises(RuntimeError, match="repeated for operand but the sizes don't match"):
        ember.einsum("ii", a)
    with pytest.raises(RuntimeError, match="must provide at least one operand"):
        ember.einsum("i")
    with pytest.raises(TypeError, match="argument 'equation' must be str"):
        ember.einsum(a, a)
    with pytest.raises(TypeError, match="must be Tensor"):
        ember.einsum("i", [1, 2])
