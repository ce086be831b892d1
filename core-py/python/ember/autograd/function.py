"""`ember.autograd.Function`: ops with a hand-written derivative.

`apply` runs `forward` without recording, then records one node on the outputs whose backward
calls the class's `backward` (the engine reacquires the GIL for it). Saved tensors live in the
node, so they are version-checked and freed with the graph like any op's. In forward mode
(inputs with tangents), `forward` runs without propagating tangents and the class's `jvp` gives
the outputs theirs.
"""
from ember import _C

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


class FunctionCtx:
    """The `ctx` of `forward` and `backward`."""

    def __init__(self):
        self._to_save = ()
        self._saved_for_forward = None
        self._saved = None
        self._dirty = ()
        self._non_differentiable = ()
        self.materialize_grads = True
        self.needs_input_grad = ()

    def save_for_backward(self, *tensors):
        """Tensors (or None) that `backward` reads as `ctx.saved_tensors`."""
        for t in tensors:
            if t is not None and not isinstance(t, _C.Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {tensors.index(t)} is of type {type(t).__name__}")
        self._to_save = tensors

    def save_for_forward(self, *tensors):
        """Tensors (or None) that `jvp` reads as `ctx.saved_tensors`."""
        for t in tensors:
            if t is not None and not isinstance(t, _C.Tensor):
                raise TypeError(f"save_for_forward expects all arguments to be tensors; you should save non-tensors as attributes on ctx, but got {type(t).__name__}")
        self._saved_for_forward = tensors

    @property
    def saved_tensors(self):
        if self._saved is None:
            if self._to_save is None:
                raise RuntimeError("Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.")
            return tuple(self._to_save)
        return self._saved

    saved_variables = saved_tensors

    def mark_dirty(self, *tensors):
        """Inputs that `forward` modified in place (and returns)."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        """Outputs that get no gradient (indices, masks ...)."""
        self._non_differentiable = tensors

    def set_materialize_grads(self, value):
        """With False, `backward` receives None instead of zeros for outputs no gradient reached."""
        self.materialize_grads = bool(value)


def _is(a, seq):
    return any(a is b for b in seq)


class Function:
    """Subclass with `@staticmethod forward(ctx, *args)` and `@staticmethod backward(ctx,
    *grads)`; call with `MyFunction.apply(*args)`. `backward` returns one value per `forward`
    argument (None for those that need no gradient)."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use new-style autograd function with static forward method.")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """Forward mode: the tangents of the outputs (one per output) given one tangent per
        `forward` argument (zeros for tensors without one, None for other arguments)."""
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        tracked = _C.is_grad_enabled()
        ctx.needs_input_grad = tuple(isinstance(a, _C.Tensor) and a.requires_grad and tracked for a in args)
        tangents = [_C._fw_tangent(a) if isinstance(a, _C.Tensor) else None for a in args]
        dual = any(t is not None for t in tangents)
        prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)
        suspended = _C._set_fw_suspended(True)
        try:
            result = cls.forward(ctx, *args, **kwargs)
        finally:
            _C._set_grad_enabled(prev)
            _C._set_fw_suspended(suspended)
        if not any(ctx.needs_input_grad) and not dual:
            return result
        single = not isinstance(result, tuple)
        outputs = (result,) if single else result
        outputs = tuple(_prepare_output(o, args, ctx) for o in outputs)
        if dual:
            _forward_tangents(cls, ctx, args, tangents, outputs)
        if any(ctx.needs_input_grad):
            _record(cls, ctx, args, outputs)
        return outputs[0] if single else outputs


def _forward_tangents(cls, ctx, args, tangents, outputs):
    """Runs the class's `jvp` and gives the outputs the tangents it returns."""
    full = [t if t is not None or not isinstance(a, _C.Tensor) else _C.zeros(tuple(a.shape), a.dtype) for a, t in zip(args, tangents)]
    saved = ctx._saved_for_forward
    ctx._saved = tuple(saved) if saved is not None else None
    try:
        result = cls.jvp(ctx, *full)
    finally:
        ctx._saved = None
    if not isinstance(result, tuple):
        result = (result,)
    if len(result) != len(outputs):
        raise RuntimeError(f"function {cls.__name__}.jvp returned an incorrect number of forward gradients (expected {len(outputs)}, got {len(result)})")
    for o, t in zip(outputs, result):
        if isinstance(o, _C.Tensor) and t is not None:
            if not isinstance(t, _C.Tensor):
                raise TypeError(f"function {cls.__name__}.jvp returned a forward gradient that is not a Tensor, but {type(t).__name__}")
            _C._set_fw_tangent(o, t)


def _prepare_output(o, args, ctx):
    """An output that is an input returned unchanged becomes a fresh alias (so recording does
    not rewrite the input's history); one marked dirty is the input itself, rewritten."""
    if not isinstance(o, _C.Tensor):
        return o
    if _is(o, ctx._dirty):
        _C._check_inplace(o)
        return o
    if _is(o, args):
        return o.detach()
    return o


def _record(cls, ctx, args, outputs):
    input_pos = [i for i, a in enumerate(args) if isinstance(a, _C.Tensor)]
    inputs = [args[i] for i in input_pos]
    out_pos = [i for i, o in enumerate(outputs) if isinstance(o, _C.Tensor)]
    diff_pos = [i for i in out_pos if outputs[i].is_floating_point() and not _is(outputs[i], ctx._non_differentiable)]
    saved = [t for t in ctx._to_save if t is not None]
    save_slots = [t is not None for t in ctx._to_save]
    n_args = len(args)
    # Shapes only: the closure lives in the node, which the outputs reference.
    out_meta = {i: (tuple(outputs[i].shape), outputs[i].dtype) for i in out_pos}
    n_out = len(outputs)

    def backward(saved_tensors, grads):
        it = iter(saved_tensors)
        ctx._saved = tuple(next(it) if present else None for present in save_slots)
        full = [None] * n_out
        for i, g in zip(diff_pos, grads):
            full[i] = g
        if ctx.materialize_grads:
            for i in out_pos:
                if full[i] is None:
                    full[i] = _C.zeros(*out_meta[i])
        try:
            result = cls.backward(ctx, *full)
        finally:
            ctx._saved = None
        if not isinstance(result, tuple):
            result = (result,)
        if len(result) != n_args:
            if len(result) > n_args and all(r is None for r in result[n_args:]):
                result = result[:n_args]
            else:
                raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect number of gradients (expected {n_args}, got {len(result)})")
        grads_in = []
        for i in input_pos:
            g = result[i]
            if g is not None and not isinstance(g, _C.Tensor):
                raise TypeError(f"function {cls.__name__}Backward returned a gradient different than None at position {i + 1}, but the corresponding forward input was not a Variable")
            grads_in.append(g)
        return grads_in

    _C._record_function(cls.__name__ + "Backward", inputs, [outputs[i] for i in diff_pos], saved, backward, ctx.materialize_grads)
    ctx._to_save = None


def once_differentiable(fn):
    """Marks a `backward` that is not itself differentiable: it runs with grad mode off."""
    import functools

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)
        try:
            return fn(ctx, *args)
        finally:
            _C._set_grad_enabled(prev)

    return wrapper
