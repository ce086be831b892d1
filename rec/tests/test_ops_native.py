"""FBGEMM's jagged and sparse operators (`emberrec.ops`, Rust kernels of `ember._C.rec`) against
NumPy references written from FBGEMM's documented semantics, their gradients, edge cases (empty
samples, no samples, cut and padded rows, padding values), bad input, and FBGEMM-GPU itself where
an interpreter has it (fbgemm_jagged_reference.py: EMBER_TORCHREC_PYTHON, else
EMBER_BENCH_TORCH_PYTHON)."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import ember
from emberrec import ops

HERE = pathlib.Path(__file__).resolve().parent


def e(array):
    return ember.from_numpy(np.ascontiguousarray(array))


def offsets_of(lengths, dtype=np.int64):
    return np.concatenate([[0], np.cumsum(lengths)]).astype(dtype)


def jagged_input(rng, lengths, inner=(3,), dtype=np.float32):
    offsets = offsets_of(lengths)
    return rng.standard_normal((int(offsets[-1]),) + inner).astype(dtype), offsets


# ---- NumPy references ----

def padded_reference(values, offsets, width, padding=0.0):
    out = np.full((len(offsets) - 1, width) + values.shape[1:], padding, values.dtype)
    for b in range(len(offsets) - 1):
        rows = values[offsets[b]:offsets[b + 1]][:width]
        out[b, :len(rows)] = rows
    return out


def jagged_reference(dense, offsets, total=None):
    total = int(offsets[-1]) if total is None else total
    out = np.zeros((total,) + dense.shape[2:], dense.dtype)
    for b in range(len(offsets) - 1):
        n = min(offsets[b + 1] - offsets[b], dense.shape[1])
        out[offsets[b]:offsets[b] + n] = dense[b, :n]
    return out


def dense_at_values(y, offsets, total):
    """y's row at each jagged value's place, zeros where y has none."""
    return jagged_reference(y, offsets, total)


def bdvj_reference(v, a, offsets):
    batch = len(offsets) - 1
    heads = v.shape[0] // batch
    dim = a.shape[1] // heads
    out = np.zeros((v.shape[0], dim), np.float64)
    for b in range(batch):
        n = min(offsets[b + 1] - offsets[b], v.shape[1])
        for h in range(heads):
            out[b * heads + h] = v[b * heads + h, :n] @ a[offsets[b]:offsets[b] + n, h * dim:(h + 1) * dim]
    return out


def permute_reference(permute, lengths, values):
    keys, batch = lengths.shape
    bounds = offsets_of(lengths.reshape(-1))
    rows = [values[bounds[k * batch]:bounds[(k + 1) * batch]] for k in range(keys)]
    return lengths[permute], np.concatenate([rows[k] for k in permute]) if len(permute) else values[:0]


def bucketize_reference(lengths, ids, blocks, buckets, weights=None):
    features = len(blocks)
    batch = len(lengths) // features
    bounds = offsets_of(lengths)
    placed = [[[] for _ in range(features * batch)] for _ in range(buckets)]
    for s in range(features * batch):
        block = blocks[s // batch]
        for j, i in enumerate(range(bounds[s], bounds[s + 1])):
            x = int(ids[i])
            p, row = (x // block, x % block) if x < block * buckets else (x % buckets, x // buckets)
            placed[p][s].append((row, j, i))
    flat = [item for bucket in placed for sample in bucket for item in sample]
    new_lengths = [len(sample) for bucket in placed for sample in bucket]
    permute = np.zeros(len(ids), np.int64)
    for place, (_, _, i) in enumerate(flat):
        permute[i] = place
    new_weights = None if weights is None else np.array([weights[i] for _, _, i in flat], weights.dtype)
    return (np.array(new_lengths), np.array([r for r, _, _ in flat]), new_weights,
            np.array([j for _, j, _ in flat]), permute)


# ---- cumulative sums ----

@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_cumsums(dtype):
    x = np.array([3, 0, 2, 5, 1], dtype)
    complete = ops.asynchronous_complete_cumsum(e(x))
    assert complete.dtype == e(x).dtype and complete.tolist() == [0, 3, 3, 5, 10, 11]
    assert ops.asynchronous_exclusive_cumsum(e(x)).tolist() == [0, 3, 3, 5, 10]
    assert ops.asynchronous_inclusive_cumsum(e(x)).tolist() == [3, 3, 5, 10, 11]
    assert ops.asynchronous_complete_cumsum(e(x[:0])).tolist() == [0]
    assert ops.asynchronous_exclusive_cumsum(e(x[:0])).tolist() == []
    rows = ops.asynchronous_complete_cumsum(e(np.array([[1, 2, 3], [4, 5, 6]], dtype)))
    assert rows.tolist() == [[0, 1, 3, 6], [0, 4, 9, 15]]


def test_cumsum_bad_input():
    with pytest.raises(TypeError, match="int32 or int64"):
        ops.asynchronous_complete_cumsum(ember.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="1-D"):
        ops.asynchronous_inclusive_cumsum(ember.zeros(2, 2, dtype=ember.int64))
    with pytest.raises(TypeError):
        ops.asynchronous_complete_cumsum([1, 2])


# ---- jagged <-> dense ----

@pytest.mark.parametrize("inner", [(), (3,), (2, 2)])
@pytest.mark.parametrize("width", [0, 2, 9])
def test_jagged_to_padded_dense_cuts_and_pads(inner, width):
    rng = np.random.default_rng(width)
    values, offsets = jagged_input(rng, [3, 0, 5, 1, 0], inner)
    got = ops.jagged_to_padded_dense(e(values), [e(offsets)], [width], -1.5)
    np.testing.assert_array_equal(got.numpy(), padded_reference(values, offsets, width, -1.5))


@pytest.mark.parametrize("dtype", [np.float16, np.float64, np.int32, np.int64, np.uint8, np.bool_])
def test_jagged_to_padded_dense_keeps_any_dtype(dtype):
    values = np.array([1, 0, 1, 1], dtype)
    offsets = np.array([0, 1, 1, 4], np.int32)
    got = ops.jagged_1d_to_dense(e(values), e(offsets), 2, 1)
    assert got.dtype == e(values).dtype
    np.testing.assert_array_equal(got.numpy(), padded_reference(values, offsets, 2, 1))


def test_jagged_2d_to_dense_and_bfloat16():
    values = ember.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=ember.bfloat16)
    got = ops.jagged_2d_to_dense(values, ember.tensor([0, 2, 2, 3]), 1)
    assert got.dtype == ember.bfloat16
    assert got.float().tolist() == [[[1.0, 2.0]], [[0.0, 0.0]], [[5.0, 6.0]]]


def test_no_samples_and_empty_values():
    out = ops.jagged_to_padded_dense(ember.zeros(0, 4), [ember.tensor([0])], [3])
    assert tuple(out.shape) == (0, 3, 4)
    out = ops.jagged_to_padded_dense(ember.zeros(0, 4), [ember.tensor([0, 0, 0])], [3], 7.0)
    assert out.tolist() == [[[7.0] * 4] * 3] * 2
    values, offsets = ops.dense_to_jagged(ember.zeros(2, 3, 4), [ember.tensor([0, 0, 0])])
    assert tuple(values.shape) == (0, 4)


def test_large_batches_use_the_pool_and_agree():
    rng = np.random.default_rng(3)
    values, offsets = jagged_input(rng, rng.integers(0, 60, 300), (64,))
    got = ops.jagged_to_padded_dense(e(values), [e(offsets)], [40], 0.0)
    np.testing.assert_array_equal(got.numpy(), padded_reference(values, offsets, 40))
    back, _ = ops.dense_to_jagged(got, [e(offsets)])
    np.testing.assert_array_equal(back.numpy(), jagged_reference(got.numpy(), offsets))


@pytest.mark.parametrize("total", [None, 12])
def test_dense_to_jagged_zeroes_rows_past_the_width(total):
    rng = np.random.default_rng(1)
    dense = rng.standard_normal((3, 2, 3)).astype(np.float32)
    offsets = offsets_of([3, 0, 2])
    values, out_offsets = ops.dense_to_jagged(e(dense), [e(offsets)], total)
    np.testing.assert_array_equal(values.numpy(), jagged_reference(dense, offsets, total))
    assert out_offsets[0].tolist() == offsets.tolist()


def test_padding_and_its_inverse_carry_gradients():
    rng = np.random.default_rng(2)
    values, offsets = jagged_input(rng, [3, 0, 4], (2,))
    x = e(values).requires_grad_()
    padded = ops.jagged_to_padded_dense(x, [e(offsets)], [2], 5.0)
    weight = rng.standard_normal(padded.shape).astype(np.float32)
    (padded * e(weight)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), jagged_reference(weight, offsets))
    dense = e(weight).requires_grad_()
    jagged, _ = ops.dense_to_jagged(dense, [e(offsets)])
    (jagged * e(values)).sum().backward()
    np.testing.assert_array_equal(dense.grad.numpy(), padded_reference(values, offsets, 2))


def test_jagged_dense_bad_input():
    values, offsets = ember.arange(4.0), ember.tensor([0, 3, 4])
    with pytest.raises(ValueError, match="must not decrease"):
        ops.jagged_to_padded_dense(values, [ember.tensor([0, 3, 2])], [2])
    with pytest.raises(ValueError, match="past the 4 rows"):
        ops.jagged_to_padded_dense(values, [ember.tensor([0, 3, 5])], [2])
    with pytest.raises(ValueError, match="non-negative"):
        ops.jagged_to_padded_dense(values, [ember.tensor([-1, 3])], [2])
    with pytest.raises(ValueError, match="max_lengths"):
        ops.jagged_to_padded_dense(values, [offsets], [-1])
    with pytest.raises(TypeError, match="list of tensors"):
        ops.jagged_to_padded_dense(values, offsets, [2])
    with pytest.raises(NotImplementedError, match="one jagged dimension"):
        ops.jagged_to_padded_dense(values, [offsets, offsets], [2, 2])
    with pytest.raises(TypeError, match="integer dtype"):
        ops.jagged_to_padded_dense(values, [offsets.float()], [2])
    with pytest.raises(ValueError, match="at least one entry"):
        ops.jagged_to_padded_dense(values, [ember.tensor([], dtype=ember.int64)], [2])
    with pytest.raises(ValueError, match="B = len"):
        ops.dense_to_jagged(ember.zeros(3, 2), [offsets])
    with pytest.raises(ValueError, match="1-D"):
        ops.jagged_1d_to_dense(ember.zeros(4, 2), offsets, 2)
    with pytest.raises(ValueError, match="2-D"):
        ops.jagged_2d_to_dense(values, offsets, 2)
    before = values.tolist()
    ops.jagged_to_padded_dense(values, [offsets], [1])
    assert values.tolist() == before


# ---- jagged with dense, elementwise ----

def elementwise_case(rng, dtype=np.float32):
    values, offsets = jagged_input(rng, [3, 0, 4, 1], (2,), dtype)
    y = rng.standard_normal((4, 2, 2)).astype(dtype)
    return values, offsets, y


def test_jagged_dense_add_with_dense_output():
    rng = np.random.default_rng(4)
    values, offsets, y = elementwise_case(rng)
    got = ops.jagged_dense_elementwise_add(e(values), [e(offsets)], e(y))
    np.testing.assert_allclose(got.numpy(), y + padded_reference(values, offsets, 2), rtol=1e-6)
    x, yy = e(values).requires_grad_(), e(y).requires_grad_()
    weight = rng.standard_normal(y.shape).astype(np.float32)
    (ops.jagged_dense_elementwise_add(x, [e(offsets)], yy) * e(weight)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), jagged_reference(weight, offsets), rtol=1e-6)
    np.testing.assert_allclose(yy.grad.numpy(), weight, rtol=1e-6)


def test_jagged_dense_adds_with_jagged_output():
    rng = np.random.default_rng(5)
    values, offsets, y = elementwise_case(rng)
    y1 = rng.standard_normal(y.shape).astype(np.float32)
    total = len(values)
    got, got_offsets = ops.jagged_dense_elementwise_add_jagged_output(e(values), [e(offsets)], e(y))
    np.testing.assert_allclose(got.numpy(), values + dense_at_values(y, offsets, total), rtol=1e-6)
    assert got_offsets[0].tolist() == offsets.tolist()
    got, _ = ops.jagged_dense_dense_elementwise_add_jagged_output(e(values), [e(offsets)], e(y), e(y1))
    np.testing.assert_allclose(got.numpy(), values + dense_at_values(y + y1, offsets, total), rtol=1e-6)
    x, y0, y1t = e(values).requires_grad_(), e(y).requires_grad_(), e(y1).requires_grad_()
    weight = rng.standard_normal(values.shape).astype(np.float32)
    out, _ = ops.jagged_dense_dense_elementwise_add_jagged_output(x, [e(offsets)], y0, y1t)
    (out * e(weight)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), weight)
    np.testing.assert_allclose(y0.grad.numpy(), padded_reference(weight, offsets, 2))
    np.testing.assert_allclose(y1t.grad.numpy(), padded_reference(weight, offsets, 2))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_jagged_dense_mul_and_its_gradients(dtype):
    rng = np.random.default_rng(6)
    values, offsets, y = elementwise_case(rng, dtype)
    got, _ = ops.jagged_dense_elementwise_mul(e(values), [e(offsets)], e(y))
    wide = np.float64 if dtype == np.float64 else np.float32  # half values compute in float32
    want = (values.astype(wide) * dense_at_values(y, offsets, len(values)).astype(wide)).astype(dtype)
    np.testing.assert_array_equal(got.numpy(), want)
    if dtype == np.float16:
        return
    x, yy = e(values).requires_grad_(), e(y).requires_grad_()
    weight = rng.standard_normal(values.shape).astype(dtype)
    out, _ = ops.jagged_dense_elementwise_mul(x, [e(offsets)], yy)
    (out * e(weight)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), weight * dense_at_values(y, offsets, len(values)), rtol=1e-6)
    np.testing.assert_allclose(yy.grad.numpy(), padded_reference(weight * values, offsets, 2), rtol=1e-6)


def test_jagged_dense_bad_shapes_and_dtypes():
    values, offsets = ember.zeros(4, 2), [ember.tensor([0, 3, 4])]
    with pytest.raises(ValueError, match="y must be"):
        ops.jagged_dense_elementwise_add(values, offsets, ember.zeros(3, 2, 2))
    with pytest.raises(ValueError, match="y must be"):
        ops.jagged_dense_elementwise_mul(values, offsets, ember.zeros(2, 2, 3))
    with pytest.raises(TypeError, match="dtype"):
        ops.jagged_dense_elementwise_add_jagged_output(values, offsets, ember.zeros(2, 2, 2, dtype=ember.float64))
    with pytest.raises(TypeError, match="float32"):
        ops.jagged_dense_elementwise_mul(values.long(), offsets, ember.zeros(2, 2, 2, dtype=ember.int64))
    with pytest.raises(ValueError, match="one shape"):
        ops.jagged_dense_dense_elementwise_add_jagged_output(values, offsets, ember.zeros(2, 2, 2), ember.zeros(2, 3, 2))


def test_batched_dense_vec_jagged_2d_mul_and_its_gradients():
    rng = np.random.default_rng(7)
    heads, dim, width = 2, 3, 4
    lengths = [5, 0, 2]
    a, offsets = jagged_input(rng, lengths, (heads * dim,), np.float64)
    v = rng.standard_normal((3 * heads, width))
    got = ops.batched_dense_vec_jagged_2d_mul(e(v), e(a), e(offsets))
    np.testing.assert_allclose(got.numpy(), bdvj_reference(v, a, offsets), rtol=1e-12)
    vt, at = e(v).requires_grad_(), e(a).requires_grad_()
    weight = rng.standard_normal(got.shape)
    (ops.batched_dense_vec_jagged_2d_mul(vt, at, e(offsets)) * e(weight)).sum().backward()
    eps = 1e-6  # the product is linear in each argument: finite differences are exact to rounding
    for tensor, grad in ((v, vt.grad.numpy()), (a, at.grad.numpy())):
        numeric = np.zeros_like(tensor)
        for index in np.ndindex(tensor.shape):
            bumped = tensor.copy()
            bumped[index] += eps
            args = (bumped, a) if tensor is v else (v, bumped)
            numeric[index] = ((bdvj_reference(*args, offsets) - bdvj_reference(v, a, offsets)) * weight).sum() / eps
        np.testing.assert_allclose(grad, numeric, atol=1e-6)


def test_batched_dense_vec_jagged_2d_mul_bad_input():
    with pytest.raises(ValueError, match="B \\* H"):
        ops.batched_dense_vec_jagged_2d_mul(ember.zeros(3, 2), ember.zeros(4, 6), ember.tensor([0, 2, 4]))
    with pytest.raises(ValueError, match="heads"):
        ops.batched_dense_vec_jagged_2d_mul(ember.zeros(4, 2), ember.zeros(4, 5), ember.tensor([0, 2, 4]))
    with pytest.raises(TypeError, match="one dtype"):
        ops.batched_dense_vec_jagged_2d_mul(ember.zeros(2, 2), ember.zeros(4, 4, dtype=ember.float64), ember.tensor([0, 2, 4]))


# ---- sparse features ----

@pytest.mark.parametrize("permute", [[2, 0, 1], [1, 1, 3, 0], [3], []])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_permute_2d_sparse_data(permute, dtype):
    rng = np.random.default_rng(8)
    lengths = rng.integers(0, 4, (4, 3)).astype(dtype)
    lengths[1] = 0  # a key without values
    values = rng.integers(0, 100, int(lengths.sum()))
    weights = rng.random((int(lengths.sum()), 2)).astype(np.float32)
    got_lengths, got_values, got_weights = ops.permute_2D_sparse_data(
        e(np.array(permute, np.int64)), e(lengths), e(values), e(weights))
    want_lengths, want_values = permute_reference(permute, lengths, values)
    assert got_lengths.dtype == e(lengths).dtype
    np.testing.assert_array_equal(got_lengths.numpy(), want_lengths)
    np.testing.assert_array_equal(got_values.numpy(), want_values)
    np.testing.assert_array_equal(got_weights.numpy(), permute_reference(permute, lengths, weights)[1])


def test_large_permutations_stream_their_output_and_agree():
    rng = np.random.default_rng(12)
    lengths = rng.integers(0, 1000, (20, 30))
    values = rng.integers(0, 1 << 40, int(lengths.sum()))  # over 512 KiB: written with streaming stores
    permute = np.array([19, 3, 3, 0, 7, 12, 5])
    got_lengths, got_values, _ = ops.permute_2D_sparse_data(e(permute), e(lengths), e(values))
    want_lengths, want_values = permute_reference(permute, lengths, values)
    np.testing.assert_array_equal(got_lengths.numpy(), want_lengths)
    np.testing.assert_array_equal(got_values.numpy(), want_values)


def test_permute_1d_sparse_data_and_gradients_of_repeated_keys():
    lengths = ember.tensor([1, 2, 3])
    values = ember.arange(6.0).requires_grad_()
    weights = ember.ones(6).requires_grad_()
    got_lengths, got_values, got_weights = ops.permute_1D_sparse_data(ember.tensor([2, 0, 2]), lengths, values, weights)
    assert got_lengths.tolist() == [3, 1, 3]
    assert got_values.tolist() == [3.0, 4.0, 5.0, 0.0, 3.0, 4.0, 5.0]
    (got_values * ember.arange(7.0)).sum().backward()
    assert values.grad.tolist() == [3.0, 0.0, 0.0, 4.0, 6.0, 8.0]
    _, _, none = ops.permute_1D_sparse_data(ember.tensor([1]), lengths, values.detach())
    assert none is None
    # a list of keys (KeyedJaggedTensor.permute's) works as the tensor does, gradients included
    values.grad = None
    _, listed, _ = ops.permute_1D_sparse_data([2, 0, 2], lengths, values, weights)
    assert listed.tolist() == got_values.tolist()
    (listed * ember.arange(7.0)).sum().backward()
    assert values.grad.tolist() == [3.0, 0.0, 0.0, 4.0, 6.0, 8.0]


def test_permute_bad_input():
    lengths = ember.tensor([[1, 2], [0, 1]])
    with pytest.raises(IndexError, match="outside the 2 keys"):
        ops.permute_2D_sparse_data(ember.tensor([2]), lengths, ember.arange(4))
    with pytest.raises(ValueError, match="sum to 4, but there are 3"):
        ops.permute_2D_sparse_data(ember.tensor([0]), lengths, ember.arange(3))
    with pytest.raises(ValueError, match="non-negative"):
        ops.permute_2D_sparse_data(ember.tensor([0]), ember.tensor([[1, -1]]), ember.arange(3))
    with pytest.raises(ValueError, match="2-D"):
        ops.permute_2D_sparse_data(ember.tensor([0]), ember.tensor([1, 2]), ember.arange(3))
    with pytest.raises(ValueError, match="weights"):
        ops.permute_2D_sparse_data(ember.tensor([0]), lengths, ember.arange(4), ember.ones(3))
    with pytest.raises(TypeError, match="list of ints"):
        ops.permute_2D_sparse_data([0, "1"], lengths, ember.arange(4))
    with pytest.raises(ValueError, match="permuted_lengths_sum"):
        ops.permute_2D_sparse_data(ember.tensor([0]), lengths, ember.arange(4), None, 5)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_block_bucketize_sparse_features(dtype):
    rng = np.random.default_rng(9)
    blocks = np.array([5, 3, 8], dtype)
    lengths = rng.integers(0, 5, 3 * 4).astype(dtype)
    lengths[2] = 0
    ids = rng.integers(0, 30, int(lengths.sum())).astype(dtype)
    weights = rng.random(len(ids)).astype(np.float32)
    got = ops.block_bucketize_sparse_features(e(lengths), e(ids), True, True, e(blocks), 3, e(weights))
    want = bucketize_reference(lengths, ids, blocks, 3, weights)
    for ours, theirs in zip(got, want):
        np.testing.assert_array_equal(ours.numpy(), theirs)
    assert got[0].dtype == got[1].dtype == e(ids).dtype
    plain = ops.block_bucketize_sparse_features(e(lengths), e(ids), False, False, e(blocks), 3)
    assert plain[2:] == (None, None, None)
    np.testing.assert_array_equal(plain[1].numpy(), want[1])
    kept = ops.block_bucketize_sparse_features(e(lengths), e(ids), False, True, e(blocks), 3, keep_orig_idx=True)
    np.testing.assert_array_equal(kept[1].numpy()[want[4]], ids)


def test_block_bucketize_bad_input():
    lengths, ids, blocks = ember.tensor([1, 1]), ember.tensor([3, 4]), ember.tensor([2])
    with pytest.raises(ValueError, match="my_size"):
        ops.block_bucketize_sparse_features(lengths, ids, False, False, blocks, 0)
    with pytest.raises(ValueError, match="block_sizes must be positive"):
        ops.block_bucketize_sparse_features(lengths, ids, False, False, ember.tensor([0]), 2)
    with pytest.raises(ValueError, match="sum to 2, but there are 1"):
        ops.block_bucketize_sparse_features(lengths, ids[:1], False, False, blocks, 2)
    with pytest.raises(ValueError, match="non-negative"):
        ops.block_bucketize_sparse_features(lengths, ember.tensor([3, -4]), False, False, blocks, 2)
    with pytest.raises(NotImplementedError, match="batch_size_per_feature"):
        ops.block_bucketize_sparse_features(lengths, ids, False, False, blocks, 2, batch_size_per_feature=lengths)
    with pytest.raises(TypeError, match="int32 or int64"):
        ops.block_bucketize_sparse_features(lengths, ids.to(ember.int16), False, False, blocks, 2)


# ---- dense ----

@pytest.mark.parametrize("dtype", [ember.float32, ember.float16])
def test_permute102_baddbmm_permute102(dtype):
    rng = np.random.default_rng(10)
    a, b, bias = rng.standard_normal((3, 4, 5)), rng.standard_normal((4, 5, 6)), rng.standard_normal((4, 6))
    want = np.einsum("mbk,bkn->mbn", a, b) + bias[None]
    args = [e(x.astype(np.float32)).to(dtype).requires_grad_() for x in (bias, a, b)]
    got = ops.permute102_baddbmm_permute102(*args)
    assert got.dtype == dtype and tuple(got.shape) == (3, 4, 6)
    np.testing.assert_allclose(got.detach().float().numpy(), want, rtol=2e-2 if dtype == ember.float16 else 1e-5, atol=3e-2)
    if dtype == ember.float32:
        got.sum().backward()
        np.testing.assert_allclose(args[0].grad.numpy(), np.full((4, 6), 3.0))
        np.testing.assert_allclose(args[1].grad.numpy(), np.broadcast_to(b.sum(2)[None], a.shape), rtol=1e-5)
    with pytest.raises(ValueError, match="do not fit"):
        ops.permute102_baddbmm_permute102(ember.zeros(4, 6), ember.zeros(3, 4, 5), ember.zeros(4, 4, 6))


def test_index_select_dim0():
    x = ember.arange(12.0).view(4, 3).requires_grad_()
    got = ops.index_select_dim0(x, ember.tensor([3, 0, 3], dtype=ember.int32))
    assert got.tolist() == [[9.0, 10.0, 11.0], [0.0, 1.0, 2.0], [9.0, 10.0, 11.0]]
    got.sum().backward()
    assert x.grad[:, 0].tolist() == [1.0, 0.0, 0.0, 2.0]
    with pytest.raises(IndexError, match="out of range"):
        ops.index_select_dim0(x, ember.tensor([4]))


# ---- FBGEMM-GPU itself ----

def fbgemm_python():
    for python in (os.environ.get("EMBER_TORCHREC_PYTHON"), os.environ.get("EMBER_BENCH_TORCH_PYTHON"), sys.executable):
        if python and subprocess.run([python, "-c", "import fbgemm_gpu"], capture_output=True).returncode == 0:
            return python
    return None


@pytest.fixture(scope="module")
def fbgemm_results(tmp_path_factory):
    python = fbgemm_python()
    if python is None:
        pytest.skip("no interpreter with fbgemm_gpu (set EMBER_TORCHREC_PYTHON)")
    rng = np.random.default_rng(11)
    values, offsets = jagged_input(rng, rng.integers(0, 7, 9), (4,))
    lengths = rng.integers(0, 5, (5, 6)).astype(np.int32)
    data = {"values": values, "offsets": offsets, "y": rng.standard_normal((9, 4, 4)).astype(np.float32),
            "y1": rng.standard_normal((9, 4, 4)).astype(np.float32),
            "v": rng.standard_normal((18, 5)).astype(np.float32),
            "a": rng.standard_normal((len(values), 6)).astype(np.float32),
            "lengths": lengths, "ids": rng.integers(0, 40, int(lengths.sum())).astype(np.int32),
            "weights": rng.random(int(lengths.sum())).astype(np.float32),
            "permute": np.array([4, 0, 0, 2], np.int32), "blocks": np.array([6, 9, 4, 10, 7], np.int32)}
    folder = tmp_path_factory.mktemp("fbgemm_jagged")
    np.savez(folder / "in.npz", **data)
    done = subprocess.run([python, str(HERE / "fbgemm_jagged_reference.py"), str(folder / "in.npz"),
                           str(folder / "out.npz")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return data, dict(np.load(folder / "out.npz"))


def test_jagged_ops_match_fbgemm(fbgemm_results):
    data, theirs = fbgemm_results
    x, offsets, y, y1 = e(data["values"]), [e(data["offsets"])], e(data["y"]), e(data["y1"])
    ours = {
        "padded": ops.jagged_to_padded_dense(x, offsets, [4], -2.0),
        "to_jagged": ops.dense_to_jagged(y, offsets)[0],
        "add": ops.jagged_dense_elementwise_add(x, offsets, y),
        "add_jagged": ops.jagged_dense_elementwise_add_jagged_output(x, offsets, y)[0],
        "add2_jagged": ops.jagged_dense_dense_elementwise_add_jagged_output(x, offsets, y, y1)[0],
        "mul": ops.jagged_dense_elementwise_mul(x, offsets, y)[0],
        "bdvj": ops.batched_dense_vec_jagged_2d_mul(e(data["v"]), e(data["a"]), offsets[0]),
    }
    for name, got in ours.items():
        np.testing.assert_allclose(got.numpy(), theirs[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_sparse_ops_match_fbgemm(fbgemm_results):
    data, theirs = fbgemm_results
    lengths, ids, weights = e(data["lengths"]), e(data["ids"]), e(data["weights"])
    permuted = ops.permute_2D_sparse_data(e(data["permute"]), lengths, ids, weights)
    for k, got in enumerate(permuted):
        np.testing.assert_array_equal(got.numpy(), theirs[f"permute{k}"])
    bucketed = ops.block_bucketize_sparse_features(lengths.view(-1), ids, True, True, e(data["blocks"]), 3, weights)
    for k, got in enumerate(bucketed):
        np.testing.assert_array_equal(got.numpy(), theirs[f"bucketize{k}"])
    np.testing.assert_array_equal(ops.asynchronous_complete_cumsum(lengths.view(-1)).numpy(), theirs["cumsum"])
