"""Flattening parameters into one vector and back."""
import ember
from ember import _C
from ember.nn.modules.module import _typename


def parameters_to_vector(parameters):
    """One 1-d tensor: every parameter flattened, in order (differentiable)."""
    return ember.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Points each parameter's data at its slice of `vec` (the inverse of parameters_to_vector)."""
    if not isinstance(vec, _C.Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {_typename(vec)}")
    pointer = 0
    for param in parameters:
        n = param.numel()
        param.data = vec[pointer:pointer + n].view_as(param).detach()
        pointer += n
