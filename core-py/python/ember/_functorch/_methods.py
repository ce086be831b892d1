"""The Tensor surface of `BatchedTensor`: logical metadata, the view rules, operators, and the
Python methods of `ember.Tensor` (which reach the batching rules through Ember's wrappers).
Methods that need concrete values or write in place raise `NoBatchingRule`, so vmap runs the
function per sample instead."""
import types

from ember import _C
from ember._functorch import _rules_shape
from ember._functorch._batched import BatchedTensor, NoBatchingRule, batched

# Python methods of Tensor that must not run on a batch as if it were one sample.
_PER_SAMPLE_ONLY = {
    "item", "tolist", "numpy", "__array__", "__bool__", "__float__", "__int__", "__index__", "__complex__",
    "__format__", "__setitem__", "copy_", "backward", "register_hook", "retain_grad", "__reduce__", "__reduce_ex__",
    "data_ptr", "storage_offset", "stride", "as_strided", "_set_data", "__iter__",
}
_OWN = {"__repr__", "__str__", "__hash__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__init__",
        "__getattribute__", "__setattr__", "__delattr__", "__dir__", "__class__", "__new__", "__init_subclass__",
        "__subclasshook__", "__sizeof__", "__doc__", "__module__", "__slots__", "__getstate__"}

_BINARY_OPERATORS = {
    "add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "floordiv": "floor_divide", "mod": "remainder",
    "pow": "pow", "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "bitwise_left_shift",
    "rshift": "bitwise_right_shift",
}
_COMPARISONS = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}
_UNARY_OPERATORS = {"neg": "neg", "abs": "abs", "invert": "bitwise_not"}


def _per_sample_only(name):
    def method(self, *args, **kwargs):
        raise NoBatchingRule(f"vmap: {name}() needs the value of each sample (it runs per sample)")
    return method


def _inner_then_wrap(name):
    def method(self, *args, **kwargs):
        return BatchedTensor(getattr(self._inner, name)(*args, **kwargs), self._level)
    return method


def _forward(name):
    return property(lambda self: getattr(self._inner, name))


def _requires_grad_(self, requires_grad=True):
    self._inner.requires_grad_(requires_grad)
    return self


def _operators():
    ops = {}
    for py, prim in _BINARY_OPERATORS.items():
        ops[f"__{py}__"] = (lambda p: lambda self, other: batched("binary", p, self, other))(prim)
        ops[f"__r{py}__"] = (lambda p: lambda self, other: batched("binary", p, other, self))(prim)
    for py, prim in _COMPARISONS.items():
        ops[f"__{py}__"] = (lambda p: lambda self, other: batched("binary", p, self, other))(prim)
    for py, prim in _UNARY_OPERATORS.items():
        ops[f"__{py}__"] = (lambda p: lambda self: batched("unary", p, self))(prim)
    ops["__pos__"] = lambda self: self
    ops["__matmul__"] = lambda self, other: batched("matmul", self, other)
    ops["__rmatmul__"] = lambda self, other: batched("matmul", other, self)
    return ops


def install():
    """Gives BatchedTensor the Tensor API (once, after `ember.Tensor` has all its methods)."""
    for name in dir(_C.Tensor):
        attr = getattr(_C.Tensor, name, None)
        if name in _OWN or name in _rules_shape.VIEW_METHODS:
            continue
        if name in _PER_SAMPLE_ONLY or (name.endswith("_") and not name.endswith("__") and name != "requires_grad_"):
            setattr(BatchedTensor, name, _per_sample_only(name))
        elif isinstance(attr, (types.FunctionType, property)):
            setattr(BatchedTensor, name, attr)
    for name, fn in _rules_shape.VIEW_METHODS.items():
        setattr(BatchedTensor, name, fn)
    for name in ("detach", "clone", "contiguous", "_to_dtype", "conj"):
        setattr(BatchedTensor, name, _inner_then_wrap(name))
    for name in ("dtype", "device", "requires_grad", "is_leaf", "grad_fn", "is_cuda", "_version"):
        setattr(BatchedTensor, name, _forward(name))
    for name, fn in _operators().items():
        setattr(BatchedTensor, name, fn)
    BatchedTensor.requires_grad_ = _requires_grad_
    BatchedTensor._is_view = lambda self: self._inner._is_view()
    BatchedTensor.shape = property(lambda self: _size(tuple(self._inner.shape)[1:]))
    BatchedTensor.ndim = property(lambda self: self._inner.dim() - 1)
    BatchedTensor.dim = lambda self: self._inner.dim() - 1
    BatchedTensor.numel = lambda self: _prod(tuple(self._inner.shape)[1:])
    BatchedTensor.is_floating_point = lambda self: self._inner.is_floating_point()
    BatchedTensor.element_size = lambda self: self._inner.element_size()
    BatchedTensor.__len__ = _len
    BatchedTensor.__hash__ = lambda self: id(self)
    BatchedTensor.__iter__ = lambda self: (self[i] for i in range(len(self)))


def _len(self):
    if self.dim() == 0:
        raise TypeError("len() of a 0-d tensor")
    return self.shape[0]


def _size(dims):
    from ember._size import Size

    return Size(dims)


def _prod(dims):
    n = 1
    for d in dims:
        n *= d
    return n
