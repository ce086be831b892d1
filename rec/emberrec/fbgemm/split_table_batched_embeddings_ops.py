"""FBGEMM 0.2's module path for the inference table-batched embedding bag and its enums."""
from emberrec.fbgemm.split_embedding_configs import SparseType
from emberrec.fbgemm.split_table_batched_embeddings_ops_common import (
    BoundsCheckMode, ComputeDevice, EmbeddingLocation, PoolingMode)
from emberrec.fbgemm.split_table_batched_embeddings_ops_inference import (
    IntNBitTableBatchedEmbeddingBagsCodegen, rounded_row_size_in_bytes, unpadded_row_size_in_bytes)

__all__ = ["SparseType", "BoundsCheckMode", "ComputeDevice", "EmbeddingLocation", "PoolingMode",
           "IntNBitTableBatchedEmbeddingBagsCodegen", "rounded_row_size_in_bytes", "unpadded_row_size_in_bytes"]
