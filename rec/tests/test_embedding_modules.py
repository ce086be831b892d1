"""EmbeddingBagCollection / EmbeddingCollection against NumPy lookups, with gradients."""
import numpy as np
import pytest

import ember
from emberrec.modules.embedding_configs import (
    DataType, EmbeddingBagConfig, EmbeddingConfig, PoolingType, data_type_to_dtype, pooling_type_to_str)
from emberrec.modules.embedding_modules import (
    EmbeddingBagCollection, EmbeddingBagCollectionInterface, EmbeddingCollection)
from emberrec.sparse.jagged_tensor import KeyedJaggedTensor

BATCH = 5


def random_kjt(rng, keys, sizes, weighted=False):
    """A KJT with ids below sizes[key], and its NumPy rows {key: [ids of sample b]}."""
    lengths = rng.integers(0, 4, len(keys) * BATCH)
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    values = np.concatenate([rng.integers(0, sizes[k], lengths[i * BATCH:(i + 1) * BATCH].sum())
                             for i, k in enumerate(keys)]).astype(np.int64)
    weights = rng.random(len(values)).astype(np.float32)
    rows = {k: [(values[bounds[i * BATCH + b]:bounds[i * BATCH + b + 1]], weights[bounds[i * BATCH + b]:bounds[i * BATCH + b + 1]])
                for b in range(BATCH)] for i, k in enumerate(keys)}
    kjt = KeyedJaggedTensor(keys, ember.from_numpy(values), weights=ember.from_numpy(weights) if weighted else None,
                            lengths=ember.from_numpy(lengths))
    return kjt, rows


def pooled_reference(weight, rows, mode, weighted):
    out = np.zeros((BATCH, weight.shape[1]), np.float32)
    for b, (ids, w) in enumerate(rows):
        picked = weight[ids] * (w[:, None] if weighted else 1)
        if len(ids):
            out[b] = picked.sum(0) / (len(ids) if mode == "mean" else 1)
    return out


TABLES = [
    EmbeddingBagConfig(num_embeddings=11, embedding_dim=3, name="t1", feature_names=["f1", "f2"]),
    EmbeddingBagConfig(num_embeddings=7, embedding_dim=5, name="t2", feature_names=["f3"], pooling=PoolingType.MEAN),
    EmbeddingBagConfig(num_embeddings=4, embedding_dim=2, name="t3", feature_names=["f1"]),
]
SIZES = {"f1": 4, "f2": 11, "f3": 7}


def test_config_fields_defaults_and_helpers():
    config = EmbeddingBagConfig(num_embeddings=100, embedding_dim=7, name="t", feature_names=["a"])
    assert (config.pooling, config.data_type, config.weight_init_max, config.init_fn) == (PoolingType.SUM, DataType.FP32, None, None)
    assert config.get_weight_init_max() == pytest.approx(0.1) and config.get_weight_init_min() == pytest.approx(-0.1)
    assert config.num_features() == 1
    assert EmbeddingConfig(num_embeddings=1, embedding_dim=1).feature_names == []
    assert pooling_type_to_str(PoolingType.MEAN) == "mean" and data_type_to_dtype(DataType.FP16) == ember.float16
    with pytest.raises(ValueError, match="embedding_dim must be a positive int"):
        EmbeddingBagConfig(num_embeddings=3, embedding_dim=0)
    with pytest.raises(TypeError, match="feature_names"):
        EmbeddingBagConfig(num_embeddings=3, embedding_dim=2, feature_names="abc")
    with pytest.raises(TypeError, match="pooling"):
        EmbeddingBagConfig(num_embeddings=3, embedding_dim=2, pooling="SUM")
    with pytest.raises(NotImplementedError, match="quantized"):
        data_type_to_dtype(DataType.INT4)


def test_ebc_state_dict_keys_and_init_range():
    ebc = EmbeddingBagCollection(TABLES)
    assert list(ebc.state_dict()) == ["embedding_bags.t1.weight", "embedding_bags.t2.weight", "embedding_bags.t3.weight"]
    weight = ebc.embedding_bags["t2"].weight.detach().numpy()
    assert weight.shape == (7, 5) and np.abs(weight).max() <= np.sqrt(1 / 7)
    assert ebc.embedding_bag_configs == TABLES and not ebc.is_weighted


@pytest.mark.parametrize("keys", [["f1", "f2", "f3"], ["f3", "f2", "f1"]])
def test_ebc_forward_matches_numpy_with_shared_features(keys):
    rng = np.random.default_rng(0)
    ebc = EmbeddingBagCollection(TABLES)
    kjt, rows = random_kjt(rng, keys, SIZES)
    out = ebc(kjt)
    assert out.keys() == ["f1@t1", "f2", "f3", "f1@t3"] and out.length_per_key() == [3, 3, 5, 2]
    weights = {t.name: ebc.embedding_bags[t.name].weight.detach().numpy() for t in TABLES}
    for key, table, feature, mode in [("f1@t1", "t1", "f1", "sum"), ("f2", "t1", "f2", "sum"),
                                      ("f3", "t2", "f3", "mean"), ("f1@t3", "t3", "f1", "sum")]:
        np.testing.assert_allclose(out[key].detach().numpy(), pooled_reference(weights[table], rows[feature], mode, False),
                                   rtol=1e-6, atol=1e-6)


def test_weighted_ebc_matches_numpy_and_gradients_reach_tables_and_weights():
    rng = np.random.default_rng(1)
    tables = [EmbeddingBagConfig(num_embeddings=9, embedding_dim=4, name="t", feature_names=["a", "b"])]
    ebc = EmbeddingBagCollection(tables, is_weighted=True)
    kjt, rows = random_kjt(rng, ["a", "b"], {"a": 9, "b": 9}, weighted=True)
    kjt._weights.requires_grad_()
    out = ebc(kjt)
    weight = ebc.embedding_bags["t"].weight.detach().numpy()
    np.testing.assert_allclose(out["b"].detach().numpy(), pooled_reference(weight, rows["b"], "sum", True), rtol=1e-6, atol=1e-6)
    upstream = rng.standard_normal((BATCH, 8)).astype(np.float32)
    (out.values() * ember.from_numpy(upstream)).sum().backward()
    # d/dW[row] = sum over ids equal to row of weight * upstream of its sample and feature
    want = np.zeros_like(weight)
    want_weights = []
    for f, key in enumerate(["a", "b"]):
        for b, (ids, w) in enumerate(rows[key]):
            for i, wi in zip(ids, w):
                want[i] += wi * upstream[b, f * 4:(f + 1) * 4]
                want_weights.append(weight[i] @ upstream[b, f * 4:(f + 1) * 4])
    np.testing.assert_allclose(ebc.embedding_bags["t"].weight.grad.numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(kjt.weights().grad.numpy(), want_weights, rtol=1e-5, atol=1e-6)


def test_ebc_rejects_bad_input():
    ebc = EmbeddingBagCollection(TABLES)
    with pytest.raises(ValueError, match=r"lacks the keys \['f3'\]"):
        ebc(KeyedJaggedTensor(["f1", "f2"], ember.tensor([1]), lengths=ember.tensor([1, 0])))
    with pytest.raises(TypeError, match="KeyedJaggedTensor"):
        ebc({"f1": ember.tensor([1])})
    with pytest.raises(IndexError):
        ebc(KeyedJaggedTensor(["f1", "f2", "f3"], ember.tensor([1, 20]), lengths=ember.tensor([0, 1, 1])))
    weighted = EmbeddingBagCollection([TABLES[0]], is_weighted=True)
    with pytest.raises(ValueError, match="has no weights"):
        weighted(KeyedJaggedTensor(["f1", "f2"], ember.tensor([1]), lengths=ember.tensor([1, 0])))
    with pytest.raises(ValueError, match="SUM pooling"):
        EmbeddingBagCollection([TABLES[1]], is_weighted=True)
    with pytest.raises(ValueError, match="name of its own"):
        EmbeddingBagCollection([TABLES[0], TABLES[0]])
    with pytest.raises(ValueError, match=r"\['items'\] cannot be keys"):
        EmbeddingBagCollection([EmbeddingBagConfig(num_embeddings=2, embedding_dim=2, name="items", feature_names=["a"])])
    with pytest.raises(ValueError, match="EmbeddingCollection"):
        EmbeddingBagCollection([EmbeddingBagConfig(num_embeddings=2, embedding_dim=2, name="x", feature_names=["a"],
                                                   pooling=PoolingType.NONE)])
    with pytest.raises(RuntimeError, match="cuda:0 is not available"):
        EmbeddingBagCollection(TABLES, device="cuda")


def test_embedding_collection_matches_numpy_and_trains():
    rng = np.random.default_rng(2)
    tables = [EmbeddingConfig(num_embeddings=6, embedding_dim=3, name="u", feature_names=["a"]),
              EmbeddingConfig(num_embeddings=8, embedding_dim=3, name="v", feature_names=["b", "c"])]
    ec = EmbeddingCollection(tables, need_indices=True)
    assert list(ec.state_dict()) == ["embeddings.u.weight", "embeddings.v.weight"] and ec.embedding_dim == 3
    kjt, rows = random_kjt(rng, ["c", "a", "b"], {"a": 6, "b": 8, "c": 8})
    out = ec(kjt)
    assert list(out) == ["a", "b", "c"]
    for key, table in [("a", "u"), ("b", "v"), ("c", "v")]:
        weight = ec.embeddings[table].weight.detach().numpy()
        ids = np.concatenate([r[0] for r in rows[key]])
        np.testing.assert_array_equal(out[key].values().detach().numpy(), weight[ids])
        assert out[key].lengths().tolist() == [len(r[0]) for r in rows[key]]
        assert out[key].weights().tolist() == ids.tolist()
    out["c"].values().sum().backward()
    ids = np.concatenate([r[0] for r in rows["c"]])
    np.testing.assert_array_equal(ec.embeddings["v"].weight.grad.numpy()[:, 0], np.bincount(ids, minlength=8))
    with pytest.raises(ValueError, match="same embedding_dim"):
        EmbeddingCollection([tables[0], EmbeddingConfig(num_embeddings=2, embedding_dim=4, name="w", feature_names=["d"])])


@pytest.mark.parametrize("data_type, dtype", [(DataType.FP16, ember.float16), (DataType.BF16, ember.bfloat16)])
def test_half_precision_tables_pool_in_their_dtype(data_type, dtype):
    config = EmbeddingBagConfig(name="t", embedding_dim=5, num_embeddings=10, feature_names=["f"], data_type=data_type)
    ebc = EmbeddingBagCollection([config])
    assert isinstance(ebc, EmbeddingBagCollectionInterface)
    kjt = KeyedJaggedTensor(["f"], ember.tensor([1, 2, 3]), lengths=ember.tensor([2, 1]))
    out = ebc(kjt).values()
    weight = ebc.embedding_bags["t"].weight.detach().float().numpy()
    assert out.dtype == dtype
    np.testing.assert_allclose(out.float().detach().numpy(), [weight[1] + weight[2], weight[3]], rtol=1e-2, atol=1e-2)
    out.float().sum().backward()
    assert ebc.embedding_bags["t"].weight.grad.dtype == dtype
