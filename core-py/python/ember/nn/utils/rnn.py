"""Variable-length sequences: padding (`pad_sequence`, `unpad_sequence`) and packing
(`PackedSequence`, `pack_padded_sequence`, `pad_packed_sequence`, `pack_sequence`,
`unpack_sequence`). A packed batch stores, time step after time step, the rows of the
sequences still running at that step (longest first), so recurrent layers skip the padding."""
from collections import namedtuple

import ember
from ember import _C

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


def invert_permutation(permutation):
    """The permutation that undoes `permutation` (None stays None)."""
    if permutation is None:
        return None
    inverse = ember.empty_like(permutation)
    inverse.scatter_(0, permutation, ember.arange(permutation.numel(), dtype=permutation.dtype))
    return inverse


class PackedSequence(namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """`data`: the rows of every step, concatenated; `batch_sizes`: how many sequences run at
    each step (an int64 CPU tensor); `sorted_indices`: the batch order packing used (None when
    the input was already sorted by decreasing length); `unsorted_indices`: its inverse."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            # PyTorch's internal form: `data` is the pair (data, batch_sizes).
            data, batch_sizes = data
        elif batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be created manually. They should be instantiated by functions like pack_sequence and pack_padded_sequences in nn.utils.rnn. https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """Moves or casts `data` (and the index tensors to its device); `batch_sizes` stays an
        int64 CPU tensor. Returns self when nothing changes."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = lambda t: None if t is None else t.to(data.device)  # noqa: E731
        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def cuda(self, *args, **kwargs):
        return self.to("cuda", *args, **kwargs)

    def cpu(self, *args, **kwargs):
        return self.to("cpu", *args, **kwargs)

    def double(self):
        return self.to(dtype=ember.float64)

    def float(self):
        return self.to(dtype=ember.float32)

    def half(self):
        return self.to(dtype=ember.float16)

    def long(self):
        return self.to(dtype=ember.int64)

    def int(self):
        return self.to(dtype=ember.int32)

    def short(self):
        return self.to(dtype=ember.int16)

    def char(self):
        return self.to(dtype=ember.int8)

    def byte(self):
        return self.to(dtype=ember.uint8)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        """Ember has no pinned host memory."""
        return False


def _lengths_tensor(lengths):
    """`lengths` as a 1-D int64 tensor (lists and float tensors are converted, as in PyTorch)."""
    lengths = lengths if isinstance(lengths, _C.Tensor) else ember.as_tensor(lengths, dtype=ember.int64)
    if lengths.ndim != 1:
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.ndim}D {lengths.device.type} {lengths.dtype} tensor")
    return lengths.to(ember.int64)


def _batch_sizes(lengths, steps):
    """How many sequences run at each step, from lengths sorted in decreasing order."""
    sizes, batch = [], len(lengths)
    for t in range(steps):
        while batch and lengths[batch - 1] <= t:
            batch -= 1
        sizes.append(batch)
    return sizes


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Packs a padded batch (T, B, *) (or (B, T, *) with `batch_first`) whose sequence b has
    `lengths[b]` valid steps. With `enforce_sorted`, lengths must be in decreasing order;
    otherwise the batch is sorted here and the order kept in the result."""
    lengths = _lengths_tensor(lengths)
    if enforce_sorted:
        sorted_indices = None
    else:
        lengths, sorted_indices = ember.sort(lengths, descending=True, stable=True)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if batch_first:
        input = input.transpose(0, 1)
    steps, batch = input.shape[0], input.shape[1]
    values = lengths.tolist()
    if len(values) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(values)} (batch_size={batch})")
    if values[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0")
    if any(a < b for a, b in zip(values, values[1:])):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement if you do not need ONNX exportability.")
    if values[0] > steps:
        raise RuntimeError(f"Expected the longest length ({values[0]}) to be at most the padded sequence length ({steps})")
    sizes = _batch_sizes(values, values[0])
    data = ember.cat([input[t, :n] for t, n in enumerate(sizes)])
    return PackedSequence(data, ember.tensor(sizes, dtype=ember.int64), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Inverse of `pack_padded_sequence`: the padded batch (in the original order) and each
    sequence's length (an int64 tensor). `total_length` pads the time axis to that length."""
    sizes = sequence.batch_sizes.tolist()
    batch, steps = sizes[0], len(sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"Expected total_length to be at least the length of the longest sequence in input, but got total_length={total_length} and max sequence length being {steps}")
        steps = total_length
    data = sequence.data
    rows = []
    for chunk in data.split(sizes):
        missing = batch - chunk.shape[0]
        if missing:
            chunk = ember.cat([chunk, ember.full((missing,) + tuple(chunk.shape[1:]), padding_value, dtype=data.dtype)])
        rows.append(chunk)
    filler = ember.full((batch,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype)
    rows += [filler] * (steps - len(sizes))
    padded = ember.stack(rows, dim=1 if batch_first else 0)
    lengths = ember.tensor([sum(1 for n in sizes if n > b) for b in range(batch)], dtype=ember.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(0 if batch_first else 1, sequence.unsorted_indices)
        lengths = lengths.index_select(0, sequence.unsorted_indices)
    return padded, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stacks tensors of shape (L_i, *) into (L_max, B, *) (or (B, L_max, *) with
    `batch_first`), padded with `padding_value` on `padding_side`."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, _C.Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        gap = longest - s.shape[0]
        if gap:
            filler = ember.full((gap,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype)
            s = ember.cat([s, filler] if padding_side == "right" else [filler, s])
        padded.append(s)
    return ember.stack(padded, dim=0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of sequences of a padded batch: sequence b is its first `lengths[b]` steps."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    lengths = lengths.tolist() if isinstance(lengths, _C.Tensor) else list(lengths)
    if len(lengths) != padded_sequences.shape[0]:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} (batch_size={padded_sequences.shape[0]})")
    return [padded_sequences[b, :n] for b, n in enumerate(lengths)]


def pack_sequence(sequences, enforce_sorted=True):
    """Packs a list of tensors of shape (L_i, *); with `enforce_sorted`, in decreasing length."""
    sequences = list(sequences)
    lengths = ember.tensor([s.shape[0] for s in sequences], dtype=ember.int64) if sequences else []
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of tensors `pack_sequence` packed, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
