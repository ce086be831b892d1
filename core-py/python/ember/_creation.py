"""Creating tensors: from data, from NumPy, from sizes, from ranges and at random."""
import builtins
import numbers

import numpy as np

import ember
from ember import _C
from ember import _memory_format as _mf
from ember._device import check, move
from ember._out import write_out

__all__ = [
    "tensor", "as_tensor", "from_numpy", "frombuffer", "zeros", "ones", "full", "empty", "zeros_like", "ones_like",
    "full_like", "empty_like", "arange", "linspace", "logspace", "eye", "rand", "randn", "randint",
    "randperm", "normal", "bernoulli", "multinomial", "rand_like", "randn_like", "randint_like",
    "get_default_dtype", "set_default_dtype", "is_tensor",
]

_NUMPY_TO_EMBER = {
    np.dtype(np.bool_): "bool", np.dtype(np.uint8): "uint8", np.dtype(np.int8): "int8",
    np.dtype(np.int16): "int16", np.dtype(np.int32): "int32", np.dtype(np.int64): "int64",
    np.dtype(np.float16): "float16", np.dtype(np.float32): "float32", np.dtype(np.float64): "float64",
    np.dtype(np.complex64): "complex64", np.dtype(np.complex128): "complex128",
}
_default_dtype = _C.float32


def get_default_dtype():
    return _default_dtype


def set_default_dtype(d):
    """Sets the dtype Python floats become; only float32 and float64 are accepted, as in PyTorch."""
    global _default_dtype
    if d not in (_C.float32, _C.float64):
        raise TypeError(f"set_default_dtype(): only floating-point types float32 and float64 are supported as the default type, got {d}")
    _default_dtype = d


def _default_complex_dtype():
    """The complex dtype Python complex numbers become: the default float's complex type."""
    return _C.complex128 if _default_dtype == _C.float64 else _C.complex64


def is_tensor(obj):
    return isinstance(obj, _C.Tensor)


def _check_dtype(dtype, name="dtype"):
    if dtype is not None and not isinstance(dtype, _C.dtype):
        raise TypeError(f"{name} must be an ember.dtype (e.g. ember.float32), got {dtype!r}")
    return dtype


def _size(args, size=None, fn="size"):
    """Accepts `f(2, 3)`, `f((2, 3))`, `f([2, 3])` and `f(size=(2, 3))`."""
    if size is not None:
        if args:
            raise TypeError(f"{fn}() got both positional sizes and size=")
        args = (size,)
    if len(args) == 1 and isinstance(args[0], (tuple, list, ember.Size)):
        args = tuple(args[0])
    for i, a in enumerate(args):
        if isinstance(a, builtins.bool) or not isinstance(a, numbers.Integral):
            raise TypeError(f"{fn}(): argument 'size' must be a tuple of ints, but found element of type {type(a).__name__} at pos {i}")
    return tuple(int(a) for a in args)


def _finish(t, dtype=None, device=None, requires_grad=False):
    if dtype is not None and t.dtype != dtype:
        t = t._to_dtype(_check_dtype(dtype))
    t = move(t, device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def from_numpy(ndarray):
    """A tensor sharing `ndarray`'s memory: writes through either are seen by both."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    name = _NUMPY_TO_EMBER.get(ndarray.dtype)
    if name is None or not ndarray.dtype.isnative:
        raise TypeError(
            f"can't convert np.ndarray of type {ndarray.dtype}. The only supported types are: "
            "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint8, and bool."
        )
    item = ndarray.itemsize
    if any(s % item for s in ndarray.strides):
        raise ValueError("from_numpy: strides that are not a multiple of the element size are not supported")
    strides = [s // item for s in ndarray.strides]
    ptr = ndarray.__array_interface__["data"][0]
    # The storage starts at the lowest address any element uses (strides may be negative).
    low = sum(st * (n - 1) for st, n in zip(strides, ndarray.shape) if st < 0 and n > 0)
    high = sum(st * (n - 1) for st, n in zip(strides, ndarray.shape) if st > 0 and n > 0)
    nbytes = 0 if ndarray.size == 0 else (high - low + 1) * item
    return _C.from_buffer(ptr + low * item, nbytes, list(ndarray.shape), strides, -low, ember._DTYPES[name], ndarray)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor over the memory of an object with the buffer protocol (bytes, bytearray,
    array.array, mmap, memoryview), sharing it: `count` elements of `dtype` from byte `offset`
    (count=-1: all that follow). The object stays alive as long as the tensor."""
    if not isinstance(dtype, _C.dtype):
        raise TypeError(f"frombuffer(): argument 'dtype' must be an ember.dtype, got {dtype!r}")
    try:
        raw = np.frombuffer(buffer, dtype=np.uint8)
    except (TypeError, ValueError) as e:
        raise ValueError(f"object does not implement Python buffer protocol ({e}).") from None
    length, size = raw.nbytes, dtype.itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length ({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % size:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a multiple of element size ({size})")
        count = (length - offset) // size
    if offset + count * size > length:
        raise ValueError(f"requested buffer length ({count} * {size} bytes) after offset ({offset} bytes) must not be greater "
                         f"than actual buffer length ({length} bytes)")
    address = raw.__array_interface__["data"][0] + offset
    if address % size:
        # PyTorch reads unaligned elements; Ember's kernels take typed, aligned memory.
        raise ValueError(f"frombuffer: the data at offset {offset} is not aligned to the {size}-byte elements of {dtype}")
    if not raw.flags.writeable:
        import warnings
        warnings.warn("The given buffer is not writable, and Ember does not support non-writable tensors: writing to this "
                      "tensor writes into the buffer's memory. Copy the buffer (bytearray(...)) or the tensor first.", UserWarning, stacklevel=2)
    t = _C.from_buffer(address, count * size, [count], [1], 0, dtype, raw)
    return t.requires_grad_(True) if requires_grad else t


def _infer_dtype(arr):
    kind = arr.dtype.kind
    if kind == "b":
        return _C.bool
    if kind in "iu":
        return _C.int64
    if kind == "f":
        return _default_dtype
    if kind == "c":
        return _default_complex_dtype()
    raise TypeError(f"new(): invalid data type '{arr.dtype}'")


def _to_numpy_data(data):
    try:
        arr = np.asarray(data)
    except ValueError as e:
        raise ValueError(f"tensor(): could not build a tensor from ragged nested sequences: {e}") from None
    if arr.dtype == object or arr.dtype.kind in "USV":
        raise TypeError(f"new(): invalid data type '{type(data).__name__}' (found elements of dtype {arr.dtype})")
    return arr


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of `data` (nested lists, numbers, NumPy arrays, tensors).

    Python floats become the default dtype (float32), ints int64, bools bool; NumPy arrays keep
    their dtype.
    """
    _check_dtype(dtype)
    if isinstance(data, _C.Tensor):
        return _finish(data.detach().clone(), dtype, device, requires_grad)
    if isinstance(data, np.ndarray):
        arr = data
        if arr.dtype not in _NUMPY_TO_EMBER:
            arr = arr.astype({"f": np.float64, "c": np.complex128}.get(arr.dtype.kind, np.int64))
        return _finish(from_numpy(np.array(arr, copy=True)), dtype, device, requires_grad)
    arr = _to_numpy_data(data)
    target = dtype or _infer_dtype(arr)
    storage_dtype = {"f": np.dtype(np.float64), "c": np.dtype(np.complex128)}.get(arr.dtype.kind, arr.dtype)
    if storage_dtype not in _NUMPY_TO_EMBER:
        storage_dtype = np.int64
    arr = np.array(arr, dtype=storage_dtype, order="C")  # (ascontiguousarray would make 0-d arrays 1-d)
    return _finish(from_numpy(arr).clone(), target, device, requires_grad)


def as_tensor(data, dtype=None, device=None):
    """Like `tensor`, but shares memory with a tensor or NumPy array when no conversion is needed."""
    _check_dtype(dtype)
    if isinstance(data, _C.Tensor):
        return _finish(data, dtype, device)
    if isinstance(data, np.ndarray) and data.dtype in _NUMPY_TO_EMBER and data.dtype.isnative:
        return _finish(from_numpy(data), dtype, device)
    return tensor(data, dtype=dtype, device=device)


def _made_on(device):
    """The device string a factory makes its tensor on (made there, not moved after)."""
    return "cpu" if device is None else str(check(device))


def _factory(fn, args, size, dtype, device, requires_grad, default=None):
    shape = _size(args, size, fn.__name__)
    return _finish(fn(shape, _check_dtype(dtype) or default or _default_dtype), None, device, requires_grad)


def zeros(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    if out is not None:
        return write_out("zeros", out, zeros(*size, dtype=dtype or out.dtype, device=device))
    return _factory(lambda s, d: _C.zeros(s, d, _made_on(device)), size, None, dtype, device, requires_grad)


def ones(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    if out is not None:
        return write_out("ones", out, ones(*size, dtype=dtype or out.dtype, device=device))
    return _factory(lambda s, d: _C.full(s, 1, d, _made_on(device)), size, None, dtype, device, requires_grad)


def empty(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False, memory_format=_mf.contiguous_format):
    if out is not None:
        shape = _size(size, None, "empty")
        return out if tuple(out.shape) == shape else write_out("empty", out, empty(*size, dtype=dtype or out.dtype, device=device))
    make = lambda shape, dtype: _mf.empty_in(lambda s: _C.empty(s, dtype, _made_on(device)), shape, memory_format)  # noqa: E731
    make.__name__ = "empty"
    return _factory(make, size, None, dtype, device, requires_grad)


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """`fill_value`'s type decides the dtype when none is given (bool, int64 or the default float)."""
    if out is not None:
        return write_out("full", out, full(size, fill_value, dtype=dtype or out.dtype, device=device))
    if dtype is None:
        if isinstance(fill_value, builtins.bool):
            dtype = _C.bool
        elif isinstance(fill_value, numbers.Integral):
            dtype = _C.int64
        elif isinstance(fill_value, numbers.Complex) and not isinstance(fill_value, numbers.Real):
            dtype = _default_complex_dtype()
        else:
            dtype = _default_dtype
    shape = _size((size,), None, "full")
    return _finish(_C.full(shape, fill_value, _check_dtype(dtype), _made_on(device)), None, device, requires_grad)


def _like(input, dtype):
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"expected a Tensor as input, got {type(input).__name__}")
    return tuple(input.shape), (_check_dtype(dtype) or input.dtype)


def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=_mf.preserve_format):
    shape, d = _like(input, dtype)
    return _finish(_mf.empty_in(lambda s: _C.zeros(s, d, _made_on(input.device if device is None else device)), shape, memory_format, input), None, input.device if device is None else device, requires_grad)


def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=_mf.preserve_format):
    shape, d = _like(input, dtype)
    return _finish(_mf.empty_in(lambda s: _C.full(s, 1, d, _made_on(input.device if device is None else device)), shape, memory_format, input), None, input.device if device is None else device, requires_grad)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    shape, d = _like(input, dtype)
    return _finish(_mf.empty_in(lambda s: _C.full(s, fill_value, d, _made_on(input.device if device is None else device)), shape, memory_format, input), None, input.device if device is None else device, requires_grad)


def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=_mf.preserve_format):
    shape, d = _like(input, dtype)
    return _finish(_mf.empty_in(lambda s: _C.empty(s, d, _made_on(input.device if device is None else device)), shape, memory_format, input), None, input.device if device is None else device, requires_grad)


def _number(x, name):
    if isinstance(x, _C.Tensor):
        x = x.item()
    if not isinstance(x, numbers.Number) or isinstance(x, complex):
        raise TypeError(f"{name} must be a real number, got {type(x).__name__}")
    return x


def _real_part(x, name):
    """`x` as a real number: a complex one with a zero imaginary part is its real part, as
    PyTorch's arange takes it; another complex one does not convert."""
    if isinstance(x, _C.Tensor):
        x = x.item()
    if isinstance(x, complex):
        if x.imag != 0:
            raise RuntimeError("value cannot be converted to type double without overflow")
        return x.real
    return _number(x, name)


def arange(start, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """`arange(end)` or `arange(start, end, step)`; int64 unless an argument is a float. Complex
    dtypes are refused, as in PyTorch."""
    if out is not None:
        return write_out("arange", out, arange(start, end, step, dtype=dtype or out.dtype, device=device))
    if end is None:
        start, end = 0, start
    vals = [_real_part(v, n) for v, n in ((start, "start"), (end, "end"), (step, "step"))]
    if dtype is None:
        dtype = _C.int64 if all(isinstance(v, numbers.Integral) for v in vals) else _default_dtype
    return _finish(_C.arange(*map(builtins.float, vals), _check_dtype(dtype)), None, device, requires_grad)


def _space_end(x, name):
    """A linspace/logspace end: a real number, or a complex one (a tensor gives its item)."""
    if isinstance(x, _C.Tensor):
        x = x.item()
    return x if isinstance(x, complex) else _number(x, name)


def _space(fn, start, end, steps, dtype, base=None):
    """`linspace`/`logspace`: complex ends make the default complex dtype, which only a complex
    `dtype` may replace."""
    if isinstance(steps, builtins.bool) or not isinstance(steps, numbers.Integral):
        raise TypeError(f"{fn}(): argument 'steps' must be int, not {type(steps).__name__}")
    start, end = _space_end(start, "start"), _space_end(end, "end")
    d = _check_dtype(dtype)
    if isinstance(start, complex) or isinstance(end, complex):
        inferred = _default_complex_dtype()
        if d is not None and not d.is_complex:
            part = "double" if inferred == _C.complex128 else "float"
            raise RuntimeError(f"torch.{fn}(): inferred dtype c10::complex<{part}> can't be safely cast to passed dtype {d._legacy_name}")
        parts = [(complex(v).real, complex(v).imag) for v in (start, end)]
        return _C.complex_space(*parts, steps, d or inferred, base)
    d = d or _default_dtype
    if base is None:
        return _C.linspace(start, end, steps, d)
    return _C.logspace(start, end, steps, builtins.float(base), d)


def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """`steps` evenly spaced points from `start` to `end`; complex ends space both parts."""
    if out is not None:
        return write_out("linspace", out, linspace(start, end, steps, dtype=dtype or out.dtype, device=device))
    return _finish(_space("linspace", start, end, steps, dtype), None, device, requires_grad)


def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """`base` to the powers `linspace(start, end, steps)` (complex powers for complex ends)."""
    if out is not None:
        return write_out("logspace", out, logspace(start, end, steps, base, dtype=dtype or out.dtype, device=device))
    return _finish(_space("logspace", start, end, steps, dtype, base), None, device, requires_grad)


def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    if out is not None:
        return write_out("eye", out, eye(n, m, dtype=dtype or out.dtype, device=device))
    m = n if m is None else m
    for v, name in ((n, "n"), (m, "m")):
        if isinstance(v, builtins.bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"eye(): argument '{name}' must be int, not {type(v).__name__}")
    return _finish(_C.eye(n, m, _check_dtype(dtype) or _default_dtype), None, device, requires_grad)


def _on(device):
    """The device string a native draw takes: the samples are drawn where they will live."""
    return "cpu" if device is None else str(check(device))


def _draw(fn, shape, a, b, dtype, generator, device):
    """Samples of `dtype`; a complex dtype draws its real and imaginary parts independently."""
    if not dtype.is_complex:
        return fn(shape, a, b, dtype, generator, _on(device))
    parts = fn(tuple(shape) + (2,), a, b, dtype.to_real() if dtype != _C.complex32 else _C.float32, generator, _on(device))
    return _C.view_as_complex(parts)._to_dtype(dtype)


def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """Uniform on [0, 1) (both parts, for a complex dtype). Deterministic for a seed, whatever the
    thread count."""
    if out is not None:
        return write_out("rand", out, rand(*size, generator=generator, dtype=dtype or out.dtype, device=device))
    shape = _size(size, None, "rand")
    return _finish(_draw(_C.uniform, shape, 0.0, 1.0, _check_dtype(dtype) or _default_dtype, generator, device), None, device, requires_grad)


def randn(*size, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """Standard normal samples; a complex dtype has parts of variance 1/2 (so E|z|² = 1), as PyTorch."""
    if out is not None:
        return write_out("randn", out, randn(*size, generator=generator, dtype=dtype or out.dtype, device=device))
    shape = _size(size, None, "randn")
    d = _check_dtype(dtype) or _default_dtype
    return _finish(_draw(_C.normal, shape, 0.0, 0.5 ** 0.5 if d.is_complex else 1.0, d, generator, device), None, device, requires_grad)


def randint(low=0, high=None, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """`randint(high, size)` or `randint(low, high, size)`: integers on [low, high), int64 by default."""
    if out is not None:
        return write_out("randint", out, randint(low, high, size, generator=generator, dtype=dtype or out.dtype, device=device))
    if size is None:
        if high is None or not isinstance(high, (tuple, list, ember.Size)):
            raise TypeError("randint(): missing required argument 'size'")
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    shape = _size((size,), None, "randint")
    return _finish(_C.randint(shape, int(low), int(high), _check_dtype(dtype) or _C.int64, generator, _on(device)), None, device, requires_grad)


def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    if out is not None:
        return write_out("randperm", out, randperm(n, generator=generator, dtype=dtype or out.dtype, device=device))
    if isinstance(n, builtins.bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"randperm(): argument 'n' must be int, not {type(n).__name__}")
    return _finish(_C.randperm(n, _check_dtype(dtype) or _C.int64, generator), None, device, requires_grad)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """`normal(mean, std, size)` with numbers, or elementwise with tensor `mean`/`std`."""
    if out is not None:
        return write_out("normal", out, normal(mean, std, size, generator=generator, dtype=dtype or (None if size is None else out.dtype), device=device))
    if isinstance(mean, _C.Tensor) or isinstance(std, _C.Tensor):
        ref = mean if isinstance(mean, _C.Tensor) else std
        shape = ember.broadcast_shapes(tuple(getattr(mean, "shape", ())), tuple(getattr(std, "shape", ())))
        z = _C.normal(tuple(shape), 0.0, 1.0, ref.dtype if ref.dtype.is_floating_point else _default_dtype, generator, str(ref.device))
        if isinstance(std, _C.Tensor) and bool((std < 0).any()):
            raise RuntimeError("normal expects all elements of std >= 0.0")
        return z * std + mean
    if size is None:
        raise TypeError("normal(): with number mean and std, 'size' is required")
    shape = _size((size,), None, "normal")
    return _finish(_C.normal(shape, builtins.float(mean), builtins.float(std), _check_dtype(dtype) or _default_dtype, generator, _on(device)), None, device, requires_grad)


def bernoulli(input, p=None, *, generator=None, out=None):
    """1 with probability `input[i]` (or the scalar `p`), else 0, in `input`'s dtype."""
    probs = input if p is None else ember.full_like(input, p, dtype=ember.float64)
    return write_out("bernoulli", out, _C.bernoulli(probs, input.dtype, generator))


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    return write_out("multinomial", out, _C.multinomial(input, num_samples, replacement, generator))


def rand_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    shape, d = _like(input, dtype)
    return rand(shape, dtype=d, device=input.device if device is None else device, requires_grad=requires_grad)


def randn_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    shape, d = _like(input, dtype)
    return randn(shape, dtype=d, device=input.device if device is None else device, requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    shape, d = _like(input, dtype)
    if high is None:
        low, high = 0, low
    return randint(low, high, shape, dtype=d, device=input.device if device is None else device, requires_grad=requires_grad)
