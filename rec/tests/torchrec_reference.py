"""Runs the parity cases of test_torchrec_parity.py in TorchRec (and FBGEMM) itself, in an
interpreter that has them: `python torchrec_reference.py inputs.npz outputs.npz`. Inputs and
outputs are NumPy arrays named `<case>.<name>`; this script imports neither ember nor emberrec."""
import sys

import numpy as np
import torch
from torchrec.metrics.auc import AUCMetric
from torchrec.metrics.calibration import CalibrationMetric
from torchrec.metrics.ctr import CTRMetric
from torchrec.metrics.metrics_config import DefaultTaskInfo
from torchrec.metrics.mse import MSEMetric
from torchrec.metrics.ne import NEMetric
from torchrec.datasets.utils import Batch
from torchrec.models.dlrm import DLRM, DLRMTrain
from torchrec.modules.crossnet import CrossNet, LowRankCrossNet, LowRankMixtureCrossNet, VectorCrossNet
from torchrec.modules.deepfm import FactorizationMachine
from torchrec.modules.embedding_configs import EmbeddingBagConfig, EmbeddingConfig, PoolingType
from torchrec.modules.embedding_modules import EmbeddingBagCollection, EmbeddingCollection
from torchrec.sparse.jagged_tensor import JaggedTensor, KeyedJaggedTensor, KeyedTensor

KEYS = ["f1", "f2", "f3"]


def t(array):
    return torch.from_numpy(np.ascontiguousarray(array))


def kjt_case(data, out):
    kjt = KeyedJaggedTensor(KEYS, t(data["kjt.values"]), weights=t(data["kjt.weights"]), lengths=t(data["kjt.lengths"]))
    permuted = kjt.permute(data["kjt.permute"].tolist())
    out["kjt.permuted_values"] = permuted.values().numpy()
    out["kjt.permuted_weights"] = permuted.weights().numpy()
    out["kjt.permuted_lengths"] = permuted.lengths().numpy()
    out["kjt.length_per_key"] = np.array(kjt.length_per_key())
    out["kjt.offset_per_key"] = np.array(kjt.offset_per_key())
    out["kjt.f2_padded"] = kjt["f2"].to_padded_dense(desired_length=3, padding_value=-1.0).numpy()
    out["kjt.f3_offsets"] = kjt.to_dict()["f3"].offsets().numpy()
    second = kjt.split([1, 2])[1]
    out["kjt.split_values"] = second.values().numpy()
    out["kjt.split_lengths"] = second.lengths().numpy()


def bag_tables():
    return [EmbeddingBagConfig(num_embeddings=11, embedding_dim=3, name="t1", feature_names=["f1", "f2"]),
            EmbeddingBagConfig(num_embeddings=7, embedding_dim=5, name="t2", feature_names=["f3"], pooling=PoolingType.MEAN),
            EmbeddingBagConfig(num_embeddings=4, embedding_dim=2, name="t3", feature_names=["f1"])]


def load(module, data, prefix):
    state = {key[len(prefix):]: t(value) for key, value in data.items() if key.startswith(prefix)}
    module.load_state_dict(state)


def ebc_case(data, out):
    ebc = EmbeddingBagCollection(bag_tables())
    load(ebc, data, "ebc.state.")
    kjt = KeyedJaggedTensor(KEYS, t(data["kjt.values"]), lengths=t(data["ebc.lengths"]))
    result = ebc(kjt)
    out["ebc.keys"] = np.array(result.keys())
    out["ebc.values"] = result.values().detach().numpy()
    (result.values() * t(data["ebc.upstream"])).sum().backward()
    for name, bag in ebc.embedding_bags.items():
        out[f"ebc.grad.{name}"] = bag.weight.grad.numpy()

    weighted = EmbeddingBagCollection(bag_tables()[:1], is_weighted=True)
    load(weighted, data, "wbc.state.")
    kjt = KeyedJaggedTensor(["f1", "f2"], t(data["wbc.values"]), weights=t(data["wbc.weights"]).requires_grad_(),
                            lengths=t(data["wbc.lengths"]))
    result = weighted(kjt)
    out["wbc.values"] = result.values().detach().numpy()


def ec_case(data, out):
    tables = [EmbeddingConfig(num_embeddings=6, embedding_dim=3, name="u", feature_names=["f1", "f3"]),
              EmbeddingConfig(num_embeddings=8, embedding_dim=3, name="v", feature_names=["f2", "f1"])]
    ec = EmbeddingCollection(tables)
    load(ec, data, "ec.state.")
    result = ec(KeyedJaggedTensor(KEYS, t(data["ec.values"]), lengths=t(data["ec.lengths"])))
    out["ec.keys"] = np.array(list(result))
    for key, jt in result.items():
        out[f"ec.out.{key}"] = jt.values().detach().numpy()
        out[f"ec.lengths.{key}"] = jt.lengths().numpy()


def dense_case(data, out):
    x = t(data["dense.x"])
    nets = {"crossnet": CrossNet(6, 2), "lowrank": LowRankCrossNet(6, 2, low_rank=3), "vector": VectorCrossNet(6, 2),
            "mixture": LowRankMixtureCrossNet(6, 2, num_experts=3, low_rank=2)}
    for name, net in nets.items():
        load(net, data, f"{name}.state.")
        out[f"{name}.out"] = net(x).detach().numpy()
    out["fm.out"] = FactorizationMachine()([t(data["fm.a"]), t(data["fm.b"])]).numpy()


def dlrm_case(data, out):
    tables = [EmbeddingBagConfig(name="t1", embedding_dim=4, num_embeddings=20, feature_names=["f1", "f2"]),
              EmbeddingBagConfig(name="t2", embedding_dim=4, num_embeddings=10, feature_names=["f3"])]
    model = DLRM(EmbeddingBagCollection(tables), dense_in_features=7, dense_arch_layer_sizes=[6, 4],
                 over_arch_layer_sizes=[5, 1])
    load(model, data, "dlrm.state.")
    kjt = KeyedJaggedTensor(KEYS, t(data["dlrm.values"]), lengths=t(data["dlrm.lengths"]))
    out["dlrm.logits"] = model(t(data["dlrm.dense"]), kjt).detach().numpy()
    loss, _ = DLRMTrain(model)(Batch(t(data["dlrm.dense"]), kjt, t(data["dlrm.labels"])))
    loss.backward()
    out["dlrm.loss"] = loss.detach().numpy()
    for name, param in model.named_parameters():
        out[f"dlrm.grad.{name}"] = param.grad.numpy()


def keyed_case(data, out):
    kt1 = KeyedTensor.from_tensor_list(["a", "b"], [t(data["kt.a"]), t(data["kt.b"])])
    kt2 = KeyedTensor(["c"], [data["kt.c"].shape[1]], t(data["kt.c"]))
    for i, group in enumerate(KeyedTensor.regroup([kt1, kt2], [["c", "a"], ["b", "a", "c"]])):
        out[f"kt.group{i}"] = group.numpy()
    jt = JaggedTensor.from_dense_lengths(t(data["jt.dense"]), t(data["jt.lengths"]))
    out["jt.values"] = jt.values().numpy()
    kjt = KeyedJaggedTensor(KEYS, t(data["kjt.values"]), weights=t(data["kjt.weights"]), lengths=t(data["kjt.lengths"]))
    joined = KeyedJaggedTensor.concat([kjt.split([2, 1])[1], kjt.split([2, 1])[0]])
    out["kjt.concat_values"] = joined.values().numpy()
    out["kjt.concat_lengths"] = joined.lengths().numpy()
    out["kjt.concat_keys"] = np.array(joined.keys())


def metrics_case(data, out):
    predictions, labels, weights = data["metrics.predictions"], data["metrics.labels"], data["metrics.weights"]
    for metric_class in (NEMetric, CTRMetric, CalibrationMetric, MSEMetric, AUCMetric):
        metric = metric_class(world_size=1, my_rank=0, batch_size=predictions.shape[1], tasks=[DefaultTaskInfo],
                              window_size=int(data["metrics.window_size"]))
        for p, l, w in zip(predictions, labels, weights):
            metric.update(predictions={"DefaultTask": t(p)}, labels={"DefaultTask": t(l)}, weights={"DefaultTask": t(w)})
        for key, value in metric.compute().items():
            out[f"metrics.{key}"] = value.double().numpy()


def main(inputs, outputs):
    data = dict(np.load(inputs))
    out = {}
    for case in (kjt_case, keyed_case, ebc_case, ec_case, dense_case, dlrm_case, metrics_case):
        case(data, out)
    np.savez(outputs, **out)


if __name__ == "__main__":
    main(*sys.argv[1:])
