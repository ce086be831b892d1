"""Complex tensors: views of their parts, constructors and conjugation.

Ember conjugates eagerly: `conj` returns a conjugated copy for complex input (PyTorch returns a
lazy view with its conjugate bit set); `conj_physical` is the same copy, and since no tensor
ever carries a conjugate bit, `resolve_conj` returns its input and `is_conj` is False.
"""
from ember import _C
from ember._out import write_out

__all__ = [
    "is_complex", "view_as_real", "view_as_complex", "real", "imag", "conj", "resolve_conj", "resolve_neg",
    "is_conj", "is_neg", "complex", "polar",
]


def _tensor(x, fn):
    if not isinstance(x, _C.Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    return x


def is_complex(input):
    return _tensor(input, "is_complex").dtype.is_complex


def view_as_real(input):
    """The complex tensor's float pairs, shape `(..., 2)`, sharing its memory."""
    return _C.view_as_real(_tensor(input, "view_as_real"))


def view_as_complex(input):
    """Float pairs (last dim of size 2, stride 1) seen as complex numbers, sharing memory."""
    return _C.view_as_complex(_tensor(input, "view_as_complex"))


def real(input):
    """The real part: a view for complex input, `input` itself for real input."""
    return _C.real(_tensor(input, "real"))


def imag(input):
    """The imaginary part as a view; real tensors have none (TypeError, as PyTorch)."""
    return _C.imag(_tensor(input, "imag"))


def conj(input):
    """The complex conjugate. Ember copies (PyTorch returns a lazy conjugate view); real input
    is returned as it is, as in PyTorch."""
    return _C.conj(_tensor(input, "conj"))


def resolve_conj(input):
    """Ember has no lazy conjugate bit, so there is nothing to resolve: returns `input`."""
    return _tensor(input, "resolve_conj")


def resolve_neg(input):
    """Ember has no lazy negative bit: returns `input`."""
    return _tensor(input, "resolve_neg")


def is_conj(input):
    _tensor(input, "is_conj")
    return False


def is_neg(input):
    _tensor(input, "is_neg")
    return False


def complex(real, imag, *, out=None):
    """`real + i·imag` (broadcast); both float16, float32 or float64 of one dtype."""
    r = _C.complex(_tensor(real, "complex"), _tensor(imag, "complex"))
    return write_out("complex", out, r)


def polar(abs, angle, *, out=None):
    """`abs·(cos(angle) + i·sin(angle))`."""
    r = _C.polar(_tensor(abs, "polar"), _tensor(angle, "polar"))
    return write_out("polar", out, r)
