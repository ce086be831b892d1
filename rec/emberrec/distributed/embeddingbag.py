"""`EmbeddingBagCollectionSharder`, as TorchRec's `torchrec.distributed.embeddingbag`: the
sharding choices of an EmbeddingBagCollection's tables. The planner uses it; the sharded
module itself (`ShardedEmbeddingBagCollection`) is not in emberrec yet."""
from emberrec.distributed.embedding_types import BaseEmbeddingSharder
from emberrec.modules.embedding_modules import EmbeddingBagCollection

__all__ = ["EmbeddingBagCollectionSharder", "ShardedEmbeddingBagCollection"]


class EmbeddingBagCollectionSharder(BaseEmbeddingSharder):

    @property
    def module_type(self):
        return EmbeddingBagCollection

    def shardable_parameters(self, module):
        return {name.split(".")[0]: param for name, param in module.embedding_bags.named_parameters()}


class ShardedEmbeddingBagCollection:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError("ShardedEmbeddingBagCollection: emberrec plans shardings but cannot run them yet "
                                  "(the distributed runtime is not present)")
