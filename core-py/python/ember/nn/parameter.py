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


def is_lazy(param):
    """Ember has no lazy (uninitialized) parameters."""
    return False
