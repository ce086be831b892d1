"""Forward-mode AD (`ember.autograd.forward_ad`) against reverse mode, and its API rules."""
import numpy as np
import pytest

import ember
import ember.autograd.forward_ad as fwAD
import ember.nn.functional as F
from ember.autograd.functional import jvp as reverse_jvp

f64, c128 = ember.float64, ember.complex128


def close(a, b, atol=1e-8, rtol=1e-6):
    return np.allclose(a.detach().numpy(), b.detach().numpy(), atol=atol, rtol=rtol)


def forward_tangents(f, inputs, tangents):
    with fwAD.dual_level():
        out = f(*[fwAD.make_dual(x, t) for x, t in zip(inputs, tangents)])
        outs = out if isinstance(out, tuple) else (out,)
        return [fwAD.unpack_dual(o).tangent for o in outs]


def agree(f, *inputs):
    """The tangents forward mode gives equal J·t computed in reverse mode."""
    tangents = tuple(ember.randn(tuple(x.shape), dtype=x.dtype) for x in inputs)
    got = forward_tangents(f, inputs, tangents)
    _, want = reverse_jvp(f, tuple(inputs), tangents)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g is not None
        assert tuple(g.shape) == tuple(w.shape)
        assert close(g, w, atol=1e-8, rtol=1e-6), (g, w)


def agree_fd(f, *inputs, eps=1e-6):
    """The tangents equal central finite differences (complex inputs: the complex differential)."""
    tangents = tuple(ember.randn(tuple(x.shape), dtype=x.dtype) for x in inputs)
    got = forward_tangents(f, inputs, tangents)
    plus = f(*[x + eps * t for x, t in zip(inputs, tangents)])
    minus = f(*[x - eps * t for x, t in zip(inputs, tangents)])
    plus, minus = (plus, minus) if isinstance(plus, tuple) else ((plus,), (minus,))
    for g, p, m in zip(got, plus, minus):
        assert close(g, (p - m) / (2 * eps), atol=1e-5, rtol=1e-5), (g, (p - m) / (2 * eps))


def r(*shape, positive=False, dtype=f64):
    x = ember.randn(*shape, dtype=dtype)
    return x.abs() + 0.5 if positive else x


UNARY = [
    ember.exp, ember.sin, ember.cos, ember.tanh, ember.sigmoid, ember.relu, ember.abs, ember.neg, ember.square,
    ember.erf, ember.atan, ember.sinh, ember.cosh, ember.expm1, ember.sign, ember.floor, F.gelu, F.softplus, F.silu,
    F.elu, F.leaky_relu, lambda x: x ** 3, lambda x: 2.0 ** x, lambda x: x.clamp(-0.5, 0.5),
]
POSITIVE_UNARY = [ember.log, ember.sqrt, ember.rsqrt, ember.reciprocal, ember.log1p, lambda x: x ** 0.5]
BINARY = [ember.add, ember.sub, ember.mul, ember.div, ember.maximum, ember.minimum, ember.atan2, ember.hypot,
          lambda a, b: a.abs() ** b, lambda a, b: ember.where(a > 0, a, b), lambda a, b: ember.lerp(a, b, 0.3)]


@pytest.mark.parametrize("f", UNARY + POSITIVE_UNARY)
def test_unary(f):
    positive = any(f is g for g in POSITIVE_UNARY)
    agree(f, r(3, 4, positive=positive))
    # Non-contiguous input: a transposed view.
    agree(f, r(4, 3, positive=positive).t())


@pytest.mark.parametrize("f", BINARY)
def test_binary_with_broadcasting(f):
    agree(f, r(3, 4), r(4))
    agree(f, r(3, 1), r(4, 3).t())


def test_one_dual_operand_and_scalars():
    b = r(3)
    agree(lambda a: a * b + 2.5 - b / (a.abs() + 1), r(3))


REDUCTIONS = [
    lambda x: x.sum(), lambda x: x.sum(1), lambda x: x.mean(0, keepdim=True), lambda x: x.prod(1),
    lambda x: x.max(1).values, lambda x: x.amax(0), lambda x: x.norm(), lambda x: x.var(1), lambda x: x.std(0),
    lambda x: ember.logsumexp(x, 1), lambda x: x.cumsum(1), lambda x: x.cumprod(0), lambda x: x.sort(1).values,
]


@pytest.mark.parametrize("f", REDUCTIONS)
def test_reductions(f):
    agree(f, r(3, 4))


def test_matmul_family():
    agree(ember.matmul, r(3, 4), r(4, 2))
    agree(ember.matmul, r(4, 3).t(), r(4))
    agree(ember.bmm, r(2, 3, 4), r(2, 4, 5))
    agree(F.linear, r(5, 4), r(3, 4), r(3))
    agree(lambda a, b: a @ b.mT, r(2, 3, 4), r(2, 5, 4))


def test_conv_and_pooling():
    agree(F.conv1d, r(2, 3, 7), r(4, 3, 3), r(4))
    agree(lambda x, w: F.conv2d(x, w, stride=2, padding=1), r(1, 2, 5, 5), r(3, 2, 3, 3))
    agree(lambda x: F.max_pool2d(x, 2), r(1, 2, 4, 4))
    agree(lambda x: F.avg_pool2d(x, 2), r(1, 2, 4, 4))
    agree(lambda x: F.adaptive_avg_pool2d(x, 1), r(1, 2, 3, 3))


def test_normalisation_and_softmax():
    agree(lambda x: F.softmax(x, 1), r(3, 4))
    agree(lambda x: F.log_softmax(x, 0), r(3, 4))
    agree(lambda x, w, b: F.layer_norm(x, (4,), w, b), r(3, 4), r(4), r(4))
    agree(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), r(5, 3), r(3), r(3))
    target = ember.tensor([1, 0, 3])
    agree(lambda x: F.cross_entropy(x, target), r(3, 4))
    agree(F.mse_loss, r(3, 4), r(3, 4))


def test_indexing_and_joins():
    idx = ember.tensor([2, 0, 2])
    agree(lambda x: x[idx], r(3, 4))
    agree(lambda x: x[1:, ::2], r(3, 4))
    agree(lambda x: x.gather(1, ember.tensor([[0, 3], [1, 1], [2, 0]])), r(3, 4))
    agree(lambda x, s: x.scatter(1, ember.tensor([[0], [2], [1]]), s), r(3, 4), r(3, 1))
    agree(lambda x: x.index_select(0, idx), r(3, 4))
    agree(lambda a, b: ember.cat([a, b], 0), r(2, 3), r(1, 3))
    agree(lambda a, b: ember.stack([a, b], 1), r(2, 3), r(2, 3))
    agree(lambda x: x.reshape(4, 3).permute(1, 0).expand(2, 3, 4).flip(2), r(3, 4))
    agree(lambda x: x.unsqueeze(0).narrow(2, 1, 2).squeeze(0), r(3, 4))
    agree(lambda x: x.masked_fill(x > 0, 0.0), r(3, 4))
    agree(lambda x: x.chunk(2, 1), r(3, 4))


def test_complex_ops_follow_the_complex_differential():
    z, w = r(3, dtype=c128), r(3, dtype=c128)
    agree_fd(lambda a, b: a * b + a / (b + 2), z, w)
    agree_fd(lambda a: a.exp() * a.conj(), z)
    agree_fd(lambda a: a.abs(), z)
    agree_fd(lambda a: ember.view_as_real(a * a), z)
    agree_fd(lambda a: (a.real * a.imag), z)
    agree_fd(lambda x: ember.complex(x, x * x), r(3))


def test_fft():
    agree_fd(lambda a: ember.fft.fft(a), r(8, dtype=c128))
    agree_fd(lambda x: ember.fft.rfft(x), r(8))
    agree_fd(lambda a: ember.fft.irfft(a), r(5, dtype=c128))


# ---- API rules ----

def test_make_and_unpack_dual():
    x, t = r(3), r(3)
    assert fwAD.unpack_dual(x) == (x, None)
    with fwAD.dual_level() as level:
        assert level == 0
        d = fwAD.make_dual(x, t)
        primal, tangent = fwAD.unpack_dual(d)
        assert isinstance(fwAD.unpack_dual(d), fwAD.UnpackedDualTensor)
        assert tangent.data_ptr() == t.data_ptr()  # used as is: the same memory
        assert close(primal, x) and fwAD.unpack_dual(primal).tangent is None
        assert fwAD.unpack_dual(x).tangent is None
        assert fwAD.unpack_dual(d.detach()).tangent is None
        # A tangent laid out unlike its primal is copied into the primal's layout.
        s = r(3, 2).t()[0]
        assert close(fwAD.unpack_dual(fwAD.make_dual(x, s)).tangent, s)
        y = d.exp()
    # The level's tangents are dropped on exit.
    assert fwAD.unpack_dual(d).tangent is None and fwAD.unpack_dual(y).tangent is None
    with fwAD.dual_level():
        assert fwAD.unpack_dual(d).tangent is None


def test_errors():
    x = r(3)
    with pytest.raises(RuntimeError, match="no level exists"):
        fwAD.make_dual(x, x)
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            fwAD.enter_dual_level()
        with pytest.raises(RuntimeError, match="different size"):
            fwAD.make_dual(x, r(4))
        with pytest.raises(ValueError, match="Expected primal to be floating point or complex"):
            fwAD.make_dual(ember.arange(3), ember.arange(3))
        with pytest.raises(RuntimeError, match="Invalid level"):
            fwAD.make_dual(x, x, level=1)
        with pytest.raises(RuntimeError, match="not the last one"):
            fwAD.exit_dual_level(level=3)
        d = fwAD.make_dual(x, x)
        with pytest.raises(RuntimeError, match="already has a forward gradient"):
            fwAD.make_dual(d, x)
    with pytest.raises(RuntimeError):
        fwAD.exit_dual_level()


def test_decorator_and_no_grad():
    @fwAD.dual_level()
    def tangent_of_exp(x, t):
        with ember.no_grad():  # forward mode ignores grad mode
            return fwAD.unpack_dual(fwAD.make_dual(x, t).exp()).tangent

    x, t = r(3), r(3)
    assert close(tangent_of_exp(x, t), t * x.exp())


def test_forward_only_outputs_do_not_require_grad():
    with fwAD.dual_level():
        y = fwAD.make_dual(r(3), r(3)).sin() * 2
        assert not y.requires_grad and y.grad_fn is None


def test_views_share_the_tangent():
    x, t = r(2, 3), r(2, 3)
    before = t.clone()
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        v = d[1]
        assert close(fwAD.unpack_dual(v).tangent, t[1])
        v.mul_(3)  # through the view: the base's tangent changes too (it is `t` itself)
        assert close(fwAD.unpack_dual(d).tangent[1], 3 * before[1])
        assert close(fwAD.unpack_dual(d).tangent[0], before[0])


def test_in_place_ops_update_the_tangent():
    x, tx, y, ty = r(3), r(3), r(3), r(3)
    with fwAD.dual_level():
        a = fwAD.make_dual(x.clone(), tx.clone())
        a.add_(fwAD.make_dual(y, ty))
        assert close(fwAD.unpack_dual(a).tangent, tx + ty)
        a.mul_(y)
        assert close(fwAD.unpack_dual(a).tangent, (tx + ty) * y)
        # A plain tensor written with a dual value becomes dual; a view's write reaches its base.
        b = ember.zeros(2, 3, dtype=f64)
        b[0].copy_(fwAD.make_dual(y, ty))
        assert close(fwAD.unpack_dual(b).tangent, ember.stack([ty, ember.zeros(3, dtype=f64)]))


class Cube(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_forward(x)
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2 * g

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2 * t


class NoJvp(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_custom_function_jvp():
    x, t = r(3), r(3)
    (got,) = forward_tangents(Cube.apply, [x], [t])
    assert close(got, 3 * x ** 2 * t)
    with fwAD.dual_level():
        with pytest.raises(NotImplementedError, match="must implement the jvp function"):
            NoJvp.apply(fwAD.make_dual(x, t))


def test_forward_over_reverse_hvp():
    x, v = r(4), r(4)

    def f(x):
        return (x.sin() * x).sum()

    with fwAD.dual_level():
        d = fwAD.make_dual(x.detach().requires_grad_(), v)
        (g,) = ember.autograd.grad(f(d), d)
        hvp = fwAD.unpack_dual(g).tangent
    _, want = ember.autograd.functional.hvp(f, x, v)
    assert close(hvp, want)


def test_reverse_over_forward():
    # The tangent keeps its history: differentiate J·t with respect to the primal.
    x, t = r(3).requires_grad_(), r(3)
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(fwAD.make_dual(x, t).exp()).tangent
    (g,) = ember.autograd.grad(tangent.sum(), x)
    assert close(g, t * x.exp())


def test_ops_without_a_derivative_refuse_dual_inputs():
    with fwAD.dual_level():
        d = fwAD.make_dual(r(3), r(3))
        assert fwAD.unpack_dual(d.argmax()).tangent is None  # integer results carry none
        with pytest.raises(RuntimeError, match="derivative for quantile is not implemented"):
            ember.quantile(d, 0.5)


def test_func_jvp_and_jacfwd_use_forward_mode():
    x = r(3)
    out, tangent = ember.func.jvp(ember.sin, (x,), (ember.ones(3, dtype=f64),))
    assert close(out, x.sin()) and close(tangent, x.cos())
    f = lambda a, b: (a * b).cumsum(0)  # noqa: E731
    b = r(3)
    jf = ember.func.jacfwd(f, argnums=(0, 1))(x, b)
    jr = ember.func.jacrev(f, argnums=(0, 1))(x, b)
    assert all(close(p, q) for p, q in zip(jf, jr))
    h = ember.func.hessian(lambda a: (a ** 3).sum())(x)
    assert close(h, ember.eye(3, dtype=f64) * (6 * x))
    # jacfwd of jacfwd: the inner jvp runs inside the outer one's level.
    h2 = ember.func.jacfwd(ember.func.jacfwd(lambda a: (a ** 3).sum()))(x)
    assert close(h2, ember.eye(3, dtype=f64) * (6 * x))


def test_functional_jacobian_forward_mode():
    f = lambda a: (a.exp(), a.sum())  # noqa: E731
    x = r(3)
    fwd = ember.autograd.functional.jacobian(f, x, strategy="forward-mode", vectorize=True)
    rev = ember.autograd.functional.jacobian(f, x)
    assert all(close(p, q) for p, q in zip(fwd, rev))
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        ember.autograd.functional.jacobian(f, x, strategy="forward-mode")
    h = ember.autograd.functional.hessian(lambda a: (a ** 3).sum(), x, vectorize=True, outer_jacobian_strategy="forward-mode")
    assert close(h, ember.eye(3, dtype=f64) * (6 * x))
