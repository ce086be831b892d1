"""Module backward hooks (`register_full_backward_hook`, `register_full_backward_pre_hook`).

One forward call with backward hooks wraps the module's tensor arguments and its tensor
outputs in identity autograd nodes. The output node's backward sees the gradients with
respect to the outputs (it runs the pre-hooks, which may replace them, and keeps them); the
input node's backward sees the gradients with respect to the inputs (it runs the hooks with
both, and a hook may replace the input gradients). When no input needs a gradient, the hooks
run from the output node with `grad_input` all None.
"""
import warnings

from ember import _C
from ember.autograd.function import Function

_INPLACE_ERROR = (
    "Output {} of BackwardHookFunction is a view and is being modified inplace. This view was created inside a "
    "custom Function (or because an input was returned as-is) and the autograd logic to handle view+inplace would "
    "override the custom backward associated with the custom Function, leading to incorrect gradients. This "
    "behavior is forbidden. You can fix this by cloning the output of the custom Function."
)


class BackwardHookFunction(Function):
    """Identity over several tensors whose backward hands the gradients to `on_grads`, which
    returns the gradients to pass on. Tensors that need no gradient stay non-differentiable.
    `materialize` gives zeros instead of None for outputs no gradient reached (what the
    input gradients look like in PyTorch; output gradients keep their Nones)."""

    @staticmethod
    def forward(ctx, on_grads, materialize, *tensors):
        ctx.on_grads = on_grads
        ctx.set_materialize_grads(materialize)
        # Fresh aliases (sharing data and version counter), so the ones that need no gradient
        # can be told apart from the inputs when marked.
        aliases = tuple(t.detach() for t in tensors)
        ctx.mark_non_differentiable(*[a for a, t in zip(aliases, tensors) if not t.requires_grad])
        return aliases

    @staticmethod
    def backward(ctx, *grads):
        return (None, None) + tuple(ctx.on_grads(grads))


def _scatter(indices, values, size):
    """A tuple of `size` entries with `values` at `indices` and None elsewhere."""
    full = [None] * size
    for i, v in zip(indices, values):
        full[i] = v
    return tuple(full)


class BackwardHookState:
    """The hooks of one forward call, and the output gradients waiting for the input node."""

    def __init__(self, module, hooks, pre_hooks):
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = 0
        self.input_index = self.output_index = None
        self.input_versions = ()

    def _wrap(self, values, on_grads, materialize):
        """`values` with its tensors replaced by the identity node's outputs, and the tensors'
        positions; unchanged (positions None) when no tensor needs a gradient."""
        index = [i for i, v in enumerate(values) if isinstance(v, _C.Tensor)]
        if not (_C.is_grad_enabled() and any(values[i].requires_grad for i in index)):
            return values, None
        wrapped = BackwardHookFunction.apply(on_grads, materialize, *[values[i] for i in index])
        out = list(values)
        for i, t in zip(index, wrapped):
            out[i] = t
        return tuple(out), index

    def wrap_inputs(self, args):
        self.n_inputs = len(args)
        args, self.input_index = self._wrap(args, self._on_input_grads, True)
        if self.input_index is not None:
            self.input_versions = tuple(args[i]._version if args[i].requires_grad else None for i in self.input_index)
        return args

    def check_inputs_unmodified(self, args):
        """PyTorch forbids in-place writes to the hooked inputs inside forward (they would
        bypass the hook); Ember detects them when forward returns."""
        for k, (i, version) in enumerate(zip(self.input_index or (), self.input_versions)):
            if version is not None and args[i]._version != version:
                raise RuntimeError(_INPLACE_ERROR.format(k))

    def wrap_outputs(self, result):
        if not isinstance(result, (_C.Tensor, tuple)):
            warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of Tensors "
                          f"but received {type(result)}", stacklevel=3)
        single = not isinstance(result, tuple)
        values = (result,) if single else result
        if not any(isinstance(v, _C.Tensor) for v in values):
            return result
        self.n_outputs = len(values)
        values, self.output_index = self._wrap(values, self._on_output_grads, False)
        return values[0] if single else values

    def _on_output_grads(self, grads):
        grad_outputs = _scatter(self.output_index, grads, self.n_outputs)
        for hook in self.pre_hooks:
            replaced = hook(self.module, grad_outputs)
            if replaced is None:
                continue
            replaced = replaced if isinstance(replaced, tuple) else (replaced,)
            if len(replaced) != len(grad_outputs):
                raise RuntimeError(f"Backward pre hook returned an invalid number of grad_output, got {len(replaced)}, but expected {len(grad_outputs)}")
            grad_outputs = replaced
        if self.input_index is None:
            self._run_hooks_without_input_grads(grad_outputs)
        else:
            self.grad_outputs = grad_outputs
        return [grad_outputs[i] for i in self.output_index]

    def _run_hooks_without_input_grads(self, grad_outputs):
        if self.hooks:
            warnings.warn("Full backward hook is firing when gradients are computed with respect to module outputs "
                          "since no inputs require gradients.", stacklevel=2)
        grad_inputs = (None,) * self.n_inputs
        for hook in self.hooks:
            result = hook(self.module, grad_inputs, grad_outputs)
            if result is not None and not (isinstance(result, tuple) and all(r is None for r in result)):
                raise RuntimeError("Backward hook for Modules where no input requires gradient should always return None or None for all gradients.")

    def _on_input_grads(self, grads):
        grad_inputs = _scatter(self.input_index, grads, self.n_inputs)
        if self.grad_outputs is None:
            # The gradient reached the inputs without passing through the outputs (a
            # gradient taken with respect to an intermediate): nothing to report.
            return grads
        for hook in self.hooks:
            replaced = hook(self.module, grad_inputs, self.grad_outputs)
            if replaced is None:
                continue
            replaced = replaced if isinstance(replaced, tuple) else (replaced,)
            if len(replaced) != len(grad_inputs):
                raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(replaced)}, but expected {len(grad_inputs)}")
            grad_inputs = replaced
        self.grad_outputs = None
        return [grad_inputs[i] for i in self.input_index]
