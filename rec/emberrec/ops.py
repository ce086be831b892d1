"""FBGEMM's jagged and sparse operators (`torch.ops.fbgemm.*`), written as compositions of
vectorised Ember ops: no Python loop runs over keys, samples or values, and every op here is
differentiable with respect to its values (and weights) through Ember's autograd.

A jagged batch is `values` (total, *inner) with `offsets` (B + 1,), where sample b holds
`values[offsets[b]:offsets[b + 1]]`. These functions trust their lengths and offsets to be
consistent (the `JaggedTensor` / `KeyedJaggedTensor` constructors validate them once); the
argument types are checked here.
"""
import ember

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


def _dense_positions(offsets, max_length):
    """(index into values, mask) of a (B, max_length) padded layout: position j of sample b reads
    values[offsets[b] + j] where j < its length; elsewhere the mask is False and the index 0."""
    lengths = offsets_to_lengths(offsets).long()
    positions = ember.arange(max_length)
    mask = positions.unsqueeze(0) < lengths.unsqueeze(1)
    index = offsets[:-1].long().unsqueeze(1) + positions.unsqueeze(0)
    return ember.where(mask, index, ember.zeros((), dtype=ember.int64)), mask


def jagged_to_padded_dense(values, offsets, max_lengths, padding_value=0.0):
    """A (B, max_length, *inner) tensor from jagged `values` (total, *inner): longer samples are
    cut at max_length, shorter ones filled with `padding_value`. FBGEMM's signature: `offsets` and
    `max_lengths` are lists with one entry per jagged dimension (only one is supported)."""
    check_tensor(values, "values")
    offsets, max_length = _single_jagged_dim(offsets, max_lengths)
    batch = offsets.numel() - 1
    inner = tuple(values.shape[1:])
    if values.shape[0] == 0 or max_length == 0:
        return ember.full((batch, max_length) + inner, padding_value, dtype=values.dtype)
    index, mask = _dense_positions(offsets, max_length)
    gathered = values.index_select(0, index.flatten()).view((batch, max_length) + inner)
    mask = mask.view((batch, max_length) + (1,) * len(inner))
    return ember.where(mask, gathered, ember.full((), padding_value, dtype=values.dtype))


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
    rows = ember.repeat_interleave(ember.arange(batch), lengths, output_size=total)
    columns = ember.arange(total) - offsets_0.long().index_select(0, rows)
    flat = dense.reshape((batch * width,) + tuple(dense.shape[2:]))
    return flat.index_select(0, rows * width + columns), list(offsets)


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
    permuted_weights = None if weights is None else weights.index_select(0, gather)
    return lengths.index_select(0, permute), values.index_select(0, gather), permuted_weights


def permute_1D_sparse_data(permute, lengths, values, weights=None, permuted_lengths_sum=None):
    """(lengths, values, weights) with the segments of 1-D `lengths` reordered by `permute`."""
    check_index_tensor(lengths, "lengths")
    permuted_lengths, permuted_values, permuted_weights = permute_2D_sparse_data(
        permute, lengths.view(-1, 1), values, weights, permuted_lengths_sum)
    return permuted_lengths.view(-1), permuted_values, permuted_weights


def _segment_gather_index(starts, sizes, total=None):
    """Indices reading segment i (values[starts[i]:starts[i] + sizes[i]]) for each i in turn."""
    if total is None:
        total = int(sizes.sum())
    out_starts = lengths_to_offsets(sizes)[:-1]
    shift = ember.repeat_interleave(starts - out_starts, sizes, output_size=total)
    return ember.arange(total) + shift
