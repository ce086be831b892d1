"""Batching rules for the losses and random layers the functorch recipes use: `nll_loss`
(so `cross_entropy`) and dropout's mask under `randomness="different"`."""
from ember import _C
from ember._functorch._batched import BatchedTensor, NoBatchingRule, call, materialize, rule, unwrap


@rule("nll_loss")
def _nll_loss(level, input, target, weight, reduction, ignore_index):
    if unwrap(weight, level)[1]:
        raise NoBatchingRule("vmap: no batching rule for nll_loss with a batched class weight")
    x, t = materialize(input, level), materialize(target, level)
    size = level.size
    sample_batched = t.dim() > 1  # per sample: input (N, C, ...) with target (N, ...)
    if sample_batched:
        x = x.reshape((-1,) + tuple(x.shape[2:]))
        t = t.reshape((-1,) + tuple(t.shape[2:]))
    losses, _ = call("nll_loss", x, t, weight, "none", ignore_index)
    losses = losses.reshape((size, -1))
    picked = t.reshape((size, -1))
    kept = (picked != ignore_index).to(losses.dtype)
    weights = kept if weight is None else kept * weight[picked.clamp(0, weight.shape[0] - 1)]
    total = weights.sum(1)
    if reduction == "none":
        loss = losses.reshape(tuple(materialize(target, level).shape))
    elif reduction == "sum":
        loss = losses.sum(1)
    else:
        loss = losses.sum(1) / total
    return BatchedTensor(loss, level), BatchedTensor(total, level)


def dropout_mask(input, mask_shape, p, dtype):
    """Dropout's keep mask for a batched `input`: one draw for the whole batch (the same
    mask for every sample) under `randomness="same"`, one per sample under "different"."""
    from ember._functorch._vmap import random_op

    level = input._level
    with random_op(level):
        if level.randomness == "different":
            u = _C.uniform((level.size,) + tuple(mask_shape), 0.0, 1.0, _C.float32)
            return BatchedTensor((u >= p)._to_dtype(dtype), level)
        return (_C.uniform(tuple(mask_shape), 0.0, 1.0, _C.float32) >= p)._to_dtype(dtype)
