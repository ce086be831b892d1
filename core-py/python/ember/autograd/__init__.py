"""`ember.autograd`: automatic differentiation, as PyTorch's `torch.autograd`.

The engine is Ember's Rust core (`ember_core::autograd`): every differentiable op records a
node when grad mode is on and an input requires grad; `backward` and `grad` run the graph.
Forward mode (`forward_ad`) computes tangents alongside the ops inside a dual level.
"""
import numbers

from ember import _C
from ember.autograd import forward_ad, functional, graph
from ember.autograd.function import Function, FunctionCtx, once_differentiable
from ember.autograd.grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
from ember.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck

__all__ = [
    "backward", "grad", "Function", "FunctionCtx", "once_differentiable", "no_grad", "enable_grad", "set_grad_enabled",
    "inference_mode", "gradcheck", "gradgradcheck", "GradcheckError", "graph", "functional", "forward_ad",
]


def _tensors(value, what):
    if isinstance(value, _C.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        for i, t in enumerate(value):
            if not isinstance(t, _C.Tensor):
                raise TypeError(f"{what}: expected a Tensor at position {i}, but got {type(t).__name__}")
        return list(value)
    raise TypeError(f"{what}: expected a Tensor or a sequence of Tensors, but got {type(value).__name__}")


def _grads(grads, outputs, what):
    if grads is None:
        return [None] * len(outputs)
    if isinstance(grads, _C.Tensor):
        grads = [grads]
    elif isinstance(grads, numbers.Number):
        grads = [grads]
    grads = list(grads)
    if len(grads) != len(outputs):
        raise RuntimeError(f"{what} should be a sequence of length {len(outputs)}, but got {len(grads)}")
    out = []
    for g, o in zip(grads, outputs):
        if g is None or isinstance(g, _C.Tensor):
            out.append(g)
        elif isinstance(g, numbers.Number):
            out.append(_C.full(tuple(o.shape), g, o.dtype))
        else:
            raise TypeError(f"{what}: expected a Tensor or None, but got {type(g).__name__}")
    return out


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    """Accumulates the gradients of `tensors` (weighted by `grad_tensors`) into the `.grad` of
    the graph's leaves, or only of `inputs` when given. `grad_tensors` may be omitted for
    one-element tensors. The graph is freed unless `retain_graph` (default: `create_graph`)."""
    if grad_variables is not None:
        grad_tensors = grad_variables
    tensors = _tensors(tensors, "backward(): tensors")
    grads = _grads(grad_tensors, tensors, "grad_tensors")
    if inputs is not None:
        inputs = _tensors(inputs, "backward(): inputs")
        if len(inputs) == 0:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    retain = create_graph if retain_graph is None else retain_graph
    with graph.backward_pass():
        _C._run_backward(tensors, grads, bool(retain), bool(create_graph), inputs)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True, allow_unused=None,
         is_grads_batched=False, materialize_grads=False):
    """The gradients of `outputs` with respect to `inputs` (a tuple, one per input), leaving
    every `.grad` untouched. With `create_graph` they carry a graph of their own (higher-order
    derivatives). An input the outputs do not depend on is an error unless `allow_unused`
    (then None, or zeros with `materialize_grads`)."""
    if is_grads_batched:
        raise NotImplementedError("grad(is_grads_batched=True) needs vmap, which Ember does not have yet")
    if allow_unused is None:
        allow_unused = materialize_grads
    elif materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: allow_unused=False.")
    outputs = _tensors(outputs, "grad(): outputs")
    inputs_list = _tensors(inputs, "grad(): inputs")
    grads = _grads(grad_outputs, outputs, "grad_outputs")
    retain = create_graph if retain_graph is None else retain_graph
    with graph.backward_pass():
        result = _C._run_grad(outputs, inputs_list, grads, bool(retain), bool(create_graph), bool(allow_unused))
    if materialize_grads:
        result = [_C.zeros(tuple(i.shape), i.dtype) if g is None else g for g, i in zip(result, inputs_list)]
    return tuple(result)
