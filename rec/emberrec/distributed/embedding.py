"""`EmbeddingCollectionSharder`, as TorchRec's `torchrec.distributed.embedding`: the sharding
choices of an EmbeddingCollection's (unpooled) tables: data_parallel, table_wise, column_wise
and row_wise. The sharded module (`ShardedEmbeddingCollection`) is not in emberrec yet."""
from emberrec.distributed.embedding_types import BaseEmbeddingSharder
from emberrec.distributed.types import ShardingType
from emberrec.modules.embedding_modules import EmbeddingCollection

__all__ = ["EmbeddingCollectionSharder", "ShardedEmbeddingCollection"]


class EmbeddingCollectionSharder(BaseEmbeddingSharder):

    @property
    def module_type(self):
        return EmbeddingCollection

    def shardable_parameters(self, module):
        return {name.split(".")[0]: param for name, param in module.embeddings.named_parameters()}

    def sharding_types(self, compute_device_type):
        return [ShardingType.DATA_PARALLEL.value, ShardingType.TABLE_WISE.value, ShardingType.COLUMN_WISE.value,
                ShardingType.ROW_WISE.value]


class ShardedEmbeddingCollection:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError("ShardedEmbeddingCollection: emberrec plans shardings but cannot run them yet "
                                  "(the distributed runtime is not present)")
