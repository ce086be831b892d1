"""Multi-tensor ops, PyTorch's `torch._foreach_*`: one call applies an elementwise op to every
tensor of a list (the optimizers' `foreach=True` steps). Each tensor goes straight to the native
kernel, writing in place (`_foreach_op_`) or into a fresh result (`_foreach_op`), with no
Python argument handling per tensor and at most one temporary.

The second operand is a Number, a list of Numbers (one per tensor), a list of tensors, or one
tensor (broadcast to all), as in PyTorch; ops return a tuple of tensors."""
from numbers import Number

from ember import _C

__all__ = []  # private API, reached as ember._foreach_*, as in PyTorch

_binary, _unary = _C.binary, _C.unary


def _check_list(tensors, name="self"):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("Tensor list must have at least one tensor.")
    for t in tensors:
        if not isinstance(t, _C.Tensor):
            raise TypeError(f"expected {name} to be a list of Tensors, but it holds a {type(t).__name__}")
    return tensors


def _per_tensor(tensors, operand, what="other"):
    """`operand` as one value per tensor: a list checked for length, else repeated."""
    if isinstance(operand, (list, tuple)):
        if len(operand) != len(tensors):
            if operand and isinstance(operand[0], _C.Tensor):
                raise RuntimeError(f"Tensor lists must have the same number of tensors, got {len(tensors)} and {len(operand)}")
            raise RuntimeError("Tensor list must have same number of elements as scalar list.")
        return list(operand)
    if isinstance(operand, (Number, _C.Tensor)):
        return [operand] * len(tensors)
    raise TypeError(f"expected {what} to be a Number, a list of Numbers, a Tensor or a list of Tensors, but got {type(operand).__name__}")


def _axpy(out, a, b, alpha):
    """a + alpha · b, into `out` (a fresh tensor when None)."""
    if alpha == 1:
        result = _binary("add", a, b, out)
    elif alpha == -1:
        result = _binary("sub", a, b, out)
    else:
        result = _binary("add", a, _binary("mul", b, alpha), out)
    return out if out is not None else result


def _add(self, other, alpha, inplace):
    tensors = _check_list(self)
    return tuple(_axpy(t if inplace else None, t, o, alpha) for t, o in zip(tensors, _per_tensor(tensors, other)))


def _foreach_add_(self, other, *, alpha=1):
    """self[i] += alpha · other[i]."""
    _add(self, other, alpha, True)


def _foreach_add(self, other, *, alpha=1):
    return _add(self, other, alpha, False)


def _foreach_sub_(self, other, *, alpha=1):
    """self[i] -= alpha · other[i]."""
    _add(self, other, -alpha, True)


def _foreach_sub(self, other, *, alpha=1):
    return _add(self, other, -alpha, False)


def _elementwise(name, self, other, inplace):
    tensors = _check_list(self)
    if inplace:
        for t, o in zip(tensors, _per_tensor(tensors, other)):
            _binary(name, t, o, t)
        return tuple(tensors)
    return tuple(_binary(name, t, o) for t, o in zip(tensors, _per_tensor(tensors, other)))


def _foreach_mul_(self, other):
    _elementwise("mul", self, other, True)


def _foreach_mul(self, other):
    return _elementwise("mul", self, other, False)


def _foreach_div_(self, other):
    _elementwise("div", self, other, True)


def _foreach_div(self, other):
    return _elementwise("div", self, other, False)


def _foreach_maximum_(self, other):
    _elementwise("maximum", self, other, True)


def _foreach_maximum(self, other):
    return _elementwise("maximum", self, other, False)


def _pointwise(name, self, tensor1, tensor2, value, inplace):
    """self[i] + value[i] · (tensor1[i] `name` tensor2[i]), the product or quotient scaled in
    place so it is the only temporary."""
    tensors = _check_list(self)
    firsts, seconds = _per_tensor(tensors, tensor1, "tensor1"), _per_tensor(tensors, tensor2, "tensor2")
    results = []
    for t, a, b, v in zip(tensors, firsts, seconds, _per_tensor(tensors, value, "value")):
        term = _binary(name, a, b)
        if not (isinstance(v, Number) and v == 1):
            _binary("mul", term, v, term)
        result = t if inplace else term
        _binary("add", t, term, result)
        results.append(result)
    return tuple(results)


def _foreach_addcmul_(self, tensor1, tensor2, value=1):
    """self[i] += value · tensor1[i] · tensor2[i]."""
    _pointwise("mul", self, tensor1, tensor2, value, True)


def _foreach_addcmul(self, tensor1, tensor2, value=1):
    return _pointwise("mul", self, tensor1, tensor2, value, False)


def _foreach_addcdiv_(self, tensor1, tensor2, value=1):
    """self[i] += value · tensor1[i] / tensor2[i]."""
    _pointwise("div", self, tensor1, tensor2, value, True)


def _foreach_addcdiv(self, tensor1, tensor2, value=1):
    return _pointwise("div", self, tensor1, tensor2, value, False)


def _lerp(self, tensors1, weight, inplace):
    """self[i] + weight[i] · (tensors1[i] - self[i])."""
    tensors = _check_list(self)
    results = []
    for t, end, w in zip(tensors, _per_tensor(tensors, tensors1, "tensors1"), _per_tensor(tensors, weight, "weight")):
        step = _binary("sub", end, t)
        _binary("mul", step, w, step)
        result = t if inplace else step
        _binary("add", t, step, result)
        results.append(result)
    return tuple(results)


def _foreach_lerp_(self, tensors1, weight):
    _lerp(self, tensors1, weight, True)


def _foreach_lerp(self, tensors1, weight):
    return _lerp(self, tensors1, weight, False)


def _unary_all(name, self, inplace):
    tensors = _check_list(self)
    if inplace:
        for t in tensors:
            _unary(name, t, t)
        return tuple(tensors)
    return tuple(_unary(name, t) for t in tensors)


def _foreach_sqrt_(self):
    _unary_all("sqrt", self, True)


def _foreach_sqrt(self):
    return _unary_all("sqrt", self, False)


def _foreach_neg_(self):
    _unary_all("neg", self, True)


def _foreach_neg(self):
    return _unary_all("neg", self, False)


def _foreach_abs_(self):
    _unary_all("abs", self, True)


def _foreach_abs(self):
    return _unary_all("abs", self, False)


def _foreach_zero_(self):
    for t in _check_list(self):
        t.zero_()


def _foreach_copy_(self, src):
    tensors = _check_list(self)
    for t, s in zip(tensors, _per_tensor(tensors, src, "src")):
        t.copy_(s)
