"""`grad`/`vjp`/`jacrev` inside `vmap`. Ember's autograd runs on plain tensors, so the leaves a
transform differentiates are lifted to the physical batch of every active vmap level (an
unbatched argument is expanded first): each sample then owns its slice of the leaf, and the
gradient of the batch of outputs comes out as the batch of per-sample gradients."""
import ember
from ember._functorch._batched import LEVELS, from_physical, to_physical


def track(leaves):
    """The leaves as fresh graph leaves batched at every active level (ones that already carry
    a graph, from an outer transform, stay connected to it)."""
    levels = list(LEVELS)
    tracked = []
    for leaf in leaves:
        p = to_physical(leaf, levels)
        p = p.view_as(p) if p.requires_grad else p.detach().requires_grad_()
        tracked.append(from_physical(p, levels))
    return tracked


def grads(outputs, inputs, grad_outputs, create_graph):
    """`autograd.grad` of batched outputs w.r.t. leaves from `track`, per sample."""
    levels = list(LEVELS)
    outs = [to_physical(o, levels) for o in outputs]
    ins = [to_physical(x, levels) for x in inputs]
    if grad_outputs is None:
        cotangents = [ember.ones_like(o) for o in outs]
    else:
        cotangents = [to_physical(c, levels) for c in grad_outputs]
    found = ember.autograd.grad(outs, ins, cotangents, retain_graph=True, create_graph=create_graph,
                                allow_unused=True)
    return [ember.zeros_like(x) if g is None else from_physical(g, levels) for g, x in zip(found, inputs)]
