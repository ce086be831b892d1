"""Batching rules for convolutions and pooling. A batch of inputs folds into the conv's own
batch dim N; a batch of weights (or biases) becomes a grouped convolution with the samples'
channels side by side, so one kernel call serves the whole vmap batch."""
from ember._functorch._batched import BatchedTensor, call, materialize, rule, unwrap


def _fold(inner, spatial_dims):
    """(input with the vmap batch folded into N, function restoring it on an output)."""
    size = inner.shape[0]
    if inner.dim() - 1 == spatial_dims + 1:  # unbatched sample (C, *spatial): the vmap batch is N
        return inner, lambda out: out
    folded = inner.reshape((size * inner.shape[1],) + tuple(inner.shape[2:]))
    return folded, lambda out: out.reshape((size, -1) + tuple(out.shape[1:]))


@rule("conv")
def _conv(level, input, weight, bias, stride, padding, dilation, groups, dims):
    _, weight_batched = unwrap(weight, level)
    _, bias_batched = unwrap(bias, level)
    if not (weight_batched or bias_batched):
        folded, restore = _fold(unwrap(input, level)[0], dims)
        return BatchedTensor(restore(call("conv", folded, weight, bias, stride, padding, dilation, groups, dims)), level)
    return _grouped_conv(level, input, weight, bias, stride, padding, dilation, groups, dims)


def _grouped_conv(level, input, weight, bias, stride, padding, dilation, groups, dims):
    size = level.size
    x = materialize(input, level)  # (B, [N,] C, *spatial)
    sample_batched = x.dim() - 1 == dims + 2
    if not sample_batched:
        x = x.unsqueeze(1)
    x = x.movedim(0, 1)  # (N, B, C, *spatial): the samples' channels side by side
    x = x.reshape((x.shape[0], -1) + tuple(x.shape[3:]))
    w = materialize(weight, level)
    w = w.reshape((-1,) + tuple(w.shape[2:]))
    b = None if bias is None else materialize(bias, level).reshape(-1)
    out = call("conv", x, w, b, stride, padding, dilation, groups * size, dims)  # (N, B*C_out, *spatial)
    out = out.reshape((out.shape[0], size, -1) + tuple(out.shape[2:])).movedim(1, 0)
    return BatchedTensor(out if sample_batched else out.squeeze(1), level)


def _pooling(prim):
    def pool_rule(level, input, dims, *args):
        folded, restore = _fold(unwrap(input, level)[0], dims)
        out = call(prim, folded, dims, *args)
        if isinstance(out, tuple):
            return tuple(BatchedTensor(restore(o), level) for o in out)
        return BatchedTensor(restore(out), level)
    rule(prim)(pool_rule)


for _prim in ("max_pool", "avg_pool", "adaptive_avg_pool", "adaptive_max_pool"):
    _pooling(_prim)
