"""FBGEMM 0.2's module path for the table-batched embedding bags (training and inference) and
their enums."""
from emberrec.fbgemm.split_embedding_configs import EmbOptimType as OptimType
from emberrec.fbgemm.split_embedding_configs import SparseType
from emberrec.fbgemm.split_table_batched_embeddings_ops_common import (
    BoundsCheckMode, ComputeDevice, EmbeddingLocation, PoolingMode, WeightDecayMode)
from emberrec.fbgemm.split_table_batched_embeddings_ops_inference import (
    IntNBitTableBatchedEmbeddingBagsCodegen, rounded_row_size_in_bytes, unpadded_row_size_in_bytes)
from emberrec.fbgemm.split_table_batched_embeddings_ops_training import (
    DenseTableBatchedEmbeddingBagsCodegen, SplitTableBatchedEmbeddingBagsCodegen)

__all__ = ["SparseType", "OptimType", "BoundsCheckMode", "ComputeDevice", "EmbeddingLocation", "PoolingMode",
           "WeightDecayMode", "IntNBitTableBatchedEmbeddingBagsCodegen", "SplitTableBatchedEmbeddingBagsCodegen",
           "DenseTableBatchedEmbeddingBagsCodegen", "rounded_row_size_in_bytes", "unpadded_row_size_in_bytes"]
