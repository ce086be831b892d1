"""Gradients of the elementwise ops (unary, binary, where, clamp, lerp, activations, casts)
against PyTorch and finite differences, with broadcasting and non-contiguous inputs."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from autograd_helpers import compare_with_torch, gradchecks

torch = pytest.importorskip("torch")
TF = torch.nn.functional

rng = np.random.default_rng(0)
X = rng.uniform(-2, 2, (3, 4))
POS = rng.uniform(0.2, 2, (3, 4))
UNIT = rng.uniform(-0.9, 0.9, (3, 4))
PROB = rng.uniform(0.05, 0.95, (3, 4))
# Keep away from kinks (|x| < 0.05 and the activations' breakpoints) for finite differences.
KINKED = np.where(np.abs(X) < 0.1, X + 0.3, X)
KINKED = np.where(np.abs(np.abs(KINKED) - 3) < 0.1, KINKED + 0.3, KINKED)

UNARY = [
    ("neg", X), ("abs", KINKED), ("square", X), ("exp", X), ("exp2", X), ("expm1", X), ("log", POS), ("log2", POS),
    ("log10", POS), ("log1p", POS), ("sqrt", POS), ("rsqrt", POS), ("reciprocal", POS), ("sin", X), ("cos", X),
    ("tan", UNIT), ("asin", UNIT), ("acos", UNIT), ("atan", X), ("sinh", X), ("cosh", X), ("tanh", X),
    ("sigmoid", X), ("erf", X), ("erfc", X), ("relu", KINKED), ("frac", KINKED), ("sign", KINKED), ("floor", KINKED),
    ("ceil", KINKED), ("trunc", KINKED), ("round", KINKED),
]


@pytest.mark.parametrize("name,values", UNARY, ids=[u[0] for u in UNARY])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_unary(name, values, layout):
    compare_with_torch(getattr(ember, name), getattr(torch, name), [values], layout)
    gradchecks(getattr(ember, name), [values], layout)


ACTIVATIONS = [
    ("gelu", lambda x: F.gelu(x), lambda x: TF.gelu(x), X),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), lambda x: TF.gelu(x, approximate="tanh"), X),
    ("silu", F.silu, TF.silu, X),
    ("mish", F.mish, TF.mish, X),
    ("selu", F.selu, TF.selu, KINKED),
    ("elu", lambda x: F.elu(x, 0.7), lambda x: TF.elu(x, 0.7), KINKED),
    ("celu", lambda x: F.celu(x, 1.3), lambda x: TF.celu(x, 1.3), KINKED),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.1), lambda x: TF.leaky_relu(x, 0.1), KINKED),
    ("softplus", lambda x: F.softplus(x, 2.0, 3.0), lambda x: TF.softplus(x, 2.0, 3.0), KINKED),
    ("hardswish", F.hardswish, TF.hardswish, KINKED),
    ("hardsigmoid", F.hardsigmoid, TF.hardsigmoid, KINKED),
    ("hardtanh", lambda x: F.hardtanh(x, -1.5, 1.5), lambda x: TF.hardtanh(x, -1.5, 1.5), KINKED),
    ("relu6", lambda x: F.relu6(x * 3), lambda x: TF.relu6(x * 3), KINKED),
    ("logsigmoid", F.logsigmoid, TF.logsigmoid, X),
    ("softsign", F.softsign, TF.softsign, X),
    ("tanhshrink", F.tanhshrink, TF.tanhshrink, X),
    ("logit", lambda x: ember.logit(x), lambda x: torch.logit(x), PROB),
    ("logit_eps", lambda x: ember.logit(x, 0.1), lambda x: torch.logit(x, 0.1), PROB),
    ("nan_to_num", ember.nan_to_num, torch.nan_to_num, X),
    ("clamp", lambda x: ember.clamp(x, -1.0, 0.9), lambda x: torch.clamp(x, -1.0, 0.9), KINKED),
    ("clamp_min", lambda x: ember.clamp(x, min=0.5), lambda x: torch.clamp(x, min=0.5), KINKED),
    ("pow_scalar", lambda x: x ** 3, lambda x: x ** 3, X),
    ("pow_frac", lambda x: x ** 2.5, lambda x: x ** 2.5, POS),
    ("rpow", lambda x: 2.0 ** x, lambda x: 2.0 ** x, X),
    ("rsub", lambda x: 1 - x, lambda x: 1 - x, X),
    ("rdiv", lambda x: 2 / x, lambda x: 2 / x, POS),
]


@pytest.mark.parametrize("name,fe,ft,values", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activations_and_scalar_operands(name, fe, ft, values):
    compare_with_torch(fe, ft, [values])
    gradchecks(fe, [values])


A, B = rng.uniform(0.5, 2, (3, 4)), rng.uniform(0.5, 2, (3, 4))
BROADCAST = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((4,), (3, 4)), ((2, 3, 4), (3, 1)), ((), (3, 4))]
BINARY = ["add", "sub", "mul", "div", "pow", "atan2", "hypot", "maximum", "minimum", "fmax", "fmin", "remainder", "fmod"]


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("shapes", BROADCAST, ids=str)
def test_binary_with_broadcasting(name, shapes):
    a = rng.uniform(0.5, 2, shapes[0])
    b = rng.uniform(0.5, 2, shapes[1]) + 0.013  # no ties for max/min, no exact multiples for fmod
    compare_with_torch(getattr(ember, name), getattr(torch, name), [a, b])
    gradchecks(getattr(ember, name), [a, b], second_order=name not in ("remainder", "fmod"))


def test_binary_non_contiguous():
    compare_with_torch(ember.mul, torch.mul, [A, B], layout="transposed")
    compare_with_torch(ember.div, torch.div, [A, B], layout="strided")
    gradchecks(lambda a, b: a * b + a / b, [A, B], layout="strided")


def test_max_min_share_ties():
    a = np.array([1.0, 2.0, 3.0])
    b = np.array([1.0, 5.0, 0.0])
    compare_with_torch(ember.maximum, torch.maximum, [a, b])
    compare_with_torch(ember.minimum, torch.minimum, [a, b])


def test_where_lerp_clamp_with_tensors():
    cond = X > 0
    compare_with_torch(lambda a, b: ember.where(ember.tensor(cond), a, b), lambda a, b: torch.where(torch.tensor(cond), a, b), [A, B])
    gradchecks(lambda a, b: ember.where(ember.tensor(cond), a, b), [A, B])
    w = rng.uniform(0, 1, (3, 4))
    compare_with_torch(ember.lerp, torch.lerp, [A, B, w])
    gradchecks(ember.lerp, [A, B, w])
    compare_with_torch(lambda a, b: ember.lerp(a, b, 0.3), lambda a, b: torch.lerp(a, b, 0.3), [A, B])
    lo, hi = A - 0.3, A + 0.3 + 0.01
    compare_with_torch(lambda x, lo, hi: ember.clamp(x, lo, hi), lambda x, lo, hi: torch.clamp(x, lo, hi), [X, lo, hi])


def test_casts():
    compare_with_torch(lambda x: x.float() * 2, lambda x: x.float() * 2, [X], atol=1e-6)
    x = ember.tensor(X, requires_grad=True)
    y = x.float()
    assert y.grad_fn.name() == "ToCopyBackward0"
    y.sum().backward()
    assert x.grad.dtype == ember.float64
    assert not x.long().requires_grad


def test_integer_results_have_no_history():
    x = ember.tensor(X, requires_grad=True)
    for r in (x > 0, x == x, ember.isnan(x), x.argmax()):
        assert not r.requires_grad and r.grad_fn is None


def test_grad_fn_names_match_pytorch():
    x = ember.tensor(X, requires_grad=True)
    t = torch.tensor(X, requires_grad=True)
    for fe, ft in [(lambda v: v + 1, lambda v: v + 1), (lambda v: v * v, lambda v: v * v), (lambda v: v.exp(), lambda v: v.exp()),
                   (lambda v: v.sigmoid(), lambda v: v.sigmoid()), (lambda v: v / v, lambda v: v / v), (lambda v: -v, lambda v: -v),
                   (lambda v: v.relu(), lambda v: v.relu()), (lambda v: v.tanh(), lambda v: v.tanh()),
                   (lambda v: v.t(), lambda v: v.t()), (lambda v: v[0], lambda v: v[0]), (lambda v: v[1:], lambda v: v[1:]),
                   (lambda v: v.sum(), lambda v: v.sum()), (lambda v: v.sum(0), lambda v: v.sum(0)), (lambda v: v.clone(), lambda v: v.clone()),
                   (lambda v: v.reshape(-1), lambda v: v.reshape(-1)), (lambda v: v.unsqueeze(0), lambda v: v.unsqueeze(0)),
                   (lambda v: v.expand(2, 3, 4), lambda v: v.expand(2, 3, 4)), (lambda v: v.mean(), lambda v: v.mean())]:
        assert fe(x).grad_fn.name() == ft(t).grad_fn.name()
