"""FBGEMM's jagged and sparse operators (`torch.ops.fbgemm.*`) on ember tensors, under FBGEMM's
names and signatures: `emberrec.ops.X` is `torch.ops.fbgemm.X`. The work is done by the Rust
kernels of `ember-rec` (`ember._C.rec`): one native call per op, each output a fresh tensor (the
caller's tensors are never written). Where FBGEMM has a backward, so do these (through
`ember.autograd.Function`, used only when an input requires grad); `permute_*_sparse_data`
also carry the gradients of their values and weights, as emberrec's KeyedJaggedTensor needs.
The quantized row formats' operators (`FloatToFusedNBitRowwiseQuantizedSBHalf`, ...) come from
`emberrec.fbgemm.quantize_ops`.

A jagged batch is `values` (total, *inner) with `offsets` (B + 1,), where sample b holds
`values[offsets[b]:offsets[b + 1]]`. Argument types and shapes are checked here (TypeError,
ValueError); offsets (non-negative, non-decreasing, within the values) and lengths
(non-negative, adding up) by the kernels (ValueError). One jagged dimension is supported: FBGEMM's
lists of offsets with more entries raise NotImplementedError.
"""
import ember
from ember import _C
from emberrec.fbgemm.quantize_ops import (
    FloatToFused8BitRowwiseQuantized, FloatToFusedNBitRowwiseQuantizedSBHalf, FloatToHFP8Quantized,
    Fused8BitRowwiseQuantizedToFloat, FusedNBitRowwiseQuantizedSBHalfToFloat, HFP8QuantizedToFloat)

__all__ = [
    "asynchronous_complete_cumsum",
    "asynchronous_exclusive_cumsum",
    "asynchronous_inclusive_cumsum",
    "lengths_to_offsets",
    "offsets_to_lengths",
    "jagged_to_padded_dense",
    "jagged_2d_to_dense",
    "jagged_1d_to_dense",
    "dense_to_jagged",
    "jagged_dense_elementwise_add",
    "jagged_dense_elementwise_add_jagged_output",
    "jagged_dense_dense_elementwise_add_jagged_output",
    "jagged_dense_elementwise_mul",
    "batched_dense_vec_jagged_2d_mul",
    "permute_2D_sparse_data",
    "permute_1D_sparse_data",
    "block_bucketize_sparse_features",
    "permute102_baddbmm_permute102",
    "index_select_dim0",
    "segment_sum",
    "FloatToFused8BitRowwiseQuantized",
    "Fused8BitRowwiseQuantizedToFloat",
    "FloatToFusedNBitRowwiseQuantizedSBHalf",
    "FusedNBitRowwiseQuantizedSBHalfToFloat",
    "FloatToHFP8Quantized",
    "HFP8QuantizedToFloat",
]

_native = _C.rec

INDEX_DTYPES = (ember.int64, ember.int32, ember.int16, ember.int8, ember.uint8)
FLOAT_DTYPES = (ember.float32, ember.float64, ember.float16, ember.bfloat16)


# ---- argument checks ----

def check_tensor(tensor, name):
    if not isinstance(tensor, ember.Tensor):
        raise TypeError(f"{name} must be an ember.Tensor, got {type(tensor).__name__}")


def check_index_tensor(tensor, name, dim=1):
    check_tensor(tensor, name)
    if tensor.dtype not in INDEX_DTYPES:
        raise TypeError(f"{name} must have an integer dtype, got {tensor.dtype}")
    if tensor.dim() != dim:
        raise ValueError(f"{name} must be {dim}-D, got shape {tuple(tensor.shape)}")


def _check_float_tensor(tensor, name, min_dim=1):
    check_tensor(tensor, name)
    if tensor.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} must be float32, float64, float16 or bfloat16, got {tensor.dtype}")
    if tensor.dim() < min_dim:
        raise ValueError(f"{name} must have at least {min_dim} dimensions, got shape {tuple(tensor.shape)}")


def _check_count(value, name):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    return value


def _single_offsets(offsets, op):
    """The one offsets tensor of FBGEMM's list of per-jagged-dimension offsets."""
    if isinstance(offsets, ember.Tensor) or not isinstance(offsets, (list, tuple)):
        raise TypeError(f"{op}: offsets must be a list of tensors (one per jagged dimension), got {type(offsets).__name__}")
    if len(offsets) != 1:
        if not offsets:
            raise ValueError(f"{op}: offsets must hold one offsets tensor")
        raise NotImplementedError(f"{op} supports one jagged dimension, got {len(offsets)}")
    check_index_tensor(offsets[0], "offsets[0]")
    if offsets[0].numel() == 0:
        raise ValueError(f"{op}: offsets[0] must hold at least one entry (offsets of B samples hold B + 1)")
    return offsets[0]


def _check_jagged_dense(x_values, x_offsets, y, op):
    """x's one offsets tensor, after checking that y is (B, N, *x's inner dims) of x's dtype."""
    _check_float_tensor(x_values, "x_values")
    offsets = _single_offsets(x_offsets, op)
    check_tensor(y, "y")
    batch = offsets.numel() - 1
    if y.dim() != x_values.dim() + 1 or y.shape[0] != batch or tuple(y.shape[2:]) != tuple(x_values.shape[1:]):
        raise ValueError(f"{op}: y must be (B, N{''.join(f', {d}' for d in x_values.shape[1:])}) with B = {batch}, "
                         f"got shape {tuple(y.shape)}")
    if y.dtype != x_values.dtype:
        raise TypeError(f"{op}: y must have x_values' dtype {x_values.dtype}, got {y.dtype}")
    return offsets


def _tracked(*tensors):
    """Whether autograd must record an op on these inputs."""
    return ember.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


# ---- cumulative sums ----

def _cumsum(t_in, kind):
    check_tensor(t_in, "t_in")
    if t_in.dtype not in (ember.int32, ember.int64):
        raise TypeError(f"asynchronous_{kind}_cumsum: t_in must be int32 or int64, got {t_in.dtype}")
    if t_in.dim() == 2 and kind == "complete":  # FBGEMM's row by row form
        zeros = ember.zeros(t_in.shape[0], 1, dtype=t_in.dtype)
        return ember.cat([zeros, ember.cumsum(t_in, 1, dtype=t_in.dtype)], 1)
    if t_in.dim() != 1:
        raise ValueError(f"asynchronous_{kind}_cumsum: t_in must be 1-D, got shape {tuple(t_in.shape)}")
    return _native.cumsum(t_in, kind)


def asynchronous_complete_cumsum(t_in):
    """[0, x0, x0 + x1, ..., total]: one longer than `t_in` (int32 / int64; 2-D: per row)."""
    return _cumsum(t_in, "complete")


def asynchronous_exclusive_cumsum(t_in):
    """[0, x0, x0 + x1, ..., x0 + ... + x(n-2)]: as long as `t_in`."""
    return _cumsum(t_in, "exclusive")


def asynchronous_inclusive_cumsum(t_in):
    """[x0, x0 + x1, ..., total]: as long as `t_in`."""
    return _cumsum(t_in, "inclusive")


def lengths_to_offsets(lengths):
    """The offsets of 1-D `lengths` (any integer dtype), in lengths' dtype."""
    if lengths.dtype in (ember.int32, ember.int64):
        return _native.cumsum(lengths, "complete")
    return _native.cumsum(lengths.long(), "complete").to(lengths.dtype)


def offsets_to_lengths(offsets):
    return offsets[1:] - offsets[:-1]


def segment_sum(lengths, rows):
    """Sum of `lengths` viewed as `rows` rows (a 2-D (rows, B) layout), as an int64 tensor."""
    if rows == 0:
        return ember.zeros(0, dtype=ember.int64)
    return lengths.long().view(rows, -1).sum(1)


# ---- jagged <-> dense ----

class _JaggedToPaddedDense(ember.autograd.Function):
    @staticmethod
    def forward(ctx, values, offsets, max_length, padding_value):
        ctx.save_for_backward(offsets)
        ctx.rows = values.shape[0]
        return _native.jagged_to_padded_dense(values, offsets, max_length, padding_value)

    @staticmethod
    def backward(ctx, grad):
        offsets, = ctx.saved_tensors
        return _native.dense_to_jagged(grad, offsets, ctx.rows), None, None, None


def jagged_to_padded_dense(values, offsets, max_lengths, padding_value=0.0):
    """A (B, max_length, *inner) tensor from jagged `values` (total, *inner): longer samples are
    cut at max_length, shorter ones filled with `padding_value`. `offsets` and `max_lengths` are
    lists with one entry per jagged dimension (only one is supported)."""
    check_tensor(values, "values")
    offsets = _single_offsets(offsets, "jagged_to_padded_dense")
    if not isinstance(max_lengths, (list, tuple)):
        raise TypeError(f"max_lengths must be a list of ints, got {type(max_lengths).__name__}")
    if len(max_lengths) != 1:
        raise ValueError(f"offsets and max_lengths must have one entry per jagged dimension, got 1 and {len(max_lengths)}")
    max_length = _check_count(max_lengths[0], "max_lengths[0]")
    if values.dim() == 0:
        raise ValueError("values must have at least one dimension (total, ...)")
    if _tracked(values):
        return _JaggedToPaddedDense.apply(values, offsets, max_length, float(padding_value))
    return _native.jagged_to_padded_dense(values, offsets, max_length, float(padding_value))


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


class _DenseToJagged(ember.autograd.Function):
    @staticmethod
    def forward(ctx, dense, offsets, total):
        ctx.save_for_backward(offsets)
        ctx.width = dense.shape[1]
        return _native.dense_to_jagged(dense, offsets, total)

    @staticmethod
    def backward(ctx, grad):
        offsets, = ctx.saved_tensors
        return _native.jagged_to_padded_dense(grad, offsets, ctx.width, 0.0), None, None


def dense_to_jagged(dense, x_offsets, total_L=None):
    """(values, x_offsets): row j < N of each dense[b] (dense is (B, N, *inner)) at sample b's
    row j, zeros where a sample is longer than N; `total_L` rows (default: the last offset)."""
    check_tensor(dense, "dense")
    offsets = _single_offsets(x_offsets, "dense_to_jagged")
    if dense.dim() < 2 or dense.shape[0] != offsets.numel() - 1:
        raise ValueError(f"dense must be (B, N, ...) with B = len(offsets) - 1 = {offsets.numel() - 1}, "
                         f"got shape {tuple(dense.shape)}")
    total = int(offsets[-1]) if total_L is None else _check_count(total_L, "total_L")
    if _tracked(dense):
        return _DenseToJagged.apply(dense, offsets, total), list(x_offsets)
    return _native.dense_to_jagged(dense, offsets, total), list(x_offsets)


# ---- jagged with dense, elementwise ----

class _JaggedDenseAdd(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x_values, offsets, y):
        ctx.save_for_backward(offsets)
        ctx.rows = x_values.shape[0]
        return _native.jagged_dense_add_dense(x_values, offsets, y)

    @staticmethod
    def backward(ctx, grad):
        offsets, = ctx.saved_tensors
        return _native.dense_to_jagged(grad, offsets, ctx.rows), None, grad


def jagged_dense_elementwise_add(x_values, x_offsets, y):
    """y + x padded with zeros: a dense (B, N, *inner) tensor (x's rows past N are dropped)."""
    offsets = _check_jagged_dense(x_values, x_offsets, y, "jagged_dense_elementwise_add")
    if _tracked(x_values, y):
        return _JaggedDenseAdd.apply(x_values, offsets, y)
    return _native.jagged_dense_add_dense(x_values, offsets, y)


class _JaggedDenseAddJagged(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x_values, offsets, *dense):
        ctx.save_for_backward(offsets)
        ctx.width = dense[0].shape[1]
        return _native.jagged_dense_elementwise(x_values, offsets, list(dense), "add")

    @staticmethod
    def backward(ctx, grad):
        offsets, = ctx.saved_tensors
        padded = _native.jagged_to_padded_dense(grad, offsets, ctx.width, 0.0) \
            if any(ctx.needs_input_grad[2:]) else None
        return (grad, None) + (padded,) * (len(ctx.needs_input_grad) - 2)


def _add_jagged_output(x_values, x_offsets, dense, op):
    offsets = _check_jagged_dense(x_values, x_offsets, dense[0], op)
    if len(dense) == 2:
        _check_jagged_dense(x_values, x_offsets, dense[1], op)
        if dense[1].shape != dense[0].shape:
            raise ValueError(f"{op}: y_0 and y_1 must have one shape, got {tuple(dense[0].shape)} and {tuple(dense[1].shape)}")
    if _tracked(x_values, *dense):
        return _JaggedDenseAddJagged.apply(x_values, offsets, *dense), list(x_offsets)
    return _native.jagged_dense_elementwise(x_values, offsets, list(dense), "add"), list(x_offsets)


def jagged_dense_elementwise_add_jagged_output(x_values, x_offsets, y):
    """(x + y at each of x's values, x_offsets): where y has no row (past its N), x as it is."""
    return _add_jagged_output(x_values, x_offsets, [y], "jagged_dense_elementwise_add_jagged_output")


def jagged_dense_dense_elementwise_add_jagged_output(x_values, x_offsets, y_0, y_1):
    """(x + y_0 + y_1 at each of x's values, x_offsets)."""
    return _add_jagged_output(x_values, x_offsets, [y_0, y_1], "jagged_dense_dense_elementwise_add_jagged_output")


class _JaggedDenseMul(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x_values, offsets, y):
        ctx.save_for_backward(x_values, offsets, y)
        return _native.jagged_dense_elementwise(x_values, offsets, [y], "mul")

    @staticmethod
    def backward(ctx, grad):
        x_values, offsets, y = ctx.saved_tensors
        grad_x = _native.jagged_dense_elementwise(grad, offsets, [y], "mul") if ctx.needs_input_grad[0] else None
        grad_y = None
        if ctx.needs_input_grad[2]:
            grad_y = _native.jagged_to_padded_dense(grad * x_values, offsets, y.shape[1], 0.0)
        return grad_x, None, grad_y


def jagged_dense_elementwise_mul(x_values, x_offsets, y):
    """(x * y at each of x's values, x_offsets): zero where y has no row (past its N)."""
    offsets = _check_jagged_dense(x_values, x_offsets, y, "jagged_dense_elementwise_mul")
    if _tracked(x_values, y):
        return _JaggedDenseMul.apply(x_values, offsets, y), list(x_offsets)
    return _native.jagged_dense_elementwise(x_values, offsets, [y], "mul"), list(x_offsets)


class _BatchedDenseVecJagged2dMul(ember.autograd.Function):
    @staticmethod
    def forward(ctx, v, a_values, a_offsets):
        ctx.save_for_backward(v, a_values, a_offsets)
        return _native.batched_dense_vec_jagged_2d_mul(v, a_values, a_offsets)

    @staticmethod
    def backward(ctx, grad):
        v, a_values, a_offsets = ctx.saved_tensors
        grad_v, grad_a = _native.batched_dense_vec_jagged_2d_mul_backward(grad, v, a_values, a_offsets)
        return grad_v, grad_a, None


def batched_dense_vec_jagged_2d_mul(v, a_values, a_offsets):
    """(B * H, D): row b * H + h is the vector v[b * H + h] (length N) times sample b of the
    jagged `a_values` (rows of H * D, head h's D columns), over its first min(length, N) rows."""
    _check_float_tensor(v, "v", 2)
    _check_float_tensor(a_values, "a_values", 2)
    check_index_tensor(a_offsets, "a_offsets")
    if v.dim() != 2 or a_values.dim() != 2:
        raise ValueError(f"v must be (B * H, N) and a_values (total, H * D), got shapes {tuple(v.shape)} and "
                         f"{tuple(a_values.shape)}")
    if v.dtype != a_values.dtype:
        raise TypeError(f"v and a_values must have one dtype, got {v.dtype} and {a_values.dtype}")
    batch = a_offsets.numel() - 1
    if batch < 0 or (batch and v.shape[0] % batch) or (not batch and v.shape[0]):
        raise ValueError(f"v's {v.shape[0]} rows must be B * H for the B = {max(batch, 0)} samples of a_offsets")
    heads = v.shape[0] // batch if batch else 1
    if heads == 0 or a_values.shape[1] % heads:
        raise ValueError(f"a_values' rows of {a_values.shape[1]} do not divide into H = {heads} heads")
    if _tracked(v, a_values):
        return _BatchedDenseVecJagged2dMul.apply(v, a_values, a_offsets)
    return _native.batched_dense_vec_jagged_2d_mul(v, a_values, a_offsets)


# ---- sparse features ----

class _PermuteSparseData(ember.autograd.Function):
    """The gradients of a permutation's values and weights: each output row's gradient added
    back to the input row it was copied from (keys may repeat)."""

    @staticmethod
    def forward(ctx, permute, lengths, values, weights):
        ctx.save_for_backward(lengths)
        ctx.permute = permute if isinstance(permute, ember.Tensor) else ember.tensor(permute, dtype=ember.int64)
        ctx.rows = values.shape[0]
        permuted_lengths, permuted_values, permuted_weights = _native.permute_sparse_data(permute, lengths, values, weights)
        ctx.mark_non_differentiable(permuted_lengths)
        if weights is None:
            return permuted_lengths, permuted_values
        return permuted_lengths, permuted_values, permuted_weights

    @staticmethod
    def backward(ctx, _, grad_values, grad_weights=None):
        lengths, = ctx.saved_tensors
        source = _source_rows(ctx.permute, lengths, grad_values.shape[0])

        def scattered(grad):
            if grad is None:
                return None
            return ember.zeros((ctx.rows,) + tuple(grad.shape[1:]), dtype=grad.dtype).index_add(0, source, grad)
        return None, None, scattered(grad_values), scattered(grad_weights)


def _source_rows(permute, lengths, total):
    """For each row of a permutation's output, the input row it copies (int64)."""
    per_key = segment_sum(lengths, lengths.shape[0])
    starts = lengths_to_offsets(per_key)[:-1]
    index = ember.arange(total, dtype=ember.int64)
    # row r of output key p copies input row starts[permute[p]] + (r - out_starts[p])
    sizes = per_key.index_select(0, permute.long())
    out_starts = lengths_to_offsets(sizes)[:-1]
    shift = starts.index_select(0, permute.long()) - out_starts
    return index + shift.repeat_interleave(sizes)


def permute_2D_sparse_data(permute, lengths, values, weights=None, permuted_lengths_sum=None):
    """(lengths, values, weights) with the keys (rows of the (T, B) `lengths`) reordered as
    `permute` says: output key i is input key permute[i]. Keys may repeat or be left out.
    `permute` is an integer tensor, or (beyond FBGEMM) a list of ints."""
    if not isinstance(permute, list):
        check_index_tensor(permute, "permute")
    check_index_tensor(lengths, "lengths", dim=2)
    check_tensor(values, "values")
    if values.dim() == 0:
        raise ValueError("values must have at least one dimension")
    if weights is not None:
        check_tensor(weights, "weights")
        if weights.dim() == 0 or weights.shape[0] != values.shape[0]:
            raise ValueError(f"weights must have one row per value ({values.shape[0]}), got shape {tuple(weights.shape)}")
    if _tracked(values, weights):
        result = _PermuteSparseData.apply(permute, lengths, values, weights)
        result = result if weights is not None else result + (None,)
    else:
        result = _native.permute_sparse_data(permute, lengths, values, weights)
    if permuted_lengths_sum is not None and permuted_lengths_sum != result[1].shape[0]:
        raise ValueError(f"permuted_lengths_sum is {permuted_lengths_sum}, but the permuted lengths sum to {result[1].shape[0]}")
    return result


def permute_1D_sparse_data(permute, lengths, values, weights=None, permuted_lengths_sum=None):
    """(lengths, values, weights) with the segments of 1-D `lengths` reordered by `permute`."""
    check_index_tensor(lengths, "lengths")
    permuted_lengths, permuted_values, permuted_weights = permute_2D_sparse_data(
        permute, lengths.view(-1, 1), values, weights, permuted_lengths_sum)
    return permuted_lengths.view(-1), permuted_values, permuted_weights


def block_bucketize_sparse_features(lengths, indices, bucketize_pos, sequence, block_sizes, my_size, weights=None,
                                    batch_size_per_feature=None, max_B=-1, block_bucketize_pos=None,
                                    keep_orig_idx=False, total_num_blocks=None, keep_orig_idx_per_feature=None):
    """Ids of T features (lengths: T * B, feature-major) sorted into `my_size` buckets of
    block_sizes[t] rows each (row-wise sharding): an id below my_size * block goes to bucket
    id // block as row id % block, a larger one to bucket id % my_size as row id // my_size.
    Returns (lengths: my_size * T * B, bucket-major; indices; weights or None; each id's
    position in its sample or None (`bucketize_pos`); each input id's place among the output
    ids or None (`sequence`))."""
    check_index_tensor(lengths, "lengths")
    check_index_tensor(indices, "indices")
    check_index_tensor(block_sizes, "block_sizes")
    if indices.dtype not in (ember.int32, ember.int64):
        raise TypeError(f"indices must be int32 or int64, got {indices.dtype}")
    if isinstance(my_size, bool) or not isinstance(my_size, int) or my_size <= 0:
        raise ValueError(f"my_size must be a positive int, got {my_size!r}")
    if weights is not None:
        check_tensor(weights, "weights")
        if weights.dim() == 0 or weights.shape[0] != indices.numel():
            raise ValueError(f"weights must have one entry per index ({indices.numel()}), got shape {tuple(weights.shape)}")
    unsupported = {"batch_size_per_feature": batch_size_per_feature is not None, "max_B": max_B != -1,
                   "block_bucketize_pos": block_bucketize_pos is not None, "total_num_blocks": total_num_blocks is not None,
                   "keep_orig_idx_per_feature": keep_orig_idx_per_feature is not None}
    named = [name for name, given in unsupported.items() if given]
    if named:
        raise NotImplementedError(f"block_bucketize_sparse_features: {', '.join(named)} (variable batch sizes, "
                                  "uneven blocks) are not supported by emberrec")
    return _native.block_bucketize_sparse_features(lengths, indices, bool(bucketize_pos), bool(sequence), block_sizes,
                                                   my_size, weights, bool(keep_orig_idx))


# ---- dense ----

def permute102_baddbmm_permute102(bias, A, B):
    """(A.permute(1, 0, 2) @ B + bias[:, None, :]).permute(1, 0, 2): A is (M, batch, K), B
    (batch, K, N), bias (batch, N); the result (M, batch, N). float32 and float16 (and their
    gradients, by Ember's batched matmul, as FBGEMM's CPU kernel runs at::baddbmm)."""
    for name, t in (("bias", bias), ("A", A), ("B", B)):
        _check_float_tensor(t, name)
    if A.dim() != 3 or B.dim() != 3 or bias.dim() != 2:
        raise ValueError(f"A must be (M, batch, K), B (batch, K, N) and bias (batch, N), got shapes "
                         f"{tuple(A.shape)}, {tuple(B.shape)} and {tuple(bias.shape)}")
    if A.shape[1] != B.shape[0] or A.shape[2] != B.shape[1] or tuple(bias.shape) != (B.shape[0], B.shape[2]):
        raise ValueError(f"A (M, batch, K) = {tuple(A.shape)}, B (batch, K, N) = {tuple(B.shape)} and "
                         f"bias (batch, N) = {tuple(bias.shape)} do not fit together")
    if not A.dtype == B.dtype == bias.dtype:
        raise TypeError(f"bias, A and B must have one dtype, got {bias.dtype}, {A.dtype} and {B.dtype}")
    return ember.baddbmm(bias.unsqueeze(1), A.permute(1, 0, 2), B).permute(1, 0, 2)


def index_select_dim0(input, indices, consecutive_range_start=0, consecutive_range_length=0,
                      skip_indices_sorting_fwd=None):
    """input[indices] along dim 0 (its gradient adds each row's gradients back). The other
    arguments are FBGEMM's GPU hints and change nothing."""
    check_tensor(input, "input")
    check_index_tensor(indices, "indices")
    if input.dim() == 0:
        raise ValueError("input must have at least one dimension")
    if indices.numel():
        low, high = int(indices.min()), int(indices.max())
        if low < 0 or high >= input.shape[0]:
            raise IndexError(f"index_select_dim0: index {low if low < 0 else high} is out of range for "
                             f"{input.shape[0]} rows")
    return input.index_select(0, indices.long())
