"""`tensor[key]` and `tensor[key] = value`. Ints, slices, None and Ellipsis make views; tensors,
lists and bool masks (advanced indexing) gather, as NumPy and PyTorch do."""
import numbers

from ember import _C
from ember._functorch._batched import BatchedTensor


def _is_advanced(k):
    return isinstance(k, (_C.Tensor, list)) or (hasattr(k, "__array_interface__") and not isinstance(k, numbers.Number))


def _expand_key(key, ndim):
    """The key as a tuple with Ellipsis replaced by full slices."""
    if not isinstance(key, tuple):
        key = (key,)
    consumed = sum(0 if k is None or k is Ellipsis else (k.ndim if isinstance(k, _C.Tensor) and k.dtype == _C.bool else 1) for k in key)
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    out = []
    for k in key:
        if k is Ellipsis:
            out.extend([slice(None)] * (ndim - consumed))
        else:
            out.append(k)
    return out


def basic_view(t, key):
    """Applies the basic part of `key`; returns the view and the advanced indices left as
    (dim in the view, index) pairs."""
    view, dim, advanced = t, 0, []
    for k in _expand_key(key, t.ndim):
        if k is None:
            view = view.unsqueeze(dim)
            dim += 1
        elif isinstance(k, slice):
            step = 1 if k.step is None else k.step
            if step <= 0:
                raise ValueError("step must be greater than zero")
            view = view._slice(dim, k.start, k.stop, step)
            dim += 1
        elif isinstance(k, bool):
            view = view.unsqueeze(dim)
            advanced.append((dim, _C.full((1,), 1 if k else 0, _C.bool)))
            dim += 1
        elif isinstance(k, numbers.Integral):
            size = view.shape[dim]
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for dimension {dim} with size {size}")
            view = view.select(dim, int(k))
        elif isinstance(k, _C.Tensor) and type(k) is not BatchedTensor and k.ndim == 0 and k.dtype not in (_C.bool, _C.uint8) and not k.is_floating_point():
            view = view.select(dim, int(k.item()))
        elif _is_advanced(k):
            idx = k if isinstance(k, _C.Tensor) else _as_index_tensor(k)
            advanced.append((dim, idx))
            dim += idx.ndim if idx.dtype in (_C.bool, _C.uint8) else 1
        else:
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices "
                f"(got {type(k).__name__})"
            )
    return view, advanced


def _as_index_tensor(k):
    import ember

    t = ember.tensor(k)
    if t.numel() == 0:
        t = t._to_dtype(_C.int64)
    if t.is_floating_point():
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return t


def _is_whole_mask(t, key):
    """`t[mask]` with a bool mask of `t`'s own shape: a masked select or fill, no coordinates."""
    return isinstance(key, _C.Tensor) and key.dtype == _C.bool and t.ndim > 0 and key.shape == t.shape


def getitem(t, key):
    if _is_whole_mask(t, key):
        return _C.masked_select(t, key)
    view, advanced = basic_view(t, key)
    if not advanced:
        return view
    from ember._ops_index import advanced_get

    return advanced_get(view, advanced)


def setitem(t, key, value):
    if _is_whole_mask(t, key) and (isinstance(value, numbers.Number) or (isinstance(value, _C.Tensor) and value.ndim == 0)):
        _C.masked_fill(t, key, value, True)
        return
    view, advanced = basic_view(t, key)
    if not advanced:
        view.copy_(value)
        return
    from ember._ops_index import advanced_set

    advanced_set(view, advanced, value)
