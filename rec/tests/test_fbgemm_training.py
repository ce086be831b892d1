"""emberrec.fbgemm's training embedding bags and FusedEmbeddingBagCollection against NumPy
references (forward, gradients, every fused optimizer over several steps), and against FBGEMM-GPU
and TorchRec where an interpreter has them (fbgemm_training_reference.py: EMBER_TORCHREC_PYTHON,
else EMBER_BENCH_TORCH_PYTHON)."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import ember
from emberrec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor, PoolingType
from emberrec.fbgemm.split_embedding_configs import EmbOptimType as OptimType, SparseType
from emberrec.fbgemm.split_table_batched_embeddings_ops_common import (
    BoundsCheckMode, ComputeDevice, EmbeddingLocation, PoolingMode, WeightDecayMode)
from emberrec.fbgemm.split_table_batched_embeddings_ops_training import (
    DenseTableBatchedEmbeddingBagsCodegen, SplitTableBatchedEmbeddingBagsCodegen)
from emberrec.modules.fused_embedding_modules import FusedEmbeddingBagCollection

HERE = pathlib.Path(__file__).parent
SHAPES = [(20, 4), (7, 8), (12, 4)]
FEATURE_TABLE = [0, 2, 1, 0]  # four features, table 0 read twice
# FBGEMM's CPU kernel wants each table's features side by side (other maps index out of range).
PARITY_FEATURE_TABLE = [0, 0, 1, 2]
BATCH = 5


def e(array):
    return ember.from_numpy(np.ascontiguousarray(array))


def make_tables(rng):
    return [rng.uniform(-1, 1, shape).astype(np.float32) for shape in SHAPES]


def make_bags(rng, feature_table=FEATURE_TABLE, batch=BATCH, max_len=4):
    """Feature-major bags, some empty, with repeated rows (ids from a few of each table's rows)."""
    lengths = rng.integers(0, max_len + 1, len(feature_table) * batch)
    lengths[1] = 0
    indices = np.concatenate([rng.integers(0, min(SHAPES[feature_table[bag // batch]][0], 5), n)
                              for bag, n in enumerate(lengths)]).astype(np.int64)
    return indices, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def each_index(offsets, feature_table, batch):
    """Per index: (feature, sample, bag length)."""
    out = []
    for bag in range(len(offsets) - 1):
        n = offsets[bag + 1] - offsets[bag]
        out += [(bag // batch, bag % batch, n)] * n
    return out


def reference_forward(tables, indices, offsets, weights, pooling, feature_table=FEATURE_TABLE, batch=BATCH):
    dims = [tables[t].shape[1] for t in feature_table]
    columns = np.concatenate([[0], np.cumsum(dims)])
    rows = len(indices) if pooling == PoolingMode.NONE else batch
    out = np.zeros((rows, dims[0] if pooling == PoolingMode.NONE else columns[-1]))
    for i, (f, b, n) in enumerate(each_index(offsets, feature_table, batch)):
        row = tables[feature_table[f]][indices[i]] * (1.0 if weights is None else weights[i])
        if pooling == PoolingMode.NONE:
            out[i] = row
        else:
            out[b, columns[f]:columns[f + 1]] += row / (n if pooling == PoolingMode.MEAN else 1)
    return out


def reference_grads(tables, indices, offsets, weights, pooling, grad, feature_table=FEATURE_TABLE, batch=BATCH):
    """(dense gradient per table, gradient per per-sample weight)."""
    dims = [tables[t].shape[1] for t in feature_table]
    columns = np.concatenate([[0], np.cumsum(dims)])
    grads = [np.zeros(t.shape) for t in tables]
    weight_grads = np.zeros(len(indices))
    for i, (f, b, n) in enumerate(each_index(offsets, feature_table, batch)):
        g = grad[i] if pooling == PoolingMode.NONE else grad[b, columns[f]:columns[f + 1]] / (n if pooling == PoolingMode.MEAN else 1)
        t = feature_table[f]
        grads[t][indices[i]] += g * (1.0 if weights is None else weights[i])
        weight_grads[i] = g @ tables[t][indices[i]]
    return grads, weight_grads


def reference_step(optimizer, kw, w, g, states, step):
    """FBGEMM's update of one row, in float64."""
    lr, eps, wd = kw.get("learning_rate", 0.01), kw.get("eps", 1e-8), kw.get("weight_decay", 0.0)
    b1, b2 = kw.get("beta1", 0.9), kw.get("beta2", 0.999)
    mode = kw.get("weight_decay_mode", WeightDecayMode.NONE)
    if optimizer == OptimType.EXACT_SGD:
        return w - lr * g
    if optimizer == OptimType.EXACT_ADAGRAD:
        states[0] += g * g
        return w - lr * g / (np.sqrt(states[0]) + eps)
    if optimizer == OptimType.EXACT_ROWWISE_ADAGRAD:
        decayed = g + wd * w if mode == WeightDecayMode.L2 else g
        states[0] += np.mean(decayed ** 2)
        k = lr / (np.sqrt(states[0]) + eps)
        shrink = {WeightDecayMode.NONE: 0.0, WeightDecayMode.L2: k * wd, WeightDecayMode.DECOUPLE: lr * wd}[mode]
        return (1 - shrink) * w - k * g
    rowwise = optimizer in (OptimType.PARTIAL_ROWWISE_ADAM, OptimType.PARTIAL_ROWWISE_LAMB)
    states[0][:] = b1 * states[0] + (1 - b1) * g
    states[1][...] = b2 * states[1] + (1 - b2) * (np.mean(g * g) if rowwise else g * g)
    r = states[0] / (1 - b1 ** step) / (np.sqrt(states[1] / (1 - b2 ** step)) + eps) + wd * w
    if optimizer in (OptimType.LAMB, OptimType.PARTIAL_ROWWISE_LAMB):
        return w - lr * np.linalg.norm(w) / np.linalg.norm(r) * r
    return w - lr * r


STATE_SHAPES = {OptimType.EXACT_SGD: [], OptimType.EXACT_ADAGRAD: ["dense"], OptimType.EXACT_ROWWISE_ADAGRAD: ["row"],
                OptimType.ADAM: ["dense", "dense"], OptimType.LAMB: ["dense", "dense"],
                OptimType.PARTIAL_ROWWISE_ADAM: ["dense", "row"], OptimType.PARTIAL_ROWWISE_LAMB: ["dense", "row"]}

CASES = {
    "sgd": (OptimType.EXACT_SGD, {"learning_rate": 0.3}),
    "adagrad": (OptimType.EXACT_ADAGRAD, {"learning_rate": 0.3, "eps": 1e-2}),
    "rowwise": (OptimType.EXACT_ROWWISE_ADAGRAD, {"learning_rate": 0.3, "eps": 1e-2}),
    "rowwise_l2": (OptimType.EXACT_ROWWISE_ADAGRAD, {"learning_rate": 0.3, "eps": 1e-2, "weight_decay": 0.1,
                                                     "weight_decay_mode": WeightDecayMode.L2}),
    "rowwise_decoupled": (OptimType.EXACT_ROWWISE_ADAGRAD, {"learning_rate": 0.3, "eps": 1e-2, "weight_decay": 0.1,
                                                            "weight_decay_mode": WeightDecayMode.DECOUPLE}),
    "adam": (OptimType.ADAM, {"learning_rate": 0.1, "eps": 1e-3, "beta1": 0.8, "beta2": 0.9, "weight_decay": 0.05}),
    "partial_adam": (OptimType.PARTIAL_ROWWISE_ADAM, {"learning_rate": 0.1, "eps": 1e-3, "beta1": 0.8, "beta2": 0.9}),
    "lamb": (OptimType.LAMB, {"learning_rate": 0.1, "eps": 1e-3, "beta1": 0.8, "beta2": 0.9, "weight_decay": 0.05}),
    "partial_lamb": (OptimType.PARTIAL_ROWWISE_LAMB, {"learning_rate": 0.1, "eps": 1e-3, "beta2": 0.9}),
}
STEPS = 3


def make_tbe(tables, optimizer=OptimType.EXACT_SGD, feature_table=FEATURE_TABLE, **kwargs):
    specs = [(t.shape[0], t.shape[1], EmbeddingLocation.HOST, ComputeDevice.CPU) for t in tables]
    tbe = SplitTableBatchedEmbeddingBagsCodegen(specs, feature_table_map=feature_table, optimizer=optimizer, **kwargs)
    with ember.no_grad():
        for weight, initial in zip(tbe.split_embedding_weights(), tables):
            weight.copy_(e(initial).to(weight.dtype))
    return tbe


def training_data(seed=1, feature_table=FEATURE_TABLE):
    rng = np.random.default_rng(seed)
    steps = []
    for _ in range(STEPS):
        indices, offsets = make_bags(rng, feature_table)
        steps.append((indices, offsets, rng.uniform(0.5, 1.5, len(indices)).astype(np.float32),
                      rng.standard_normal((BATCH, sum(SHAPES[t][1] for t in FEATURE_TABLE))).astype(np.float32)))
    return make_tables(rng), steps


@pytest.mark.parametrize("pooling", [PoolingMode.SUM, PoolingMode.MEAN])
@pytest.mark.parametrize("weighted", [False, True])
def test_forward_and_gradients_match_the_reference(pooling, weighted):
    rng = np.random.default_rng(0)
    tables = make_tables(rng)
    indices, offsets = make_bags(rng)
    weights = rng.uniform(0.5, 1.5, len(indices)).astype(np.float32)
    tbe = DenseTableBatchedEmbeddingBagsCodegen([t.shape for t in tables], feature_table_map=FEATURE_TABLE, pooling_mode=pooling)
    with ember.no_grad():
        for weight, initial in zip(tbe.split_embedding_weights(), tables):
            weight.copy_(e(initial))
    per_sample = e(weights).requires_grad_() if weighted else None
    out = tbe(e(indices), e(offsets.astype(np.int32)), per_sample)
    want = reference_forward(tables, indices, offsets, weights if weighted else None, pooling)
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-5, atol=1e-6)
    grad = rng.standard_normal(want.shape).astype(np.float32)
    out.backward(e(grad))
    dense, weight_grads = reference_grads(tables, indices, offsets, weights if weighted else None, pooling, grad)
    for got, want_grad in zip(tbe._tables.views(tbe.weights.grad.numpy()), dense):
        np.testing.assert_allclose(got, want_grad, rtol=1e-5, atol=1e-6)
    if weighted:
        np.testing.assert_allclose(per_sample.grad.numpy(), weight_grads, rtol=1e-5, atol=1e-6)


def test_unpooled_lookups_give_a_row_per_index():
    rng = np.random.default_rng(2)
    tables = [rng.uniform(-1, 1, (9, 3)).astype(np.float32), rng.uniform(-1, 1, (4, 3)).astype(np.float32)]
    indices, offsets = np.array([8, 8, 0, 3, 1]), np.array([0, 3, 3, 4, 5])
    tbe = make_tbe(tables, feature_table=[0, 1], pooling_mode=PoolingMode.NONE, learning_rate=0.5)
    out = tbe(e(indices), e(offsets))
    np.testing.assert_array_equal(out.detach().numpy(), np.concatenate([tables[0][[8, 8, 0]], tables[1][[3, 1]]]))
    grad = rng.standard_normal((5, 3)).astype(np.float32)
    out.backward(e(grad))
    want = tables[0].copy()
    want[8] -= 0.5 * (grad[0] + grad[1])
    want[0] -= 0.5 * grad[2]
    np.testing.assert_allclose(tbe.split_embedding_weights()[0].numpy(), want, rtol=1e-6)


@pytest.mark.parametrize("case", list(CASES))
def test_fused_optimizers_update_the_touched_rows_as_fbgemm_defines_them(case):
    optimizer, kwargs = CASES[case]
    tables, steps = training_data()
    tbe = make_tbe(tables, optimizer, **kwargs)
    reference = [t.astype(np.float64) for t in tables]
    states = [[np.zeros(t.shape if kind == "dense" else (t.shape[0],)) for kind in STATE_SHAPES[optimizer]] for t in tables]
    for step, (indices, offsets, weights, grad) in enumerate(steps, 1):
        per_sample = e(weights).requires_grad_()
        out = tbe(e(indices), e(offsets), per_sample)
        np.testing.assert_allclose(out.detach().numpy(), reference_forward(reference, indices, offsets, weights, PoolingMode.SUM),
                                   rtol=1e-5, atol=1e-5)
        dense, weight_grads = reference_grads(reference, indices, offsets, weights, PoolingMode.SUM, grad)
        out.backward(e(grad))
        np.testing.assert_allclose(per_sample.grad.numpy(), weight_grads, rtol=1e-4, atol=1e-5)
        assert tbe.weights.grad is None
        for t in range(len(tables)):
            touched = np.unique(np.concatenate([indices[offsets[f * BATCH]:offsets[(f + 1) * BATCH]]
                                                for f in range(len(FEATURE_TABLE)) if FEATURE_TABLE[f] == t]))
            for row in touched:
                row_states = [s[row] if s.ndim == 2 else s[row:row + 1] for s in states[t]]
                reference[t][row] = reference_step(optimizer, kwargs, reference[t][row], dense[t][row], row_states, step)
                for s, value in zip(states[t], row_states):
                    if s.ndim == 1:
                        s[row] = value[0]
    assert int(tbe.iter.item()) == (STEPS if optimizer in (OptimType.ADAM, OptimType.LAMB, OptimType.PARTIAL_ROWWISE_ADAM,
                                                           OptimType.PARTIAL_ROWWISE_LAMB) else 0)
    for t, (weight, table_states) in enumerate(zip(tbe.split_embedding_weights(), tbe.split_optimizer_states())):
        np.testing.assert_allclose(weight.numpy(), reference[t], rtol=1e-4, atol=1e-5)
        assert len(table_states) == len(states[t])
        for got, want in zip(table_states, states[t]):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-6)


def test_feature_requires_grad_zeroes_the_other_features_per_sample_weight_gradients():
    tables, steps = training_data()
    indices, offsets, weights, grad = steps[0]
    per_sample = e(weights).requires_grad_()
    tbe = make_tbe(tables)
    tbe(e(indices), e(offsets), per_sample, feature_requires_grad=ember.tensor([1, 0, 1, 0])).backward(e(grad))
    _, want = reference_grads([t.astype(np.float64) for t in tables], indices, offsets, weights, PoolingMode.SUM, grad)
    feature = np.repeat(np.arange(4), np.diff(offsets[::BATCH]))
    want[(feature == 1) | (feature == 3)] = 0
    np.testing.assert_allclose(per_sample.grad.numpy(), want, rtol=1e-4, atol=1e-5)


def test_float16_tables_train_in_float32_and_round_to_nearest():
    tables, steps = training_data()
    tables16 = [t.astype(np.float16) for t in tables]
    tbe = make_tbe(tables16, weights_precision=SparseType.FP16, output_dtype=SparseType.FP16, learning_rate=0.25)
    indices, offsets, _, grad = steps[0]
    out = tbe(e(indices), e(offsets))
    assert out.dtype == ember.float16
    wide = [t.astype(np.float64) for t in tables16]
    np.testing.assert_allclose(out.detach().numpy(), reference_forward(wide, indices, offsets, None, PoolingMode.SUM), rtol=2e-3, atol=2e-3)
    out.backward(e(grad.astype(np.float16)))
    dense, _ = reference_grads(wide, indices, offsets, None, PoolingMode.SUM, grad.astype(np.float16).astype(np.float64))
    for weight, initial, g in zip(tbe.split_embedding_weights(), wide, dense):
        assert weight.dtype == ember.float16
        np.testing.assert_allclose(weight.numpy().astype(np.float64), (initial - 0.25 * g).astype(np.float16), rtol=1e-3, atol=1e-3)


def test_learning_rate_and_weight_init():
    tbe = make_tbe([np.zeros((4, 2), np.float32)], feature_table=[0], learning_rate=0.1)
    assert tbe.get_learning_rate() == pytest.approx(0.1)
    tbe.set_learning_rate(2.0)
    out = tbe(e(np.array([1])), e(np.array([0, 1])))
    out.backward(ember.ones(1, 2))
    np.testing.assert_allclose(tbe.split_embedding_weights()[0].numpy()[1], [-2.0, -2.0])
    tbe.init_embedding_weights_uniform(0.5, 0.75)
    values = tbe.split_embedding_weights()[0].numpy()
    assert ((values >= 0.5) & (values <= 0.75)).all()


def test_out_of_range_indices_fail_or_read_and_train_row_zero():
    tables = [np.arange(8, dtype=np.float32).reshape(4, 2)]
    indices, offsets = np.array([5, 1]), np.array([0, 1, 2])
    fatal = make_tbe(tables, feature_table=[0, 0], bounds_check_mode=BoundsCheckMode.FATAL)
    with pytest.raises(IndexError, match="index 5 of feature 0"):
        fatal(e(indices), e(offsets))
    warning = make_tbe(tables, feature_table=[0, 0], learning_rate=1.0)
    with pytest.warns(RuntimeWarning, match="1 indices outside"):
        out = warning(e(indices), e(offsets))
    np.testing.assert_array_equal(out.detach().numpy(), [[0, 1, 2, 3]])
    assert int(warning.bounds_check_warning.item()) == 1
    out.backward(ember.ones(1, 4))
    np.testing.assert_array_equal(warning.split_embedding_weights()[0].numpy(), [[-1, 0], [1, 2], [4, 5], [6, 7]])
    np.testing.assert_array_equal(indices, [5, 1])


def test_bad_inputs_are_refused_and_change_nothing():
    tables, steps = training_data()
    tbe = make_tbe(tables, OptimType.EXACT_ADAGRAD)
    indices, offsets, _, _ = steps[0]
    before = [w.numpy().copy() for w in tbe.split_embedding_weights()]
    with pytest.raises(ValueError, match="offsets"):
        tbe(e(indices), e(offsets[:-1]))
    bad = offsets.copy()
    bad[-1] += 1
    with pytest.raises(ValueError, match="offsets must run from 0"):
        tbe(e(indices), e(bad))
    with pytest.raises(TypeError, match="int32 or int64"):
        tbe(e(indices.astype(np.float32)), e(offsets))
    with pytest.raises(ValueError, match="per_sample_weights"):
        tbe(e(indices), e(offsets), ember.ones(len(indices) + 1))
    with pytest.raises(TypeError):
        tbe(indices, e(offsets))
    for w, b in zip(tbe.split_embedding_weights(), before):
        np.testing.assert_array_equal(w.numpy(), b)
    specs = [(4, 2, EmbeddingLocation.HOST, ComputeDevice.CPU)]
    with pytest.raises(NotImplementedError, match="LARS_SGD"):
        SplitTableBatchedEmbeddingBagsCodegen(specs, optimizer=OptimType.LARS_SGD)
    with pytest.raises(NotImplementedError, match="HOST"):
        SplitTableBatchedEmbeddingBagsCodegen([(4, 2, EmbeddingLocation.MANAGED_CACHING, ComputeDevice.CPU)])
    with pytest.raises(NotImplementedError, match="weight_decay_mode"):
        SplitTableBatchedEmbeddingBagsCodegen(specs, optimizer=OptimType.EXACT_ROWWISE_ADAGRAD, weight_decay_mode=WeightDecayMode.COUNTER)
    with pytest.raises(ValueError, match="feature_table_map"):
        SplitTableBatchedEmbeddingBagsCodegen(specs, feature_table_map=[1])
    with pytest.raises(ValueError, match="mixed dimension"):
        SplitTableBatchedEmbeddingBagsCodegen(specs + [(4, 3, EmbeddingLocation.HOST, ComputeDevice.CPU)], pooling_mode=PoolingMode.NONE)
    with pytest.raises(NotImplementedError, match="weights_precision"):
        SplitTableBatchedEmbeddingBagsCodegen(specs, weights_precision=SparseType.INT8)


def test_the_0_2_module_path_reexports_the_training_bags():
    from emberrec.fbgemm import split_table_batched_embeddings_ops as old

    assert old.SplitTableBatchedEmbeddingBagsCodegen is SplitTableBatchedEmbeddingBagsCodegen
    assert old.OptimType is OptimType and old.WeightDecayMode is WeightDecayMode


# ---- FusedEmbeddingBagCollection ----

def ebc_case(pooling=(PoolingType.SUM, PoolingType.SUM, PoolingType.SUM)):
    tables = [EmbeddingBagConfig(name=f"t{i}", embedding_dim=d, num_embeddings=r, feature_names=[f"f{i}"], pooling=p)
              for i, ((r, d), p) in enumerate(zip(SHAPES, pooling))]
    rng = np.random.default_rng(4)
    indices, offsets = make_bags(rng, feature_table=[0, 1, 2], batch=3)
    kjt = KeyedJaggedTensor.from_offsets_sync(["f0", "f1", "f2"], e(indices), e(offsets))
    return tables, kjt


def twin(tables, optimizer_type, kwargs):
    fused = FusedEmbeddingBagCollection(tables, optimizer_type, kwargs)
    plain = EmbeddingBagCollection(tables)
    plain.load_state_dict(fused.state_dict())
    return fused, plain


@pytest.mark.parametrize("optimizer_type, kwargs", [(ember.optim.SGD, {"lr": 0.5}),
                                                    (ember.optim.Adagrad, {"lr": 0.5, "eps": 1e-8})])
def test_fused_collection_trains_as_the_collection_with_its_optimizer(optimizer_type, kwargs):
    tables, kjt = ebc_case((PoolingType.SUM, PoolingType.MEAN, PoolingType.SUM))
    fused, plain = twin(tables, optimizer_type, kwargs)
    assert list(fused.state_dict()) == ["embedding_bags.t0.weight", "embedding_bags.t1.weight", "embedding_bags.t2.weight"]
    optimizer = optimizer_type(plain.parameters(), **kwargs)
    for _ in range(2):
        ours, theirs = fused(kjt), plain(kjt)
        assert ours.keys() == theirs.keys() == ["f0", "f1", "f2"]
        np.testing.assert_allclose(ours.values().detach().numpy(), theirs.values().detach().numpy(), rtol=1e-5, atol=1e-6)
        grad = ember.from_numpy(np.random.default_rng(5).standard_normal(tuple(ours.values().shape)).astype(np.float32))
        optimizer.zero_grad()
        ours.values().backward(grad)
        theirs.values().backward(grad)
        optimizer.step()
    for key, value in plain.state_dict().items():
        np.testing.assert_allclose(fused.state_dict()[key].numpy(), value.numpy(), rtol=1e-5, atol=1e-6)


def test_fused_optimizer_exposes_states_and_learning_rate():
    tables, kjt = ebc_case()
    fused = FusedEmbeddingBagCollection(tables, OptimType.EXACT_ROWWISE_ADAGRAD, {"lr": 0.1})
    optimizer = fused.fused_optimizer()
    state = optimizer.state_dict()
    assert list(state["state"]) == ["t0.weight", "t1.weight", "t2.weight"]
    assert list(state["state"]["t1.weight"]) == ["t1.weight.momentum_1"]
    assert tuple(state["state"]["t1.weight"]["t1.weight.momentum_1"].shape) == (SHAPES[1][0],)
    fused(kjt).values().sum().backward()
    assert float(state["state"]["t0.weight"]["t0.weight.momentum_1"].sum()) > 0  # live views
    optimizer.param_groups[0]["lr"] = 0.0
    optimizer.step()
    before = {k: v.numpy().copy() for k, v in fused.state_dict().items()}
    fused(kjt).values().sum().backward()
    for key, value in fused.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), before[key])
    optimizer.zero_grad()
    optimizer.load_state_dict({"state": {k: {n: ember.zeros(*t.shape) for n, t in s.items()} for k, s in state["state"].items()},
                               "param_groups": [{"params": [], "lr": 0.25}]})
    assert fused._emb_modules[0].get_learning_rate() == 0.25
    assert float(fused._emb_modules[0].split_optimizer_states()[0][0].sum()) == 0


def test_fused_collection_refuses_what_it_cannot_fuse():
    tables, _ = ebc_case()
    with pytest.raises(ValueError, match="Cannot fuse"):
        FusedEmbeddingBagCollection(tables, ember.optim.RMSprop, {"lr": 0.1})
    with pytest.raises(NotImplementedError, match="HOST"):
        FusedEmbeddingBagCollection(tables, ember.optim.SGD, {"lr": 0.1}, location=EmbeddingLocation.DEVICE)


# ---- FBGEMM-GPU and TorchRec themselves ----

def reference_python():
    for python in (os.environ.get("EMBER_TORCHREC_PYTHON"), os.environ.get("EMBER_BENCH_TORCH_PYTHON"), sys.executable):
        if python and subprocess.run([python, "-c", "import fbgemm_gpu, torchrec"], capture_output=True).returncode == 0:
            return python
    return None


@pytest.fixture(scope="module")
def fbgemm_results(tmp_path_factory):
    python = reference_python()
    if python is None:
        pytest.skip("no interpreter with fbgemm_gpu and torchrec (set EMBER_TORCHREC_PYTHON)")
    tables, steps = training_data(seed=7, feature_table=PARITY_FEATURE_TABLE)
    data = {"tables": len(tables), "feature_table": np.array(PARITY_FEATURE_TABLE), "pooling": int(PoolingMode.SUM), "steps": STEPS}
    data.update({f"table{t}": table for t, table in enumerate(tables)})
    for s, (indices, offsets, weights, grad) in enumerate(steps):
        data.update({f"indices{s}": indices, f"offsets{s}": offsets, f"weights{s}": weights, f"grad{s}": grad})
    ebc_tables, kjt = ebc_case()
    fused = FusedEmbeddingBagCollection(ebc_tables, ember.optim.SGD, {"lr": 0.5})
    data.update({f"ebc.table{i}": w.numpy().copy() for i, w in enumerate(fused.state_dict().values())})
    data.update({"ebc.features": np.array(kjt.keys()), "ebc.values": kjt.values().numpy(), "ebc.lengths": kjt.lengths().numpy(),
                 "ebc.grad": np.random.default_rng(8).standard_normal((3, sum(d for _, d in SHAPES))).astype(np.float32)})
    folder = tmp_path_factory.mktemp("fbgemm_training")
    np.savez(folder / "in.npz", **data)
    done = subprocess.run([python, str(HERE / "fbgemm_training_reference.py"), str(folder / "in.npz"), str(folder / "out.npz")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return data, fused, kjt, dict(np.load(folder / "out.npz"))


# Weight decay is left out: fbgemm_gpu's CPU kernel ignores it (see fbgemm_training_reference.py).
@pytest.mark.parametrize("case", ["sgd", "adagrad", "rowwise"])
def test_fused_optimizers_match_fbgemm(fbgemm_results, case):
    data, _, _, theirs = fbgemm_results
    optimizer, kwargs = CASES[case]
    tables = [data[f"table{t}"] for t in range(data["tables"])]
    tbe = make_tbe(tables, optimizer, PARITY_FEATURE_TABLE, **kwargs)
    for s in range(STEPS):
        weights = e(data[f"weights{s}"]).requires_grad_()
        out = tbe(e(data[f"indices{s}"]), e(data[f"offsets{s}"]), weights)
        np.testing.assert_allclose(out.detach().numpy(), theirs[f"{case}.out{s}"], rtol=1e-5, atol=1e-5)
        out.backward(e(data[f"grad{s}"]))
        np.testing.assert_allclose(weights.grad.numpy(), theirs[f"{case}.wgrad{s}"], rtol=1e-4, atol=1e-5)
    for t, (weight, states) in enumerate(zip(tbe.split_embedding_weights(), tbe.split_optimizer_states())):
        np.testing.assert_allclose(weight.numpy(), theirs[f"{case}.table{t}"], rtol=1e-5, atol=1e-5)
        for k, state in enumerate(states):
            np.testing.assert_allclose(state.numpy(), theirs[f"{case}.state{t}.{k}"], rtol=1e-5, atol=1e-6)


def test_fused_collection_matches_torchrec(fbgemm_results):
    _, fused, kjt, theirs = fbgemm_results
    pooled = fused(kjt)
    np.testing.assert_allclose(pooled.values().detach().numpy(), theirs["ebc.out"], rtol=1e-5, atol=1e-6)
    pooled.values().backward(e(fbgemm_results[0]["ebc.grad"]))
    for i, value in enumerate(fused.state_dict().values()):
        np.testing.assert_allclose(value.numpy(), theirs[f"ebc.after{i}"], rtol=1e-5, atol=1e-6)
    assert list(fused.state_dict()) == list(theirs["ebc.keys"])
