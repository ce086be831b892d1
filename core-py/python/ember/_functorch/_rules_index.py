"""Batching rules for indexing: `tensor[...]`'s advanced part (`index_get`; ints, slices, None
and Ellipsis are views, see `_rules_shape`), `gather`, `index_select` and `embedding`."""
from ember import _C
from ember._functorch._batched import BatchedTensor, NoBatchingRule, call, materialize, pad_rank, rule, unwrap


def _arange_column(size, rank):
    """0..size-1 shaped (size, 1, ..., 1) to index the batch dim next to rank-`rank` indices."""
    return _C.arange(0.0, float(size), 1.0, _C.int64).reshape((size,) + (1,) * rank)


@rule("index_get")
def _index_get(level, view, dims, indices):
    inner = materialize(view, level)
    parts = [unwrap(i, level) for i in indices]
    if not any(b for _, b in parts):
        return _plain_indices(level, inner, dims, indices)
    rank = max(i.dim() - b for i, b in parts)
    padded = [pad_rank(i, i.dim() - 1, rank) if b else i for i, b in parts]
    out = call("index_get", inner, [0] + [d + 1 for d in dims], [_arange_column(level.size, rank)] + padded)
    adjacent = list(dims) == list(range(dims[0], dims[0] + len(dims)))
    if adjacent and dims[0] > 0:
        # The batch index at dim 0 split the advanced indices off from their place; the kernel
        # put their dims first, so move them back behind the dims before `dims[0]`.
        front = list(range(1, rank + 1))
        before = list(range(rank + 1, rank + 1 + dims[0]))
        rest = list(range(rank + 1 + dims[0], out.dim()))
        out = out.permute([0] + before + front + rest)
    return BatchedTensor(out, level)


def _plain_indices(level, inner, dims, indices):
    out = call("index_get", inner, [d + 1 for d in dims], list(indices))
    adjacent = list(dims) == list(range(dims[0], dims[0] + len(dims)))
    if not adjacent:  # the result dims came first, ahead of the batch dim
        rank = max(i.dim() for i in indices)
        out = out.movedim(rank, 0)
    return BatchedTensor(out, level)


@rule("gather")
def _gather(level, input, dim, index):
    inner, index = materialize(input, level), materialize(index, level)
    return BatchedTensor(call("gather", inner, _logical(dim, inner) + 1, index), level)


def _logical(dim, inner):
    from ember._functorch._batched import logical_dim

    return logical_dim(dim, inner.dim() - 1)


@rule("index_select")
def _index_select(level, input, dim, index):
    inner, input_batched = unwrap(input, level)
    if unwrap(index, level)[1]:
        return _index_get(level, input, [_logical(dim, materialize(input, level))], [index])
    return BatchedTensor(call("index_select", inner, _logical(dim, inner) + 1, index), level)


@rule("embedding")
def _embedding(level, weight, indices, padding_idx):
    if unwrap(weight, level)[1]:
        raise NoBatchingRule("vmap: no batching rule for embedding with a batched weight")
    return BatchedTensor(call("embedding", weight, unwrap(indices, level)[0], padding_idx), level)
