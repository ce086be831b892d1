"""FullyShardedDataParallel's configuration types (torch.distributed.fsdp's names)."""
import enum
from dataclasses import dataclass

import ember

__all__ = ["BackwardPrefetch", "CPUOffload", "FullStateDictConfig", "LocalStateDictConfig", "MixedPrecision",
           "ShardedStateDictConfig", "ShardingStrategy", "StateDictConfig", "StateDictType"]


class ShardingStrategy(enum.Enum):
    """FULL_SHARD: parameters, gradients and optimizer state sharded; the gathered parameters are
    released after each unit's forward. SHARD_GRAD_OP: gradients and optimizer state sharded; the
    gathered parameters stay until backward. NO_SHARD: every rank holds everything (DDP-like).
    HYBRID_SHARD needs several nodes and is not supported."""
    FULL_SHARD = enum.auto()
    SHARD_GRAD_OP = enum.auto()
    NO_SHARD = enum.auto()
    HYBRID_SHARD = enum.auto()
    _HYBRID_SHARD_ZERO2 = enum.auto()


class BackwardPrefetch(enum.Enum):
    """Accepted for compatibility; Ember gathers each unit's parameters when backward reaches it."""
    BACKWARD_PRE = enum.auto()
    BACKWARD_POST = enum.auto()


class StateDictType(enum.Enum):
    """FULL_STATE_DICT: the unsharded parameters under their original names. SHARDED_STATE_DICT
    and LOCAL_STATE_DICT: each rank's shard of every unit's flat parameter (reload with the same
    number of ranks)."""
    FULL_STATE_DICT = enum.auto()
    LOCAL_STATE_DICT = enum.auto()
    SHARDED_STATE_DICT = enum.auto()


@dataclass
class StateDictConfig:
    offload_to_cpu: bool = False


@dataclass
class FullStateDictConfig(StateDictConfig):
    """`rank0_only`: only rank 0 returns the tensors (the others an empty dict)."""
    rank0_only: bool = False


@dataclass
class LocalStateDictConfig(StateDictConfig):
    """Each rank's own flat shards, as they are (PyTorch's LOCAL_STATE_DICT)."""


@dataclass
class ShardedStateDictConfig(StateDictConfig):
    _use_dtensor: bool = False


@dataclass
class MixedPrecision:
    """Dtypes for the gathered parameters (forward and backward compute), for the gradient
    reduce-scatter, and for buffers; the sharded parameters and the optimizer stay in their own
    dtype."""
    param_dtype: "ember.dtype" = None
    reduce_dtype: "ember.dtype" = None
    buffer_dtype: "ember.dtype" = None
    keep_low_precision_grads: bool = False
    cast_forward_inputs: bool = False
    cast_root_forward_inputs: bool = True


@dataclass
class CPUOffload:
    """Ember computes on the CPU, so parameters and gradients already live in CPU memory:
    `offload_params=True` changes nothing."""
    offload_params: bool = False
