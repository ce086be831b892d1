"""`nn.Parameter`: a tensor that a `Module` registers as a parameter when assigned to it."""
import ember
from ember import _C


class Parameter(_C.Tensor):
    """An alias of `data` (same memory, no history) that requires grad by default. Ops on a
    Parameter return plain tensors, as in PyTorch."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = ember.empty(0)
        if not isinstance(data, _C.Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}")
        return super().__new__(cls, data, requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.detach(), self.requires_grad))

    def __reduce__(self):
        return self.__reduce_ex__(2)


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class _UninitializedTensorMixin:
    """A placeholder whose shape is not known yet: it holds an empty tensor (keeping dtype
    conversions applied to it) until `materialize` gives it a shape and turns it into its
    `cls_to_become`. Ember cannot intercept every op on it as PyTorch's `__torch_function__`
    does, so only `shape` and `share_memory_` refuse."""

    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None):
        """Gives the placeholder `shape` (uninitialised memory), on `device` (default: where the
        placeholder is) in `dtype` (default: its dtype)."""
        device = self.device if device is None else ember._device.check(device)
        self.data = ember.empty(tuple(shape), dtype=dtype if dtype is not None else self.dtype, device=device)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually happens in `load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call `forward` to initialize the parameters before accessing their attributes.")

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self):
        return f"<{type(self).__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        return (type(self), (self.requires_grad,))

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, dtype=self.dtype)
        return memo[id(self)]


def is_lazy(param):
    """Whether `param` is an UninitializedParameter or UninitializedBuffer."""
    return isinstance(param, _UninitializedTensorMixin)


class UninitializedParameter(_UninitializedTensorMixin, Parameter):
    """A Parameter whose shape a lazy module fills in on its first forward."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        ember._device.check(device)
        return super().__new__(cls, ember.empty(0, dtype=dtype), requires_grad)


class _MaterializedBuffer(_C.Tensor):
    """What a materialized UninitializedBuffer becomes: Ember's Tensor type cannot be assigned
    as `__class__` to a Python subclass instance, so the lazy module that owns the buffer
    swaps it for a plain tensor sharing its memory (`LazyModuleMixin`)."""


class UninitializedBuffer(_UninitializedTensorMixin, _C.Tensor):
    """A buffer whose shape a lazy module fills in on its first forward."""

    cls_to_become = _MaterializedBuffer

    def __new__(cls, requires_grad=False, device=None, dtype=None):
        ember._device.check(device)
        return super().__new__(cls, ember.empty(0, dtype=dtype), requires_grad)
