"""functorch's machinery for `ember.func`: `vmap`'s batched values and batching rules, and
`functionalize`. See `_batched` for how ops reach the rules."""
from ember._functorch import _rules_conv, _rules_index, _rules_linalg, _rules_nn, _rules_pointwise  # noqa: F401
from ember._functorch import _rules_reduce, _rules_shape  # noqa: F401
from ember._functorch._batched import LEVELS, STATS, BatchedTensor, NoBatchingRule
from ember._functorch._methods import install
from ember._functorch._functionalize import functionalize
from ember._functorch._vmap import vmap

__all__ = ["BatchedTensor", "LEVELS", "NoBatchingRule", "STATS", "functionalize", "install", "vmap"]
