"""In-place update primitives for the optimizers, straight on the native kernels (no Python
argument handling, one temporary at most). Callers hold no_grad."""
from ember import _C

_binary = _C.binary


def mul_(t, scalar):
    _binary("mul", t, scalar, t)


def add_(t, other):
    _binary("add", t, other, t)


def axpy_(t, other, alpha):
    """t += alpha · other."""
    if alpha == 1:
        _binary("add", t, other, t)
    elif alpha == -1:
        _binary("sub", t, other, t)
    else:
        _binary("add", t, _binary("mul", other, alpha), t)


def addcmul_(t, a, b, value):
    """t += value · a · b."""
    prod = _binary("mul", a, b)
    if value != 1:
        _binary("mul", prod, value, prod)
    _binary("add", t, prod, t)


def addcdiv_(t, a, b, value):
    """t += value · a / b."""
    quot = _binary("div", a, b)
    if value != 1:
        _binary("mul", quot, value, quot)
    _binary("add", t, quot, t)


def lerp_(t, end, weight):
    """t += weight · (end - t)."""
    step = _binary("sub", end, t)
    _binary("mul", step, weight, step)
    _binary("add", t, step, t)


def sqrt(t):
    return _C.unary("sqrt", t)


def maximum_(t, other):
    _binary("maximum", t, other, t)


def div_(t, scalar):
    _binary("div", t, scalar, t)
