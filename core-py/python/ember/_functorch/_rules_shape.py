"""Batching rules for views and joins. The view methods of `BatchedTensor` (Tensor's native
ones: view/reshape/transpose/permute/...) shift logical dims past the batch dim; `cat`, `stack`,
`split`, `chunk` and `unbind` are primitive rules."""
import numbers

from ember._functorch._batched import BatchedTensor, call, logical_dim, materialize, refuse_out, rule, unwrap


def _shape_args(args):
    """`f(2, 3)`, `f((2, 3))` and `f([2, 3])` as one tuple."""
    if len(args) == 1 and not isinstance(args[0], numbers.Integral):
        return tuple(args[0])
    return tuple(args)


def _rank(self):
    return self._inner.dim() - 1


def _dim(self, d, extra=0):
    """Logical dim `d` as a dim of `_inner` (`extra`: the logical rank grows by that much)."""
    return logical_dim(d, _rank(self) + extra) + 1


def _wrap(self, inner):
    return BatchedTensor(inner, self._level)


def reshape(self, *shape):
    return _wrap(self, self._inner.reshape((self._inner.shape[0],) + _shape_args(shape)))


def transpose(self, dim0, dim1):
    return _wrap(self, self._inner.transpose(_dim(self, dim0), _dim(self, dim1)))


def permute(self, *dims):
    return _wrap(self, self._inner.permute([0] + [_dim(self, d) for d in _shape_args(dims)]))


def t(self):
    if _rank(self) > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {_rank(self)}D")
    return self if _rank(self) < 2 else transpose(self, 0, 1)


def unsqueeze(self, dim):
    return _wrap(self, self._inner.unsqueeze(_dim(self, dim, extra=1)))


def squeeze(self, dim=None):
    rank = _rank(self)
    if dim is None:
        dims = [d for d in range(rank) if self._inner.shape[d + 1] == 1]
    else:
        dims = [dim] if isinstance(dim, numbers.Integral) else list(dim)
    inner = self._inner
    for d in sorted((_dim(self, d) for d in dims), reverse=True):
        inner = inner.squeeze(d) if rank else inner
    return _wrap(self, inner)


def expand(self, *sizes):
    sizes = _shape_args(sizes)
    inner = self._inner
    for _ in range(len(sizes) - _rank(self)):
        inner = inner.unsqueeze(1)
    return _wrap(self, inner.expand((inner.shape[0],) + tuple(sizes)))


def select(self, dim, index):
    return _wrap(self, self._inner.select(_dim(self, dim), index))


def narrow(self, dim, start, length):
    return _wrap(self, self._inner.narrow(_dim(self, dim), start, length))


def _slice(self, dim, start, stop, step):
    return _wrap(self, self._inner._slice(_dim(self, dim), start, stop, step))


def flip(self, *dims):
    return _wrap(self, self._inner.flip([_dim(self, d) for d in _shape_args(dims)]))


def diagonal(self, offset=0, dim1=0, dim2=1):
    return _wrap(self, self._inner.diagonal(offset, _dim(self, dim1), _dim(self, dim2)))


def unfold(self, dimension, size, step):
    return _wrap(self, self._inner.unfold(_dim(self, dimension), size, step))


VIEW_METHODS = {
    "view": reshape, "reshape": reshape, "transpose": transpose, "permute": permute, "t": t,
    "unsqueeze": unsqueeze, "squeeze": squeeze, "expand": expand, "broadcast_to": expand, "select": select,
    "narrow": narrow, "_slice": _slice, "flip": flip, "diagonal": diagonal, "unfold": unfold,
}


def _joined(level, tensors):
    return [materialize(t, level) for t in tensors]


@rule("cat")
def _cat(level, tensors, dim=0, out=None):
    refuse_out(out, "cat")
    inners = _joined(level, tensors)
    # PyTorch skips 1-d empty tensors in cat; their batched form is 2-d, so drop them here.
    kept = [x for x in inners if not (x.dim() == 2 and x.shape[1] == 0)] or inners[:1]
    rank = max(x.dim() for x in kept) - 1
    return BatchedTensor(call("cat", kept, logical_dim(dim, rank) + 1), level)


@rule("stack")
def _stack(level, tensors, dim=0):
    inners = _joined(level, tensors)
    return BatchedTensor(call("stack", inners, logical_dim(dim, inners[0].dim()) + 1), level)


def _pieces(level, parts):
    return tuple(BatchedTensor(p, level) for p in parts)


def _splitting(prim):
    def split_rule(level, x, sizes, dim=0):
        inner, _ = unwrap(x, level)
        return _pieces(level, call(prim, inner, sizes, logical_dim(dim, inner.dim() - 1) + 1))
    rule(prim)(split_rule)


for _prim in ("split", "split_with_sizes", "chunk", "tensor_split_sections", "tensor_split_indices"):
    _splitting(_prim)


@rule("unbind")
def _unbind(level, x, dim=0):
    inner, _ = unwrap(x, level)
    return _pieces(level, call("unbind", inner, logical_dim(dim, inner.dim() - 1) + 1))
