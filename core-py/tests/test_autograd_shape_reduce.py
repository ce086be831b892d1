"""Gradients of views, copies, reductions, scans and matrix products against PyTorch and
finite differences."""
import numpy as np
import pytest

import ember
from autograd_helpers import compare_with_torch, gradchecks

torch = pytest.importorskip("torch")
rng = np.random.default_rng(1)
X = rng.standard_normal((2, 3, 4))

VIEWS = [
    ("reshape", lambda x: x.reshape(4, 6), lambda x: x.reshape(4, 6)),
    ("view", lambda x: x.contiguous().view(6, 4), lambda x: x.contiguous().view(6, 4)),
    ("permute", lambda x: x.permute(2, 0, 1), lambda x: x.permute(2, 0, 1)),
    ("transpose", lambda x: x.transpose(0, 2), lambda x: x.transpose(0, 2)),
    ("mT", lambda x: x.mT, lambda x: x.mT),
    ("expand", lambda x: x[:, :1].expand(2, 5, 4), lambda x: x[:, :1].expand(2, 5, 4)),
    ("squeeze", lambda x: x[:, :1].squeeze(1), lambda x: x[:, :1].squeeze(1)),
    ("unsqueeze", lambda x: x.unsqueeze(1), lambda x: x.unsqueeze(1)),
    ("narrow", lambda x: x.narrow(2, 1, 2), lambda x: x.narrow(2, 1, 2)),
    ("slice", lambda x: x[:, ::2, 1:], lambda x: x[:, ::2, 1:]),
    ("select", lambda x: x[1, :, 2], lambda x: x[1, :, 2]),
    ("flip", lambda x: x.flip(0, 2) if False else ember.flip(x, (0, 2)), lambda x: torch.flip(x, (0, 2))),
    ("diagonal", lambda x: x.diagonal(1, 1, 2), lambda x: x.diagonal(1, 1, 2)),
    ("unfold", lambda x: x.unfold(2, 2, 1), lambda x: x.unfold(2, 2, 1)),
    ("as_strided", lambda x: x.contiguous().as_strided((3, 3), (2, 1), 1), lambda x: x.contiguous().as_strided((3, 3), (2, 1), 1)),
    ("flatten", lambda x: x.flatten(1), lambda x: x.flatten(1)),
    ("split", lambda x: x.split(2, 2)[1], lambda x: x.split(2, 2)[1]),
    ("chunk", lambda x: x.chunk(3, 1)[2], lambda x: x.chunk(3, 1)[2]),
    ("unbind", lambda x: x.unbind(1)[1], lambda x: x.unbind(1)[1]),
    ("movedim", lambda x: ember.movedim(x, 0, 2), lambda x: torch.movedim(x, 0, 2)),
    ("contiguous", lambda x: x.transpose(0, 1).contiguous(), lambda x: x.transpose(0, 1).contiguous()),
    ("clone", lambda x: x.clone(), lambda x: x.clone()),
    ("reshape_copy", lambda x: x.transpose(0, 1).reshape(-1), lambda x: x.transpose(0, 1).reshape(-1)),
]


@pytest.mark.parametrize("name,fe,ft", VIEWS, ids=[v[0] for v in VIEWS])
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_views(name, fe, ft, layout):
    compare_with_torch(fe, ft, [X], layout)
    gradchecks(fe, [X], layout)


REDUCTIONS = [
    ("sum", lambda x: x.sum(), lambda x: x.sum()),
    ("sum_dims", lambda x: x.sum((0, 2)), lambda x: x.sum((0, 2))),
    ("sum_keepdim", lambda x: x.sum(1, keepdim=True), lambda x: x.sum(1, keepdim=True)),
    ("mean", lambda x: x.mean(-1), lambda x: x.mean(-1)),
    ("prod", lambda x: x.prod(1), lambda x: x.prod(1)),
    ("prod_all", lambda x: x.prod(), lambda x: x.prod()),
    ("amax", lambda x: x.amax((0, 1)), lambda x: x.amax((0, 1))),
    ("amin", lambda x: x.amin(2, keepdim=True), lambda x: x.amin(2, keepdim=True)),
    ("max_dim", lambda x: x.max(1).values, lambda x: x.max(1).values),
    ("min_dim_keep", lambda x: x.min(2, keepdim=True)[0], lambda x: x.min(2, keepdim=True)[0]),
    ("max_all", lambda x: x.max(), lambda x: x.max()),
    ("var", lambda x: x.var(1), lambda x: x.var(1)),
    ("std", lambda x: x.std((0, 2), keepdim=True), lambda x: x.std((0, 2), keepdim=True)),
    ("var_biased", lambda x: x.var(unbiased=False), lambda x: x.var(unbiased=False)),
    ("norm", lambda x: x.norm(), lambda x: x.norm()),
    ("norm_dim", lambda x: ember.norm(x, 3, dim=1), lambda x: torch.norm(x, 3, dim=1)),
    ("norm_1", lambda x: ember.norm(x, 1, dim=2), lambda x: torch.norm(x, 1, dim=2)),
    ("logsumexp", lambda x: x.logsumexp(1), lambda x: x.logsumexp(1)),
    ("cumsum", lambda x: x.cumsum(1), lambda x: x.cumsum(1)),
    ("cumprod", lambda x: x.cumprod(2), lambda x: x.cumprod(2)),
    ("cummax", lambda x: x.cummax(2).values, lambda x: x.cummax(2).values),
    ("nansum", lambda x: ember.nansum(x, 1), lambda x: torch.nansum(x, 1)),
]


@pytest.mark.parametrize("name,fe,ft", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_reductions(name, fe, ft, layout):
    compare_with_torch(fe, ft, [X], layout)
    gradchecks(fe, [X], layout)


def test_prod_and_cumprod_with_zeros():
    x = X.copy()
    x[0, 1, 2] = 0.0
    x[1, 2, 0] = x[1, 2, 3] = 0.0
    for fe, ft in [(lambda t: t.prod(2), lambda t: t.prod(2)), (lambda t: t.prod(), lambda t: t.prod()),
                   (lambda t: t.cumprod(2), lambda t: t.cumprod(2))]:
        compare_with_torch(fe, ft, [x])
        gradchecks(fe, [x], second_order=False)


def test_amax_ties_share_the_gradient():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    compare_with_torch(lambda t: t.amax(1), lambda t: t.amax(1), [x])
    compare_with_torch(lambda t: t.max(), lambda t: t.max(), [x])


MATMUL = [
    ((3, 4), (4, 5)), ((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2)),
    ((4,), (2, 4, 3)), ((2, 3, 4), (4,)),
]


@pytest.mark.parametrize("shapes", MATMUL, ids=str)
def test_matmul(shapes):
    a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    compare_with_torch(ember.matmul, torch.matmul, [a, b])
    gradchecks(ember.matmul, [a, b])


def test_mm_bmm_addmm_linear_non_contiguous():
    a, b, c = rng.standard_normal((3, 4)), rng.standard_normal((4, 5)), rng.standard_normal((3, 5))
    compare_with_torch(ember.mm, torch.mm, [a, b], layout="transposed")
    compare_with_torch(lambda c, a, b: ember.addmm(c, a, b, beta=0.5, alpha=2), lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2), [c, a, b])
    gradchecks(lambda c, a, b: ember.addmm(c, a, b, beta=0.5, alpha=2), [c, a, b], layout="strided")
    p, q = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5))
    compare_with_torch(ember.bmm, torch.bmm, [p, q], layout="transposed")
    gradchecks(ember.bmm, [p, q])
    x, w, bias = rng.standard_normal((6, 4)), rng.standard_normal((5, 4)), rng.standard_normal(5)
    F, TF = ember.nn.functional, torch.nn.functional
    compare_with_torch(F.linear, TF.linear, [x, w, bias])
    gradchecks(F.linear, [x, w, bias])
    compare_with_torch(lambda a, b: ember.einsum("bij,bjk->bik", a, b), lambda a, b: torch.einsum("bij,bjk->bik", a, b), [p, q])
