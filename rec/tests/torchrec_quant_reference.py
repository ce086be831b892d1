"""Runs test_quant_modules.py's parity case in TorchRec (and FBGEMM) itself, in an interpreter
that has them: `python torchrec_quant_reference.py inputs.npz outputs.npz`. For each weight
type, the quantized EmbeddingBagCollection's output (columns in the float module's key order)
and state dict; this script imports neither ember nor emberrec."""
import sys

import numpy as np
import torch
import torch.quantization as quant
from torchrec.modules.embedding_configs import EmbeddingBagConfig, PoolingType
from torchrec.modules.embedding_modules import EmbeddingBagCollection
from torchrec.quant.embedding_modules import EmbeddingBagCollection as QuantEmbeddingBagCollection
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

from quant_parity_tables import PARITY_TABLES

WEIGHT_TYPES = {"int8": torch.qint8, "int4": torch.quint4x2, "int2": torch.quint2x4, "fp16": torch.half}


def main(inputs, outputs):
    data = dict(np.load(inputs))
    ebc = EmbeddingBagCollection([EmbeddingBagConfig(name=name, embedding_dim=dim, num_embeddings=rows, feature_names=features,
                                                     pooling=PoolingType[pooling])
                                  for name, dim, rows, features, pooling in PARITY_TABLES])
    ebc.load_state_dict({key[len("state."):]: torch.from_numpy(value) for key, value in data.items() if key.startswith("state.")})
    kjt = KeyedJaggedTensor(["f3", "f1", "f2"], torch.from_numpy(data["values"]), lengths=torch.from_numpy(data["lengths"]))
    keys = ebc(kjt).keys()
    out = {}
    for name, weight in WEIGHT_TYPES.items():
        ebc.qconfig = quant.QConfig(activation=quant.PlaceholderObserver.with_args(dtype=torch.float),
                                    weight=quant.PlaceholderObserver.with_args(dtype=weight))
        qebc = QuantEmbeddingBagCollection.from_float(ebc)
        pooled = qebc(kjt).to_dict()
        out[f"{name}.values"] = torch.cat([pooled[key] for key in keys], 1).numpy()
        for key, value in qebc.state_dict().items():
            out[f"{name}.state.{key}"] = getattr(value, "elem", value).numpy()  # UInt4Tensor / UInt2Tensor hold bytes
    np.savez(outputs, **out)


if __name__ == "__main__":
    main(*sys.argv[1:])
