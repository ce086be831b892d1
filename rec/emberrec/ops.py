"""FBGEMM's jagged and sparse operators (`torch.ops.fbgemm.*`), written as compositions of
vectorised Ember ops: no Python loop runs over keys, samples or values, and every op here is
differentiable with respect to its values (and weights) through Ember's autograd. The quantized
row formats' operators (`FloatToFusedNBitRowwiseQuantizedSBHalf`, ...) come from
`emberrec.fbgemm.quantize_ops` (Rust kernels, not differentiable).

A jagged batch is `values` (total, *inner) with `offsets` (B + 1,), where sample b holds
`values[offsets[b]:offsets[b + 1]]`. These functions trust their lengths and offsets to be
consistent (the `JaggedTensor` / `KeyedJaggedTensor` constructors validate them once); the
argument types are checked here.
"""
import ember
from emberrec.fbgemm.quantize_ops import (
    FloatToFused8BitRowwiseQuantized, FloatToFusedNBitRowwiseQuantizedSBHalf, FloatToHFP8Quantized,
    Fused8BitRowwiseQuantizedToFloat, FusedNBitRowwiseQuantizedSBHalfToFloat, HFP8QuantizedToFloat)

__all__ = [
    "asynchronous_complete_cumsum",
    "asynchronous_exclusive_cumsum",
    "lengths_to_offsets",
    "offsets_to_lengths",
    "jagged_to_padded_dense",
    "jagged_2d_to_dense",
    "jagged_1d_to_dense",
    "dense_to_jagged",
    "permute_2D_sparse_data",
    "permute_1D_sparse_data",
    "segment_sum",
    "FloatToFused8BitRowwiseQuantized",
    "Fused8BitRowwiseQuantizedToFloat",
    "FloatToFusedNBitRowwiseQuantizedSBHalf",
    "FusedNBitRowwiseQuantizedSBHalfToFloat",
    "FloatToHFP8Quantized",
    "HFP8QuantizedToFloat",
]

INDEX_DTYPES = (ember.int64, ember.int32, ember.int16, ember.int8, ember.uint8)


def check_tensor(tensor, name):
    if not isinstance(tensor, ember.Tensor):
        raise TypeError(f"{name} must be an ember.Tensor, got {type(tensor).__name__}")


def check_index_tensor(tensor, name, dim=1):
    check_tensor(tensor, name)
    if tensor.dtype not in INDEX_DTYPES:
        raise TypeError(f"{name} must have an integer dtype, got {tensor.dtype}")
    if tensor.dim() != dim:
        raise ValueError(f"{name} must be {dim}-D, got shape {tuple(tensor.shape)}")


def asynchronous_complete_cumsum(lengths):
    """[0, l0, l0 + l1, ...]: the offsets of `lengths`, one longer, in lengths' dtype."""
    check_index_tensor(lengths, "lengths")
    return lengths_to_offsets(lengths)


def asynchronous_exclusive_cumsum(lengths):
    """[0, l0, l0 + l1, ..., l0 + ... + l(n-2)]: as long as `lengths`, in lengths' dtype."""
    check_index_tensor(lengths, "lengths")
    return lengths_to_offsets(lengths)[:-1]


def lengths_to_offsets(lengths):
    zero = ember.zeros(1, dtype=lengths.dtype)
    return ember.cat([zero, ember.cumsum(lengths, 0, dtype=lengths.dtype)])


def offsets_to_lengths(offsets):
    return offsets[1:] - offsets[:-1]


def segment_ids(offsets, total):
    """For each of the `total` values, the index of the segment (sample) it belongs to: a 1 added
    at each segment's start, then a running sum (cheaper than repeat_interleave of the lengths)."""
    starts = offsets[1:-1].long()  # segment 0 starts at 0; a start at `total` (empty tail) is dropped below
    marks = ember.zeros(total + 1, dtype=ember.int64).index_add(0, starts, ember.ones_like(starts))
    return ember.cumsum(marks[:total], 0)


def take(tensor, index):
    """tensor[index] along dim 0 (a gather for 1-D tensors, which Ember runs faster)."""
    return tensor.gather(0, index) if tensor.dim() == 1 else tensor.index_select(0, index)


def jagged_to_padded_dense(values, offsets, max_lengths, padding_value=0.0):
    """A (B, max_length, *inner) tensor from jagged `values` (total, *inner): longer samples are
    cut at max_length, shorter ones filled with `padding_value`. FBGEMM's signature: `offsets` and
    `max_lengths` are lists with one entry per jagged dimension (only one is supported)."""
    check_tensor(values, "values")
    offsets, max_length = _single_jagged_dim(offsets, max_lengths)
    batch, total = offsets.numel() - 1, values.shape[0]
    inner = tuple(values.shape[1:])
    out = ember.full((batch * max_length,) + inner, padding_value, dtype=values.dtype)
    if total and max_length:
        # each value's slot in the padded layout: row * max_length + position in its row
        rows = segment_ids(offsets, total)
        columns = ember.arange(total) - take(offsets.long(), rows)
        slots = rows * max_length + columns
        if int(offsets_to_lengths(offsets).max()) > max_length:  # some rows are cut
            kept = columns < max_length
            slots, values = slots[kept], values[kept]
        out = out.index_put((slots,), values)
    return out.view((batch, max_length) + inner)


def _single_jagged_dim(offsets, max_lengths):
    if isinstance(offsets, ember.Tensor) or not isinstance(offsets, (list, tuple)):
        raise TypeError(f"offsets must be a list of tensors (one per jagged dimension), got {type(offsets).__name__}")
    if not isinstance(max_lengths, (list, tuple)):
        raise TypeError(f"max_lengths must be a list of ints, got {type(max_lengths).__name__}")
    if len(offsets) != len(max_lengths):
        raise ValueError(f"offsets and max_lengths must have one entry per jagged dimension, "
                         f"got {len(offsets)} and {len(max_lengths)}")
    if len(offsets) != 1:
        raise NotImplementedError(f"jagged_to_padded_dense supports one jagged dimension, got {len(offsets)}")
    check_index_tensor(offsets[0], "offsets[0]")
    if offsets[0].numel() == 0:
        raise ValueError("offsets[0] must hold at least one entry (offsets of B samples hold B + 1)")
    max_length = max_lengths[0]
    if not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 0:
        raise ValueError(f"max_lengths[0] must be a non-negative int, got {max_length!r}")
    return offsets[0], max_length


def jagged_2d_to_dense(values, offsets, max_sequence_length):
    """(B, max_sequence_length, D) from jagged (total, D) `values`, zero-padded."""
    check_tensor(values, "values")
    if values.dim() != 2:
        raise ValueError(f"values must be 2-D (total, D), got shape {tuple(values.shape)}")
    return jagged_to_padded_dense(values, [offsets], [max_sequence_length], 0.0)


def jagged_1d_to_dense(values, offsets, max_sequence_length, padding_value=0):
    """(B, max_sequence_length) from jagged 1-D `values`, padded with `padding_value`."""
    check_tensor(values, "values")
    if values.dim() != 1:
        raise ValueError(f"values must be 1-D, got shape {tuple(values.shape)}")
    return jagged_to_padded_dense(values, [offsets], [max_sequence_length], padding_value)


def dense_to_jagged(dense, offsets, total_L=None):
    """(values, offsets): the first length_b rows of each dense[b] (dense is (B, N, *inner)),
    jagged back; the inverse of jagged_to_padded_dense for samples no longer than N."""
    check_tensor(dense, "dense")
    if not isinstance(offsets, (list, tuple)) or len(offsets) != 1:
        raise ValueError("offsets must be a list holding one offsets tensor")
    offsets_0 = offsets[0]
    check_index_tensor(offsets_0, "offsets[0]")
    if dense.dim() < 2 or dense.shape[0] != offsets_0.numel() - 1:
        raise ValueError(f"dense must be (B, N, ...) with B = len(offsets) - 1 = {offsets_0.numel() - 1}, "
                         f"got shape {tuple(dense.shape)}")
    batch, width = dense.shape[0], dense.shape[1]
    lengths = offsets_to_lengths(offsets_0).long()
    if lengths.numel() and int(lengths.max()) > width:
        raise ValueError(f"a sample is {int(lengths.max())} long, longer than the dense width {width}")
    total = int(offsets_0[-1]) if total_L is None else total_L
    rows = segment_ids(offsets_0, total)
    columns = ember.arange(total) - take(offsets_0.long(), rows)
    flat = dense.reshape((batch * width,) + tuple(dense.shape[2:]))
    return take(flat, rows * width + columns), list(offsets)


def segment_sum(lengths, rows):
    """Sum of `lengths` viewed as `rows` rows (a 2-D (rows, B) layout), as an int64 tensor."""
    if rows == 0:
        return ember.zeros(0, dtype=ember.int64)
    return lengths.long().view(rows, -1).sum(1)


def permute_2D_sparse_data(permute, lengths, values, weights=None, permuted_lengths_sum=None):
    """(lengths, values, weights) with the keys (rows of the (T, B) `lengths`) reordered as
    `permute` says: output key i is input key permute[i]. Keys may repeat or be left out."""
    check_index_tensor(permute, "permute")
    check_index_tensor(lengths, "lengths", dim=2)
    check_tensor(values, "values")
    keys = lengths.shape[0]
    if permute.numel() and (int(permute.min()) < 0 or int(permute.max()) >= keys):
        raise IndexError(f"permute holds an index outside [0, {keys}): {permute.tolist()}")
    permute = permute.long()
    per_key = segment_sum(lengths, keys)
    starts = lengths_to_offsets(per_key)[:-1]
    gather = _segment_gather_index(starts.index_select(0, permute), per_key.index_select(0, permute),
                                   permuted_lengths_sum)
    permuted_weights = None if weights is None else take(weights, gather)
    return lengths.index_select(0, permute), take(values, gather), permuted_weights


def permute_1D_sparse_data(permute, lengths, values, weights=None, permuted_lengths_sum=None):
    """(lengths, values, weights) with the segments of 1-D `lengths` reordered by `permute`."""
    check_index_tensor(lengths, "lengths")
    permuted_lengths, permuted_values, permuted_weights = permute_2D_sparse_data(
        permute, lengths.view(-1, 1), values, weights, permuted_lengths_sum)
    return permuted_lengths.view(-1), permuted_values, permuted_weights


def _segment_gather_index(starts, sizes, total=None):
    """Indices reading segment i (values[starts[i]:starts[i] + sizes[i]]) for each i in turn, as
    a running sum of steps: 1 from one index to the next, plus, where an output segment starts,
    the jump to its input start (cheaper than arange plus repeat_interleave of shifts)."""
    if total is None:
        total = int(sizes.sum())
    if total == 0:
        return ember.zeros(0, dtype=ember.int64)
    out_starts = lengths_to_offsets(sizes)[:-1]
    shift = starts - out_starts  # index - position, constant within a segment
    jumps = shift - ember.cat([ember.ones(1, dtype=shift.dtype), shift[:-1]])  # the first step lands on shift[0]
    steps = ember.ones(total + 1, dtype=ember.int64).index_add(0, out_starts, jumps)
    return ember.cumsum(steps[:total], 0)
