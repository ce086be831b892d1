"""Quantized DLRM inference: train DLRM on Criteo-format data (dlrm_criteo.py), then swap its
embedding tables for INT8 / INT4 / INT2 ones with `quantize_embeddings` (TorchRec's inference
path) and compare the quantized model's predictions and table bytes with the float model's (rows padded to 16 bytes, as in TorchRec).

    python rec/examples/dlrm_quantized_inference.py [dlrm_criteo.py's options]"""
import tempfile

import numpy as np

import ember
from emberrec.inference.modules import quantize_embeddings
from emberrec.modules.embedding_configs import DataType, dtype_to_data_type

from dlrm_criteo import parse_args, train


def table_bytes(model):
    """Bytes of the embedding tables in the state dict."""
    return sum(t.numel() * t.element_size() for k, t in model.state_dict().items() if "embedding_bags" in k)


def main(args, folder):
    model, batches = train(args, folder)
    model.eval()
    batch = next(iter(batches))
    with ember.no_grad():
        want = ember.sigmoid(model(batch.dense_features, batch.sparse_features)).numpy()
        print(f"   FP32: {table_bytes(model):>8} table bytes")
        for dtype in (ember.float16, ember.int8, DataType.INT4, DataType.INT2):
            quantized = quantize_embeddings(model, dtype=dtype, inplace=False)
            got = ember.sigmoid(quantized(batch.dense_features, batch.sparse_features)).numpy()
            print(f"{dtype_to_data_type(dtype).name:>7}: {table_bytes(quantized):>8} table bytes, predictions within "
                  f"{np.abs(got - want).max():.4f} of float32's")


if __name__ == "__main__":
    ember.manual_seed(0)
    with tempfile.TemporaryDirectory() as folder:
        main(parse_args(embedding_dim=16), folder)
