"""The batched value behind `vmap`, and the dispatch from Ember's ops to batching rules.

A `BatchedTensor` is the whole batch as one tensor (`_inner`, batch dim first) tagged with the
vmap `Level` it belongs to; user code sees its logical (per-sample) shape. `_inner` may itself be
a `BatchedTensor` of an outer (lower) level, so nested vmaps keep their batch dims in level
order: the plain tensor at the bottom has dims `(B_outer, ..., B_inner, *logical)`.

Ember's Python wrappers call a native kernel first; a native kernel refuses a `BatchedTensor`
with a `TypeError`, and the wrapper's `except TypeError` hands the call to `batched`, which runs
the primitive's batching rule. Plain tensors therefore pay nothing for vmap.
This module imports nothing from ember but `_C`, so every wrapper module may import it.
"""
from ember import _C


class NoBatchingRule(RuntimeError):
    """Raised when a batched value reaches an op without a batching rule; vmap catches it and
    runs the function once per sample instead."""


class Level:
    """One active vmap call: its depth (outer calls have lower levels), batch size and
    randomness mode. `rng_state` tracks the generator across random ops that have rules."""

    __slots__ = ("index", "size", "randomness", "rng_state", "unhandled_random")

    def __init__(self, index, size, randomness):
        self.index, self.size, self.randomness = index, size, randomness
        self.rng_state = None
        self.unhandled_random = False


# The active vmap levels, outermost first.
LEVELS = []
# How often vmap ran a function once per sample (no rule, or data-dependent Python), and why
# the last time; tests and benchmarks read it to tell the batched path from the fallback.
STATS = {"fallbacks": 0, "last_fallback": None}
# Batching rules by native primitive name, filled by the `_rules_*` modules:
# rule(level, *primitive_args) -> result.
RULES = {}


class BatchedTensor:
    """A batch of tensors seen as one tensor of the per-sample (logical) shape."""

    __slots__ = ("_inner", "_level")

    def __init__(self, inner, level):
        self._inner = inner
        self._level = level

    def __repr__(self):
        return f"BatchedTensor(level={self._level.index}, bdim=0, value={self._inner!r})"

    @property
    def __class__(self):
        # As functorch's BatchedTensor is a torch.Tensor, `isinstance(x, ember.Tensor)` holds
        # inside vmap; native kernels still refuse it by its real type, which is what sends
        # the call to the batching rules.
        return _C.Tensor


def rule(*names):
    """Registers a batching rule for the named native primitives."""
    def register(fn):
        for name in names:
            RULES[name] = fn
        return fn
    return register


def _top_level(args):
    top = None
    for a in args:
        if type(a) is BatchedTensor:
            if top is None or a._level.index > top.index:
                top = a._level
        elif type(a) in (list, tuple):
            inner = _top_level(a)
            if inner is not None and (top is None or inner.index > top.index):
                top = inner
    return top


def batched(prim, *args):
    """`_C.<prim>(*args)` for arguments some of which are batched; called from the `except
    TypeError` of a wrapper, it re-raises that error when no argument is batched."""
    level = _top_level(args)
    if level is None:
        raise  # noqa: PLE0704  (the TypeError the caller is handling)
    fn = RULES.get(prim)
    if fn is None:
        raise NoBatchingRule(f"vmap: no batching rule for {prim}")
    return fn(level, *args)


def call(prim, *args):
    """`_C.<prim>(*args)` for the rules' own use: their operands may be batched at outer levels."""
    try:
        return getattr(_C, prim)(*args)
    except TypeError:
        return batched(prim, *args)


def refuse_out(out, what):
    if out is not None:
        raise NoBatchingRule(f"vmap: no batching rule for {what} with out= (in-place writes run per sample)")


def unwrap(x, level):
    """(value with the batch dim first, True) for `x` batched at `level`, else (x, False)."""
    if type(x) is BatchedTensor and x._level is level:
        return x._inner, True
    return x, False


def materialize(x, level):
    """`x` at `level` as a value with the batch dim first (an unbatched one is expanded)."""
    if type(x) is BatchedTensor and x._level is level:
        return x._inner
    return x.unsqueeze(0).expand((level.size,) + tuple(x.shape))


def pad_rank(inner, logical_rank, rank):
    """Inserts size-1 dims after the batch dim so the logical rank becomes `rank` (for
    broadcasting against unbatched operands, which align from the right)."""
    for _ in range(rank - logical_rank):
        inner = inner.unsqueeze(1)
    return inner


def logical_dim(dim, rank):
    """A logical dim wrapped into [0, rank) (rank 0 accepts -1 and 0, as PyTorch)."""
    n = max(rank, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def to_physical(x, levels):
    """The plain tensor under `x` with one leading dim per level of `levels` (ascending),
    expanding the levels `x` is not batched at."""
    present = []
    while type(x) is BatchedTensor:
        present.append(x._level)
        x = x._inner
    present.reverse()
    for i, lv in enumerate(levels):
        if lv not in present:
            x = x.unsqueeze(i)
            x = x.expand(tuple(x.shape[:i]) + (lv.size,) + tuple(x.shape[i + 1:]))
    return x


def from_physical(x, levels):
    for lv in levels:
        x = BatchedTensor(x, lv)
    return x
