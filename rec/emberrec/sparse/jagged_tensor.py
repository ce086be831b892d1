"""TorchRec's jagged tensors on Ember: `JaggedTensor`, `KeyedJaggedTensor`, `KeyedTensor`.

Unlike TorchRec, the constructors validate what they are given (a ValueError names the
inconsistency: lengths that do not add up to the values, negative lengths, offsets that do not
start at 0 or go down, a batch that does not divide among the keys, weights that do not match
the values), once: tensors that methods derive from a valid one are not checked again. Every
operation on the data is one or a few vectorised Ember ops (see `emberrec.ops`); no Python loop
runs per key or per sample over values.
"""
import itertools
import numbers

import ember

from emberrec import ops
from emberrec.ops import check_index_tensor, check_tensor, lengths_to_offsets, offsets_to_lengths

__all__ = ["JaggedTensor", "KeyedJaggedTensor", "KeyedTensor"]


# ---- validation shared by the three classes ----

def _check_values_and_weights(values, weights):
    check_tensor(values, "values")
    if values.dim() == 0:
        raise ValueError("values must have at least one dimension, got a 0-D tensor")
    if weights is not None:
        check_tensor(weights, "weights")
        if weights.dim() == 0 or weights.shape[0] != values.shape[0]:
            raise ValueError(f"weights must have one entry per value ({values.shape[0]}), "
                             f"got shape {tuple(weights.shape)}")


def _check_lengths(lengths, total):
    check_index_tensor(lengths, "lengths")
    if lengths.numel() == 0:
        found = 0
    else:
        if int(lengths.min()) < 0:
            raise ValueError(f"lengths must be non-negative, got a length of {int(lengths.min())}")
        found = int(lengths.long().sum())
    if found != total:
        raise ValueError(f"lengths sum to {found}, but there are {total} values")


def _check_offsets(offsets, total):
    check_index_tensor(offsets, "offsets")
    if offsets.numel() == 0:
        raise ValueError("offsets must hold at least one entry (B samples have B + 1 offsets)")
    if int(offsets[0]) != 0:
        raise ValueError(f"offsets must start at 0, got {int(offsets[0])}")
    if offsets.numel() > 1 and int(offsets_to_lengths(offsets).min()) < 0:
        raise ValueError("offsets must not decrease")
    if int(offsets[-1]) != total:
        raise ValueError(f"offsets end at {int(offsets[-1])}, but there are {total} values")


def _check_lengths_and_offsets(lengths, offsets, total):
    if lengths is None and offsets is None:
        raise ValueError("lengths or offsets must be given")
    if lengths is not None:
        _check_lengths(lengths, total)
    if offsets is not None:
        _check_offsets(offsets, total)
    if lengths is not None and offsets is not None:
        if offsets.numel() != lengths.numel() + 1 or not bool((offsets_to_lengths(offsets) == lengths).all()):
            raise ValueError("lengths and offsets describe different samples")


def _check_device(device):
    """Refuses a device other than the CPU: the core names what is missing when the build or
    machine has no backend for it; moving jagged tensors to another backend is not built yet."""
    if device is not None and ember.empty(0, device=device).device.type != "cpu":
        raise NotImplementedError(f"emberrec: jagged tensors on {device} are not supported yet")
    return device


def _jagged_string(values, offsets):
    rows = ember.split(values, offsets_to_lengths(offsets).tolist()) if offsets.numel() > 1 else []
    return "[" + ", ".join(str(row.tolist()) for row in rows) + "]"


# ---- JaggedTensor ----

class _JaggedData:
    """The accessors JaggedTensor and KeyedJaggedTensor share: values and weights, and lengths and
    offsets, each computed from the other when first asked for."""

    def values(self):
        return self._values

    def weights(self):
        if self._weights is None:
            raise RuntimeError(f"this {type(self).__name__} has no weights")
        return self._weights

    def weights_or_none(self):
        return self._weights

    def lengths(self):
        if self._lengths is None:
            self._lengths = offsets_to_lengths(self._offsets)
        return self._lengths

    def lengths_or_none(self):
        return self._lengths

    def offsets(self):
        if self._offsets is None:
            self._offsets = lengths_to_offsets(self._lengths)
        return self._offsets

    def offsets_or_none(self):
        return self._offsets


class JaggedTensor(_JaggedData):
    """A batch of variable-length samples: `values` holds them one after another, `lengths` (or
    `offsets`, one longer) says where each ends. Each of lengths/offsets is computed from the
    other the first time it is asked for. `weights`, optional, has one entry per value.

        jt = JaggedTensor(values=ember.tensor([1., 2., 3.]), lengths=ember.tensor([2, 0, 1]))
        jt.to_padded_dense()   # [[1, 2], [0, 0], [3, 0]]
    """

    def __init__(self, values, weights=None, lengths=None, offsets=None):
        _check_values_and_weights(values, weights)
        _check_lengths_and_offsets(lengths, offsets, values.shape[0])
        self._values, self._weights, self._lengths, self._offsets = values, weights, lengths, offsets

    @classmethod
    def _trusted(cls, values, weights=None, lengths=None, offsets=None):
        """A JaggedTensor from parts derived from a validated one: no checks."""
        jt = cls.__new__(cls)
        jt._values, jt._weights, jt._lengths, jt._offsets = values, weights, lengths, offsets
        return jt

    @staticmethod
    def empty(is_weighted=False, device=None, values_dtype=None, weights_dtype=None, lengths_dtype=ember.int32):
        """No samples. Unlike TorchRec's (whose offsets are empty), offsets is [0]."""
        _check_device(device)
        weights = ember.empty(0, dtype=weights_dtype) if is_weighted else None
        return JaggedTensor._trusted(ember.empty(0, dtype=values_dtype), weights,
                                     ember.zeros(0, dtype=lengths_dtype), ember.zeros(1, dtype=lengths_dtype))

    @staticmethod
    def from_dense_lengths(values, lengths, weights=None):
        """The first lengths[b] entries of each row of the dense (B, N, ...) `values` (and
        `weights`, same shape)."""
        check_tensor(values, "values")
        check_index_tensor(lengths, "lengths")
        if values.dim() < 2 or values.shape[0] != lengths.numel():
            raise ValueError(f"values must be (B, N, ...) with B = len(lengths) = {lengths.numel()}, "
                             f"got shape {tuple(values.shape)}")
        if weights is not None and (not isinstance(weights, ember.Tensor) or weights.shape[:2] != values.shape[:2]):
            raise ValueError(f"weights must be a tensor shaped as values' first two dims {tuple(values.shape[:2])}")
        if lengths.numel() and (int(lengths.min()) < 0 or int(lengths.max()) > values.shape[1]):
            raise ValueError(f"lengths must lie in [0, {values.shape[1]}], got {lengths.tolist()}")
        offsets = lengths_to_offsets(lengths)
        jagged_values, _ = ops.dense_to_jagged(values, [offsets])
        jagged_weights = None if weights is None else ops.dense_to_jagged(weights, [offsets])[0]
        return JaggedTensor._trusted(jagged_values, jagged_weights, lengths, offsets)

    @staticmethod
    def from_dense(values, weights=None):
        """One sample per tensor of the list `values` (each (length, ...)), and `weights` alike."""
        if not isinstance(values, (list, tuple)) or not all(isinstance(v, ember.Tensor) for v in values):
            raise TypeError("values must be a list of ember.Tensor")
        if not values:
            raise ValueError("values must hold at least one tensor")
        if weights is not None:
            if not isinstance(weights, (list, tuple)) or len(weights) != len(values):
                raise ValueError(f"weights must be a list of {len(values)} tensors, one per value tensor")
            if any(not isinstance(w, ember.Tensor) or w.shape[:1] != v.shape[:1] for w, v in zip(weights, values)):
                raise ValueError("each weights tensor must be as long as its values tensor")
        lengths = ember.tensor([v.shape[0] for v in values], dtype=ember.int32)
        return JaggedTensor._trusted(ember.cat(list(values)), None if weights is None else ember.cat(list(weights)),
                                     lengths)

    def to_dense(self):
        """The samples as a list of tensors (views of values)."""
        return list(ember.split(self._values, self.lengths().tolist())) if self.lengths().numel() else []

    def to_dense_weights(self):
        if self._weights is None:
            return None
        return list(ember.split(self._weights, self.lengths().tolist())) if self.lengths().numel() else []

    def to_padded_dense(self, desired_length=None, padding_value=0.0):
        """(B, N, ...): each sample padded with `padding_value` or cut to N, N being
        `desired_length` or else the longest sample's length."""
        return self._padded(self._values, desired_length, padding_value)

    def to_padded_dense_weights(self, desired_length=None, padding_value=0.0):
        if self._weights is None:
            return None
        return self._padded(self._weights, desired_length, padding_value)

    def _padded(self, tensor, desired_length, padding_value):
        if desired_length is None:
            desired_length = int(self.lengths().max()) if self.lengths().numel() else 0
        elif not isinstance(desired_length, int) or isinstance(desired_length, bool) or desired_length < 0:
            raise ValueError(f"desired_length must be a non-negative int or None, got {desired_length!r}")
        return ops.jagged_to_padded_dense(tensor, [self.offsets()], [desired_length], padding_value)

    def device(self):
        return self._values.device

    def to(self, device, non_blocking=False):
        """`self` on the CPU; another device is refused (see `_check_device`)."""
        _check_device(device)
        return self

    def __str__(self):
        values = _jagged_string(self._values, self.offsets())
        if self._weights is None:
            return f"JaggedTensor({values})"
        return f"JaggedTensor(values={values}, weights={_jagged_string(self._weights, self.offsets())})"

    __repr__ = __str__


# ---- KeyedJaggedTensor ----

def _check_keys(keys):
    if isinstance(keys, str) or not isinstance(keys, (list, tuple)) or not all(isinstance(k, str) for k in keys):
        raise TypeError(f"keys must be a list of str, got {keys!r}")
    return list(keys)


def _stride_of(keys, stride, lengths):
    """The batch size: `stride` if given, else the number of lengths over the number of keys."""
    n_lengths = lengths.numel()
    if stride is None:
        if not keys:
            if n_lengths:
                raise ValueError(f"no keys, but {n_lengths} lengths")
            return 0
        if n_lengths % len(keys):
            raise ValueError(f"{n_lengths} lengths do not divide among {len(keys)} keys")
        return n_lengths // len(keys)
    if not isinstance(stride, int) or isinstance(stride, bool) or stride < 0:
        raise ValueError(f"stride must be a non-negative int, got {stride!r}")
    if n_lengths != len(keys) * stride:
        raise ValueError(f"{len(keys)} keys with stride {stride} need {len(keys) * stride} lengths, got {n_lengths}")
    return stride


def _int_list(items, name):
    """`items` as a list of Python ints (NumPy integers welcome), or TypeError."""
    if type(items) is list and all(type(i) is int for i in items):  # the common case, checked fast
        return items
    if isinstance(items, (str, bytes)) or not isinstance(items, (list, tuple)) or \
            any(isinstance(i, bool) or not isinstance(i, numbers.Integral) for i in items):
        raise TypeError(f"{name} must be a list of ints, got {items!r}")
    return [int(i) for i in items]


def _cumsum_list(counts):
    """[0, c0, c0 + c1, ...] of a short Python list (per-key counts)."""
    return list(itertools.accumulate(counts, initial=0))


class KeyedJaggedTensor(_JaggedData):
    """A JaggedTensor per key, laid out key-major: `lengths` holds, for each key in turn, the
    `stride` (batch size) lengths of its samples, and `values` the values in that order.

        # keys f1, f2; batch of 3:  f1: [1], [], [2, 3]    f2: [4], [5], []
        kjt = KeyedJaggedTensor(keys=["f1", "f2"], values=ember.tensor([1, 2, 3, 4, 5]),
                                lengths=ember.tensor([1, 0, 2, 1, 1, 0]))

    `length_per_key` / `offset_per_key` (Python lists: the number of values of each key and where
    each key's values start) are computed once when first needed (`sync()` computes them now).
    `stride_per_key_per_rank` and `inverse_indices` (variable batch sizes, of later TorchRec
    versions) are not supported and raise NotImplementedError.
    """

    def __init__(self, keys, values, weights=None, lengths=None, offsets=None, stride=None,
                 stride_per_key_per_rank=None, length_per_key=None, offset_per_key=None,
                 index_per_key=None, jt_dict=None, inverse_indices=None):
        if stride_per_key_per_rank is not None or inverse_indices is not None:
            raise NotImplementedError("variable batch sizes per key (stride_per_key_per_rank, inverse_indices) "
                                      "are not supported by emberrec")
        keys = _check_keys(keys)
        _check_values_and_weights(values, weights)
        _check_lengths_and_offsets(lengths, offsets, values.shape[0])
        stride = _stride_of(keys, stride, lengths if lengths is not None else offsets[1:])
        self._set(keys, values, weights, lengths, offsets, stride)
        if length_per_key is not None:
            self._check_length_per_key(length_per_key)
        if offset_per_key is not None:
            self._check_offset_per_key(offset_per_key)
        if index_per_key is not None and dict(index_per_key) != self._key_indices():
            raise ValueError(f"index_per_key {dict(index_per_key)} does not match keys {keys}")
        if jt_dict is not None:
            raise NotImplementedError("jt_dict (a cache of to_dict()) is computed by emberrec itself; pass None")

    def _set(self, keys, values, weights, lengths, offsets, stride, length_per_key=None):
        self._keys, self._values, self._weights = keys, values, weights
        self._lengths, self._offsets, self._stride = lengths, offsets, stride
        self._length_per_key = length_per_key
        self._offset_per_key = None if length_per_key is None else _cumsum_list(length_per_key)
        self._index_per_key = None
        self._jt_dict = None

    @classmethod
    def _trusted(cls, keys, values, weights, lengths, stride, length_per_key=None):
        kjt = cls.__new__(cls)
        kjt._set(keys, values, weights, lengths, None, stride, length_per_key)
        return kjt

    def _check_length_per_key(self, length_per_key):
        if list(length_per_key) != self.length_per_key():
            raise ValueError(f"length_per_key {list(length_per_key)} does not match the lengths, "
                             f"which give {self.length_per_key()}")

    def _check_offset_per_key(self, offset_per_key):
        if list(offset_per_key) != self.offset_per_key():
            raise ValueError(f"offset_per_key {list(offset_per_key)} does not match the lengths, "
                             f"which give {self.offset_per_key()}")

    # -- constructors --

    @staticmethod
    def from_offsets_sync(keys, values, offsets, weights=None, stride=None):
        return KeyedJaggedTensor(keys, values, weights=weights, offsets=offsets, stride=stride).sync()

    @staticmethod
    def from_lengths_sync(keys, values, lengths, weights=None, stride=None):
        return KeyedJaggedTensor(keys, values, weights=weights, lengths=lengths, stride=stride).sync()

    @staticmethod
    def empty(is_weighted=False, device=None, values_dtype=None, weights_dtype=None, lengths_dtype=ember.int32):
        _check_device(device)
        weights = ember.empty(0, dtype=weights_dtype) if is_weighted else None
        return KeyedJaggedTensor._trusted([], ember.empty(0, dtype=values_dtype), weights,
                                          ember.zeros(0, dtype=lengths_dtype), 0, [])

    @staticmethod
    def empty_like(kjt):
        """No keys, with kjt's stride, dtypes and weightedness."""
        weights = kjt._weights
        return KeyedJaggedTensor._trusted([], kjt._values[:0], None if weights is None else weights[:0],
                                          kjt.lengths()[:0], kjt._stride, [])

    @staticmethod
    def from_jt_dict(jt_dict):
        """Keys in the dict's order, each JaggedTensor one key's samples (all as many)."""
        if not isinstance(jt_dict, dict) or not all(isinstance(jt, JaggedTensor) for jt in jt_dict.values()):
            raise TypeError("jt_dict must be a dict of str -> JaggedTensor")
        jts = list(jt_dict.values())
        if not jts:
            return KeyedJaggedTensor.empty()
        batch_sizes = {jt.lengths().numel() for jt in jts}
        if len(batch_sizes) != 1:
            raise ValueError(f"every JaggedTensor must hold the same number of samples, got {sorted(batch_sizes)}")
        weighted = {jt.weights_or_none() is not None for jt in jts}
        if len(weighted) != 1:
            raise ValueError("either every JaggedTensor or none must have weights")
        weights = ember.cat([jt.weights() for jt in jts]) if weighted == {True} else None
        return KeyedJaggedTensor(_check_keys(list(jt_dict)), ember.cat([jt.values() for jt in jts]), weights=weights,
                                 lengths=ember.cat([jt.lengths() for jt in jts]), stride=batch_sizes.pop())

    @staticmethod
    def concat(kjt_list):
        """The keys of every KJT in turn (same stride, all weighted or none)."""
        if not isinstance(kjt_list, (list, tuple)) or not all(isinstance(k, KeyedJaggedTensor) for k in kjt_list):
            raise TypeError("kjt_list must be a list of KeyedJaggedTensor")
        if not kjt_list:
            raise ValueError("kjt_list must hold at least one KeyedJaggedTensor")
        strides = {kjt.stride() for kjt in kjt_list if kjt.keys()}
        if len(strides) > 1:
            raise ValueError(f"KeyedJaggedTensors of different strides cannot be concatenated: {sorted(strides)}")
        weighted = {kjt.weights_or_none() is not None for kjt in kjt_list}
        if len(weighted) != 1:
            raise ValueError("either every KeyedJaggedTensor or none must have weights")
        weights = ember.cat([kjt.weights() for kjt in kjt_list]) if weighted == {True} else None
        keys = [key for kjt in kjt_list for key in kjt.keys()]
        length_per_key = None
        if all(kjt._length_per_key is not None for kjt in kjt_list):
            length_per_key = [n for kjt in kjt_list for n in kjt._length_per_key]
        return KeyedJaggedTensor._trusted(
            keys, ember.cat([kjt.values() for kjt in kjt_list]), weights,
            ember.cat([kjt.lengths() for kjt in kjt_list]), strides.pop() if strides else kjt_list[0].stride(),
            length_per_key)

    # -- accessors --

    def sync(self):
        """Computes length_per_key and offset_per_key now; returns self."""
        self.length_per_key()
        self.offset_per_key()
        return self

    def device(self):
        return self._values.device

    def keys(self):
        return self._keys

    def stride(self):
        return self._stride

    def length_per_key(self):
        if self._length_per_key is None:
            self._length_per_key = ops.segment_sum(self.lengths(), len(self._keys)).tolist()
        return self._length_per_key

    def length_per_key_or_none(self):
        return self._length_per_key

    def offset_per_key(self):
        if self._offset_per_key is None:
            self._offset_per_key = _cumsum_list(self.length_per_key())
        return self._offset_per_key

    def offset_per_key_or_none(self):
        return self._offset_per_key

    def _key_indices(self):
        if self._index_per_key is None:
            self._index_per_key = {key: i for i, key in enumerate(self._keys)}
        return self._index_per_key

    def index_per_key(self):
        """{key: its index among the keys}."""
        return self._key_indices()

    def stride_per_key(self):
        """The batch size of each key: all `stride()` (variable batch sizes are not supported)."""
        return [self._stride] * len(self._keys)

    def variable_stride_per_key(self):
        return False

    # -- operations --

    def __getitem__(self, key):
        """Key `key`'s samples as a JaggedTensor (views of this KJT's tensors)."""
        index = self._key_indices().get(key)
        if index is None:
            raise KeyError(f"{key!r} is not a key of this KeyedJaggedTensor (keys: {self._keys})")
        start, end = self.offset_per_key()[index], self.offset_per_key()[index + 1]
        weights = None if self._weights is None else self._weights[start:end]
        lengths = self.lengths()[index * self._stride:(index + 1) * self._stride]
        return JaggedTensor._trusted(self._values[start:end], weights, lengths)

    def to_dict(self):
        """{key: JaggedTensor}, in key order (a repeated key keeps its last occurrence). The
        JaggedTensors are made once, as TorchRec caches them; each call returns a new dict."""
        if self._jt_dict is None:
            self._jt_dict = dict(zip(self._keys, self._jagged_per_key()))
        return dict(self._jt_dict)

    def _jagged_per_key(self):
        """A JaggedTensor per key, in key order (views: three splits in all)."""
        if not self._keys:
            return []
        per_key = self.length_per_key()
        values = ember.split(self._values, per_key)
        weights = [None] * len(per_key) if self._weights is None else ember.split(self._weights, per_key)
        lengths = ember.split(self.lengths(), self._stride) if self._stride else [self.lengths()] * len(per_key)
        return [JaggedTensor._trusted(v, w, l) for v, w, l in zip(values, weights, lengths)]

    def split(self, segments):
        """KJTs of len(segments[i]) consecutive keys each (segments must add up to the keys)."""
        segments = _int_list(segments, "segments")
        if any(s < 0 for s in segments):
            raise ValueError(f"segments must be non-negative, got {segments}")
        if sum(segments) != len(self._keys):
            raise ValueError(f"segments {list(segments)} add up to {sum(segments)}, but there are {len(self._keys)} keys")
        bounds = _cumsum_list(segments)
        offset_per_key, stride, lengths = self.offset_per_key(), self._stride, self.lengths()
        parts = []
        for first, last in zip(bounds[:-1], bounds[1:]):
            start, end = offset_per_key[first], offset_per_key[last]
            weights = None if self._weights is None else self._weights[start:end]
            parts.append(KeyedJaggedTensor._trusted(
                self._keys[first:last], self._values[start:end], weights, lengths[first * stride:last * stride],
                stride, self._length_per_key[first:last]))
        return parts

    def permute(self, indices, indices_tensor=None):
        """A KJT whose key i is this one's key indices[i]: keys may be reordered, repeated or left
        out. `indices_tensor` (TorchRec's, optional) must hold `indices`; the kernel reads the list."""
        indices = _int_list(indices, "indices")
        n_keys = len(self._keys)
        if any(i < 0 or i >= n_keys for i in indices):
            raise IndexError(f"indices must lie in [0, {n_keys}), got {list(indices)}")
        if indices_tensor is not None and indices_tensor.tolist() != indices:
            raise ValueError("indices_tensor must hold the same indices as indices")
        per_key = self.length_per_key()
        lengths, values, weights = ops.permute_2D_sparse_data(
            indices, self.lengths().view(n_keys, self._stride), self._values, self._weights)
        return KeyedJaggedTensor._trusted([self._keys[i] for i in indices], values, weights, lengths.view(-1),
                                          self._stride, [per_key[i] for i in indices])

    def to(self, device, non_blocking=False):
        """`self` on the CPU; another device is refused (see `_check_device`)."""
        _check_device(device)
        return self

    def pin_memory(self):
        """`self`: a CPU-only build has no accelerator to pin memory for."""
        return self

    def __str__(self):
        if not self._keys:
            return "KeyedJaggedTensor()"
        items = []
        for key, jt in zip(self._keys, self._jagged_per_key()):
            text = f'"{key}": {_jagged_string(jt.values(), jt.offsets())}'
            if jt.weights_or_none() is not None:
                text += f' (weights {_jagged_string(jt.weights(), jt.offsets())})'
            items.append(text)
        return "KeyedJaggedTensor({" + ", ".join(items) + "})"

    __repr__ = __str__


# ---- KeyedTensor ----

class KeyedTensor:
    """Dense tensors of one batch side by side along `key_dim`: key i owns length_per_key[i]
    consecutive columns (for key_dim 1) of `values`. EmbeddingBagCollection returns one: key per
    feature, the pooled embeddings as columns."""

    def __init__(self, keys, length_per_key, values, key_dim=1, offset_per_key=None, index_per_key=None):
        keys = _check_keys(keys)
        check_tensor(values, "values")
        if not isinstance(key_dim, int) or not 0 <= key_dim < max(values.dim(), 1):
            raise ValueError(f"key_dim must be a dimension of values (0 to {values.dim() - 1}), got {key_dim!r}")
        length_per_key = list(length_per_key)
        if len(length_per_key) != len(keys):
            raise ValueError(f"{len(keys)} keys but {len(length_per_key)} entries in length_per_key")
        if any(not isinstance(n, int) or n < 0 for n in length_per_key):
            raise ValueError(f"length_per_key must hold non-negative ints, got {length_per_key}")
        if sum(length_per_key) != values.shape[key_dim]:
            raise ValueError(f"length_per_key adds up to {sum(length_per_key)}, but values has "
                             f"{values.shape[key_dim]} entries along key_dim {key_dim}")
        self._keys, self._length_per_key, self._values, self._key_dim = keys, length_per_key, values, key_dim
        self._offset_per_key = _cumsum_list(length_per_key)
        if offset_per_key is not None and list(offset_per_key) != self._offset_per_key:
            raise ValueError(f"offset_per_key {list(offset_per_key)} does not match length_per_key {length_per_key}")
        self._index_per_key = {key: i for i, key in enumerate(keys)}
        if index_per_key is not None and dict(index_per_key) != self._index_per_key:
            raise ValueError(f"index_per_key {dict(index_per_key)} does not match keys {keys}")

    @staticmethod
    def from_tensor_list(keys, tensors, key_dim=1, cat_dim=1):
        """The tensors concatenated along `cat_dim`, tensor i being key i."""
        if not isinstance(tensors, (list, tuple)) or not all(isinstance(t, ember.Tensor) for t in tensors):
            raise TypeError("tensors must be a list of ember.Tensor")
        if len(keys) != len(tensors):
            raise ValueError(f"{len(keys)} keys but {len(tensors)} tensors")
        if not tensors:
            raise ValueError("tensors must hold at least one tensor")
        return KeyedTensor(keys, [t.shape[key_dim] for t in tensors], ember.cat(list(tensors), cat_dim), key_dim)

    def keys(self):
        return self._keys

    def values(self):
        return self._values

    def key_dim(self):
        return self._key_dim

    def length_per_key(self):
        return self._length_per_key

    def offset_per_key(self):
        return self._offset_per_key

    def _key_indices(self):
        return self._index_per_key

    def __getitem__(self, key):
        index = self._index_per_key.get(key)
        if index is None:
            raise KeyError(f"{key!r} is not a key of this KeyedTensor (keys: {self._keys})")
        return self._values.narrow(self._key_dim, self._offset_per_key[index], self._length_per_key[index])

    def to_dict(self):
        parts = ember.split(self._values, self._length_per_key, self._key_dim)
        return dict(zip(self._keys, parts))

    @staticmethod
    def regroup(keyed_tensors, groups):
        """One tensor per group: the columns of each of its keys (found in any of the
        KeyedTensors), in the group's order. One concatenation, one gather, one split."""
        if not keyed_tensors or not all(isinstance(kt, KeyedTensor) for kt in keyed_tensors):
            raise TypeError("keyed_tensors must be a non-empty list of KeyedTensor")
        key_dims = {kt.key_dim() for kt in keyed_tensors}
        if len(key_dims) != 1:
            raise ValueError(f"the KeyedTensors must share one key_dim, got {sorted(key_dims)}")
        key_dim = key_dims.pop()
        where, base = {}, 0
        for kt in keyed_tensors:
            for key, offset, length in zip(kt.keys(), kt.offset_per_key(), kt.length_per_key()):
                where.setdefault(key, (base + offset, length))
            base += kt.offset_per_key()[-1]
        columns, splits = [], []
        for group in groups:
            missing = [key for key in group if key not in where]
            if missing:
                raise ValueError(f"keys {missing} of group {list(group)} are in none of the KeyedTensors")
            spans = [where[key] for key in group]
            columns.extend(range(start, start + length) for start, length in spans)
            splits.append(sum(length for _, length in spans))
        values = ember.cat([kt.values() for kt in keyed_tensors], key_dim) if len(keyed_tensors) > 1 \
            else keyed_tensors[0].values()
        index = ember.tensor([c for span in columns for c in span], dtype=ember.int64)
        return list(ember.split(values.index_select(key_dim, index), splits, key_dim))

    @staticmethod
    def regroup_as_dict(keyed_tensors, groups, keys):
        """regroup(keyed_tensors, groups) as {keys[i]: group i's tensor}."""
        if len(groups) != len(keys):
            raise ValueError(f"groups and keys must be as long, got {len(groups)} groups and {len(keys)} keys")
        return dict(zip(keys, KeyedTensor.regroup(keyed_tensors, groups)))

    def to(self, device, non_blocking=False):
        _check_device(device)
        return self

    def __str__(self):
        if not self._keys:
            return "KeyedTensor()"
        return "KeyedTensor({" + ", ".join(f'"{k}": {v.tolist()}' for k, v in self.to_dict().items()) + "})"

    __repr__ = __str__
