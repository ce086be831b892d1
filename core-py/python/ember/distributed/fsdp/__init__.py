"""`ember.distributed.fsdp`: FullyShardedDataParallel and its configuration types."""
from ember.distributed.fsdp.api import (BackwardPrefetch, CPUOffload, FullStateDictConfig, LocalStateDictConfig,
                                        MixedPrecision, ShardedStateDictConfig, ShardingStrategy, StateDictConfig,
                                        StateDictType)
from ember.distributed.fsdp.fully_sharded_data_parallel import FullyShardedDataParallel

__all__ = ["BackwardPrefetch", "CPUOffload", "FullStateDictConfig", "FullyShardedDataParallel", "LocalStateDictConfig",
           "MixedPrecision", "ShardedStateDictConfig", "ShardingStrategy", "StateDictConfig", "StateDictType"]
