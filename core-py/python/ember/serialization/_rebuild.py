"""What a checkpoint's pickle may name, and the Ember objects each name rebuilds.

`ALLOWED` maps (module, name) to the object the unpickler hands back for it; every other global is
refused. Each rebuild function checks its arguments, since they come from the file. Functions and
classes are handed out wrapped in `Global`, whose `__setstate__` refuses the pickle's BUILD opcode:
otherwise a file could set attributes on objects every later load shares (a function's defaults,
`ember.Tensor`'s methods).
"""
import builtins
import collections
import pickle

import ember
from ember import _C
from ember.serialization._names import DTYPE_NAMES, STORAGE_DTYPE


def _refuse_state(obj, state):
    raise pickle.UnpicklingError(f"a checkpoint may not set the state of {obj!r}")


class Global:
    """An allowed function or class as the unpickler hands it out: callable, and closed to BUILD."""

    __slots__ = ("name", "fn")
    __setstate__ = _refuse_state

    def __init__(self, name, fn):
        self.name, self.fn = name, fn

    def __call__(self, *args):
        return self.fn(*args)

    def __repr__(self):
        return self.name


class StorageType:
    """Stands for `torch.FloatStorage` etc. (`dtype` None: `torch.UntypedStorage`, bytes)."""

    __slots__ = ("name", "dtype")
    __setstate__ = _refuse_state

    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype

    def __repr__(self):
        return f"torch.{self.name}"


class Storage:
    """A checkpoint storage: its bytes as a uint8 tensor, the dtype it was saved as, and for the
    legacy format's storage views an element offset into a shared root."""

    __setstate__ = _refuse_state

    def __init__(self, data, dtype, offset=0, shared_roots=None):
        self.data, self.dtype, self.offset = data, dtype, offset
        # A legacy storage view shares its root's typed tensors (one version counter).
        self._roots = {} if shared_roots is None else shared_roots._roots

    def root(self, dtype):
        """The storage as a 1-d tensor of `dtype`; one per dtype, so tensors on it share memory
        and version counter."""
        r = self._roots.get(dtype)
        if r is None:
            r = self._roots[dtype] = _C._storage_as(self.data, dtype)
        return r

    def element_size(self):
        return 1 if self.dtype is None else self.dtype.itemsize

    def nbytes(self):
        return self.data.numel()


def _ints(value, what):
    if not isinstance(value, (tuple, list)) or not all(type(v) is int for v in value):
        raise pickle.UnpicklingError(f"tensor {what} must be a tuple of ints, got {value!r}")
    if any(v < 0 for v in value):
        raise pickle.UnpicklingError(f"tensor {what} must not be negative, got {tuple(value)}")
    return list(value)


def _tensor_on(storage, storage_offset, size, stride, dtype=None):
    if not isinstance(storage, Storage):
        raise pickle.UnpicklingError(f"expected a storage to rebuild a tensor on, got {type(storage).__name__}")
    dtype = storage.dtype if dtype is None else dtype
    if dtype is None or not isinstance(dtype, _C.dtype):
        raise pickle.UnpicklingError(f"cannot rebuild a tensor of dtype {dtype!r}")
    if type(storage_offset) is not int or storage_offset < 0:
        raise pickle.UnpicklingError(f"tensor storage offset must be a non-negative int, got {storage_offset!r}")
    size, stride = _ints(size, "size"), _ints(stride, "stride")
    try:
        return _C._on_storage(storage.root(dtype), size, stride, storage.offset + storage_offset)
    except (RuntimeError, OverflowError) as e:
        raise pickle.UnpicklingError(f"tensor layout does not fit its storage: {e}") from None


def _check_flag(requires_grad):
    if type(requires_grad) is not bool:
        raise pickle.UnpicklingError(f"requires_grad must be a bool, got {type(requires_grad).__name__}")
    return requires_grad


def _requires_grad(t, requires_grad):
    if _check_flag(requires_grad):
        t.requires_grad_(True)
    return t


def rebuild_tensor(storage, storage_offset, size, stride):
    return _tensor_on(storage, storage_offset, size, stride)


def rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None):
    return _requires_grad(_tensor_on(storage, storage_offset, size, stride), requires_grad)


def rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None):
    return _requires_grad(_tensor_on(storage, storage_offset, size, stride, dtype), requires_grad)


def _check_tensor(data):
    if not isinstance(data, _C.Tensor):
        raise pickle.UnpicklingError(f"expected a tensor to rebuild a parameter from, got {type(data).__name__}")
    return data


def make_parameter(data, requires_grad):
    """`nn.Parameter(data, requires_grad)` once `ember.nn.Parameter` exists; until then the
    tensor itself, as a leaf with the saved `requires_grad`."""
    param = getattr(ember.nn, "Parameter", None)
    if param is not None:
        return param(data, _check_flag(requires_grad))
    return _requires_grad(data, requires_grad)


def _set_state(obj, state):
    """PyTorch's extra attributes of a tensor or parameter (a dict, or (dict, slots))."""
    if state is None:
        return obj
    dict_state, slots = state if isinstance(state, tuple) and len(state) == 2 else (state, None)
    for part in (dict_state, slots):
        if part is None:
            continue
        if not isinstance(part, dict):
            raise pickle.UnpicklingError(f"tensor state must be a dict, got {type(part).__name__}")
        for k, v in part.items():
            if not isinstance(k, str) or k.startswith("__"):
                raise pickle.UnpicklingError(f"refusing to set attribute {k!r} on a tensor")
            setattr(obj, k, v)
    return obj


def rebuild_parameter(data, requires_grad, backward_hooks):
    return make_parameter(_check_tensor(data), requires_grad)


def rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return _set_state(rebuild_parameter(data, requires_grad, backward_hooks), state)


_TENSOR_REBUILDS = (rebuild_tensor, rebuild_tensor_v2, rebuild_tensor_v3)


def rebuild_from_type_v2(func, new_type, args, state):
    """A tensor saved with extra attributes: `func(*args)`, then the attributes."""
    rebuild = getattr(func, "fn", None)
    if rebuild not in _TENSOR_REBUILDS or getattr(new_type, "fn", None) is not _C.Tensor or not isinstance(args, tuple):
        raise pickle.UnpicklingError(f"cannot rebuild a tensor of type {new_type!r} with {func!r}")
    return _set_state(rebuild(*args), state)


def load_from_bytes(b):
    """A storage pickled by itself (`torch.storage._load_from_bytes`): a legacy checkpoint of it."""
    import io

    from ember.serialization._load import load

    if not isinstance(b, bytes):
        raise pickle.UnpicklingError(f"_load_from_bytes expects bytes, got {type(b).__name__}")
    storage = load(io.BytesIO(b), weights_only=True)
    if not isinstance(storage, Storage):
        raise pickle.UnpicklingError(f"_load_from_bytes did not hold a storage but {type(storage).__name__}")
    return storage


def _encode(text, encoding="latin1"):
    # Protocol-2 pickles write bytes as `_codecs.encode(str, "latin1")`.
    if not isinstance(text, str) or encoding != "latin1":
        raise pickle.UnpicklingError(f"_codecs.encode is allowed only for latin1 text, got {encoding!r}")
    return text.encode("latin1")


_FUNCTIONS = {
    ("torch._utils", "_rebuild_tensor"): rebuild_tensor,
    ("torch._utils", "_rebuild_tensor_v2"): rebuild_tensor_v2,
    ("torch._utils", "_rebuild_tensor_v3"): rebuild_tensor_v3,
    ("torch._utils", "_rebuild_parameter"): rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): rebuild_parameter_with_state,
    ("torch._tensor", "_rebuild_from_type_v2"): rebuild_from_type_v2,
    ("torch", "Tensor"): _C.Tensor,
    ("torch.storage", "_load_from_bytes"): load_from_bytes,
    ("torch", "Size"): ember.Size,
    ("torch", "device"): ember.device,
    ("_codecs", "encode"): _encode,
}

ALLOWED = {
    # Built-in types are immutable, so they are handed out as they are.
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("builtins", "set"): builtins.set,
    ("builtins", "frozenset"): builtins.frozenset,
    **{key: Global(".".join(key), fn) for key, fn in _FUNCTIONS.items()},
    ("torch", "UntypedStorage"): StorageType("UntypedStorage", None),
    **{("torch", name): StorageType(name, dtype) for name, dtype in STORAGE_DTYPE.items()},
    **{("torch", name): dtype for name, dtype in DTYPE_NAMES.items()},
}
