"""`repr(tensor)` in PyTorch's format: `tensor([[1., 2.], ...], dtype=ember.float16)`."""
import numpy as np

from ember import _C

_DEFAULT_DTYPES = ("float32", "int64", "bool", "complex64")
THRESHOLD, EDGEITEMS, LINEWIDTH = 1000, 3, 80


def _float_formatter(values):
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return lambda v: _special(v) or f"{v:.4f}"
    nonzero = np.abs(finite[finite != 0])
    if np.all(finite == np.round(finite)):
        if nonzero.size and nonzero.max() > 1e8:
            return lambda v: _special(v) or f"{v:.4e}"
        return lambda v: _special(v) or f"{v:.0f}."
    if nonzero.size and (nonzero.max() / nonzero.min() > 1000.0 or nonzero.max() > 1e8 or nonzero.min() < 1e-4):
        return lambda v: _special(v) or f"{v:.4e}"
    return lambda v: _special(v) or f"{v:.4f}"


def _complex_formatter(values):
    """PyTorch's complex format: the real parts formatted together and right-aligned, the
    imaginary parts formatted together, joined by their sign: `1.0000e+10+2.j`."""
    real_fmt = _float_formatter(values.real)
    imag_fmt = _float_formatter(np.abs(values.imag))
    width = max((len(real_fmt(v)) for v in values.real.tolist()), default=1)

    def fmt(z):
        z = complex(z)
        sign = "-" if z.imag < 0 or (z.imag == 0 and np.signbit(z.imag)) else "+"
        if np.isnan(z.imag):
            sign = "+"
        return real_fmt(z.real).rjust(width) + sign + imag_fmt(abs(z.imag)) + "j"

    return fmt


def _special(v):
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return None


def _summarize(a):
    """The elements that will be printed (edges only, for big tensors)."""
    if a.ndim == 0 or a.shape[0] <= 2 * EDGEITEMS:
        parts = [a] if a.ndim == 0 else [_summarize(x) for x in a]
    else:
        parts = [_summarize(x) for x in list(a[:EDGEITEMS]) + list(a[-EDGEITEMS:])]
    return np.concatenate([np.ravel(p) for p in parts]) if parts else np.array([])


def _format(a, fmt, width, indent, summarize):
    if a.ndim == 0:
        return fmt(a.item()).rjust(width)
    if a.ndim == 1:
        items = [fmt(v).rjust(width) for v in (a.tolist() if a.dtype != np.float16 else a.astype(np.float64).tolist())]
        if summarize and len(items) > 2 * EDGEITEMS:
            items = items[:EDGEITEMS] + ["..."] + items[-EDGEITEMS:]
        per_line = max(1, (LINEWIDTH - indent) // (width + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = list(range(a.shape[0]))
    if summarize and len(rows) > 2 * EDGEITEMS:
        rows = rows[:EDGEITEMS] + [None] + rows[-EDGEITEMS:]
    sep = "," + "\n" * (a.ndim - 1) + " " * (indent + 1)
    body = [("..." if r is None else _format(a[r], fmt, width, indent + 1, summarize)) for r in rows]
    return "[" + sep.join(body) + "]"


def tensor_repr(t, prefix="tensor("):
    dtype = t.dtype
    wider = {"bfloat16": _C.float32, "complex32": _C.complex64}.get(dtype.name)
    arr = np.asarray(t.detach()._to_dtype(wider) if wider is not None else t)
    suffixes = []
    if arr.size == 0 and arr.ndim != 1:
        suffixes.append(f"size={tuple(arr.shape)}")
    if dtype.name not in _DEFAULT_DTYPES:
        suffixes.append(f"dtype=ember.{dtype.name}")
    grad_fn = t.grad_fn
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    summarize = arr.size > THRESHOLD
    shown = _summarize(arr) if arr.size else arr.ravel()
    if arr.dtype.kind == "c":
        fmt = _complex_formatter(shown.astype(np.complex128))
    elif arr.dtype.kind == "f":
        fmt = _float_formatter(shown.astype(np.float64))
    elif arr.dtype.kind == "b":
        fmt = lambda v: "True" if v else "False"  # noqa: E731
    else:
        fmt = lambda v: str(int(v))  # noqa: E731
    width = max((len(fmt(v)) for v in shown.tolist()), default=1)
    body = "[]" if arr.size == 0 else _format(arr, fmt, width, len(prefix), summarize)
    return prefix + body + "".join(", " + s for s in suffixes) + ")"
