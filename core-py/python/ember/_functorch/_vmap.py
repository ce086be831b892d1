"""`vmap`: runs a function once on `BatchedTensor`s (the batching rules), and falls back to
running it once per sample and stacking when a batched value reaches an op without a rule.

The batched attempt is the fast path; any exception in it (a missing rule, Python that needs
concrete values such as `if x.sum() > 0` or `.item()`, an in-place write) makes vmap restore the
random generator and rerun the function per sample. A real error in the function then surfaces
from that per-sample run, with the message the loop gives. Side effects the function had before
the unsupported op (appending to a list, mutating an outside tensor) happen again in the rerun.
"""
import contextlib

import ember
from ember import _C
from ember._functorch._batched import LEVELS, STATS, BatchedTensor, Level, materialize

_RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either use the 'same' or "
                 "'different' randomness flags on vmap or perform the randomness operation out of vmap")


# ---- pytrees (tuples, lists, dicts; anything else is a leaf) ----

def tree_flatten(tree):
    if isinstance(tree, (tuple, list)):
        specs, leaves = [], []
        for item in tree:
            sub, spec = tree_flatten(item)
            leaves += sub
            specs.append((spec, len(sub)))
        return leaves, (type(tree), specs)
    if isinstance(tree, dict):
        leaves, (_, specs) = tree_flatten(list(tree.values()))
        return leaves, (dict, (list(tree), specs))
    return [tree], None


def tree_unflatten(leaves, spec):
    if spec is None:
        return leaves[0]
    kind, specs = spec
    keys = None
    if kind is dict:
        keys, specs = specs
    out, at = [], 0
    for sub, n in specs:
        out.append(tree_unflatten(leaves[at:at + n], sub))
        at += n
    if kind is dict:
        return dict(zip(keys, out))
    return kind(out) if kind in (tuple, list) else kind(*out)


def _broadcast_prefix(prefix, tree, error):
    """One entry of `prefix` (an int/None, or a tree of them matching `tree`) per leaf of `tree`."""
    if prefix is None or isinstance(prefix, int):
        return [prefix] * len(tree_flatten(tree)[0])
    if isinstance(prefix, (tuple, list)) and isinstance(tree, (tuple, list)) and len(prefix) == len(tree):
        return [d for p, t in zip(prefix, tree) for d in _broadcast_prefix(p, t, error)]
    if isinstance(prefix, dict) and isinstance(tree, dict) and set(prefix) == set(tree):
        return [d for k in tree for d in _broadcast_prefix(prefix[k], tree[k], error)]
    raise ValueError(error())


def _name(func):
    return getattr(func, "__name__", repr(func))


# ---- in_dims ----

def _in_dims_per_leaf(func, in_dims, args):
    name = _name(func)
    if not isinstance(in_dims, (int, tuple)) and in_dims is not None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying "
                         "to vmap over a function with no inputs. The latter is unsupported.")
    leaves, spec = tree_flatten(list(args))
    prefix = in_dims if not isinstance(in_dims, tuple) else list(in_dims)
    dims = _broadcast_prefix(prefix, list(args), lambda: (
        f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the structure of `inputs`. "
        f"in_dims has structure {tree_flatten(in_dims)[1]} but inputs has structure {spec}."))
    sizes = []
    for leaf, dim in zip(leaves, dims):
        if dim is None:
            continue
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={dim} for an input but "
                             "in_dim must be either an integer dimension or None.")
        if not isinstance(leaf, _C.Tensor):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={dim} for an input but the "
                             f"input is of type {type(leaf)}. We cannot vmap over non-Tensor arguments, please use "
                             "None as the respective in_dim")
        n = leaf.dim()
        if not -n <= dim < n:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={dim} for some input, but "
                             f"that input is a Tensor of dimensionality {n} so expected in_dim to satisfy "
                             f"-{n} <= in_dim < {n}.")
        sizes.append(leaf.shape[dim])
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if len(set(sizes)) > 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return leaves, spec, dims, sizes[0]


# ---- randomness ----

@contextlib.contextmanager
def random_op(level):
    """Brackets a random op that has a batching rule (dropout): refused in "error" mode; the
    generator state after it is remembered so that vmap can tell an unhandled random op (whose
    draws would be shared by every sample) from this one."""
    if level.randomness == "error":
        raise RuntimeError(_RANDOM_ERROR)
    if _C.get_rng_state() != level.rng_state:
        level.unhandled_random = True
    yield
    level.rng_state = _C.get_rng_state()


def _random_check(level, start):
    """Whether the batched run is valid under the randomness mode (False: rerun per sample)."""
    now = _C.get_rng_state()
    if level.randomness == "error":
        if now != start:
            raise RuntimeError(_RANDOM_ERROR)
        return True
    if level.randomness == "different":
        return not level.unhandled_random and now == level.rng_state
    return True


# ---- the two strategies ----

@contextlib.contextmanager
def _entered(level):
    LEVELS.append(level)
    try:
        yield
    finally:
        LEVELS.pop()


class _Fallback(Exception):
    """The batched run cannot give the per-sample semantics (a random op without a rule)."""


def _run_batched(func, leaves, spec, dims, size, randomness, kwargs):
    level = Level(LEVELS[-1].index + 1 if LEVELS else 1, size, randomness)
    start = level.rng_state = _C.get_rng_state()
    wrapped = [leaf if d is None else BatchedTensor(leaf if d % leaf.dim() == 0 else leaf.movedim(d, 0), level)
               for leaf, d in zip(leaves, dims)]
    with _entered(level):
        out = func(*tree_unflatten(wrapped, spec), **kwargs)
    if not _random_check(level, start):
        raise _Fallback()
    return out, level


def _run_per_sample(func, leaves, spec, dims, size, randomness, kwargs):
    state = _C.get_rng_state()
    results = []
    for i in range(size):
        if randomness == "same":
            _C.set_rng_state(state)
        before = _C.get_rng_state()
        sample = [leaf if d is None else leaf.select(d, i) for leaf, d in zip(leaves, dims)]
        results.append(func(*tree_unflatten(sample, spec), **kwargs))
        if randomness == "error" and _C.get_rng_state() != before:
            raise RuntimeError(_RANDOM_ERROR)
    return results


# ---- outputs ----

def _out_dims_per_leaf(func, out_dims, out):
    leaves, spec = tree_flatten(out)
    if not (out_dims is None or isinstance(out_dims, (int, tuple, list, dict))):
        raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a python "
                         "collection of ints representing where in the outputs the vmapped dimension should appear.")
    prefix = out_dims
    if isinstance(out_dims, tuple) and not isinstance(out, tuple) and len(out_dims) == 1:
        prefix = out_dims[0]
    dims = _broadcast_prefix(prefix, out, lambda: (
        f"vmap({_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the structure of "
        f"`outputs`. out_dims has structure {tree_flatten(out_dims)[1]} but outputs has structure {spec}."))
    return leaves, spec, dims


def _not_a_tensor(func, value):
    return ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` must only return Tensors, got type {type(value)}. "
                      "Did you mean to set out_dims= to None for this output?")


def _unwrap_outputs(func, out, level, out_dims):
    leaves, spec, dims = _out_dims_per_leaf(func, out_dims, out)
    result = []
    for leaf, d in zip(leaves, dims):
        is_tensor = isinstance(leaf, _C.Tensor)
        if d is None:
            if type(leaf) is BatchedTensor and leaf._level is level:
                raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` can not return a BatchedTensor when "
                                 "out_dim is None")
            result.append(leaf)
        elif not is_tensor:
            raise _not_a_tensor(func, leaf)
        else:
            inner = materialize(leaf, level)
            result.append(inner if d == 0 else inner.movedim(0, d))
    return tree_unflatten(result, spec)


def _stack_outputs(func, results, out_dims):
    leaves, spec, dims = _out_dims_per_leaf(func, out_dims, results[0])
    per_sample = [tree_flatten(r)[0] for r in results]
    stacked = []
    for k, d in enumerate(dims):
        if d is None:
            stacked.append(per_sample[0][k])
        elif not isinstance(leaves[k], _C.Tensor):
            raise _not_a_tensor(func, leaves[k])
        else:
            stacked.append(ember.stack([s[k] for s in per_sample], dim=d))
    return tree_unflatten(stacked, spec)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """`func` mapped over a batch dimension of its inputs, the results stacked at `out_dims`
    (see `ember.func.vmap`)."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if chunk_size is not None and chunk_size <= 0:
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    def wrapped(*args, **kwargs):
        leaves, spec, dims, size = _in_dims_per_leaf(func, in_dims, args)
        start = _C.get_rng_state()
        try:
            out, level = _run_batched(func, leaves, spec, dims, size, randomness, kwargs)
        except Exception as e:  # noqa: BLE001  (any failure of the batched run reruns per sample)
            if isinstance(e, RuntimeError) and str(e) == _RANDOM_ERROR:
                raise
            STATS["fallbacks"] += 1
            STATS["last_fallback"] = f"{type(e).__name__}: {e}"
            _C.set_rng_state(start)
            return _stack_outputs(func, _run_per_sample(func, leaves, spec, dims, size, randomness, kwargs), out_dims)
        return _unwrap_outputs(func, out, level, out_dims)

    wrapped.__name__ = f"vmap({_name(func)})"
    wrapped.__doc__ = func.__doc__
    return wrapped
