"""`ember.safetensors`: the API of `safetensors.torch` (`save_file`, `load_file`, `save`, `load`)
on Ember tensors. The format is implemented in Rust (`ember_core::serialize::safetensors`, on the
`safetensors` crate); files are read tensor by tensor straight into fresh memory.
"""
import os

from ember import _C
from ember._device import check, move

SafetensorError = _C.SafetensorError

__all__ = ["save_file", "load_file", "save", "load", "SafetensorError"]


def _checked(tensors, metadata):
    """The (name, tensor) pairs to write, refused as `safetensors.torch` refuses them."""
    if not isinstance(tensors, dict):
        raise TypeError(f"tensors must be a dict of str to ember.Tensor, got {type(tensors).__name__}")
    for name, t in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"tensor names must be str, got {type(name).__name__}")
        if not isinstance(t, _C.Tensor):
            raise ValueError(f"Key `{name}` is invalid, expected ember.Tensor but received {type(t).__name__}")
        if not t.is_contiguous():
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{name}` which is not allowed. It either means you"
                " are trying to save tensors which are reference of each other in which case it's recommended to save"
                " only the full tensors, and reslice at load time, or simply call `.contiguous()` on your tensor to"
                " pack it before saving."
            )
    _check_unshared(tensors)
    if metadata is not None and (not isinstance(metadata, dict)
                                 or not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise TypeError(f"metadata must be a dict of str to str, got {metadata!r:.100}")
    return [(name, t.detach()) for name, t in tensors.items()]


def _check_unshared(tensors):
    """Tensors sharing memory would be written twice and come back unshared: refused, as upstream."""
    groups = {}
    for name, t in tensors.items():
        if t.numel():
            groups.setdefault(_C._storage_bytes(t)[0], []).append(name)
    shared = [names for names in groups.values() if len(names) > 1]
    if shared:
        raise RuntimeError(
            f"Some tensors share memory, this will lead to duplicate memory on disk and potential differences "
            f"when loading them again: {shared}. Save copies (`.clone()`) of the tensors that share memory."
        )


def save_file(tensors, filename, metadata=None):
    """Writes `tensors` (a dict of name to contiguous tensor) to `filename` with optional
    `metadata` (a dict of str to str)."""
    _C.safetensors_save_file(_checked(tensors, metadata), os.fspath(filename), metadata)


def load_file(filename, device="cpu"):
    """A dict of name to tensor, in the order of the file's bytes."""
    check(device)
    tensors, _ = _C.safetensors_load_file(os.fspath(filename))
    return {name: move(t, device) for name, t in tensors}


def save(tensors, metadata=None):
    """The safetensors bytes of `tensors`."""
    return _C.safetensors_serialize(_checked(tensors, metadata), metadata)


def load(data):
    """A dict of name to tensor from safetensors `data` (bytes)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"load() expects bytes, got {type(data).__name__}")
    tensors, _ = _C.safetensors_deserialize(bytes(data))
    return dict(tensors)
