"""`ember.save`: PyTorch's checkpoint formats (zip, and the legacy one), written without PyTorch.

The object is pickled with PyTorch's global names (`torch._utils._rebuild_tensor_v2`,
`torch.FloatStorage`, `torch.float32`, `torch.Size` ...) so `torch.load` reads the file. The
standard pickler can only name globals it can import, so a subclass of the pure-Python pickler
writes those names itself; everything else pickles as usual. Each storage is written once however
many tensors view it, as a `data/<key>` record (zip) or after the pickle (legacy).
"""
import collections
import io
import os
import pickle
import struct
import sys

import numpy as np

import ember
from ember import _C
from ember.serialization._names import STORAGE_CLASS
from ember.serialization._zip import ALIGNMENT, ZipWriter

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL_VERSION = 1001


class _Global:
    """A global the pickle names by module and attribute, written without importing it."""

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):
        # Only named by the pickle (the pickler requires a callable in a reduce tuple).
        raise TypeError(f"{self.module}.{self.name} is a placeholder for a PyTorch global")


_GLOBALS = {}


def _global(module, name):
    # One object per name, so the pickler's memo writes each name once.
    return _GLOBALS.setdefault((module, name), _Global(module, name))


class _StorageRef:
    """One storage to write: its key, dtype, element count and its bytes as a uint8 tensor."""

    def __init__(self, key, dtype, data):
        self.key, self.dtype, self.data = key, dtype, data
        self.numel = data.numel() // dtype.itemsize


class _StorageTable:
    """The distinct storages a pickle refers to, keyed in order of first use."""

    def __init__(self):
        self.refs = {}

    def ref(self, t):
        identity, data = _C._storage_bytes(t)
        ref = self.refs.get(identity)
        if ref is None:
            ref = self.refs[identity] = _StorageRef(str(len(self.refs)), t.dtype, data)
        elif ref.dtype != t.dtype:
            raise RuntimeError(
                f"Cannot save multiple tensors or storages that view the same data as different types: {ref.dtype} and {t.dtype}"
            )
        return ref


class _PlainTensor:
    """A Parameter's data, pickled as a plain tensor inside `_rebuild_parameter`."""

    def __init__(self, t):
        self.t = t


def _parameter_type():
    # nn.Parameter may or may not exist yet; looked up at save time.
    return getattr(ember.nn, "Parameter", None)


class _TorchPickler(pickle._Pickler):
    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, protocol, storages, legacy):
        super().__init__(file, protocol)
        self._storages, self._legacy = storages, legacy

    def persistent_id(self, obj):
        if not isinstance(obj, _StorageRef):
            return None
        pid = ("storage", _global("torch", STORAGE_CLASS[obj.dtype]), obj.key, "cpu", obj.numel)
        return pid + (None,) if self._legacy else pid

    def reducer_override(self, obj):
        if isinstance(obj, _PlainTensor):
            return _reduce_tensor(self._storages, obj.t)
        if isinstance(obj, _C.Tensor):
            param = _parameter_type()
            if param is not None and isinstance(obj, param):
                rebuild = _global("torch._utils", "_rebuild_parameter")
                return rebuild, (_PlainTensor(obj), obj.requires_grad, collections.OrderedDict())
            return _reduce_tensor(self._storages, obj)
        if type(obj) is ember.Size:
            return _global("torch", "Size"), (tuple(obj),)
        if type(obj) is ember.device:
            return _global("torch", "device"), (str(obj),)
        return NotImplemented


def _save_global(pickler, g):
    pickler.write(pickle.GLOBAL + f"{g.module}\n{g.name}\n".encode("utf-8"))
    pickler.memoize(g)


_TorchPickler.dispatch[_Global] = _save_global
_TorchPickler.dispatch[_C.dtype] = lambda pickler, d: _save_global(pickler, _global("torch", d.name))


def _reduce_tensor(storages, t):
    if any(s < 0 for s in t.stride()):
        # PyTorch has no negative strides (Ember's flip makes them): save the values densely.
        t = t.detach().contiguous()
    ref = storages.ref(t)
    args = (ref, t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.requires_grad, collections.OrderedDict())
    return _global("torch._utils", "_rebuild_tensor_v2"), args


def _pickle(obj, protocol, legacy):
    buf, storages = io.BytesIO(), _StorageTable()
    _TorchPickler(buf, protocol, storages, legacy).dump(obj)
    return buf.getbuffer(), list(storages.refs.values())


def _bytes(ref):
    data = ref.data
    return memoryview(np.asarray(data if data.device.type == "cpu" else data.cpu()))


def _write_zip(obj, out, protocol, byteorder=True):
    data_pkl, refs = _pickle(obj, protocol, legacy=False)
    z = ZipWriter(out)
    z.write_record("archive/data.pkl", data_pkl)
    z.write_record("archive/.format_version", b"1")
    z.write_record("archive/.storage_alignment", str(ALIGNMENT).encode())
    if byteorder:
        z.write_record("archive/byteorder", sys.byteorder.encode())
    for ref in refs:
        z.write_record(f"archive/data/{ref.key}", _bytes(ref))
    z.write_record("archive/version", b"3\n")
    z.close()


def _write_legacy(obj, out, protocol):
    data_pkl, refs = _pickle(obj, protocol, legacy=True)
    sys_info = {"protocol_version": LEGACY_PROTOCOL_VERSION, "little_endian": sys.byteorder == "little",
                "type_sizes": {"short": 2, "int": 4, "long": 4}}
    for header in (MAGIC_NUMBER, LEGACY_PROTOCOL_VERSION, sys_info):
        pickle.dump(header, out, protocol=protocol)
    out.write(data_pkl)
    refs.sort(key=lambda r: r.key)
    pickle.dump([r.key for r in refs], out, protocol=protocol)
    for ref in refs:
        out.write(struct.pack("<q", ref.numel))
        out.write(_bytes(ref))


def save(obj, f, pickle_module=pickle, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Saves `obj` (tensors, state dicts, nested containers) to `f` in PyTorch's format.

    `f` is a path or a binary file object. The file is PyTorch's zip checkpoint (or its legacy
    format with `_use_new_zipfile_serialization=False`), readable by `torch.load` and `ember.load`.
    Tensors that share a storage are saved with it once and come back sharing it. Ember's tensors
    with negative strides (`flip`) are saved as dense copies, since PyTorch has no such strides.
    """
    if pickle_module is not pickle:
        raise NotImplementedError("ember.save writes PyTorch's pickle itself; only pickle_module=pickle is supported")
    if _use_new_zipfile_serialization:
        def write(obj, out, protocol):
            _write_zip(obj, out, protocol, byteorder=not _disable_byteorder_record)
    else:
        write = _write_legacy
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as out:
            write(obj, out, pickle_protocol)
    elif hasattr(f, "write"):
        write(obj, f, pickle_protocol)
        if hasattr(f, "flush"):
            f.flush()
    else:
        raise AttributeError(f"expected 'f' to be string, path, or a file-like object with a 'write' attribute, got {type(f).__name__}")
