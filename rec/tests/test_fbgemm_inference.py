"""The quantized row formats and the inference table-batched embedding bag
(`emberrec.fbgemm`, `emberrec.ops`): bytes computed by hand, round trips, a NumPy reference of
the lookups on small random tables with odd dims, bad input, and FBGEMM-GPU itself where an
interpreter has it (fbgemm_reference.py: EMBER_TORCHREC_PYTHON, else EMBER_BENCH_TORCH_PYTHON)."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import ember
from emberrec import ops
from emberrec.fbgemm.split_embedding_configs import FP8QuantizationConfig, SparseType
from emberrec.fbgemm.split_table_batched_embeddings_ops import (
    BoundsCheckMode, EmbeddingLocation, IntNBitTableBatchedEmbeddingBagsCodegen, PoolingMode, rounded_row_size_in_bytes)
from emberrec.fbgemm.tbe.utils.quantize import quantize_embs

HERE = pathlib.Path(__file__).resolve().parent
ROW = np.array([[0.0, 1.0, -2.5, 3.25, 0.1, 7.0, -1.0, 2.0]], np.float32)
TYPES = [SparseType.FP32, SparseType.FP16, SparseType.FP8, SparseType.INT8, SparseType.INT4, SparseType.INT2]


def e(array):
    return ember.from_numpy(np.ascontiguousarray(array))


# ---- row formats: bytes by hand ----

def test_fused_8bit_rows_are_values_then_float_scale_and_bias():
    q = ops.FloatToFused8BitRowwiseQuantized(e(ROW)).numpy()
    # (x + 2.5) * 255 / 9.5 rounded to even; scale 9.5 / 255 and bias -2.5 as float32.
    assert q[0, :8].tolist() == [67, 94, 0, 154, 70, 255, 40, 121]
    assert q[0, 8:].view(np.float32).tolist() == [np.float32(9.5) / np.float32(255), -2.5]
    back = ops.Fused8BitRowwiseQuantizedToFloat(e(q)).numpy()
    assert np.abs(back - ROW).max() <= 9.5 / 255 / 2 + 1e-6


@pytest.mark.parametrize("bits, want", [
    (2, [133, 77, 0x55, 0x42, 0x00, 0xc1]),
    (4, [100, 144, 244, 114, 0x11, 0x39, 0x00, 0xc1]),
    (8, [67, 94, 0, 154, 70, 255, 40, 121, 0xc5, 0x28, 0x00, 0xc1]),
])
def test_nbit_rows_pack_low_bits_first_then_half_scale_and_bias(bits, want):
    q = ops.FloatToFusedNBitRowwiseQuantizedSBHalf(e(ROW), bits).numpy()
    assert q[0].tolist() == want
    scale, bias = q[0, -4:].view(np.float16).astype(np.float32)
    assert bias == -2.5 and scale == np.float32(np.float16(9.5 / ((1 << bits) - 1)))
    back = ops.FusedNBitRowwiseQuantizedSBHalfToFloat(e(q), bits).numpy()
    assert np.abs(back - ROW).max() <= scale / 2 + 1e-6


def test_hfp8_encodings_by_hand():
    x = np.array([[1.0, -1.0, 0.5, 3.3, 300.0, -1e-3, 1e-4, 1.0625]], np.float32)
    q = ops.FloatToHFP8Quantized(e(x), 4, 7, 240.0).numpy()
    # 1.0 = 0 0111 000; 3.3 -> 3.25 = 0 1000 101; 300 saturates at 240 = 0 1110 111;
    # -1e-3 -> the smallest subnormal 2^-9, negative; 1e-4 -> 0; 1 + 1/16 ties to 1.0.
    assert q[0].tolist() == [0x38, 0xb8, 0x30, 0x45, 0x77, 0x81, 0x00, 0x38]
    back = ops.HFP8QuantizedToFloat(e(q), 4, 7).numpy()
    assert back[0].tolist() == [1.0, -1.0, 0.5, 3.25, 240.0, -2.0 ** -9, 0.0, 1.0]
    every = np.arange(256, dtype=np.uint8).reshape(1, -1)
    for bits, bias in [(4, 7), (5, 15), (3, 4)]:
        decoded = ops.HFP8QuantizedToFloat(e(every), bits, bias)
        again = ops.FloatToHFP8Quantized(decoded, bits, bias, 3.0e38).numpy()
        nonzero = decoded.numpy() != 0
        assert (again[nonzero] == every[nonzero]).all()


@pytest.mark.parametrize("dim", [3, 5, 17])
def test_row_formats_round_trip_any_width(dim):
    x = np.random.default_rng(dim).standard_normal((20, dim)).astype(np.float32)
    for bits in (2, 4, 8):
        q = ops.FloatToFusedNBitRowwiseQuantizedSBHalf(e(x), bits)
        back = ops.FusedNBitRowwiseQuantizedSBHalfToFloat(q, bits).numpy()[:, :dim]
        step = (x.max(1) - x.min(1)) / ((1 << bits) - 1)
        assert (np.abs(back - x) <= step[:, None] / 2 + 2e-3 * np.abs(x).max()).all()
    back = ops.Fused8BitRowwiseQuantizedToFloat(ops.FloatToFused8BitRowwiseQuantized(e(x))).numpy()
    assert np.abs(back - x).max() <= (x.max() - x.min()) / 255


def test_row_format_errors():
    with pytest.raises(ValueError, match="bit_rate"):
        ops.FloatToFusedNBitRowwiseQuantizedSBHalf(e(ROW), 3)
    with pytest.raises(TypeError, match="floating"):
        ops.FloatToFused8BitRowwiseQuantized(e(ROW.astype(np.int64)))
    with pytest.raises(TypeError, match="uint8"):
        ops.HFP8QuantizedToFloat(e(ROW), 4, 7)
    with pytest.raises(ValueError, match="exponent_bits"):
        ops.FloatToHFP8Quantized(e(ROW), 9, 7, 240.0)
    with pytest.raises(TypeError):
        ops.FloatToHFP8Quantized(ROW, 4, 7, 240.0)


# ---- the embedding bag against NumPy ----

def decode_rows(values, scale_shift, ty, dim):
    """A table's rows as float64, from the bytes, by NumPy (independent of the kernels)."""
    if ty is SparseType.FP32:
        return values.view(np.float32)[:, :dim].astype(np.float64)
    if ty is SparseType.FP16:
        return values.view(np.float16)[:, :dim].astype(np.float64)
    if ty is SparseType.FP8:
        sign = np.where(values & 0x80, -1.0, 1.0)
        exponent = (values >> 3) & 0xf
        mantissa = (values & 7).astype(np.float64)
        magnitude = np.where(exponent == 0, mantissa / 8 * 2.0 ** -6, (1 + mantissa / 8) * 2.0 ** (exponent.astype(np.float64) - 7))
        return (sign * magnitude)[:, :dim]
    bits = ty.bit_rate()
    levels = np.stack([(values >> (k * bits)) & ((1 << bits) - 1) for k in range(8 // bits)], 2).reshape(len(values), -1)
    scale, bias = scale_shift.view(np.float16).astype(np.float64).T
    return levels[:, :dim] * scale[:, None] + bias[:, None]


def make_tables(rng, specs):
    floats = [rng.standard_normal((rows, dim)).astype(np.float32) for _, rows, dim in specs]
    quantized = [quantize_embs(e(w), ty, FP8QuantizationConfig(4, 7)) for (ty, _, _), w in zip(specs, floats)]
    decoded = [decode_rows(v.numpy(), None if s is None else s.numpy(), ty, dim)
               for (ty, _, dim), (v, s) in zip(specs, quantized)]
    return quantized, decoded


def make_bags(rng, rows_per_feature, batch, max_len=4, pruned=True):
    lengths = rng.integers(0, max_len + 1, len(rows_per_feature) * batch)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    indices = np.concatenate([rng.integers(0, max(rows_per_feature[f // batch], 1), n) for f, n in enumerate(lengths)])
    if pruned and len(indices):
        indices[rng.random(len(indices)) < 0.15] = -1
    return indices.astype(np.int64), offsets.astype(np.int64)


def reference(decoded, table_map, indices, offsets, weights, pooling):
    features, batch = len(table_map), (len(offsets) - 1) // len(table_map)
    weights = np.ones(len(indices)) if weights is None else weights.astype(np.float64)
    if pooling is PoolingMode.NONE:
        dim = decoded[0].shape[1]
        out = np.zeros((len(indices), dim))
        for bag in range(features * batch):
            table = decoded[table_map[bag // batch]]
            for i in range(offsets[bag], offsets[bag + 1]):
                if indices[i] >= 0:
                    out[i] = weights[i] * table[indices[i]]
        return out
    pooled = []
    for f, t in enumerate(table_map):
        block = np.zeros((batch, decoded[t].shape[1]))
        for b in range(batch):
            start, end = offsets[f * batch + b], offsets[f * batch + b + 1]
            for i in range(start, end):
                if indices[i] >= 0:
                    block[b] += weights[i] * decoded[t][indices[i]]
            if pooling is PoolingMode.MEAN and end > start:
                block[b] /= end - start
        pooled.append(block)
    return np.concatenate(pooled, 1)


def build_tbe(specs, quantized, **kwargs):
    tbe = IntNBitTableBatchedEmbeddingBagsCodegen(
        [(f"t{i}", rows, dim, ty, EmbeddingLocation.HOST) for i, (ty, rows, dim) in enumerate(specs)], **kwargs)
    tbe.assign_embedding_weights(quantized)
    return tbe


ODD_SPECS = [(SparseType.INT4, 11, 5), (SparseType.FP32, 7, 3), (SparseType.INT8, 9, 17), (SparseType.FP8, 6, 4),
             (SparseType.INT2, 5, 6), (SparseType.FP16, 8, 3)]


@pytest.mark.parametrize("pooling", [PoolingMode.SUM, PoolingMode.MEAN])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
def test_pooled_lookups_match_numpy(pooling, weighted, index_dtype):
    rng = np.random.default_rng(7)
    quantized, decoded = make_tables(rng, ODD_SPECS)
    tbe = build_tbe(ODD_SPECS, quantized, pooling_mode=pooling, output_dtype=SparseType.FP32)
    indices, offsets = make_bags(rng, [rows for _, rows, _ in ODD_SPECS], batch=5)
    weights = rng.random(len(indices)).astype(np.float32) if weighted else None
    out = tbe(e(indices.astype(index_dtype)), e(offsets.astype(index_dtype)), None if weights is None else e(weights))
    assert out.dtype == ember.float32 and tuple(out.shape) == (5, sum(dim for _, _, dim in ODD_SPECS))
    np.testing.assert_allclose(out.numpy(), reference(decoded, range(6), indices, offsets, weights, pooling), rtol=1e-5, atol=1e-5)


def test_shared_tables_half_output_and_row_alignment():
    rng = np.random.default_rng(3)
    specs = [(SparseType.INT4, 13, 17), (SparseType.FP8, 10, 5)]
    quantized, decoded = make_tables(rng, specs)
    table_map = [0, 1, 0]
    tbe = build_tbe(specs, quantized, feature_table_map=table_map, row_alignment=16)
    assert tbe.weights_offsets.tolist() == [0, 256, 0]  # 13 rows of 16 bytes, then the next 128-byte line
    assert tbe.D_offsets.tolist() == [0, 17, 22, 39]
    indices, offsets = make_bags(rng, [13, 10, 13], batch=4)
    out = tbe(e(indices), e(offsets))
    assert out.dtype == ember.float16 and tuple(out.shape) == (4, 39)
    want = reference(decoded, table_map, indices, offsets, None, PoolingMode.SUM)
    np.testing.assert_allclose(out.numpy().astype(np.float64), want, rtol=2e-3, atol=2e-3)


def test_unpooled_lookup_gives_a_row_per_index_and_zeros_for_pruned_rows():
    rng = np.random.default_rng(5)
    specs = [(SparseType.INT2, 9, 7), (SparseType.INT8, 4, 7)]
    quantized, decoded = make_tables(rng, specs)
    tbe = build_tbe(specs, quantized, pooling_mode=PoolingMode.NONE, output_dtype=SparseType.FP32)
    indices, offsets = make_bags(rng, [9, 4], batch=3)
    out = tbe(e(indices), e(offsets)).numpy()
    assert out.shape == (len(indices), 7)
    np.testing.assert_allclose(out, reference(decoded, [0, 1], indices, offsets, None, PoolingMode.NONE), rtol=1e-5, atol=1e-6)
    assert (out[indices == -1] == 0).all()


def test_int4_table_bytes_are_the_header_then_low_nibbles():
    tbe = IntNBitTableBatchedEmbeddingBagsCodegen([("t", 1, 8, SparseType.INT4, EmbeddingLocation.HOST)],
                                                  output_dtype=SparseType.FP32)
    tbe.assign_embedding_weights([quantize_embs(e(ROW), SparseType.INT4)])
    row = tbe.split_embedding_weights(split_scale_shifts=False)[0][0].numpy()
    assert row[0].tolist() == [0x11, 0x39, 0x00, 0xc1, 100, 144, 244, 114]
    assert rounded_row_size_in_bytes(8, SparseType.INT4, 16) == 16


def test_a_deep_copy_owns_its_weights():
    import copy
    tbe = IntNBitTableBatchedEmbeddingBagsCodegen([("t", 1, 8, SparseType.INT4, EmbeddingLocation.HOST)],
                                                  output_dtype=SparseType.FP32)
    tbe.assign_embedding_weights([quantize_embs(e(ROW), SparseType.INT4)])
    clone = copy.deepcopy(tbe)
    indices, offsets = e(np.array([0])), e(np.array([0, 1]))
    before = tbe(indices, offsets).numpy()
    clone.weights_host.zero_()  # FBGEMM's name for the weight bytes: writes through it reach the lookups
    assert (clone(indices, offsets).numpy() == 0).all()
    np.testing.assert_array_equal(tbe(indices, offsets).numpy(), before)


def test_bounds_check_modes():
    rng = np.random.default_rng(11)
    specs = [(SparseType.INT4, 6, 4), (SparseType.FP16, 3, 4)]
    quantized, decoded = make_tables(rng, specs)
    indices, offsets = np.array([1, 6, 2, 0, 2, -3, 1]), np.array([0, 2, 3, 5, 7])
    fatal = build_tbe(specs, quantized, bounds_check_mode=BoundsCheckMode.FATAL)
    with pytest.raises(IndexError, match="index 6 of feature 0, sample 0 is outside the table's 6 rows"):
        fatal(e(indices), e(offsets))
    fixed = np.array([1, 0, 2, 0, 2, 0, 1])
    want = reference(decoded, [0, 1], fixed, offsets, None, PoolingMode.SUM)
    warning = build_tbe(specs, quantized, output_dtype=SparseType.FP32)
    with pytest.warns(RuntimeWarning, match="2 indices outside their tables"):
        out = warning(e(indices), e(offsets))
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
    assert warning.bounds_check_warning.tolist() == [2]
    assert indices.tolist() == [1, 6, 2, 0, 2, -3, 1]  # the caller's indices are left as they were
    ignore = build_tbe(specs, quantized, output_dtype=SparseType.FP32, bounds_check_mode=BoundsCheckMode.IGNORE)
    np.testing.assert_allclose(ignore(e(indices), e(offsets)).numpy(), want, rtol=1e-5, atol=1e-6)
    assert ignore.bounds_check_warning.tolist() == [0]


def test_bad_input_raises_clear_errors():
    rng = np.random.default_rng(2)
    specs = [(SparseType.INT4, 6, 4), (SparseType.INT8, 3, 4)]
    quantized, _ = make_tables(rng, specs)
    tbe = build_tbe(specs, quantized)
    indices = e(np.array([1, 2, 0, 1], np.int64))
    with pytest.raises(ValueError, match="must not decrease"):
        tbe(indices, e(np.array([0, 3, 1, 3, 4])))
    with pytest.raises(ValueError, match="from 0 to the number of indices"):
        tbe(indices, e(np.array([0, 1, 2, 3, 5])))
    with pytest.raises(ValueError, match="T \\* B \\+ 1"):
        tbe(indices, e(np.array([0, 1, 2, 4])))
    with pytest.raises(TypeError, match="int32 or int64"):
        tbe(e(np.array([1.0, 2.0, 0.0, 1.0], np.float32)), e(np.array([0, 1, 2, 3, 4])))
    with pytest.raises(TypeError, match="per_sample_weights must be float32"):
        tbe(indices, e(np.array([0, 1, 2, 3, 4])), e(np.array([1, 2, 3, 4])))
    with pytest.raises(ValueError, match="per_sample_weights"):
        tbe(indices, e(np.array([0, 1, 2, 3, 4])), e(np.ones(3, np.float32)))
    with pytest.raises(ValueError, match="shape"):
        tbe.assign_embedding_weights([quantized[1], quantized[0]])
    with pytest.raises(RuntimeError, match="initialized"):
        IntNBitTableBatchedEmbeddingBagsCodegen([("t", 3, 4, SparseType.INT4, EmbeddingLocation.HOST)])(indices, e(np.array([0, 4])))
    with pytest.raises(NotImplementedError, match="CPU"):
        IntNBitTableBatchedEmbeddingBagsCodegen([("t", 3, 4, SparseType.INT4, EmbeddingLocation.DEVICE)])
    with pytest.raises(NotImplementedError, match="output_dtype"):
        IntNBitTableBatchedEmbeddingBagsCodegen([("t", 3, 4, SparseType.INT4, EmbeddingLocation.HOST)], output_dtype=SparseType.INT8)
    with pytest.raises(ValueError, match="Mixed dimension"):
        IntNBitTableBatchedEmbeddingBagsCodegen([("t", 3, 4, SparseType.INT4, EmbeddingLocation.HOST),
                                                 ("u", 3, 8, SparseType.INT4, EmbeddingLocation.HOST)], pooling_mode=PoolingMode.NONE)


# ---- FBGEMM-GPU itself ----

def fbgemm_python():
    for python in (os.environ.get("EMBER_TORCHREC_PYTHON"), os.environ.get("EMBER_BENCH_TORCH_PYTHON"), sys.executable):
        if python and subprocess.run([python, "-c", "import fbgemm_gpu"], capture_output=True).returncode == 0:
            return python
    return None


# No FP8 table: fbgemm_gpu 2026.10.16's CPU kernel returned zeros for the FP8 table of this case
# (a lone FP8 table of constant rows does pool right there); FP8 encodings are compared above.
PARITY_SPECS = [(SparseType.INT4, 40, 16), (SparseType.INT8, 30, 12), (SparseType.INT2, 25, 8),
                (SparseType.FP16, 10, 4), (SparseType.FP32, 12, 4)]


@pytest.fixture(scope="module")
def fbgemm_results(tmp_path_factory):
    python = fbgemm_python()
    if python is None:
        pytest.skip("no interpreter with fbgemm_gpu (set EMBER_TORCHREC_PYTHON)")
    rng = np.random.default_rng(0)
    data = {"rows": (rng.standard_normal((64, 16)) * rng.uniform(0.01, 50, (64, 1))).astype(np.float32)}
    quantized, _ = make_tables(rng, PARITY_SPECS)
    data["tbe.specs"] = np.array([(TYPES.index(ty), rows, dim) for ty, rows, dim in PARITY_SPECS])
    for t, (values, scale_shift) in enumerate(quantized):
        data[f"tbe.table{t}"] = values.numpy() if scale_shift is None else np.concatenate([scale_shift.numpy(), values.numpy()], 1)
    indices, offsets = make_bags(rng, [rows for _, rows, _ in PARITY_SPECS], batch=8, max_len=6)
    data["tbe.indices"], data["tbe.offsets"] = indices, offsets
    data["tbe.weights"] = rng.random(len(indices)).astype(np.float32)
    folder = tmp_path_factory.mktemp("fbgemm")
    np.savez(folder / "in.npz", **data)
    done = subprocess.run([python, str(HERE / "fbgemm_reference.py"), str(folder / "in.npz"), str(folder / "out.npz")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return data, quantized, dict(np.load(folder / "out.npz"))


def test_row_formats_match_fbgemm_bit_for_bit(fbgemm_results):
    data, _, theirs = fbgemm_results
    x = e(data["rows"])
    assert (ops.FloatToFused8BitRowwiseQuantized(x).numpy() == theirs["fused8"]).all()
    assert (ops.Fused8BitRowwiseQuantizedToFloat(e(theirs["fused8"])).numpy() == theirs["fused8.back"]).all()
    for bits in (2, 4, 8):
        assert (ops.FloatToFusedNBitRowwiseQuantizedSBHalf(x, bits).numpy() == theirs[f"nbit{bits}"]).all()
        assert (ops.FusedNBitRowwiseQuantizedSBHalfToFloat(e(theirs[f"nbit{bits}"]), bits).numpy() == theirs[f"nbit{bits}.back"]).all()
    assert (ops.FloatToHFP8Quantized(x, 4, 7, 240.0).numpy() == theirs["hfp8"]).all()
    assert (ops.HFP8QuantizedToFloat(e(theirs["hfp8"]), 4, 7).numpy() == theirs["hfp8.back"]).all()
    for ty in TYPES:
        values, scale_shift = quantize_embs(x, ty, FP8QuantizationConfig(4, 7))
        ours = values.numpy() if scale_shift is None else np.concatenate([scale_shift.numpy(), values.numpy()], 1)
        assert (ours == theirs[f"embs.{ty.value}"]).all(), ty


@pytest.mark.parametrize("pooling", [PoolingMode.SUM, PoolingMode.MEAN])
def test_lookups_match_fbgemm(fbgemm_results, pooling):
    data, quantized, theirs = fbgemm_results
    tbe = build_tbe(PARITY_SPECS, quantized, pooling_mode=pooling, output_dtype=SparseType.FP32)
    out = tbe(e(data["tbe.indices"]), e(data["tbe.offsets"]), e(data["tbe.weights"])).numpy()
    np.testing.assert_allclose(out, theirs[f"tbe.{pooling.name.lower()}"], rtol=1e-5, atol=1e-5)
