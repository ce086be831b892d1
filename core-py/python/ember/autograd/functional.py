"""`ember.autograd.functional`: derivatives of whole functions, as `torch.autograd.functional`.

`vjp`, `vhp` and `hvp` run on reverse mode. `jvp` uses the double-backward trick PyTorch uses
too: the vector-Jacobian product `u ↦ uᵀJ` is linear in `u`, so differentiating it with respect
to `u` in the direction `v` gives `Jv` (`autograd.forward_ad` computes the same product in one
forward pass, cheaper). Jacobians are built one output element at a time in reverse mode, or
with `strategy="forward-mode"` (which, as in PyTorch, requires `vectorize=True`) one input
element at a time in forward mode (`ember.func.jacfwd`); `hessian`'s
`outer_jacobian_strategy="forward-mode"` is forward-over-reverse. `vectorize=True` is otherwise
accepted and gives the same result by the same path.
"""
import ember
from ember.autograd.grad_mode import enable_grad, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _as_tuple(value, arg_name, fn_name):
    is_tuple = isinstance(value, tuple)
    values = value if is_tuple else (value,)
    for i, t in enumerate(values):
        if not isinstance(t, ember.Tensor):
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but the value "
                f"at index {i} has type {type(t)}."
            )
    return is_tuple, values


def _unpack(values, is_tuple):
    """Undoes `_as_tuple`; `is_tuple` may be a pair for nested (output, input) results."""
    if isinstance(is_tuple, tuple):
        outer, inner = is_tuple
        values = tuple(row if inner else row[0] for row in values)
        return values if outer else values[0]
    return values if is_tuple else values[0]


def _prepare_inputs(inputs, create_graph, need_graph):
    """Fresh leaves to differentiate against; with `create_graph`, inputs that already require
    grad stay connected to their own history, so higher derivatives reach the caller."""
    prepared = []
    for t in inputs:
        if create_graph and t.requires_grad:
            prepared.append(t.view_as(t))
        else:
            prepared.append(t.detach().requires_grad_(need_graph))
    return tuple(prepared)


def _finish(values, create_graph):
    if create_graph:
        return values
    return tuple(None if t is None else t.detach() for t in values)


def _validate_v(v, others, is_others_tuple):
    if len(v) != len(others):
        if is_others_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(others)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (vi, oi) in enumerate(zip(v, others)):
        if tuple(vi.shape) != tuple(oi.shape):
            prefix = f"Entry {i} in " if is_others_tuple else ""
            raise RuntimeError(
                f"Mismatch in shape: {prefix}v has size {tuple(vi.shape)} but {prefix}the other has size {tuple(oi.shape)}"
            )


_STRICT_MESSAGES = {
    "outputs": "Output {i} of the user-provided function does not require gradients. The outputs must be "
    "computed in a differentiable manner from the input when running in strict mode.",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the "
    "user-provided function. This is not allowed in strict mode.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided function with "
    "respect to input {i} is independent of the input. This is not allowed in strict mode. You should "
    "ensure that your function is twice differentiable and that the jacobian depends on the inputs "
    "(this would be violated by a linear function for example).",
    "hessian": "The hessian of the user-provided function with respect to input {i} is independent of the "
    "input. This is not allowed in strict mode. You should ensure that your function is thrice "
    "differentiable and that the hessian depends on the inputs.",
}


def _check_requires_grad(values, kind, strict):
    if not strict:
        return
    for i, t in enumerate(values):
        if t is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. "
                "This is not allowed in strict mode."
            )
        if not t.requires_grad:
            raise RuntimeError(_STRICT_MESSAGES[kind].format(i=i))


def _grad(outputs, inputs, grad_outputs=None, create_graph=False):
    """`autograd.grad` over the outputs that have a graph; `None` for inputs none of them reach."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    outs, grads = zip(*pairs)
    return tuple(ember.autograd.grad(outs, inputs, grads, retain_graph=True, create_graph=create_graph, allow_unused=True))


def _zeros_for_missing(grads, refs, strict, stage):
    """Zeros where an input does not reach an output (strict mode refuses that instead)."""
    filled = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None:
            if strict and stage == "back":
                raise RuntimeError(
                    f"The output of the user-provided function is independent of input {i}. "
                    "This is not allowed in strict mode."
                )
            if strict and stage == "back_trick":
                raise RuntimeError(
                    f"The gradient with respect to the input is independent of entry {i} in the grad_outputs "
                    "when using the double backward trick to compute forward mode gradients. This is not "
                    "allowed in strict mode."
                )
            g = ember.zeros_like(ref)
        filled.append(g)
    return tuple(filled)


def _single_element_v(values, what):
    if len(values) != 1 or values[0].numel() != 1:
        raise RuntimeError(f"The vector v can only be None if the {what} a single Tensor with a single element.")


def _inputs_and_v(inputs, v, create_graph, fn_name):
    """The prepared inputs, and `v` checked against them (a vector in the inputs' space)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _prepare_inputs(inputs, create_graph, need_graph=True)
    if v is None:
        _single_element_v(inputs, "input to the user-provided function is")
    else:
        _, v = _as_tuple(v, "v", fn_name)
        v = _prepare_inputs(v, create_graph, need_graph=False)
        _validate_v(v, inputs, is_inputs_tuple)
    return is_inputs_tuple, inputs, v


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """`(func(*inputs), vᵀ·J)`: the vector-Jacobian product at `inputs`."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare_inputs(inputs, create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        if v is None:
            _single_element_v(outputs, "user-provided function returns")
        else:
            _, v = _as_tuple(v, "v", "vjp")
            v = _prepare_inputs(v, create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple)
        with set_grad_enabled(create_graph or ember.is_grad_enabled()):
            grads = _grad(outputs, inputs, v, create_graph)
            result = _zeros_for_missing(grads, inputs, strict, "back")
    return _unpack(_finish(outputs, create_graph), is_outputs_tuple), _unpack(_finish(result, create_graph), is_inputs_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """`(func(*inputs), J·v)`: the Jacobian-vector product at `inputs` (double-backward trick)."""
    with enable_grad():
        is_inputs_tuple, inputs, v = _inputs_and_v(inputs, v, create_graph, "jvp")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict)
        # u ↦ uᵀJ is linear in u; its derivative along v is J·v.
        probes = tuple(ember.zeros_like(o).requires_grad_() for o in outputs)
        grad_inputs = _grad(outputs, inputs, probes, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
        with set_grad_enabled(create_graph or ember.is_grad_enabled()):
            grads = _grad(grad_inputs, probes, v, create_graph)
            result = _zeros_for_missing(grads, outputs, strict, "back_trick")
    return _unpack(_finish(outputs, create_graph), is_outputs_tuple), _unpack(_finish(result, create_graph), is_outputs_tuple)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of `func` at `inputs`: for output `i` and input `j`, a tensor of shape
    `outputs[i].shape + inputs[j].shape`, nested as tuples the way the outputs and inputs are."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                         'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                         'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` and '
                                      '`strategy="forward-mode"` are not supported together (yet). Please either '
                                      'set `create_graph=False` or `strategy="reverse-mode"`.')
        return _jacobian_forward(func, inputs, strict, vectorize)
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare_inputs(inputs, create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        rows = tuple(_jacobian_rows(i, out, inputs, create_graph, strict) for i, out in enumerate(outputs))
    return _unpack(tuple(_finish(r, create_graph) for r in rows), (is_outputs_tuple, is_inputs_tuple))


def _jacobian_forward(func, inputs, strict, vectorize):
    """`jacobian(strategy="forward-mode")`: one forward-mode `jvp` per input element."""
    if strict:
        raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are not '
                           'supported together (yet). Please either set `strict=False` or `strategy="reverse-mode"`.')
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is only "
                                  "implemented for `vectorize=True`.")
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    returned = {}

    def as_tuple(*inp):
        returned["tuple"], outputs = _as_tuple(func(*inp), "outputs of the user-provided function", "jacobian")
        return outputs

    jac = ember.func.jacfwd(as_tuple, argnums=tuple(range(len(inputs))))(*inputs)
    return _unpack(tuple(jac), (returned["tuple"], is_inputs_tuple))


def _jacobian_rows(i, out, inputs, create_graph, strict):
    """The Jacobian blocks of output `i` against every input, one output element at a time."""
    flat = out.reshape(-1)
    per_input = [[] for _ in inputs]
    for k in range(flat.numel()):
        grads = _grad((flat[k],), inputs, None, create_graph)
        for j, (g, inp) in enumerate(zip(grads, inputs)):
            if g is None:
                if strict:
                    raise RuntimeError(
                        f"Output {i} of the user-provided function is independent of input {j}. "
                        "This is not allowed in strict mode."
                    )
                g = ember.zeros_like(inp)
            per_input[j].append(g)
    blocks = []
    for j, inp in enumerate(inputs):
        shape = tuple(out.shape) + tuple(inp.shape)
        if per_input[j]:
            blocks.append(ember.stack(per_input[j]).reshape(shape))
        else:
            blocks.append(ember.zeros(shape, dtype=inp.dtype))
    return tuple(blocks)


def _scalar_function(func, fn_name):
    def checked(*inputs):
        out = func(*inputs)
        if isinstance(out, tuple) or not isinstance(out, ember.Tensor):
            raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single element")
        return out.squeeze()
    return checked


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar `func` at `inputs`: `inputs[i].shape + inputs[j].shape` blocks."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    scalar = _scalar_function(func, "hessian")

    def gradient(*inp):
        if outer_jacobian_strategy == "forward-mode":
            # Dual inputs: keep them (and their tangents) rather than detached copies.
            inp = tuple(t.requires_grad_() for t in inp)
        jac = jacobian(scalar, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(gradient, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _unpack(res, (is_inputs_tuple, is_inputs_tuple))


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """`(func(*inputs), vᵀ·H)` for a scalar `func`."""
    with enable_grad():
        is_inputs_tuple, inputs, v = _inputs_and_v(inputs, v, create_graph, "vhp")
        out = _scalar_function(func, "vhp")(*inputs)
        _check_requires_grad((out,), "outputs", strict)
        jac = _grad((out,), inputs, None, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        with set_grad_enabled(create_graph or ember.is_grad_enabled()):
            grads = _grad(jac, inputs, v, create_graph)
            result = _zeros_for_missing(grads, inputs, strict, "double_back")
    return _finish((out,), create_graph)[0], _unpack(_finish(result, create_graph), is_inputs_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """`(func(*inputs), H·v)` for a scalar `func`. The Hessian of a twice continuously
    differentiable function is symmetric, so this is `vhp`'s product."""
    return vhp(func, inputs, v, create_graph=create_graph, strict=strict)
