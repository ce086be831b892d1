"""`ember.load`: PyTorch checkpoints (zip and legacy formats) without PyTorch.

The pickle is read by an `Unpickler` whose `find_class` hands out only the names in
`_rebuild.ALLOWED` and those the caller allowed with `add_safe_globals`, and refuses every other
global, naming it and saying how to allow it, unless the caller passed `weights_only=False`
(PyTorch's opt-in for trusted files). Storages are read straight into fresh
64-byte aligned Ember memory (or mapped copy-on-write with `mmap=True`): no intermediate copy.
"""
import collections
import io
import mmap as _mmap
import os
import pickle
import struct
import sys
import zipfile
import zlib

import numpy as np

import ember
from ember import _C
from ember._device import check
from ember.serialization import _rebuild, _safe_globals
from ember.serialization._rebuild import Storage, StorageType
from ember.serialization._save import LEGACY_PROTOCOL_VERSION, MAGIC_NUMBER

_CHUNK = 1 << 30  # the most one readinto call asks for
_MAX_INFLATE = 1032  # deflate's largest expansion: a record's size claim is checked against it
_INFLATE_CHUNK = 16 << 20  # a compressed record is inflated this much at a time (a staging copy)


class _Rules:
    """What both unpicklers share: the allow-list and storage persistent ids."""

    def __init__(self, file, source, persistent_load, weights_only, **kwargs):
        super().__init__(file, **kwargs)
        self._source, self._persistent_load, self._weights_only = source, persistent_load, weights_only
        self._user_globals = _safe_globals.by_pickle_name() if weights_only else {}

    def find_class(self, module, name):
        if module == "__builtin__":  # protocol-2 pickles use Python 2's name (`set`, `frozenset`)
            module = "builtins"
        found = _rebuild.ALLOWED.get((module, name))
        if found is not None:
            return found
        found = self._user_globals.get(f"{module}.{name}")
        if found is not None:
            return found
        if not self._weights_only:
            return super().find_class(module, name)
        shown = name if module == "builtins" else f"{module}.{name}"  # as the caller would write it
        raise pickle.UnpicklingError(
            f"Weights only load failed for {self._source}: unsupported global GLOBAL {module}.{name}. "
            "ember.load rebuilds only tensors, storages, dtypes, sizes and plain containers unless told "
            f"otherwise: if you trust this global, allow it with `ember.serialization.add_safe_globals([{shown}])` "
            f"or the `ember.serialization.safe_globals([{shown}])` context manager. Pass weights_only=False "
            "only if you trust the whole file."
        )

    def persistent_load(self, pid):
        if not isinstance(pid, tuple) or not pid or pid[0] != "storage":
            raise pickle.UnpicklingError(f"{self._source}: unsupported persistent id {pid!r:.200}")
        return self._persistent_load(pid)


class _Unpickler(_Rules, pickle.Unpickler):
    """The C unpickler, for files the caller trusts (`weights_only=False`)."""


class _WeightsOnlyUnpickler(_Rules, pickle._Unpickler):
    """The Python unpickler, for weights-only loads (as PyTorch's). Its memo is a dict, where the
    C unpickler's is an array that one crafted LONG_BINPUT index grows to gigabytes. And globals
    from `add_safe_globals` are handed out as they are (a class must be a real class for
    NEWOBJ), so BUILD is checked opcode by opcode, which the C unpickler cannot do: as PyTorch,
    BUILD may set the state of tensors, OrderedDicts and instances of allowed classes only, never
    of an allowed class or function itself, which every later load shares."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def load_build(self):
        target = self.stack[-2]  # the stack ends with (object, state)
        if not (isinstance(target, (_C.Tensor, collections.OrderedDict)) or type(target) in self._user_globals.values()):
            kind = type(target)
            shown = f"{kind.__module__}.{kind.__qualname__}"
            raise pickle.UnpicklingError(
                f"Weights only load failed for {self._source}: can only set the state (BUILD) of tensors, "
                f"OrderedDicts and instances of classes allowed by ember.serialization.add_safe_globals, but got "
                f"an object of type {shown}; if you trust it, allow it with `ember.serialization.add_safe_globals([{shown}])`."
            )
        super().load_build()

    dispatch[pickle.BUILD[0]] = load_build

    def load_bytearray8(self):
        # pickle's own allocates the declared length before reading: 24 crafted bytes would
        # claim gigabytes. Reading first allocates only what the stream holds.
        (size,) = struct.unpack("<Q", self.read(8))
        data = self.read(size)
        if len(data) != size:
            raise pickle.UnpicklingError(f"BYTEARRAY8 declares {size} bytes, but the stream holds only {len(data)}")
        self.append(bytearray(data))

    dispatch[pickle.BYTEARRAY8[0]] = load_bytearray8


def _unpickler(file, source, persistent_load, weights_only, **kwargs):
    return (_WeightsOnlyUnpickler if weights_only else _Unpickler)(file, source, persistent_load, weights_only, **kwargs)


def _storage_pid(pid, fields):
    """Checks a storage persistent id ('storage', type, key, location, numel[, view])."""
    if len(pid) != fields:
        raise pickle.UnpicklingError(f"storage persistent id must have {fields} fields, got {pid!r:.200}")
    _, storage_type, key, location, numel = pid[:5]
    if not isinstance(storage_type, StorageType):
        raise pickle.UnpicklingError(f"expected a storage type, got {storage_type!r:.100}")
    if not isinstance(key, str) or not isinstance(location, str) or type(numel) is not int or numel < 0:
        raise pickle.UnpicklingError(f"malformed storage persistent id {pid!r:.200}")
    itemsize = 1 if storage_type.dtype is None else storage_type.dtype.itemsize
    return storage_type.dtype, key, location, numel * itemsize


class _Locations:
    """`map_location` as PyTorch applies it: storages are read on the CPU and moved to the device
    it names (or the one they were saved from); a device this build or machine lacks is refused
    by `check`."""

    def __init__(self, map_location):
        if map_location is not None and not isinstance(map_location, (str, ember.device, dict)) and not callable(map_location):
            raise TypeError(f"map_location should be a str, ember.device, dict or callable, got {type(map_location).__name__}")
        self._map = map_location

    def place(self, storage, location):
        m = self._map
        if callable(m) and not isinstance(m, (str, ember.device, dict)):
            moved = m(storage, location)
            if moved is not None:
                if not isinstance(moved, Storage):
                    raise TypeError(f"map_location callable must return the storage or None, got {type(moved).__name__}")
                return moved
            m = None
        if isinstance(m, dict):
            m = m.get(location)
        if m is None:  # a storage goes back to the device it was saved from
            try:
                m = check(location)
            except RuntimeError as e:
                raise RuntimeError(f"Attempting to deserialize object on device '{location}', but {e}. "
                                   "Use ember.load with map_location='cpu' to map your storages to the CPU.") from None
        device = check(m)
        if device.type == "cpu":
            return storage
        return Storage(storage.data.to(device), storage.dtype)


def _new_bytes(nbytes):
    data = ember.empty(nbytes, dtype=ember.uint8)
    return data, memoryview(np.asarray(data))


def _read_exactly(read_into, view, what, chunk=_CHUNK):
    pos = 0
    while pos < len(view):
        n = read_into(view[pos:pos + chunk])
        if not n:
            raise RuntimeError(f"{what} is truncated: expected {len(view)} bytes, found {pos}")
        pos += n


def _byteswap(data, itemsize):
    if itemsize > 1:
        np.asarray(data).view(f"u{itemsize}").byteswap(inplace=True)


class _ZipCheckpoint:
    def __init__(self, f, source, locations, mapped):
        self.stream, self.source, self.locations, self.mapped = f, source, locations, mapped
        start = f.tell()
        self.size = f.seek(0, io.SEEK_END) - start
        f.seek(start)
        self.zf = zipfile.ZipFile(f)
        self.prefix = self._prefix()
        order = self._record("byteorder")
        self.swap = order is not None and self.zf.read(order).decode() != sys.byteorder
        self.storages = {}

    def _prefix(self):
        names = self.zf.namelist()
        pkl = [n for n in names if n.count("/") == 1 and n.endswith("/data.pkl")]
        if not pkl:
            if any(n.endswith("/constants.pkl") for n in names):
                raise NotImplementedError(f"{self.source} is a TorchScript archive (torch.jit.save); ember.load reads torch.save checkpoints")
            raise RuntimeError(f"{self.source} is a zip file but not a PyTorch checkpoint: it has no data.pkl record")
        return pkl[0][: -len("data.pkl")]

    def _record(self, name):
        try:
            return self.zf.getinfo(self.prefix + name)
        except KeyError:
            return None

    def load_pickle(self, weights_only, pickle_load_args):
        data = self.zf.read(self.prefix + "data.pkl")
        return _unpickler(io.BytesIO(data), self.source, self.storage, weights_only, **pickle_load_args).load()

    def close(self):
        self.zf.close()

    def storage(self, pid):
        dtype, key, location, nbytes = _storage_pid(pid, 5)
        found = self.storages.get(key)
        if found is None:
            found = self.storages[key] = self.locations.place(Storage(self._read(key, nbytes, dtype), dtype), location)
        return found

    def _read(self, key, nbytes, dtype):
        info = self._record(f"data/{key}")
        what = f"{self.source}: record {self.prefix}data/{key}"
        if info is None:
            raise RuntimeError(f"{what} is missing")
        if info.file_size != nbytes:
            raise RuntimeError(f"{what} holds {info.file_size} bytes but its storage needs {nbytes}")
        if info.compress_size > self.size or nbytes > _MAX_INFLATE * info.compress_size + 64:
            raise RuntimeError(f"{what} claims {nbytes} bytes, more than the file can hold")
        itemsize = 1 if dtype is None else dtype.itemsize
        data = self._mapped(info, nbytes, itemsize) if self.mapped is not None else None
        if data is None:
            data, view = _new_bytes(nbytes)
            if info.compress_type == zipfile.ZIP_STORED:
                self._read_stored(info, view, what)
            else:
                with self.zf.open(info) as r:  # zipfile checks the CRC
                    _read_exactly(r.readinto, view, what, _INFLATE_CHUNK)
        if self.swap:
            _byteswap(data, itemsize)
        return data

    def _read_stored(self, info, view, what):
        """An uncompressed record read straight into `view` (no staging copy), then CRC-checked."""
        f = self.stream
        f.seek(info.header_offset)
        header = f.read(30)
        if len(header) != 30 or header[:4] != b"PK\x03\x04":
            raise RuntimeError(f"{what}: bad local file header")
        name_len, extra_len = struct.unpack("<HH", header[26:30])
        f.seek(info.header_offset + 30 + name_len + extra_len)
        _read_exactly(f.readinto, view, what)
        if zlib.crc32(view) != info.CRC:
            raise RuntimeError(f"{what}: Bad CRC-32 (the file is corrupt)")

    def _mapped(self, info, nbytes, itemsize):
        """The record's bytes inside the copy-on-write file mapping, when stored and aligned."""
        if info.compress_type != zipfile.ZIP_STORED:
            return None
        name_len, extra_len = struct.unpack("<HH", self.mapped[info.header_offset + 26: info.header_offset + 30])
        start = info.header_offset + 30 + name_len + extra_len
        if start % max(itemsize, 1) or start + nbytes > len(self.mapped):
            return None
        return ember.from_numpy(self.mapped[start:start + nbytes])


class _LegacyCheckpoint:
    """The pre-1.6 format: pickled magic number, protocol and sys_info, the pickled object, the
    pickled list of storage keys, then each storage as an int64 element count and its bytes."""

    def __init__(self, f, source, locations):
        self.f, self.source, self.locations = f, source, locations
        self.roots, self.views = {}, {}
        # What the storages may claim in all: no more bytes than the file holds, so a corrupt
        # count is an error here rather than a huge allocation.
        start = f.tell()
        self.budget = f.seek(0, io.SEEK_END) - start
        f.seek(start)

    def close(self):
        pass

    def _plain(self):
        return _unpickler(self.f, self.source, None, True).load()

    def load_pickle(self, weights_only, pickle_load_args):
        if self._plain() != MAGIC_NUMBER:
            raise RuntimeError(f"{self.source}: invalid magic number; corrupt file?")
        protocol = self._plain()
        if protocol != LEGACY_PROTOCOL_VERSION:
            raise RuntimeError(f"{self.source}: invalid protocol version: {protocol!r}")
        sys_info = self._plain()
        swap = isinstance(sys_info, dict) and sys_info.get("little_endian", True) != (sys.byteorder == "little")
        obj = _unpickler(self.f, self.source, self.storage, weights_only, **pickle_load_args).load()
        keys = self._plain()
        if not isinstance(keys, list):
            raise pickle.UnpicklingError(f"{self.source}: expected the list of storage keys, got {type(keys).__name__}")
        if sorted(keys, key=repr) != sorted(self.roots, key=repr):
            raise RuntimeError(f"{self.source}: the storage keys {keys!r:.200} do not match the pickle's storages")
        for key in keys:
            self._fill(key, swap)
        return obj

    def storage(self, pid):
        dtype, key, location, nbytes = _storage_pid(pid, 6)
        root = self.roots.get(key)
        if root is None:
            self.budget -= nbytes + 8
            if self.budget < 0:
                raise RuntimeError(f"{self.source} is truncated or corrupt: storage {key!r:.50} claims {nbytes} bytes, more than the file holds")
            root = self.roots[key] = self.locations.place(Storage(_new_bytes(nbytes)[0], dtype), location)
        view = pid[5]
        if view is None:
            return root
        # Storages of PyTorch before 1.0 could be views of others: (view key, offset, size).
        if not (isinstance(view, tuple) and len(view) == 3 and all(type(v) is int and v >= 0 for v in view[1:])):
            raise pickle.UnpicklingError(f"{self.source}: malformed storage view {view!r:.100}")
        view_key, offset, _ = view
        if view_key not in self.views:
            self.views[view_key] = Storage(root.data, dtype, offset, shared_roots=root)
        return self.views[view_key]

    def _fill(self, key, swap):
        storage = self.roots[key]
        what = f"{self.source}: storage {key}"
        count = self.f.read(8)
        if len(count) != 8:
            raise RuntimeError(f"{what} is truncated")
        numel = struct.unpack("<q", count)[0]
        if numel * storage.element_size() != storage.nbytes():
            raise RuntimeError(f"{what} holds {numel} elements but the pickle declared {storage.nbytes() // storage.element_size()}")
        _read_exactly(self.f.readinto, memoryview(np.asarray(storage.data)), what)
        if swap:
            _byteswap(storage.data, storage.element_size())


def _open(f):
    """(binary stream, name for messages, whether the stream is ours to close)."""
    if isinstance(f, (str, os.PathLike)):
        return open(f, "rb"), os.fspath(f), True
    if not hasattr(f, "read"):
        raise AttributeError(f"expected 'f' to be string, path, or a file-like object with a 'read' attribute, got {type(f).__name__}")
    name = getattr(f, "name", None)
    source = f"'{name}'" if isinstance(name, str) else "the checkpoint stream"
    if not (hasattr(f, "seekable") and f.seekable()):
        f = io.BytesIO(f.read())
    return f, source, False


def _is_zip(f):
    start = f.tell()
    magic = f.read(4)
    f.seek(start)
    return magic == b"PK\x03\x04"


def _map(f, source, is_zip):
    if not is_zip:
        raise RuntimeError("mmap can only be used with files saved with `ember.save(_use_new_zipfile_serialization=True)`")
    try:
        return np.frombuffer(_mmap.mmap(f.fileno(), 0, access=_mmap.ACCESS_COPY), dtype=np.uint8)
    except (AttributeError, io.UnsupportedOperation, OSError, ValueError) as e:
        raise ValueError(f"mmap=True needs a checkpoint file on disk; {source} cannot be mapped: {e}") from None


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Loads an object saved by `ember.save` or `torch.save` (zip or legacy format), without PyTorch.

    `weights_only` (default True, as in PyTorch 2.6+) allows only tensors, parameters, storages,
    dtypes, sizes, devices, plain containers and the globals allowed with
    `ember.serialization.add_safe_globals`; any other global is refused with a
    `pickle.UnpicklingError` naming it. `weights_only=False` unpickles anything: only for files you
    trust. `map_location` ('cpu', an `ember.device`, a dict of locations or a callable
    `(storage, location)`) must land every storage on the CPU. `mmap=True` maps the file's storages
    copy-on-write instead of reading them. Parameters come back as `ember.nn.Parameter` where it
    exists, otherwise as leaf tensors with their `requires_grad`.
    """
    if weights_only is None:
        weights_only = True
    if pickle_module is not None:
        if weights_only:
            raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
        if pickle_module is not pickle:
            raise NotImplementedError("ember.load unpickles with the standard pickle module only")
    locations = _Locations(map_location)
    stream, source, owned = _open(f)
    try:
        is_zip = _is_zip(stream)
        mapped = _map(stream, source, is_zip) if mmap else None
        return _read_checkpoint(stream, source, is_zip, locations, mapped, weights_only, pickle_load_args)
    finally:
        if owned:
            stream.close()


def _read_checkpoint(stream, source, is_zip, locations, mapped, weights_only, pickle_load_args):
    """Reads the checkpoint; a malformed file's errors become ones that name it."""
    try:
        checkpoint = _ZipCheckpoint(stream, source, locations, mapped) if is_zip else _LegacyCheckpoint(stream, source, locations)
        try:
            return checkpoint.load_pickle(weights_only, pickle_load_args)
        finally:
            checkpoint.close()
    except zipfile.BadZipFile as e:
        raise RuntimeError(f"{source}: PytorchStreamReader failed reading zip archive: {e} (truncated or corrupt file)") from None
    except (EOFError, struct.error) as e:
        raise pickle.UnpicklingError(f"{source} is truncated or corrupt: {e or 'unexpected end of data'}") from None
    except pickle.UnpicklingError as e:
        msg = str(e)
        raise pickle.UnpicklingError(msg if source in msg else f"{source}: {msg}") from None
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
        # A malformed pickle calls an allowed rebuild with arguments of the wrong kind.
        raise pickle.UnpicklingError(f"{source} is corrupt: {type(e).__name__}: {e}") from e
