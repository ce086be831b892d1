"""`gradcheck` and `gradgradcheck`: analytical gradients against central finite differences,
with PyTorch's defaults (`eps=1e-6`, `atol=1e-5`, `rtol=1e-3`) and messages. Use float64 or
complex128 inputs: single-precision differences are too coarse for these tolerances. Complex
inputs and outputs are checked as pairs of real coordinates (real and imaginary parts), which
tests PyTorch's conjugate-Wirtinger gradients."""
import warnings

import numpy as np

from ember import _C

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """A Jacobian mismatch found by `gradcheck`."""


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _differentiable(outputs):
    return [o for o in outputs if isinstance(o, _C.Tensor) and o.requires_grad]


def _coords(o):
    """An output as real coordinates: a complex element is its (real, imaginary) pair."""
    a = np.asarray(o.detach())
    if np.iscomplexobj(a):
        return np.stack([a.real, a.imag], -1).astype(np.float64).ravel()
    return a.astype(np.float64).ravel()


def _width(t):
    return 2 if t.dtype.is_complex else 1


def _numerical_jacobian(func, inputs, outputs, eps):
    """Row j of input i: (f(x + eps·e_j) - f(x - eps·e_j)) / 2eps over every output coordinate,
    with the input's memory perturbed in place (so views and non-contiguous inputs work). A
    complex element is two coordinates, its real and imaginary parts, as in PyTorch."""
    # Grad mode stays as it is: gradgradcheck's function computes gradients itself.
    jac = {}
    for i, x in enumerate(inputs):
        if not (isinstance(x, _C.Tensor) and x.requires_grad):
            continue
        arr = np.asarray(x.detach())
        steps = [eps, 1j * eps] if x.dtype.is_complex else [eps]
        cols = [np.zeros((x.numel() * len(steps), o.numel() * _width(o.tensor))) for o in outputs]
        for j in range(x.numel()):
            at = np.unravel_index(j, arr.shape) if arr.ndim else ()
            orig = arr[at].copy()
            for p, step in enumerate(steps):
                arr[at] = orig + step
                plus = [_coords(o).copy() for o in _as_tuple(func(*inputs)) if isinstance(o, _C.Tensor)]
                arr[at] = orig - step
                minus = [_coords(o).copy() for o in _as_tuple(func(*inputs)) if isinstance(o, _C.Tensor)]
                arr[at] = orig
                for k, o in enumerate(outputs):
                    cols[k][j * len(steps) + p] = (plus[o.index] - minus[o.index]) / (2 * eps)
        jac[i] = cols
    return jac


def _analytical_jacobian(inputs, outputs, diff_inputs):
    """Column (m, part) of output k: the gradient of that output coordinate with respect to each
    input's coordinates. PyTorch's convention makes backward with grad_output `g` return
    `∂L/∂re + i·∂L/∂im` for `L = Re(conj(g)·out)`: `g = 1` selects an element's real part,
    `g = i` its imaginary part."""
    import ember
    from ember.autograd import grad

    jac = {i: [np.zeros((x.numel() * _width(x), o.tensor.numel() * _width(o.tensor))) for o in outputs] for i, x in diff_inputs}
    for k, o in enumerate(outputs):
        t = o.tensor
        parts = [1.0, 1j] if t.dtype.is_complex else [1.0]
        for m in range(t.numel()):
            for p, unit in enumerate(parts):
                onehot = np.zeros(t.numel(), dtype=np.complex128 if t.dtype.is_complex else np.float64)
                onehot[m] = unit
                gout = ember.tensor(onehot.reshape(tuple(t.shape)), dtype=t.dtype)
                grads = grad([t], [x for _, x in diff_inputs], [gout], retain_graph=True, allow_unused=True)
                for (i, x), gi in zip(diff_inputs, grads):
                    if gi is not None:
                        jac[i][k][:, m * len(parts) + p] = _coords(gi)
    return jac


class _Out:
    def __init__(self, tensor, index):
        self.tensor, self.index = tensor, index

    def numel(self):
        return self.tensor.numel()


def gradcheck(func, inputs, *, eps=1e-06, atol=1e-05, rtol=0.001, raise_exception=True, nondet_tol=0.0, check_undefined_grad=True,
              check_grad_dtypes=False, check_batched_grad=False, check_batched_forward_grad=False, check_forward_ad=False,
              check_backward_ad=True, fast_mode=False, masked=None):
    """True when the gradients of `func(*inputs)` computed by autograd match finite
    differences for every input that requires grad; otherwise raises `GradcheckError` (or
    returns False with `raise_exception=False`)."""
    for name in ("check_batched_grad", "check_batched_forward_grad", "check_forward_ad"):
        if locals()[name]:
            raise NotImplementedError(f"gradcheck({name}=True) needs forward-mode AD or vmap, which Ember does not have yet")
    inputs = _as_tuple(inputs)
    diff_inputs = [(i, x) for i, x in enumerate(inputs) if isinstance(x, _C.Tensor) and x.requires_grad]
    if not diff_inputs:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them have requires_grad=True.")
    for i, x in diff_inputs:
        if x.dtype not in (_C.float64, _C.complex128):
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point or complex. This check will likely fail if all the inputs are not of double precision floating point or complex. ", stacklevel=2)
    raw = _as_tuple(func(*inputs))
    tensors = [(k, o) for k, o in enumerate(o for o in raw if isinstance(o, _C.Tensor))]
    outputs = [_Out(o, k) for k, o in tensors if o.requires_grad]
    if not outputs:
        # Nothing differentiable came out: every finite difference must vanish.
        numerical = _numerical_jacobian(func, inputs, [_Out(o, k) for k, o in tensors], eps)
        for i, cols in numerical.items():
            for k, col in enumerate(cols):
                if np.any(col != 0):
                    return _fail(raise_exception, f"Numerical gradient for function expected to be zero for output {k} with respect to input {i}")
        return True
    numerical = _numerical_jacobian(func, inputs, outputs, eps)
    analytical = _analytical_jacobian(inputs, outputs, diff_inputs)
    for k, o in enumerate(outputs):
        for i, _ in diff_inputs:
            n, a = numerical[i][k], analytical[i][k]
            if not np.allclose(a, n, rtol=rtol, atol=atol, equal_nan=True):
                import ember

                return _fail(raise_exception, f"Jacobian mismatch for output {k} with respect to input {i},\nnumerical:{ember.tensor(n)}\nanalytical:{ember.tensor(a)}\n")
    return True


def _fail(raise_exception, message):
    if raise_exception:
        raise GradcheckError(message)
    return False


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-06, atol=1e-05, rtol=0.001, gen_non_contig_grad_outputs=False,
                  raise_exception=True, nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False, masked=False):
    """`gradcheck` of the first derivatives (computed with `create_graph=True`) with respect to
    the inputs and the output gradients: checks second derivatives. `grad_outputs` default to
    random values in [-1, 1) that require grad."""
    import ember
    from ember.autograd import grad

    inputs = _as_tuple(inputs)
    outputs = _differentiable(_as_tuple(func(*inputs)))
    if grad_outputs is None:
        gen = ember.Generator().manual_seed(0)
        grad_outputs = tuple((ember.rand(*o.shape, generator=gen, dtype=o.dtype) * 2 - 1).requires_grad_() for o in outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    if gen_non_contig_grad_outputs:
        grad_outputs = tuple(_non_contiguous(g) for g in grad_outputs)
    n = len(inputs)

    def first_derivatives(*args):
        ins, gouts = args[:n], args[n:]
        outs = _differentiable(_as_tuple(func(*ins)))
        diff = [x for x in ins if isinstance(x, _C.Tensor) and x.requires_grad]
        grads = grad(outs, diff, gouts, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivatives, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception)


def _non_contiguous(t):
    """The same values in memory with gaps (every other element of a doubled last dim)."""
    import ember

    if t.ndim == 0:
        return t
    wide = ember.zeros(*t.shape[:-1], t.shape[-1] * 2, dtype=t.dtype)
    view = wide[..., ::2]
    view.copy_(t.detach())
    return view.requires_grad_() if t.requires_grad else view
