"""Gradients of indexing, joining and ordering ops against PyTorch and finite differences,
and of writes through `[...] =` (in-place on views)."""
import numpy as np
import pytest

import ember
from autograd_helpers import compare_with_torch, gradchecks, leaf

torch = pytest.importorskip("torch")
rng = np.random.default_rng(3)
X = rng.standard_normal((4, 5))
IDX = np.array([[0, 3, 3], [1, 0, 4], [4, 4, 2], [2, 1, 0]])
I1 = np.array([3, 0, 3, 1])
MASK = X > 0.2


def e(a):
    return ember.tensor(a)


def t(a):
    return torch.tensor(a)


CASES = [
    ("getitem_int_list", lambda x: x[[0, 2, 2]], lambda x: x[[0, 2, 2]]),
    ("getitem_tensor_pair", lambda x: x[e(I1), e(I1)], lambda x: x[t(I1), t(I1)]),
    ("getitem_mixed", lambda x: x[1:, e(I1[:2])], lambda x: x[1:, t(I1[:2])]),
    ("getitem_mask", lambda x: x[e(MASK)], lambda x: x[t(MASK)]),
    ("getitem_row_mask", lambda x: x[e(MASK[:, 0])], lambda x: x[t(MASK[:, 0])]),
    ("gather", lambda x: x.gather(1, e(IDX[:, :2])), lambda x: x.gather(1, t(IDX[:, :2]))),
    ("take_along_dim", lambda x: ember.take_along_dim(x, e(IDX), 1), lambda x: torch.take_along_dim(x, t(IDX), 1)),
    ("index_select", lambda x: x.index_select(0, e(I1)), lambda x: x.index_select(0, t(I1))),
    ("take", lambda x: x.take(e(IDX)), lambda x: x.take(t(IDX))),
    ("masked_select", lambda x: x.masked_select(e(MASK)), lambda x: x.masked_select(t(MASK))),
    ("masked_select_broadcast", lambda x: x.masked_select(e(MASK[0])), lambda x: x.masked_select(t(MASK[0]))),
    ("masked_fill", lambda x: x.masked_fill(e(MASK), 2.0), lambda x: x.masked_fill(t(MASK), 2.0)),
    ("scatter", lambda x: x.scatter(1, e(IDX[:, :1]), 7.0), lambda x: x.scatter(1, t(IDX[:, :1]), 7.0)),
    ("index_fill", lambda x: x.index_fill(1, e(I1[:2]), -1.0), lambda x: x.index_fill(1, t(I1[:2]), -1.0)),
    ("roll", lambda x: x.roll((1, -2), (0, 1)), lambda x: x.roll((1, -2), (0, 1))),
    ("roll_flat", lambda x: x.roll(3), lambda x: x.roll(3)),
    ("repeat", lambda x: x.repeat(2, 1, 3), lambda x: x.repeat(2, 1, 3)),
    ("tile", lambda x: x.tile((2,)), lambda x: x.tile((2,))),
    ("repeat_interleave", lambda x: x.repeat_interleave(2, dim=0), lambda x: x.repeat_interleave(2, dim=0)),
    ("tril", lambda x: x.tril(1), lambda x: x.tril(1)),
    ("triu", lambda x: x.triu(-1), lambda x: x.triu(-1)),
    ("sort", lambda x: x.sort(1, descending=True).values, lambda x: x.sort(1, descending=True).values),
    ("topk", lambda x: x.topk(2, 0).values, lambda x: x.topk(2, 0).values),
    ("kthvalue", lambda x: x.kthvalue(2, 1).values, lambda x: x.kthvalue(2, 1).values),
    ("median", lambda x: x.median(0).values, lambda x: x.median(0).values),
    ("msort", lambda x: x.msort(), lambda x: x.msort()),
    ("flip_diag", lambda x: x.fliplr().diagonal(), lambda x: x.fliplr().diagonal()),
]


@pytest.mark.parametrize("name,fe,ft", CASES, ids=[c[0] for c in CASES])
def test_indexing(name, fe, ft):
    compare_with_torch(fe, ft, [X])
    gradchecks(fe, [X])
    compare_with_torch(fe, ft, [X], layout="transposed")


def test_joining():
    a, b, c = rng.standard_normal((2, 3)), rng.standard_normal((4, 3)), rng.standard_normal((2, 3))
    compare_with_torch(lambda a, b: ember.cat([a, b]), lambda a, b: torch.cat([a, b]), [a, b])
    gradchecks(lambda a, b: ember.cat([a, b, a], 0), [a, b])
    compare_with_torch(lambda a, c: ember.stack([a, c], 1), lambda a, c: torch.stack([a, c], 1), [a, c])
    compare_with_torch(lambda a, c: ember.hstack([a, c]), lambda a, c: torch.hstack([a, c]), [a, c])
    compare_with_torch(lambda a: ember.cat([a, ember.tensor([])]), lambda a: torch.cat([a, torch.tensor([])]), [a])
    x = leaf(a)
    f = x.float()
    y = ember.cat([f, ember.zeros(1, 3, dtype=ember.float64)])
    assert y.dtype == ember.float64
    y.sum().backward()
    assert x.grad.dtype == ember.float64
    np.testing.assert_allclose(np.asarray(x.grad), 1.0)


def test_scatter_add_and_index_add_sources():
    src = rng.standard_normal((4, 2))
    idx = e(IDX[:, :2])
    compare_with_torch(lambda x, s: x.scatter_add(1, idx, s), lambda x, s: x.scatter_add(1, t(IDX[:, :2]), s), [X, src])
    compare_with_torch(lambda x, s: x.scatter(1, idx, s), lambda x, s: x.scatter(1, t(IDX[:, :2]), s), [X, src])
    gradchecks(lambda x, s: x.scatter_add(1, idx, s), [X, src])
    s2 = rng.standard_normal((4, 2))
    compare_with_torch(lambda x, s: x.index_add(1, e(np.array([4, 1])), s, alpha=2), lambda x, s: x.index_add(1, t(np.array([4, 1])), s, alpha=2), [X, s2])
    compare_with_torch(lambda x, s: x.index_copy(1, e(np.array([4, 1])), s), lambda x, s: x.index_copy(1, t(np.array([4, 1])), s), [X, s2])
    v = rng.standard_normal(3)
    compare_with_torch(lambda x, v: x.index_put((e(np.array([0, 2, 3])), e(np.array([1, 1, 4]))), v), lambda x, v: x.index_put((t(np.array([0, 2, 3])), t(np.array([1, 1, 4]))), v), [X, v])
    compare_with_torch(lambda x, v: x.index_put((e(np.array([0, 0])),), v[:1], accumulate=True), lambda x, v: x.index_put((t(np.array([0, 0])),), v[:1], accumulate=True), [X, v])
    m = rng.standard_normal(20)
    compare_with_torch(lambda x, s: x.masked_scatter(e(MASK), s), lambda x, s: x.masked_scatter(t(MASK), s), [X, m])


def test_where_with_scalar_and_max_with_other():
    compare_with_torch(lambda x: ember.where(e(MASK), x, 0.0), lambda x: torch.where(t(MASK), x, 0.0), [X])
    compare_with_torch(lambda x, y: ember.max(x, y), lambda x, y: torch.max(x, y), [X, X.T[:1].T + 0.01])


def setitem_cases():
    def basic(x, v):
        y = x * 1
        y[1:3, 0] = v
        return y

    def advanced(x, v):
        y = x * 2
        y[e(I1[:2]), e(I1[2:])] = v
        return y

    def masked(x, v):
        y = x * 1
        y[e(MASK)] = 0.5
        return y * v.sum()

    def chained(x, v):
        y = x * 1
        row = y[2]
        row.mul_(v[0])
        row[1:3] += v
        return y

    def torch_basic(x, v):
        y = x * 1
        y[1:3, 0] = v
        return y

    def torch_advanced(x, v):
        y = x * 2
        y[t(I1[:2]), t(I1[2:])] = v
        return y

    def torch_masked(x, v):
        y = x * 1
        y[t(MASK)] = 0.5
        return y * v.sum()

    def torch_chained(x, v):
        y = x * 1
        row = y[2]
        row.mul_(v[0])
        row[1:3] += v
        return y

    return [("basic", basic, torch_basic), ("advanced", advanced, torch_advanced), ("masked", masked, torch_masked), ("chained", chained, torch_chained)]


@pytest.mark.parametrize("name,fe,ft", setitem_cases(), ids=[c[0] for c in setitem_cases()])
def test_writes_through_views_and_indices(name, fe, ft):
    v = rng.standard_normal(2)
    compare_with_torch(fe, ft, [X, v])
    gradchecks(fe, [X, v])
