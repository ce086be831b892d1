"""`ember.func`: functorch's function transforms (`torch.func`), on Ember's autograd.

`grad`, `grad_and_value`, `vjp`, `jacrev` and `hessian` compose (`grad(grad(f))`): a transform
whose inputs already carry a graph records its own derivative on it. `jvp` and `jacfwd` run in
forward mode (`autograd.forward_ad`, one `jvp` per basis vector for `jacfwd`); since one dual
level exists at a time, a `jvp` nested inside another forward transform falls back to the
double-backward trick. `hessian` is `jacfwd(jacrev(f))` (forward-over-reverse). `vmap` runs the
function once on batched values (batching rules, `ember._functorch`), or once per sample where
an op has no rule; `functionalize` runs on private copies of the inputs.
Arguments may be tensors or tuples, lists and dicts of them (pytrees).
"""
import ember
from ember import _functorch
from ember._functorch import _autograd as _vmapped_autograd
from ember.autograd import forward_ad
from ember.autograd.grad_mode import enable_grad

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "functional_call",
           "stack_module_state", "vmap", "functionalize"]


# ---- pytrees of tensors ----

def _flatten(tree):
    if isinstance(tree, ember.Tensor):
        return [tree], lambda leaves: leaves[0]
    if isinstance(tree, (tuple, list)):
        parts = [_flatten(t) for t in tree]
        sizes = [len(p[0]) for p in parts]

        def rebuild(leaves):
            out, at = [], 0
            for (_, build), n in zip(parts, sizes):
                out.append(build(leaves[at:at + n]))
                at += n
            return type(tree)(out)
        return [leaf for p in parts for leaf in p[0]], rebuild
    if isinstance(tree, dict):
        keys = list(tree)
        leaves, build = _flatten([tree[k] for k in keys])
        return leaves, lambda new: dict(zip(keys, build(new)))
    raise ValueError(f"Expected tensors, or tuples, lists and dicts of tensors, but got {type(tree).__name__}")


def _argnums(argnums, nargs, fn_name):
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    if not nums or not all(isinstance(n, int) for n in nums):
        raise RuntimeError(f"{fn_name}: argnums must be an int or a non-empty tuple of ints, got {argnums!r}")
    wrapped = []
    for n in nums:
        if not -nargs <= n < nargs:
            raise RuntimeError(f"{fn_name}: Got argnums={n}, but only {nargs} positional inputs")
        wrapped.append(n % nargs)
    return tuple(wrapped)


def _track(leaves):
    """Leaves to differentiate against; ones that already carry a graph (an outer transform)
    stay connected to it, and dual ones (inside `jvp`/`jacfwd`) keep their tangents."""
    if _functorch.LEVELS:
        return _vmapped_autograd.track(leaves)
    return [t.view_as(t) if t.requires_grad else _fresh_leaf(t) for t in leaves]


def _fresh_leaf(t):
    return (t.view_as(t) if _is_dual(t) else t.detach()).requires_grad_()


def _is_dual(t):
    return forward_ad.unpack_dual(t).tangent is not None


def _grads(outputs, inputs, grad_outputs, create_graph):
    if _functorch.LEVELS:
        return _vmapped_autograd.grads(outputs, inputs, grad_outputs, create_graph)
    grads = ember.autograd.grad(outputs, inputs, grad_outputs, retain_graph=True, create_graph=create_graph,
                                allow_unused=True)
    return [ember.zeros_like(x) if g is None else g for g, x in zip(grads, inputs)]


def _split_aux(out, has_aux, fn_name):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{fn_name}(f)(*args): output of function f should be a tuple: (output, aux) if has_aux is True")
    return out


def _finish(tree, nested):
    if nested or tree is None:
        return tree
    leaves, build = _flatten(tree)
    return build([t.detach() for t in leaves])


class _Prepared:
    """The call's arguments with the `argnums` ones replaced by tracked leaves."""

    def __init__(self, args, argnums, fn_name):
        self.nums = _argnums(argnums, len(args), fn_name)
        self.single = not isinstance(argnums, tuple)
        self.args = list(args)
        self.builds, self.leaves, self.nested = [], [], False
        for n in self.nums:
            leaves, build = _flatten(args[n])
            # Inside an outer transform (a graph, or tangents of jvp/jacfwd): results stay attached.
            self.nested = self.nested or any(t.requires_grad or _is_dual(t) for t in leaves)
            tracked = _track(leaves)
            self.args[n] = build(tracked)
            self.builds.append((build, len(tracked)))
            self.leaves += tracked

    def per_arg(self, flat):
        """Splits a flat list along the leaves back into the argnums' structure."""
        out, at = [], 0
        for build, n in self.builds:
            out.append(build(flat[at:at + n]))
            at += n
        return out[0] if self.single else tuple(out)


# ---- transforms ----

def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning `(gradient, value)` of scalar `func` w.r.t. the `argnums` arguments
    (`((gradient, (value, aux))` with `has_aux`)."""
    def wrapper(*args, **kwargs):
        with enable_grad():
            prep = _Prepared(args, argnums, "grad_and_value")
            out, aux = _split_aux(func(*prep.args, **kwargs), has_aux, "grad_and_value")
            if not isinstance(out, ember.Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor "
                                   f"with {out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
            grads = _grads([out], prep.leaves, None, prep.nested) if out.requires_grad else [
                ember.zeros_like(x) for x in prep.leaves]
        value = (out, aux) if has_aux else out
        return _finish(prep.per_arg(grads), prep.nested), _finish(value, prep.nested)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """A function returning the gradient of scalar `func` w.r.t. the `argnums` arguments
    (`(gradient, aux)` with `has_aux`)."""
    both = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        g, value = both(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(func, *primals, has_aux=False):
    """`(func(*primals), vjp_fn)`; `vjp_fn(cotangents)` returns one gradient per primal."""
    with enable_grad():
        prep = _Prepared(primals, tuple(range(len(primals))), "vjp")
        out, aux = _split_aux(func(*prep.args), has_aux, "vjp")
        out_leaves, _ = _flatten(out)

    def vjp_fn(cotangents):
        cot_leaves, _ = _flatten(cotangents)
        if len(cot_leaves) != len(out_leaves):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function: {len(out_leaves)} tensors, got {len(cot_leaves)}")
        for c, o in zip(cot_leaves, out_leaves):
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {tuple(c.shape)} and output[0] "
                                   f"has a shape of {tuple(o.shape)}.")
        pairs = [(o, c) for o, c in zip(out_leaves, cot_leaves) if o.requires_grad]
        with enable_grad():
            grads = _grads([o for o, _ in pairs], prep.leaves, [c for _, c in pairs], prep.nested) if pairs else [
                ember.zeros_like(x) for x in prep.leaves]
        return _finish(prep.per_arg(grads), prep.nested)

    result = (_finish(out, prep.nested), vjp_fn)
    return result + (_finish(aux, prep.nested),) if has_aux else result


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """`(func(*primals), J·tangents)`, computed in forward mode."""
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to be tuples. "
                           "E.g. it should be valid to call f(*primals).")
    if len(primals) != len(tangents):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same length "
                           f"(got {len(primals)} and {len(tangents)}).")
    primal_leaves, build_primals = _flatten(primals)
    tangent_leaves, _ = _flatten(tangents)
    if len(primal_leaves) != len(tangent_leaves):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           "structure.")
    for p, t in zip(primal_leaves, tangent_leaves):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to have the same shape, "
                               f"got {tuple(p.shape)} and {tuple(t.shape)}.")
    nested = any(t.requires_grad for t in primal_leaves)
    if forward_ad._current_level >= 0:
        return _jvp_double_backward(func, primals, tangents, has_aux)
    with forward_ad.dual_level():
        duals = [forward_ad.make_dual(p, t) for p, t in zip(primal_leaves, tangent_leaves)]
        out, aux = _split_aux(func(*build_primals(duals)), has_aux, "jvp")
        out_leaves, build_out = _flatten(out)
        unpacked = [forward_ad.unpack_dual(o) for o in out_leaves]
        primal_out = [u.primal for u in unpacked]
        tangent_out = [ember.zeros_like(o) if u.tangent is None else u.tangent for o, u in zip(out_leaves, unpacked)]
        if has_aux:
            aux_leaves, build_aux = _flatten(aux)
            aux = build_aux([forward_ad.unpack_dual(a).primal for a in aux_leaves])
    result = (_finish(build_out(primal_out), nested), _finish(build_out(tangent_out), nested))
    return result + (_finish(aux, nested),) if has_aux else result


def _jvp_double_backward(func, primals, tangents, has_aux):
    """`jvp` by the double-backward trick: `u ↦ uᵀJ` is linear in `u`, so its derivative along
    the tangents is `J·tangents`. For a `jvp` inside another forward transform's dual level."""
    with enable_grad():
        prep = _Prepared(primals, tuple(range(len(primals))), "jvp")
        out, aux = _split_aux(func(*prep.args), has_aux, "jvp")
        out_leaves, build_out = _flatten(out)
        tangent_leaves, _ = _flatten(tangents)
        probes = [ember.zeros_like(o).requires_grad_() for o in out_leaves]
        live = [(o, p) for o, p in zip(out_leaves, probes) if o.requires_grad]
        if live:
            back = _grads([o for o, _ in live], prep.leaves, [p for _, p in live], True)
            pairs = [(b, t) for b, t in zip(back, tangent_leaves) if b.requires_grad]
            tangent_out = _grads([b for b, _ in pairs], probes, [t for _, t in pairs], prep.nested) if pairs else [
                ember.zeros_like(o) for o in out_leaves]
        else:
            tangent_out = [ember.zeros_like(o) for o in out_leaves]
    result = (_finish(out, prep.nested), _finish(build_out(tangent_out), prep.nested))
    return result + (_finish(aux, prep.nested),) if has_aux else result


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """A function returning the Jacobian of `func` w.r.t. the `argnums` arguments: for each
    output, `output.shape + argument.shape` blocks, nested as the outputs and argnums are."""
    if chunk_size is not None and chunk_size <= 0:
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    def wrapper(*args, **kwargs):
        with enable_grad():
            prep = _Prepared(args, argnums, "jacrev")
            out, aux = _split_aux(func(*prep.args, **kwargs), has_aux, "jacrev")
            out_leaves, build_out = _flatten(out)
            blocks = [prep.per_arg(_jacobian_blocks(o, prep.leaves, prep.nested)) for o in out_leaves]
        jac = _finish(build_out(blocks) if blocks else out, prep.nested)
        return (jac, _finish(aux, prep.nested)) if has_aux else jac
    return wrapper


def _jacobian_blocks(out, leaves, nested):
    rows = []
    flat = out.reshape(-1)
    for k in range(flat.numel()):
        if flat.requires_grad:
            rows.append(_grads([flat[k]], leaves, None, nested))
        else:
            rows.append([ember.zeros_like(x) for x in leaves])
    blocks = []
    for j, x in enumerate(leaves):
        shape = tuple(out.shape) + tuple(x.shape)
        blocks.append(ember.stack([r[j] for r in rows]).reshape(shape) if rows else ember.zeros(shape, dtype=x.dtype))
    return blocks


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """A function returning the Jacobian of `func` w.r.t. the `argnums` arguments, in forward
    mode: one `jvp` per element of those arguments (a column of the Jacobian each). Blocks are
    `output.shape + argument.shape`, nested as the outputs and argnums are."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")

    def wrapper(*args, **kwargs):
        nums = _argnums(argnums, len(args), "jacfwd")
        per_arg = [_flatten(args[n]) for n in nums]
        leaves = [leaf for flat, _ in per_arg for leaf in flat]

        def on_leaves(*new):
            call, at = list(args), 0
            for n, (flat, build) in zip(nums, per_arg):
                call[n] = build(list(new[at:at + len(flat)]))
                at += len(flat)
            return func(*call, **kwargs)

        columns, value, aux = [[] for _ in leaves], None, None
        for j, x in enumerate(leaves):
            for k in range(x.numel()):
                basis = [ember.zeros_like(y) for y in leaves]
                basis[j].view(-1)[k] = 1
                value, column, *rest = jvp(on_leaves, tuple(leaves), tuple(basis), has_aux=has_aux)
                aux = rest[0] if has_aux else None
                columns[j].append(column)
        if value is None:
            value, aux = _split_aux(on_leaves(*leaves), has_aux, "jacfwd")
        out_leaves, build_out = _flatten(value)
        blocks = []
        for i, o in enumerate(out_leaves):
            row = []
            for j, x in enumerate(leaves):
                shape = tuple(o.shape) + tuple(x.shape)
                cols = [_flatten(c)[0][i] for c in columns[j]]
                row.append(ember.stack(cols, dim=-1).reshape(shape) if cols else ember.zeros(shape, dtype=x.dtype))
            blocks.append(_group(row, per_arg, not isinstance(argnums, tuple)))
        jac = build_out(blocks)
        return (jac, aux) if has_aux else jac
    return wrapper


def _group(flat, per_arg, single):
    """Splits a list along the argnums' leaves back into their structure."""
    out, at = [], 0
    for leaves, build in per_arg:
        out.append(build(flat[at:at + len(leaves)]))
        at += len(leaves)
    return out[0] if single else tuple(out)


def hessian(func, argnums=0):
    """A function returning the Hessian of scalar `func` w.r.t. the `argnums` arguments
    (forward-over-reverse: `jacfwd(jacrev(func))`)."""
    return jacfwd(jacrev(func, argnums), argnums)


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """`module(*args, **kwargs)` with its parameters and buffers replaced by the given tensors
    (one dict, or several with distinct names), as `ember.nn.utils.stateless.functional_call`."""
    from ember.nn.utils import stateless

    return stateless.functional_call(module, parameter_and_buffer_dicts, args, kwargs, tie_weights=tie_weights,
                                     strict=strict)


def stack_module_state(models):
    """`(params, buffers)`: each of the models' (same-named) parameters and buffers stacked along
    a new first dim, for `vmap` over an ensemble. The stacked parameters are new leaves."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({type(m) for m in models}) != 1 or len({m.training for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same class and in the same mode.")
    params = {name: ember.stack([dict(m.named_parameters())[name].detach() for m in models]).requires_grad_()
              for name, _ in models[0].named_parameters()}
    buffers = {name: ember.stack([dict(m.named_buffers())[name] for m in models])
               for name, _ in models[0].named_buffers()}
    return params, buffers


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """`func` mapped over a batch dimension of its inputs: `in_dims` gives, per argument (or
    one for all, or a tree matching an argument), the dim to map over or `None`; the results
    are stacked at `out_dims` (likewise per output).

    `func` runs once on batched values: elementwise ops and operators, comparisons, `where`,
    `clamp`, reductions (sum/mean/prod/amax/amin/max/min/argmax/argmin/var/std/norm/logsumexp,
    softmax/log_softmax), views and joins (view/reshape/transpose/permute/unsqueeze/squeeze/
    flatten/expand/select/narrow/cat/stack/chunk/split/unbind/T), matmul/mm/bmm/dot/mv/linear/
    einsum, conv1d/2d/3d (batched inputs and weights), max/avg/adaptive pooling, indexing with
    ints, slices, None, Ellipsis and integer tensors, gather, index_select, embedding, nll_loss/
    cross_entropy/mse_loss and dropout have batching rules. Any other op (and Python that needs
    a sample's values: `.item()`, `if t > 0:`, in-place writes) makes vmap run `func` once per
    sample instead and stack the results (the per-sample fallback), with the same results.
    `chunk_size` is validated; the batch always runs whole. `randomness`: "error" refuses random
    ops, "same" shares the draws across samples, "different" draws per sample (dropout batched,
    other random ops per sample)."""
    return _functorch.vmap(func, in_dims, out_dims, randomness, chunk_size=chunk_size)


def functionalize(func, *, remove="mutations"):
    """`func` without observable mutations: its in-place ops and writes through views act on
    private copies of the tensor inputs; inputs it mutated get their final value (one `copy_`)
    when it returns. Outputs never share memory with inputs (an input returned unchanged is
    returned itself); with remove="mutations_and_views" no output is a view either.
    Ember has no graph tracer: this gives PyTorch's eager semantics, without a rewritten program."""
    return _functorch.functionalize(func, remove=remove)
