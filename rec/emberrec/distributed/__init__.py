"""Sharding, as TorchRec's `torchrec.distributed`: the sharding planner
(`emberrec.distributed.planner`) and what a plan is made of (`emberrec.distributed.types`).
Running a sharded plan (DistributedModelParallel, the sharded collections) is not present:
those raise NotImplementedError."""
from emberrec.distributed.embedding import EmbeddingCollectionSharder
from emberrec.distributed.embedding_types import EmbeddingComputeKernel
from emberrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
from emberrec.distributed.model_parallel import DistributedModelParallel
from emberrec.distributed.sharding_plan import get_default_sharders
from emberrec.distributed.types import (
    ModuleSharder, ParameterSharding, ShardingEnv, ShardingPlan, ShardingPlanner, ShardingType)

__all__ = [
    "EmbeddingCollectionSharder", "EmbeddingComputeKernel", "EmbeddingBagCollectionSharder",
    "DistributedModelParallel", "get_default_sharders", "ModuleSharder", "ParameterSharding", "ShardingEnv",
    "ShardingPlan", "ShardingPlanner", "ShardingType",
]
