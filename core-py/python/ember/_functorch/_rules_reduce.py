"""Batching rules for reductions (`reduce`: sum/mean/prod/amax/amin/all/any/count_nonzero;
`arg_reduce`: max/min/argmax/argmin) and softmax/log_softmax: logical dims move one to the
right, past the batch dim; "all dims" becomes every dim but the batch dim. A logical 0-d value
gets a size-1 dim to reduce over, as PyTorch treats a scalar's dim 0 / -1."""
import numbers

from ember._functorch._batched import BatchedTensor, call, logical_dim, rule, unwrap


def _dims(dim, rank):
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return list(range(1, rank + 1))
    dims = [dim] if isinstance(dim, numbers.Integral) else list(dim)
    return [logical_dim(d, rank) + 1 for d in dims]


def _scalar_safe(inner, rank):
    """A logical scalar gets one size-1 dim to reduce over."""
    return (inner.unsqueeze(1), 1) if rank == 0 else (inner, rank)


@rule("reduce")
def _reduce(level, name, x, dim=None, keepdim=False, dtype=None):
    inner, _ = unwrap(x, level)
    rank = inner.dim() - 1
    scalar = rank == 0
    inner, rank = _scalar_safe(inner, rank)
    dims = [1] if scalar else _dims(dim, rank)
    return BatchedTensor(call("reduce", name, inner, dims, keepdim and not scalar, dtype), level)


@rule("arg_reduce")
def _arg_reduce(level, x, dim, keepdim, is_max):
    inner, _ = unwrap(x, level)
    rank = inner.dim() - 1
    if dim is None or rank == 0:
        flat = inner.reshape((inner.shape[0], -1))
        values, indices = call("arg_reduce", flat, 1, False, is_max)
    else:
        values, indices = call("arg_reduce", inner, logical_dim(dim, rank) + 1, keepdim, is_max)
    return BatchedTensor(values, level), BatchedTensor(indices, level)


@rule("softmax")
def _softmax(level, x, dim, log):
    inner, _ = unwrap(x, level)
    rank = inner.dim() - 1
    if rank == 0:
        return BatchedTensor(call("softmax", inner.unsqueeze(1), 1, log).squeeze(1), level)
    return BatchedTensor(call("softmax", inner, logical_dim(dim, rank) + 1, log), level)
