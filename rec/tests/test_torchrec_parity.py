"""emberrec against TorchRec itself: the same inputs and parameters through both, outputs
compared. TorchRec runs in another interpreter (torchrec_reference.py): EMBER_TORCHREC_PYTHON,
else EMBER_BENCH_TORCH_PYTHON, else this one; the tests skip where none has torchrec (`make
bench` installs it; see requirements-bench.txt)."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import ember
from emberrec.metrics.auc import AUCMetric
from emberrec.metrics.calibration import CalibrationMetric
from emberrec.metrics.ctr import CTRMetric
from emberrec.metrics.metrics_config import DefaultTaskInfo
from emberrec.metrics.mse import MSEMetric
from emberrec.metrics.ne import NEMetric
from emberrec.datasets.utils import Batch
from emberrec.models.dlrm import DLRM, DLRMTrain
from emberrec.modules.crossnet import CrossNet, LowRankCrossNet, LowRankMixtureCrossNet, VectorCrossNet
from emberrec.modules.deepfm import FactorizationMachine
from emberrec.modules.embedding_configs import EmbeddingBagConfig, EmbeddingConfig, PoolingType
from emberrec.modules.embedding_modules import EmbeddingBagCollection, EmbeddingCollection
from emberrec.sparse.jagged_tensor import JaggedTensor, KeyedJaggedTensor, KeyedTensor

HERE = pathlib.Path(__file__).resolve().parent
KEYS = ["f1", "f2", "f3"]
BATCH = 4


def torchrec_python():
    for python in (os.environ.get("EMBER_TORCHREC_PYTHON"), os.environ.get("EMBER_BENCH_TORCH_PYTHON"), sys.executable):
        if python and subprocess.run([python, "-c", "import torchrec, fbgemm_gpu"], capture_output=True).returncode == 0:
            return python
    return None


def ids(rng, lengths, sizes):
    """Ids below sizes[k] for each key's share of the key-major lengths."""
    per_key = lengths.reshape(len(sizes), -1).sum(1)
    return np.concatenate([rng.integers(0, size, n) for size, n in zip(sizes, per_key)]).astype(np.int64)


def state(prefix, module):
    return {f"{prefix}.state.{k}": v.detach().numpy() for k, v in module.state_dict().items()}


def e(array):
    return ember.from_numpy(np.ascontiguousarray(array))


def build_cases():
    """(inputs for the reference, the emberrec objects and results to compare)."""
    rng = np.random.default_rng(0)
    data, ours = {}, {}
    lengths = rng.integers(0, 4, 3 * BATCH)
    data["kjt.lengths"], data["kjt.values"] = lengths, ids(rng, lengths, [4, 11, 7])
    data["kjt.weights"] = rng.random(len(data["kjt.values"])).astype(np.float32)
    data["kjt.permute"] = np.array([2, 0, 2])

    tables = [EmbeddingBagConfig(num_embeddings=11, embedding_dim=3, name="t1", feature_names=["f1", "f2"]),
              EmbeddingBagConfig(num_embeddings=7, embedding_dim=5, name="t2", feature_names=["f3"], pooling=PoolingType.MEAN),
              EmbeddingBagConfig(num_embeddings=4, embedding_dim=2, name="t3", feature_names=["f1"])]
    ours["ebc"] = EmbeddingBagCollection(tables)
    data.update(state("ebc", ours["ebc"]))
    data["ebc.lengths"] = lengths
    data["ebc.upstream"] = rng.standard_normal((BATCH, 13)).astype(np.float32)

    ours["wbc"] = EmbeddingBagCollection(tables[:1], is_weighted=True)
    data.update(state("wbc", ours["wbc"]))
    data["wbc.lengths"] = rng.integers(0, 4, 2 * BATCH)
    data["wbc.values"] = ids(rng, data["wbc.lengths"], [11, 11])
    data["wbc.weights"] = rng.random(len(data["wbc.values"])).astype(np.float32)

    ours["ec"] = EmbeddingCollection([EmbeddingConfig(num_embeddings=6, embedding_dim=3, name="u", feature_names=["f1", "f3"]),
                                      EmbeddingConfig(num_embeddings=8, embedding_dim=3, name="v", feature_names=["f2", "f1"])])
    data.update(state("ec", ours["ec"]))
    data["ec.lengths"] = rng.integers(0, 3, 3 * BATCH)
    data["ec.values"] = ids(rng, data["ec.lengths"], [6, 8, 6])

    data["dense.x"] = rng.standard_normal((5, 6)).astype(np.float32)
    ours["crossnet"], ours["lowrank"] = CrossNet(6, 2), LowRankCrossNet(6, 2, low_rank=3)
    ours["vector"], ours["mixture"] = VectorCrossNet(6, 2), LowRankMixtureCrossNet(6, 2, num_experts=3, low_rank=2)
    with ember.no_grad():  # TorchRec starts the biases at zero: make them count
        for name in ("crossnet", "lowrank", "vector", "mixture"):
            for bias in ours[name].bias:
                bias.copy_(ember.randn(bias.shape))
            data.update(state(name, ours[name]))
    data["fm.a"], data["fm.b"] = rng.standard_normal((5, 2, 3)).astype(np.float32), rng.standard_normal((5, 4)).astype(np.float32)

    dlrm_tables = [EmbeddingBagConfig(name="t1", embedding_dim=4, num_embeddings=20, feature_names=["f1", "f2"]),
                   EmbeddingBagConfig(name="t2", embedding_dim=4, num_embeddings=10, feature_names=["f3"])]
    ours["dlrm"] = DLRM(EmbeddingBagCollection(dlrm_tables), 7, [6, 4], [5, 1])
    data.update(state("dlrm", ours["dlrm"]))
    data["dlrm.lengths"] = rng.integers(0, 3, 3 * BATCH)
    data["dlrm.values"] = ids(rng, data["dlrm.lengths"], [20, 20, 10])
    data["dlrm.dense"] = rng.standard_normal((BATCH, 7)).astype(np.float32)
    data["dlrm.labels"] = (rng.random(BATCH) > 0.5).astype(np.float32)
    data["kt.a"], data["kt.b"], data["kt.c"] = (rng.standard_normal((3, d)).astype(np.float32) for d in (2, 4, 1))
    data["jt.dense"] = rng.standard_normal((4, 5)).astype(np.float32)
    data["jt.lengths"] = np.array([0, 5, 2, 3])
    data["metrics.predictions"] = rng.random((5, 8))
    data["metrics.labels"] = (rng.random((5, 8)) > 0.6).astype(np.float64)
    data["metrics.weights"] = rng.random((5, 8)) + 0.5
    data["metrics.window_size"] = np.array(20)
    return data, ours


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    python = torchrec_python()
    if python is None:
        pytest.skip("no interpreter with torchrec and fbgemm_gpu (set EMBER_TORCHREC_PYTHON)")
    data, ours = build_cases()
    folder = tmp_path_factory.mktemp("torchrec")
    np.savez(folder / "in.npz", **data)
    done = subprocess.run([python, str(HERE / "torchrec_reference.py"), str(folder / "in.npz"), str(folder / "out.npz")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return data, ours, dict(np.load(folder / "out.npz"))


def close(got, want):
    np.testing.assert_allclose(got.detach().numpy() if isinstance(got, ember.Tensor) else got, want, rtol=1e-5, atol=1e-6)


def test_keyed_jagged_tensor_operations(cases):
    data, _, ref = cases
    kjt = KeyedJaggedTensor(KEYS, e(data["kjt.values"]), weights=e(data["kjt.weights"]), lengths=e(data["kjt.lengths"]))
    permuted = kjt.permute(data["kjt.permute"].tolist())
    close(permuted.values(), ref["kjt.permuted_values"])
    close(permuted.weights(), ref["kjt.permuted_weights"])
    close(permuted.lengths(), ref["kjt.permuted_lengths"])
    assert kjt.length_per_key() == ref["kjt.length_per_key"].tolist()
    assert kjt.offset_per_key() == ref["kjt.offset_per_key"].tolist()
    close(kjt["f2"].to_padded_dense(desired_length=3, padding_value=-1.0), ref["kjt.f2_padded"])
    close(kjt.to_dict()["f3"].offsets(), ref["kjt.f3_offsets"])
    second = kjt.split([1, 2])[1]
    close(second.values(), ref["kjt.split_values"])
    close(second.lengths(), ref["kjt.split_lengths"])


def test_embedding_bag_collection_outputs_and_gradients(cases):
    data, ours, ref = cases
    kjt = KeyedJaggedTensor(KEYS, e(data["kjt.values"]), lengths=e(data["ebc.lengths"]))
    result = ours["ebc"](kjt)
    assert result.keys() == ref["ebc.keys"].tolist()
    close(result.values(), ref["ebc.values"])
    (result.values() * e(data["ebc.upstream"])).sum().backward()
    for name, bag in ours["ebc"].embedding_bags.items():
        close(bag.weight.grad, ref[f"ebc.grad.{name}"])
    weighted = KeyedJaggedTensor(["f1", "f2"], e(data["wbc.values"]), weights=e(data["wbc.weights"]),
                                 lengths=e(data["wbc.lengths"]))
    close(ours["wbc"](weighted).values(), ref["wbc.values"])


def test_embedding_collection_outputs(cases):
    data, ours, ref = cases
    result = ours["ec"](KeyedJaggedTensor(KEYS, e(data["ec.values"]), lengths=e(data["ec.lengths"])))
    assert list(result) == ref["ec.keys"].tolist()
    for key, jt in result.items():
        close(jt.values(), ref[f"ec.out.{key}"])
        close(jt.lengths(), ref[f"ec.lengths.{key}"])


@pytest.mark.parametrize("name", ["crossnet", "lowrank", "vector", "mixture"])
def test_cross_networks(cases, name):
    data, ours, ref = cases
    close(ours[name](e(data["dense.x"])), ref[f"{name}.out"])


def test_factorization_machine_and_dlrm_logits_loss_and_gradients(cases):
    data, ours, ref = cases
    close(FactorizationMachine()([e(data["fm.a"]), e(data["fm.b"])]), ref["fm.out"])
    kjt = KeyedJaggedTensor(KEYS, e(data["dlrm.values"]), lengths=e(data["dlrm.lengths"]))
    close(ours["dlrm"](e(data["dlrm.dense"]), kjt), ref["dlrm.logits"])
    loss, _ = DLRMTrain(ours["dlrm"])(Batch(e(data["dlrm.dense"]), kjt, e(data["dlrm.labels"])))
    loss.backward()
    close(loss, ref["dlrm.loss"])
    for name, param in ours["dlrm"].named_parameters():
        close(param.grad, ref[f"dlrm.grad.{name}"])


def test_keyed_tensor_regroup_dense_lengths_and_concat(cases):
    data, _, ref = cases
    kt1 = KeyedTensor.from_tensor_list(["a", "b"], [e(data["kt.a"]), e(data["kt.b"])])
    kt2 = KeyedTensor(["c"], [data["kt.c"].shape[1]], e(data["kt.c"]))
    for i, group in enumerate(KeyedTensor.regroup([kt1, kt2], [["c", "a"], ["b", "a", "c"]])):
        close(group, ref[f"kt.group{i}"])
    close(JaggedTensor.from_dense_lengths(e(data["jt.dense"]), e(data["jt.lengths"])).values(), ref["jt.values"])
    kjt = KeyedJaggedTensor(KEYS, e(data["kjt.values"]), weights=e(data["kjt.weights"]), lengths=e(data["kjt.lengths"]))
    joined = KeyedJaggedTensor.concat([kjt.split([2, 1])[1], kjt.split([2, 1])[0]])
    close(joined.values(), ref["kjt.concat_values"])
    close(joined.lengths(), ref["kjt.concat_lengths"])
    assert joined.keys() == ref["kjt.concat_keys"].tolist()


def test_metrics_values_and_keys(cases):
    data, _, ref = cases
    got = {}
    for metric_class in (NEMetric, CTRMetric, CalibrationMetric, MSEMetric, AUCMetric):
        metric = metric_class(world_size=1, my_rank=0, batch_size=8, tasks=[DefaultTaskInfo],
                              window_size=int(data["metrics.window_size"]))
        for p, l, w in zip(data["metrics.predictions"], data["metrics.labels"], data["metrics.weights"]):
            metric.update(predictions=e(p), labels=e(l), weights=e(w))
        got.update({f"metrics.{key}": value for key, value in metric.compute().items()})
    want = {key: value for key, value in ref.items() if key.startswith("metrics.")}
    assert set(got) <= set(want), set(got) - set(want)
    for key in got:
        np.testing.assert_allclose(got[key].numpy(), want[key], rtol=1e-6, err_msg=key)
