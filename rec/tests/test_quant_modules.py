"""emberrec.quant's EmbeddingBagCollection / EmbeddingCollection and quantize_embeddings:
outputs against NumPy pooling of the rows NumPy dequantizes from the state dict, quantization
error within half a step, TorchRec's state-dict keys, quantize_embeddings on DLRM, bad inputs,
and TorchRec's own quantized EBC where an interpreter has torchrec (torchrec_quant_reference.py)."""
import copy
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import ember
from emberrec import EmbeddingBagCollection, EmbeddingBagConfig, EmbeddingCollection, EmbeddingConfig, KeyedJaggedTensor
from emberrec.inference.modules import quantize_embeddings
from emberrec.models.dlrm import DLRM
from emberrec.modules.embedding_configs import DataType, PoolingType, QuantConfig, dtype_to_data_type
from emberrec.quant import EmbeddingBagCollection as QuantEBC
from emberrec.quant import EmbeddingCollection as QuantEC
from emberrec.quant.embedding_modules import MODULE_ATTR_QUANT_STATE_DICT_SPLIT_SCALE_BIAS
from quant_parity_tables import PARITY_TABLES

HERE = pathlib.Path(__file__).resolve().parent
BITS = {DataType.INT8: 8, DataType.INT4: 4, DataType.INT2: 2}
WEIGHT_TYPES = [ember.float32, ember.float16, ember.int8, DataType.INT4, DataType.INT2]


def tables():
    return [EmbeddingBagConfig(name="t1", embedding_dim=8, num_embeddings=10, feature_names=["f1", "f2"]),
            EmbeddingBagConfig(name="t2", embedding_dim=5, num_embeddings=7, feature_names=["f3"], pooling=PoolingType.MEAN),
            EmbeddingBagConfig(name="t3", embedding_dim=3, num_embeddings=4, feature_names=["f1"])]


def features(rng, keys=("f3", "f1", "f2"), batch=4, sizes={"f1": 4, "f2": 10, "f3": 7}):
    lengths = rng.integers(0, 4, len(keys) * batch)
    per_key = lengths.reshape(len(keys), batch).sum(1)
    values = np.concatenate([rng.integers(0, sizes[k], n) for k, n in zip(keys, per_key)])
    return KeyedJaggedTensor(list(keys), ember.from_numpy(values.astype(np.int64)), lengths=ember.from_numpy(lengths))


def dequantize(rows, data_type, dim):
    """NumPy's reading of a table's state-dict rows (scale and bias first, values low bits first)."""
    if data_type == DataType.FP32:
        return rows[:, :dim * 4].copy().view(np.float32)
    if data_type == DataType.FP16:
        return rows[:, :dim * 2].copy().view(np.float16).astype(np.float32)
    bits = BITS[data_type]
    scale = rows[:, 0:2].copy().view(np.float16).astype(np.float32)
    bias = rows[:, 2:4].copy().view(np.float16).astype(np.float32)
    packed = rows[:, 4:].astype(np.uint32)
    per_byte = 8 // bits
    codes = np.stack([(packed >> (bits * i)) & ((1 << bits) - 1) for i in range(per_byte)], axis=2)
    return codes.reshape(len(rows), -1)[:, :dim] * scale + bias


def pooled_reference(module, kjt):
    """NumPy's pooled output of a quantized EBC, from its state dict."""
    state = {k: v.numpy() for k, v in module.state_dict().items()}
    data = kjt.to_dict()
    columns = []
    for table in module.embedding_bag_configs:
        weight = dequantize(state[f"embedding_bags.{table.name}.weight"], table.data_type, table.embedding_dim)
        for feature in table.feature_names:
            offsets, ids = data[feature].offsets().numpy(), data[feature].values().numpy()
            bags = [weight[ids[a:b]] for a, b in zip(offsets[:-1], offsets[1:])]
            reduce = np.mean if table.pooling == PoolingType.MEAN else np.sum
            columns.append(np.stack([reduce(bag, 0) if len(bag) else np.zeros(table.embedding_dim) for bag in bags]))
    return np.concatenate(columns, 1)


def quantized(ebc, weight, output=ember.float32):
    ebc.qconfig = QuantConfig(activation=output, weight=weight)
    return QuantEBC.from_float(ebc)


@pytest.mark.parametrize("weight", WEIGHT_TYPES, ids=str)
def test_ebc_outputs_match_numpy_dequantized_rows(weight):
    rng = np.random.default_rng(0)
    ebc = EmbeddingBagCollection(tables())
    qebc = quantized(ebc, weight)
    kjt = features(rng)
    out = qebc(kjt)
    assert out.keys() == ebc(kjt).keys() == ["f1@t1", "f2", "f3", "f1@t3"]
    assert out.values().dtype == ember.float32 and tuple(out.values().shape) == (4, 24)
    np.testing.assert_allclose(out.values().numpy(), pooled_reference(qebc, kjt), rtol=1e-5, atol=1e-5)
    assert [c.data_type for c in qebc.embedding_bag_configs] == [dtype_to_data_type(weight)] * 3


@pytest.mark.parametrize("data_type", [DataType.INT8, DataType.INT4, DataType.INT2], ids=str)
def test_rows_quantize_within_half_a_step(data_type):
    ebc = EmbeddingBagCollection(tables())
    qebc = quantized(ebc, data_type)
    for table in tables():
        rows = qebc.state_dict()[f"embedding_bags.{table.name}.weight"].numpy()
        weight = ebc.embedding_bags[table.name].weight.detach().numpy()
        scale = rows[:, 0:2].copy().view(np.float16).astype(np.float32)
        error = np.abs(dequantize(rows, data_type, table.embedding_dim) - weight)
        # half a step, plus the binary16 rounding of scale and bias
        assert (error <= scale * 0.5 + 2e-3 * np.abs(weight).max()).all()


def test_float16_output_and_mixed_pooling_column_order():
    rng = np.random.default_rng(1)
    ebc = EmbeddingBagCollection(tables())
    kjt = features(rng)
    out = quantized(ebc, ember.float16, output=ember.float16)(kjt)
    assert out.values().dtype == ember.float16
    # columns in table order, though t2 (MEAN) sits in a table batch of its own
    np.testing.assert_allclose(out.values().numpy().astype(np.float32), ebc(kjt).values().detach().numpy(), atol=2e-3)


def test_weighted_ebc():
    rng = np.random.default_rng(2)
    ebc = EmbeddingBagCollection(tables()[:1], is_weighted=True)
    kjt = features(rng, keys=("f1", "f2"), sizes={"f1": 10, "f2": 10})
    kjt = KeyedJaggedTensor(kjt.keys(), kjt.values(), weights=ember.rand(kjt.values().shape[0]), lengths=kjt.lengths())
    qebc = quantized(ebc, ember.float32)
    assert qebc.is_weighted
    np.testing.assert_allclose(qebc(kjt).values().numpy(), ebc(kjt).values().detach().numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="no weights"):
        qebc(KeyedJaggedTensor(kjt.keys(), kjt.values(), lengths=kjt.lengths()))


def test_state_dict_keys_and_split_scale_bias():
    ebc = EmbeddingBagCollection(tables())
    assert list(quantized(ebc, ember.int8).state_dict()) == list(ebc.state_dict())
    # TorchRec pads rows to 16 bytes: 4 + 8 values of t1
    assert tuple(quantized(ebc, ember.int8).state_dict()["embedding_bags.t1.weight"].shape) == (10, 16)
    setattr(ebc, MODULE_ATTR_QUANT_STATE_DICT_SPLIT_SCALE_BIAS, True)
    state = quantized(ebc, DataType.INT4).state_dict()
    assert list(state) == [f"embedding_bags.{t}.{leaf}" for t in ("t1", "t2", "t3")
                           for leaf in ("weight", "weight_qscale", "weight_qbias")]
    assert tuple(state["embedding_bags.t2.weight"].shape) == (7, 3) and state["embedding_bags.t2.weight_qscale"].dtype == ember.float16
    assert list(quantized(ebc, ember.float16).state_dict()) == list(EmbeddingBagCollection(tables()).state_dict())


def test_load_state_dict_fills_a_module_built_from_quantized_configs():
    rng = np.random.default_rng(3)
    source = quantized(EmbeddingBagCollection(tables()), DataType.INT4)
    configs = [EmbeddingBagConfig(name=t.name, embedding_dim=t.embedding_dim, num_embeddings=t.num_embeddings,
                                  feature_names=t.feature_names, pooling=t.pooling, data_type=DataType.INT4) for t in tables()]
    empty = QuantEBC(configs)
    kjt = features(rng)
    assert not empty(kjt).values().numpy().any()
    empty.load_state_dict(source.state_dict())
    np.testing.assert_array_equal(empty(kjt).values().numpy(), source(kjt).values().numpy())


@pytest.mark.parametrize("split", [False, True])
def test_deep_copy_keeps_the_state_dict_on_the_tables_it_looks_up(split):
    rng = np.random.default_rng(7)
    ebc = EmbeddingBagCollection(tables())
    setattr(ebc, MODULE_ATTR_QUANT_STATE_DICT_SPLIT_SCALE_BIAS, split)
    qebc = quantized(ebc, DataType.INT4)
    twin = copy.deepcopy(qebc)
    kjt = features(rng)
    np.testing.assert_array_equal(twin(kjt).values().numpy(), qebc(kjt).values().numpy())
    twin.load_state_dict({k: ember.zeros_like(v) for k, v in twin.state_dict().items()})
    assert not twin(kjt).values().numpy().any()
    assert qebc(kjt).values().numpy().any()  # the original keeps its tables


def test_quantized_embedding_collection():
    rng = np.random.default_rng(4)
    ec = EmbeddingCollection([EmbeddingConfig(name="u", embedding_dim=4, num_embeddings=10, feature_names=["f1", "f3"]),
                              EmbeddingConfig(name="v", embedding_dim=4, num_embeddings=10, feature_names=["f2", "f1"])],
                             need_indices=True)
    ec.qconfig = QuantConfig(activation=ember.float32, weight=DataType.INT4, per_table_weight_dtype={"v": ember.int8})
    qec = QuantEC.from_float(ec)
    assert [c.data_type for c in qec.embedding_configs] == [DataType.INT4, DataType.INT8]
    assert list(qec.state_dict()) == list(ec.state_dict())
    kjt = features(rng, sizes={"f1": 10, "f2": 10, "f3": 10})
    want, got = ec(kjt), qec(kjt)
    assert list(got) == list(want) == ["f1@u", "f3", "f2", "f1@v"]
    state = {k: v.numpy() for k, v in qec.state_dict().items()}
    for name, table in (("f1@u", "u"), ("f3", "u"), ("f2", "v"), ("f1@v", "v")):
        rows = dequantize(state[f"embeddings.{table}.weight"], qec.embedding_configs[table == "v"].data_type, 4)
        ids = got[name].weights().numpy()
        np.testing.assert_array_equal(ids, want[name].weights().numpy())
        np.testing.assert_array_equal(got[name].lengths().numpy(), want[name].lengths().numpy())
        np.testing.assert_allclose(got[name].values().numpy(), rows[ids], rtol=1e-6, atol=1e-6)


def test_quantize_embeddings_on_dlrm():
    rng = np.random.default_rng(5)
    ebc = EmbeddingBagCollection([EmbeddingBagConfig(name="t1", embedding_dim=4, num_embeddings=10, feature_names=["f1", "f2"]),
                                  EmbeddingBagConfig(name="t2", embedding_dim=4, num_embeddings=7, feature_names=["f3"])])
    model = DLRM(ebc, 3, [6, 4], [5, 1])
    dense, kjt = ember.randn(4, 3), features(rng, sizes={"f1": 10, "f2": 10, "f3": 7})
    quantized_model = quantize_embeddings(model, dtype=ember.int8, inplace=False)
    assert type(model.sparse_arch.embedding_bag_collection) is EmbeddingBagCollection  # not in place
    assert type(quantized_model.sparse_arch.embedding_bag_collection) is QuantEBC
    assert list(quantized_model.state_dict()) == list(model.state_dict())
    np.testing.assert_allclose(quantized_model(dense, kjt).detach().numpy(), model(dense, kjt).detach().numpy(), atol=5e-3)
    same = quantize_embeddings(model, dtype=DataType.INT2, inplace=True)
    assert same is model and type(model.sparse_arch.embedding_bag_collection) is QuantEBC


def test_quantize_embeddings_with_additional_keys_and_per_table_types():
    ec = EmbeddingCollection([EmbeddingConfig(name="u", embedding_dim=4, num_embeddings=10, feature_names=["f1"])])
    root = ember.nn.ModuleDict({"ec": ec, "ebc": EmbeddingBagCollection(tables())})
    out = quantize_embeddings(root, ember.float16, inplace=False, additional_qconfig_spec_keys=[EmbeddingCollection],
                              per_table_weight_dtype={"t2": DataType.INT2}, output_dtype=ember.float16)
    assert type(out["ec"]) is QuantEC and type(out["ebc"]) is QuantEBC
    assert [c.data_type for c in out["ebc"].embedding_bag_configs] == [DataType.FP16, DataType.INT2, DataType.FP16]
    assert out["ebc"].output_dtype == ember.float16
    assert type(quantize_embeddings(root, ember.int8, inplace=False)["ec"]) is EmbeddingCollection  # EBCs only by default


def test_bad_inputs_raise_clear_errors():
    ebc = EmbeddingBagCollection(tables())
    with pytest.raises(ValueError, match="qconfig"):
        QuantEBC.from_float(ebc)
    with pytest.raises(TypeError, match="EmbeddingBagCollection"):
        QuantEBC.from_float(ember.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="dtype must be"):
        quantize_embeddings(ebc, ember.int32, inplace=False)
    with pytest.raises(ValueError, match="output_dtype"):
        quantized(ebc, ember.int8, output=ember.int8)
    with pytest.raises(ValueError, match=r"per_table_weight_dtype names tables .*\['nope'\]"):
        quantize_embeddings(ebc, ember.int8, inplace=True, per_table_weight_dtype={"nope": ember.int8})
    with pytest.raises(NotImplementedError, match="BF16"):
        quantized(ebc, ember.bfloat16)
    model = DLRM(EmbeddingBagCollection(tables()[:1]), 3, [8], [2, 1])
    for bad in ({"dtype": ember.bfloat16}, {"dtype": ember.int8, "output_dtype": ember.int8}):
        with pytest.raises((NotImplementedError, ValueError)):
            quantize_embeddings(model, inplace=True, **{"per_table_weight_dtype": {"t1": ember.int8}, **bad})
        assert type(model.sparse_arch.embedding_bag_collection) is EmbeddingBagCollection  # unchanged
        assert not hasattr(model.sparse_arch.embedding_bag_collection, "qconfig")
    with pytest.raises(NotImplementedError, match="CPU"):
        QuantEBC(tables(), device="cuda")
    with pytest.raises(ValueError, match="additional_mapping"):
        quantize_embeddings(ebc, ember.int8, inplace=False, additional_qconfig_spec_keys=[ember.nn.Linear])
    qebc = quantized(ebc, ember.int8)
    with pytest.raises(TypeError, match="KeyedJaggedTensor"):
        qebc(ember.tensor([1, 2]))
    with pytest.raises(ValueError, match=r"lacks the keys \['f3'\]"):
        qebc(KeyedJaggedTensor(["f1", "f2"], ember.tensor([0, 1]), lengths=ember.tensor([1, 1])))
    with pytest.warns(RuntimeWarning, match="outside their tables"):  # TorchRec's bounds check: WARNING
        qebc(KeyedJaggedTensor(["f1", "f2", "f3"], ember.tensor([0, 1, 99]), lengths=ember.tensor([1, 1, 1])))


COMPAT_SCRIPT = """
import torch
import torchrec
from torchrec.inference.modules import quantize_embeddings
from torchrec.models.dlrm import DLRM
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

ebc = torchrec.EmbeddingBagCollection(tables=[
    torchrec.EmbeddingBagConfig(name="t1", embedding_dim=4, num_embeddings=10, feature_names=["f1", "f2"])])
model = DLRM(embedding_bag_collection=ebc, dense_in_features=3, dense_arch_layer_sizes=[4], over_arch_layer_sizes=[2, 1])
quantized = quantize_embeddings(model, dtype=torch.int8, inplace=False, output_dtype=torch.float)
kjt = KeyedJaggedTensor.from_offsets_sync(keys=["f1", "f2"], values=torch.tensor([0, 1, 2, 3]),
                                          offsets=torch.tensor([0, 2, 2, 3, 4]))
dense = torch.rand(2, 3)
assert torch.allclose(quantized(dense, kjt), model(dense, kjt), atol=1e-2)
print(type(quantized.sparse_arch.embedding_bag_collection).__module__)
"""


def test_torchrec_quantization_script_runs_under_ember_compat(tmp_path):
    script = tmp_path / "quantize.py"
    script.write_text(COMPAT_SCRIPT)
    done = subprocess.run([sys.executable, "-m", "ember.compat", str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "emberrec.quant.embedding_modules"


# ---- TorchRec itself ----

def torchrec_case():
    """Inputs for torchrec_quant_reference.py, and emberrec's outputs for them."""
    rng = np.random.default_rng(6)
    ebc = EmbeddingBagCollection([EmbeddingBagConfig(name=name, embedding_dim=dim, num_embeddings=rows,
                                                     feature_names=names, pooling=PoolingType[pooling])
                                  for name, dim, rows, names, pooling in PARITY_TABLES])
    kjt = features(rng, batch=5)
    data = {"lengths": kjt.lengths().numpy(), "values": kjt.values().numpy(),
            **{f"state.{k}": v.detach().numpy() for k, v in ebc.state_dict().items()}}
    ours = {}
    for name, weight in (("int8", ember.int8), ("int4", DataType.INT4), ("int2", DataType.INT2), ("fp16", ember.float16)):
        qebc = quantized(ebc, weight)
        ours[f"{name}.values"] = qebc(kjt).values().numpy()
        ours.update({f"{name}.state.{k}": v.numpy() for k, v in qebc.state_dict().items()})
    return data, ours


def test_parity_with_torchrec_quantized_ebc(tmp_path):
    from test_torchrec_parity import torchrec_python
    python = torchrec_python()
    if python is None:
        pytest.skip("no interpreter with torchrec and fbgemm_gpu (set EMBER_TORCHREC_PYTHON)")
    data, ours = torchrec_case()
    np.savez(tmp_path / "in.npz", **data)
    done = subprocess.run([python, str(HERE / "torchrec_quant_reference.py"), str(tmp_path / "in.npz"),
                           str(tmp_path / "out.npz")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    ref = dict(np.load(tmp_path / "out.npz"))
    assert sorted(ref) == sorted(ours)
    for key, value in ours.items():
        if ".state." in key:
            np.testing.assert_array_equal(value, ref[key], err_msg=key)  # the row bytes, bit for bit
        else:
            np.testing.assert_allclose(value, ref[key], rtol=1e-5, atol=1e-5, err_msg=key)
