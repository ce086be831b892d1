"""`functionalize`: the function's in-place ops and writes through views act on private copies
of the tensor inputs, and mutated inputs receive their final value once, at the end.

PyTorch's functionalize rewrites the traced program (in-place ops become out-of-place ones,
views become view_copy ops) and appends a `copy_` into each mutated input. Ember has no graph
tracer, so it gives the same observable eager semantics by running the function on fresh
copies: no mutation reaches an input before the function returns, outputs never share memory
with inputs (except an input returned unchanged, which is returned as itself, as PyTorch does),
and with remove="mutations_and_views" no output is a view.
"""
import ember
from ember import _C
from ember._functorch._vmap import tree_flatten, tree_unflatten

_MODES = ("mutations", "mutations_and_views")


def _is_tensor(x):
    return isinstance(x, _C.Tensor)  # a BatchedTensor (vmap) counts too


def _write_back(original, result):
    """The mutated input takes its final value; a graph leaf is written without recording it
    (as an optimizer step is), so that functionalize composes with grad."""
    if original.requires_grad and original.is_leaf:
        with ember.no_grad():
            original.copy_(result)
    else:
        original.copy_(result)


def functionalize(func, *, remove="mutations"):
    if remove not in _MODES:
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. Valid options are:\n"
            "     remove='mutations': all inplace and out= operators will be removed from the program, and replaced "
            "with their out-of-place equivalents.\n"
            "     remove='mutations_and_views': In addition to the above, all aliasing operators {view} will be "
            "replaced with their non-aliasing counterparts, {view}_copy.\n")

    def wrapped(*args, **kwargs):
        leaves, spec = tree_flatten((list(args), kwargs))
        copies = [leaf.clone() if _is_tensor(leaf) else leaf for leaf in leaves]
        versions = [c._version if _is_tensor(c) else None for c in copies]
        new_args, new_kwargs = tree_unflatten(copies, spec)
        out = func(*new_args, **new_kwargs)
        originals = {}
        for leaf, copy, version in zip(leaves, copies, versions):
            if version is None:
                continue
            originals[id(copy)] = leaf
            if copy._version != version:
                _write_back(leaf, copy)
        out_leaves, out_spec = tree_flatten(out)
        return tree_unflatten([_output(o, originals, remove) for o in out_leaves], out_spec)

    wrapped.__name__ = f"functionalize({getattr(func, '__name__', 'func')})"
    wrapped.__doc__ = func.__doc__
    return wrapped


def _output(value, originals, remove):
    if not _is_tensor(value):
        return value
    if id(value) in originals:
        return originals[id(value)]
    if remove == "mutations_and_views" and value._is_view():
        return value.clone()
    return value
