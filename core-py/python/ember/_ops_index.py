"""Advanced indexing on top of the gather/scatter kernels (the indexing family).

`_indexing.basic_view` has already applied ints, slices, None and Ellipsis and hands over
(dim in the view, index) pairs. Bool masks become their `nonzero` coordinate columns; integer
indices broadcast together; the kernel places the result dims where NumPy and PyTorch do
(in place when the advanced indices are adjacent, first otherwise). Ints are applied before the
advanced indices, as PyTorch does (NumPy would count them as advanced indices)."""
import numbers

from ember import _C
from ember._functorch._batched import BatchedTensor, batched

_MASKS = (_C.bool, _C.uint8)


def _as_tensor(idx):
    from ember._indexing import _as_index_tensor

    return idx if isinstance(idx, _C.Tensor) else _as_index_tensor(idx)


def _mask_columns(view, d, mask):
    """The coordinate columns of `mask` applied at dim `d`, after checking its shape."""
    for j, size in enumerate(mask.shape):
        if d + j >= view.ndim or view.shape[d + j] != size:
            raise IndexError(
                f"The shape of the mask {list(mask.shape)} at index {j} does not match the shape of the indexed tensor "
                f"{list(view.shape)} at index {d + j}"
            )
    coords = _C.nonzero(mask)
    return [(d + j, coords[:, j]) for j in range(mask.ndim)]


def _resolve(view, advanced):
    """(view, dims, integer index tensors) for `advanced` pairs; a dim of None means "the dim
    after the previous index" (index_put_'s tuple), an index of None skips a dim. A 0-d mask
    adds a dim of size one, as a bool scalar key does."""
    pairs, next_dim, shift = [], 0, 0
    for dim, idx in advanced:
        d = next_dim if dim is None else dim + shift
        if idx is None:
            next_dim = d + 1
            continue
        idx = _as_tensor(idx)
        if BatchedTensor not in (type(idx), type(view)) and idx.device != view.device:
            idx = idx.to(view.device)  # as PyTorch: an index (a list, a CPU mask) goes where the tensor is
        if idx.dtype in _MASKS:
            if idx.ndim == 0:
                view, idx, shift = view.unsqueeze(d), idx.reshape(1), shift + 1
            pairs.extend(_mask_columns(view, d, idx))
            next_dim = d + idx.ndim
        elif idx.is_floating_point():
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        else:
            if d >= view.ndim:
                raise IndexError(f"too many indices for tensor of dimension {view.ndim}")
            pairs.append((d, idx))
            next_dim = d + 1
    return view, [d for d, _ in pairs], [i for _, i in pairs]


def advanced_get(view, advanced):
    view, dims, indices = _resolve(view, advanced)
    try:
        return _C.index_get(view, dims, indices)
    except TypeError:
        return batched("index_get", view, dims, indices)


def advanced_set(view, advanced, value, accumulate=False):
    """`view[advanced] = value` (`+=` with `accumulate`), `value` broadcast to the result."""
    view, dims, indices = _resolve(view, advanced)
    if not isinstance(value, (_C.Tensor, numbers.Number)):
        import ember

        value = ember.tensor(value, device=view.device)
    _C.index_put_(view, dims, indices, value, accumulate)
