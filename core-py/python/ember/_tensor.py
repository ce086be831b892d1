"""The PyTorch method surface of `ember.Tensor`, added to the native class. Operators and views
are native (in `ember._C`); these methods forward to the functional API."""
import pickle  # noqa: F401  (documents that Tensor pickles via __reduce__)
import warnings

import numpy as np

import ember
from ember import _C, _indexing, _ops
from ember import _memory_format as _mf
from ember._tensor_str import tensor_repr
from ember.nn import functional as _functional

Tensor = _C.Tensor


def _method(name, fn):
    fn.__name__ = fn.__qualname__ = name
    setattr(Tensor, name, fn)


def _assign(self, result):
    """Writes an op's fresh result into `self`, as PyTorch's in-place ops write theirs: refused
    when the result's dtype cannot be cast to `self`'s (a float result into an integer tensor)."""
    if not _C.can_cast(result.dtype, self.dtype):
        shown = [str(d).removeprefix("ember.") for d in (result.dtype, self.dtype)]
        raise RuntimeError(f"result type {shown[0]} can't be cast to the desired output type {shown[1]}")
    return self.copy_(result)


for _name in _ops.UNARY + _ops.PREDICATES + ["round", "nan_to_num", "logit"]:
    _method(_name, getattr(_ops, _name))
for _name in _ops.UNARY + ["round", "nan_to_num", "logit"]:
    def _make(name):
        def method(self, *args, **kwargs):
            if not args and not kwargs and name in _ops.UNARY:
                _C.unary(name, self, self)
                return self
            return _assign(self, getattr(_ops, name)(self, *args, **kwargs))
        return method
    _method(_name + "_", _make(_name))

for _name in _ops.BINARY + list(_ops.ALIASES) + ["clamp", "clip", "clamp_min", "clamp_max", "lerp", "where", "add", "sub", "div", "rsub",
              "sum", "nansum", "mean", "nanmean", "prod", "amax", "amin", "all", "any", "count_nonzero", "max", "min",
              "argmax", "argmin", "aminmax", "var", "std", "logsumexp", "norm", "matmul", "mm", "bmm", "dot", "mv",
              "outer", "addmm", "baddbmm"]:
    _method(_name, getattr(_ops, _name))

for _name in _ops.BINARY + ["add", "sub", "div", "clamp", "clip", "clamp_min", "clamp_max", "lerp"]:
    def _make_binary_inplace(name):
        def method(self, other=None, *args, **kwargs):
            if not args and not kwargs and name in _ops.BINARY:
                _C.binary(name, self, other, self)
                return self
            if other is None:  # clamp_(min=..., max=...): the bounds come as keywords
                return _assign(self, getattr(_ops, name)(self, *args, **kwargs))
            return _assign(self, getattr(_ops, name)(self, other, *args, **kwargs))
        return method
    _method(_name + "_", _make_binary_inplace(_name))


def _where_method(self, condition, other):
    return _ops.where(condition, self, other)


_method("where", _where_method)
_method("__getitem__", _indexing.getitem)
_method("__setitem__", _indexing.setitem)
_method("__repr__", lambda self: tensor_repr(self))
_method("__str__", lambda self: tensor_repr(self))
_method("__iter__", lambda self: (self[i] for i in range(len(self))))
_method("__hash__", lambda self: id(self))
_method("__float__", lambda self: float(self.item()))
_method("__complex__", lambda self: complex(self.item()))
_method("__int__", lambda self: int(self.item()))
_method("__index__", lambda self: _index(self))
_method("__format__", lambda self, spec: format(self.item(), spec) if self.ndim == 0 else tensor_repr(self))


def _index(self):
    if self.numel() != 1 or self.is_floating_point() or self.dtype == _C.bool:
        raise TypeError("only integer tensors of a single element can be converted to an index")
    return int(self.item())


# ---- conversion ----

def _to(self, *args, dtype=None, device=None, copy=False, non_blocking=False, memory_format=_mf.preserve_format):
    """`to(dtype)`, `to(device)`, `to(device, dtype)`, `to(other_tensor)` (its dtype and
    device); `memory_format` lays the result out as PyTorch does. The tensor itself when nothing
    changes, unless `copy=True`."""
    for a in args:
        if isinstance(a, _C.dtype):
            dtype = a
        elif isinstance(a, _C.Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, (str, ember.device)) or (isinstance(a, int) and not isinstance(a, bool)):
            device = a
        else:
            raise TypeError(f"to() received an invalid combination of arguments: {type(a).__name__}")
    out = ember._device.move(self, device)
    fmt = _mf.check(memory_format, "to")
    if fmt is not _mf.preserve_format and fmt is not _mf.suggest(out):
        return _mf.restride(out if dtype is None else out._to_dtype(dtype), fmt)
    out = out if dtype is None or dtype == out.dtype else out._to_dtype(dtype)
    return out.clone() if copy and out is self else out


def _cuda(self, device=None, non_blocking=False, memory_format=_mf.preserve_format):
    """This tensor on a CUDA device (the current one, or `device`: an index, string or device)."""
    target = ember.device("cuda", device) if isinstance(device, int) else ember.device("cuda" if device is None else device)
    if target.type != "cuda":
        raise RuntimeError(f"Invalid device, must be cuda device, got {target}")
    return _to(self, target, memory_format=memory_format)


_method("to", _to)
_method("contiguous", _mf.contiguous)
_method("is_contiguous", _mf.is_contiguous)
_method("clone", _mf.clone)
_method("type", lambda self, dtype=None: f"ember.{self.dtype.name}" if dtype is None else self._to_dtype(dtype))
_method("type_as", lambda self, other: self._to_dtype(other.dtype))
_method("cpu", lambda self, memory_format=_mf.preserve_format: _to(self, "cpu", memory_format=memory_format))
_method("cuda", _cuda)
for _name, _d in [("float", _C.float32), ("double", _C.float64), ("half", _C.float16), ("bfloat16", _C.bfloat16),
                  ("int", _C.int32), ("long", _C.int64), ("short", _C.int16), ("char", _C.int8), ("byte", _C.uint8),
                  ("bool", _C.bool)]:
    _method(_name, (lambda d: lambda self: self._to_dtype(d))(_d))


def _numpy(self, *, force=False):
    """A NumPy array sharing this tensor's memory (bfloat16 and complex32 have no NumPy type and
    are refused)."""
    if self.requires_grad and not force:
        raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
    if self.dtype == _C.complex32:
        raise TypeError("Got unsupported ScalarType ComplexHalf")
    return np.asarray(self)


def _array(self, dtype=None, copy=None):
    a = np.asarray(self)
    return a if dtype is None else a.astype(dtype, copy=False)


_method("numpy", _numpy)
_method("__array__", _array)
_WIDER_FOR_NUMPY = {_C.bfloat16: _C.float32, _C.complex32: _C.complex64}
_method("tolist", lambda self: np.asarray(self._to_dtype(_WIDER_FOR_NUMPY.get(self.dtype, self.dtype))).tolist())


def _rebuild(data, dtype_name, shape, device="cpu"):
    return ember._device.move(_rebuild_on_cpu(data, dtype_name, shape), device)


def _rebuild_on_cpu(data, dtype_name, shape):
    if dtype_name == "complex32":
        pairs = np.frombuffer(bytearray(data), dtype=np.float16).reshape(tuple(shape) + (2,))
        return ember.view_as_complex(ember.from_numpy(pairs.copy()))
    arr = np.frombuffer(bytearray(data), dtype=np.uint16 if dtype_name == "bfloat16" else dtype_name).reshape(shape)
    if dtype_name == "bfloat16":
        f32 = (arr.astype(np.uint32) << 16).view(np.float32)
        return ember.from_numpy(f32.copy())._to_dtype(_C.bfloat16)
    return ember.from_numpy(arr.copy())


def _reduce(self):
    """Pickles the values, with the device to rebuild the tensor on."""
    c = self.cpu().contiguous()
    if self.dtype == _C.bfloat16:
        f32 = np.ascontiguousarray(np.asarray(c._to_dtype(_C.float32)))
        data = (f32.view(np.uint32) >> 16).astype(np.uint16).tobytes()
    elif self.dtype == _C.complex32:
        data = np.ascontiguousarray(np.asarray(_C.view_as_real(c))).tobytes()
    else:
        data = np.ascontiguousarray(np.asarray(c)).tobytes()
    return (_rebuild, (data, self.dtype.name, tuple(self.shape), str(self.device)))


_method("__reduce__", _reduce)
_method("__reduce_ex__", lambda self, protocol: _reduce(self))


# ---- shape helpers built on the native views ----

def _size(self, dim=None):
    return self.shape if dim is None else self.shape[dim]


_method("size", _size)
_method("nelement", lambda self: self.numel())
_method("view_as", lambda self, other: self.view(other.shape))
_method("reshape_as", lambda self, other: self.reshape(other.shape))
_method("expand_as", lambda self, other: self.expand(other.shape))
_method("swapaxes", lambda self, a, b: self.transpose(a, b))
_method("swapdims", lambda self, a, b: self.transpose(a, b))
_method("movedim", lambda self, source, destination: ember.movedim(self, source, destination))
_method("flatten", lambda self, start_dim=0, end_dim=-1: ember.flatten(self, start_dim, end_dim))
_method("unflatten", lambda self, dim, sizes: ember.unflatten(self, dim, sizes))
_method("ravel", lambda self: self.reshape(-1))
_method("fliplr", lambda self: self.flip(1))
_method("flipud", lambda self: self.flip(0))
_method("zero_", lambda self: self.copy_(0))
_method("fill_", lambda self, value: self.copy_(value))
Tensor.T = property(lambda self: self.permute(*reversed(range(self.ndim))))
Tensor.mT = property(lambda self: self.transpose(-2, -1))
Tensor.layout = property(lambda self: "ember.strided")
Tensor.is_cpu = property(lambda self: self.device.type == "cpu")
_method("get_device", lambda self: -1 if self.device.type == "cpu" else self.device.index)
Tensor.itemsize = property(lambda self: self.dtype.itemsize)
Tensor.nbytes = property(lambda self: self.numel() * self.dtype.itemsize)


# ---- autograd (the attributes are native; these add PyTorch's argument handling) ----

def _backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulates the gradient of this tensor into the `.grad` of the graph's leaves (or of
    `inputs`). `gradient` may be omitted only for a one-element tensor; the graph is freed
    unless `retain_graph` (default: `create_graph`)."""
    ember.autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)


def _detach_(self):
    """Detaches in place: only a tensor that is not a view of another may be detached so."""
    if self._is_view():
        raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and hence detach_() cannot be called on these gradients. To fix this error, please refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.")
    self._detach_in_place()
    return self


_native_grad = Tensor.grad


def _get_grad(self):
    if not self.is_leaf and not self.retains_grad:
        warnings.warn("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead.", UserWarning, stacklevel=2)
    return _native_grad.__get__(self)


Tensor.grad = property(_get_grad, _native_grad.__set__, lambda self: _native_grad.__set__(self, None), "The gradient accumulated by backward (None until then).")
_method("backward", _backward)
_method("detach_", _detach_)
Tensor.data = property(lambda self: self.detach(), lambda self, value: self._set_data(value))


# ---- indexing and joining (ember._index_api) ----

from ember import _index_api  # noqa: E402

for _name in ["gather", "scatter", "scatter_add", "scatter_reduce", "index_select", "index_add", "index_copy", "index_fill",
              "index_put", "masked_fill", "masked_select", "masked_scatter", "take", "take_along_dim", "nonzero", "argwhere",
              "split", "chunk", "tensor_split", "unbind", "roll", "tile", "repeat_interleave", "tril", "triu"]:
    _method(_name, getattr(_index_api, _name))
for _name in ["scatter", "scatter_add", "scatter_reduce", "index_add", "index_copy", "index_fill", "index_put", "masked_fill",
              "masked_scatter", "tril", "triu"]:
    _method(_name + "_", getattr(_index_api, "_" + _name + "_"))
_method("repeat", _index_api._repeat)
# ---- sorting, order statistics and scans (ember._sort_api) ----

for _name in ["sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode", "quantile", "nanquantile",
              "unique", "unique_consecutive", "cumsum", "cumprod", "logcumsumexp", "cummax", "cummin", "diff"]:
    _method(_name, getattr(ember._sort_api, _name))
_method("cumsum_", lambda self, dim, *, dtype=None: self.copy_(ember._sort_api.cumsum(self, dim, dtype=dtype)))
_method("cumprod_", lambda self, dim, *, dtype=None: self.copy_(ember._sort_api.cumprod(self, dim, dtype=dtype)))


def _softmax_method(log):
    def method(self, dim, dtype=None):
        return (_functional.log_softmax if log else _functional.softmax)(self, dim, dtype=dtype)

    return method


_method("softmax", _softmax_method(False))
_method("log_softmax", _softmax_method(True))


# ---- complex (ember._complex) ----

def _set_part(get):
    def setter(self, value):
        get(self).copy_(value)

    return setter


Tensor.real = property(ember.real, _set_part(ember.real), doc="The real part (a view for complex tensors).")
Tensor.imag = property(ember.imag, _set_part(ember.imag), doc="The imaginary part, a view (complex tensors only).")
Tensor.H = property(lambda self: ember.conj(self.T))
Tensor.mH = property(lambda self: ember.conj(self.mT))
_method("adjoint", lambda self: ember.conj(self.mT))
for _name in ["conj", "resolve_conj", "resolve_neg", "is_conj", "is_neg", "is_complex"]:
    _method(_name, getattr(ember, _name))
_method("conj_physical_", lambda self: self.copy_(ember.conj_physical(self)))
for _name, _d in [("cfloat", _C.complex64), ("cdouble", _C.complex128), ("chalf", _C.complex32)]:
    _method(_name, (lambda d: lambda self: self._to_dtype(d))(_d))
_method("stft", ember.stft)
_method("istft", ember.istft)


def _new(factory):
    """`Tensor.new_*`: a fresh tensor with this tensor's dtype (and device) unless given."""
    def method(self, *args, dtype=None, device=None, requires_grad=False, **kwargs):
        t = factory(*args, dtype=dtype or self.dtype, device=device or self.device, **kwargs)
        return t.requires_grad_(True) if requires_grad else t

    return method


for _name, _factory in [("new_zeros", ember.zeros), ("new_ones", ember.ones), ("new_empty", ember.empty),
                        ("new_full", ember.full)]:
    _method(_name, _new(_factory))
_method("new_tensor", _new(ember.tensor))
for _name in ["isclose", "allclose", "equal"]:
    _method(_name, getattr(ember, _name))
