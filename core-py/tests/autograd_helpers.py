"""Shared helpers for the autograd tests: leaves in several layouts, and gradients compared
with PyTorch's and with finite differences."""
import numpy as np
import pytest

import ember


def leaf(a, layout="contiguous", dtype=ember.float64):
    """An ember leaf holding `a` that requires grad; `layout="strided"` puts the values in every
    other element of a bigger buffer, `"transposed"` in a transposed (non-contiguous) one."""
    a = np.asarray(a, dtype=np.float64)
    if layout == "strided" and a.ndim:
        big = np.zeros(a.shape[:-1] + (a.shape[-1] * 2,))
        big[..., ::2] = a
        t = ember.tensor(big, dtype=dtype)[..., ::2]
    elif layout == "transposed" and a.ndim >= 2:
        t = ember.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)), dtype=dtype).transpose(-1, -2)
    else:
        t = ember.tensor(a, dtype=dtype)
    return t.requires_grad_()


def np64(t):
    return np.asarray(t.detach().double())


def compare_with_torch(fn_ember, fn_torch, arrays, layout="contiguous", atol=1e-7, rtol=1e-6, seed=0):
    """Runs `fn` on leaves made from `arrays` in both libraries, back-propagates the same random
    output gradient, and compares the outputs and the leaves' gradients."""
    torch = pytest.importorskip("torch")
    xs = [leaf(a, layout) for a in arrays]
    ts = [torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in arrays]
    ye, yt = fn_ember(*xs), fn_torch(*ts)
    if isinstance(yt, tuple):
        ye, yt = ye[0], yt[0]
    np.testing.assert_allclose(np64(ye), yt.detach().numpy(), atol=atol, rtol=rtol)
    g = np.random.default_rng(seed).standard_normal(tuple(yt.shape))
    ye.backward(ember.tensor(g, dtype=ember.float64))
    yt.backward(torch.tensor(g))
    for i, (x, t) in enumerate(zip(xs, ts)):
        if t.grad is None:
            assert x.grad is None or not np.any(np64(x.grad)), f"input {i}"
            continue
        assert x.grad is not None, f"input {i}: no gradient"
        assert tuple(x.grad.shape) == tuple(t.shape)
        np.testing.assert_allclose(np64(x.grad), t.grad.numpy(), atol=atol, rtol=rtol, err_msg=f"input {i}")


def gradchecks(fn, arrays, layout="contiguous", second_order=True, **tol):
    """gradcheck (and gradgradcheck) of `fn` in float64 on leaves made from `arrays`."""
    xs = [leaf(a, layout) for a in arrays]
    assert ember.autograd.gradcheck(fn, xs, **tol)
    if second_order:
        assert ember.autograd.gradgradcheck(fn, xs, **tol)
