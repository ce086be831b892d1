"""Runs the parity cases of test_fbgemm_training.py in FBGEMM-GPU and TorchRec themselves, in an
interpreter that has them: `python fbgemm_training_reference.py inputs.npz outputs.npz`. Imports
neither ember nor emberrec. Inputs: `table{t}` (initial float32 weights), `feature_table`,
`pooling`, `steps` x (`indices{s}`, `offsets{s}`, `weights{s}`, `grad{s}`); outputs per
optimizer case: the forward outputs, the per-sample-weight gradients, and the weights and
optimizer states after the steps; and TorchRec's FusedEmbeddingBagCollection with SGD."""
import sys

import numpy as np
import torch
import fbgemm_gpu  # noqa: F401  (registers torch.ops.fbgemm)
from fbgemm_gpu.split_embedding_configs import EmbOptimType as OptimType
from fbgemm_gpu.split_table_batched_embeddings_ops_common import ComputeDevice, EmbeddingLocation, PoolingMode
from fbgemm_gpu.split_table_batched_embeddings_ops_training import SplitTableBatchedEmbeddingBagsCodegen

# name -> (optimizer, keyword arguments); the test file lists the same cases.
CASES = {
    "sgd": (OptimType.EXACT_SGD, {"learning_rate": 0.3}),
    "adagrad": (OptimType.EXACT_ADAGRAD, {"learning_rate": 0.3, "eps": 1e-2}),
    "rowwise": (OptimType.EXACT_ROWWISE_ADAGRAD, {"learning_rate": 0.3, "eps": 1e-2}),
}
# No weight decay case: fbgemm_gpu 2026.10.16's CPU kernel leaves weight_decay out of
# EXACT_ROWWISE_ADAGRAD's update (L2 and DECOUPLE give NONE's result there), though FBGEMM's
# optimizer definitions have it; test_fbgemm_training.py checks those modes against the formulas.


def run_case(data, optimizer, kwargs, out, name):
    tables = [data[f"table{t}"] for t in range(int(data["tables"]))]
    specs = [(w.shape[0], w.shape[1], EmbeddingLocation.HOST, ComputeDevice.CPU) for w in tables]
    tbe = SplitTableBatchedEmbeddingBagsCodegen(
        specs, feature_table_map=data["feature_table"].tolist(), optimizer=optimizer,
        pooling_mode=PoolingMode(int(data["pooling"])), device="cpu", **kwargs)
    with torch.no_grad():
        for weight, initial in zip(tbe.split_embedding_weights(), tables):
            weight.copy_(torch.from_numpy(initial))
    for s in range(int(data["steps"])):
        weights = torch.from_numpy(data[f"weights{s}"]).requires_grad_()
        pooled = tbe(torch.from_numpy(data[f"indices{s}"]), torch.from_numpy(data[f"offsets{s}"]), weights)
        out[f"{name}.out{s}"] = pooled.detach().numpy()
        pooled.backward(torch.from_numpy(data[f"grad{s}"]))
        out[f"{name}.wgrad{s}"] = weights.grad.numpy()
    states = tbe.split_optimizer_states()  # [] for EXACT_SGD, else a list per table
    for t, weight in enumerate(tbe.split_embedding_weights()):
        out[f"{name}.table{t}"] = weight.detach().numpy().copy()
        for k, state in enumerate(states[t] if states else []):
            out[f"{name}.state{t}.{k}"] = state.detach().numpy().copy()


def torchrec_fused_sgd(data, out):
    """TorchRec's FusedEmbeddingBagCollection with SGD over the `ebc.*` case."""
    from torchrec import EmbeddingBagConfig, KeyedJaggedTensor
    from torchrec.modules.fused_embedding_modules import FusedEmbeddingBagCollection

    names = [str(n) for n in data["ebc.features"]]
    tables = [EmbeddingBagConfig(name=f"t{i}", embedding_dim=int(data[f"ebc.table{i}"].shape[1]),
                                 num_embeddings=int(data[f"ebc.table{i}"].shape[0]), feature_names=[names[i]])
              for i in range(len(names))]
    ebc = FusedEmbeddingBagCollection(tables, optimizer_type=torch.optim.SGD, optimizer_kwargs={"lr": 0.5})
    with torch.no_grad():
        for i, table in enumerate(tables):
            ebc.embedding_bags[table.name].weight.copy_(torch.from_numpy(data[f"ebc.table{i}"]))
    kjt = KeyedJaggedTensor.from_lengths_sync(names, torch.from_numpy(data["ebc.values"]), torch.from_numpy(data["ebc.lengths"]))
    pooled = ebc(kjt)
    out["ebc.out"] = pooled.values().detach().numpy()
    pooled.values().backward(torch.from_numpy(data["ebc.grad"]))
    for i, table in enumerate(tables):
        out[f"ebc.after{i}"] = ebc.embedding_bags[table.name].weight.detach().numpy().copy()
    out["ebc.keys"] = np.array(list(ebc.state_dict().keys()))


def main(source, target):
    data = dict(np.load(source))
    out = {}
    for name, (optimizer, kwargs) in CASES.items():
        run_case(data, optimizer, kwargs, out, name)
    torchrec_fused_sgd(data, out)
    np.savez(target, **out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
