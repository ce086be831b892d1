"""What a sharding plan is made of, as TorchRec's `torchrec.distributed.types`: `ShardingType`,
`ShardMetadata` / `EnumerableShardingSpec` (where each shard of a table lives),
`ParameterSharding` (how one table is sharded), `ShardingPlan` (module path -> table ->
ParameterSharding), `ModuleSharder` (which sharding types and compute kernels a module
offers) and `ShardingPlanner`.

emberrec plans shardings but cannot run them yet: `ModuleSharder.shard` raises
NotImplementedError (a sharded module needs the distributed runtime)."""
import abc
from dataclasses import dataclass, field
from enum import Enum, unique
from typing import Dict, List, Optional

__all__ = [
    "ShardingType", "ParameterStorage", "ShardMetadata", "EnumerableShardingSpec", "CacheParams",
    "ParameterSharding", "ModuleShardingPlan", "EmbeddingModuleShardingPlan", "ShardingPlan",
    "ModuleSharder", "ShardingPlanner", "ShardingEnv", "get_tensor_size_bytes",
]


@unique
class ShardingType(Enum):
    """How a table is split over the ranks."""
    DATA_PARALLEL = "data_parallel"          # every rank holds the whole table
    TABLE_WISE = "table_wise"                # the whole table on one rank
    COLUMN_WISE = "column_wise"              # column blocks, each on one rank
    ROW_WISE = "row_wise"                    # row blocks over all ranks
    TABLE_ROW_WISE = "table_row_wise"        # row blocks over the ranks of one host
    TABLE_COLUMN_WISE = "table_column_wise"  # column blocks on the ranks of one host


SHARDING_TYPE_VALUES = frozenset(t.value for t in ShardingType)


@unique
class ParameterStorage(Enum):
    HBM = "hbm"
    DDR = "ddr"


@dataclass
class ShardMetadata:
    """One shard: its offsets and sizes in the whole table, and where it lives
    ("rank:3/cuda:3", "rank:0/cpu")."""
    shard_offsets: List[int]
    shard_sizes: List[int]
    placement: Optional[str] = None


@dataclass
class EnumerableShardingSpec:
    shards: List[ShardMetadata]


@dataclass
class CacheParams:
    """FBGEMM's software-cache settings for `fused_uvm_caching` tables; the planner reads
    `load_factor` (the cached share of the rows) and `prefetch_pipeline`."""
    algorithm: Optional[str] = None
    load_factor: Optional[float] = None
    reserved_memory: Optional[float] = None
    precision: Optional[object] = None
    prefetch_pipeline: Optional[bool] = None

    def __post_init__(self):
        if self.load_factor is not None and not 0 < self.load_factor <= 1:
            raise ValueError(f"CacheParams.load_factor must be in (0, 1], got {self.load_factor!r}")

    def __hash__(self):
        return hash((self.algorithm, self.load_factor, self.reserved_memory, self.precision, self.prefetch_pipeline))


@dataclass
class ParameterSharding:
    """How one table is sharded: `sharding_type` and `compute_kernel` (their string values),
    `ranks` (one per shard) and `sharding_spec` (None for data_parallel)."""
    sharding_type: str
    compute_kernel: str
    ranks: Optional[List[int]] = None
    sharding_spec: Optional[EnumerableShardingSpec] = None
    cache_params: Optional[CacheParams] = None
    enforce_hbm: Optional[bool] = None
    stochastic_rounding: Optional[bool] = None
    bounds_check_mode: Optional[object] = None
    output_dtype: Optional[object] = None


class ModuleShardingPlan:
    """Base of a module's part of a ShardingPlan."""


def _format_rows(rows):
    """Rows of cells as an aligned " | "-separated table (a header, a rule, the rows)."""
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    lines = [" | ".join(f"{str(cell):<{w}}" for cell, w in zip(row, widths)) for row in rows]
    lines.insert(1, " | ".join("-" * w for w in widths))
    return lines


class EmbeddingModuleShardingPlan(ModuleShardingPlan, Dict[str, ParameterSharding]):
    """An embedding module's plan: table name -> ParameterSharding."""

    def __str__(self):
        if not self:
            return ""
        summary = [["param", "sharding type", "compute kernel", "ranks"]]
        shards = [["param", "shard offsets", "shard sizes", "placement"]]
        for name, sharding in self.items():
            summary.append([name, sharding.sharding_type, sharding.compute_kernel, str(sharding.ranks)])
            for shard in (sharding.sharding_spec.shards if sharding.sharding_spec else []):
                shards.append([name, str(shard.shard_offsets), str(shard.shard_sizes), shard.placement])
        text = "\n".join(_format_rows(summary))
        if len(shards) > 1:
            text += "\n\n" + "\n".join(_format_rows(shards))
        return text


@dataclass
class ShardingPlan:
    """The planner's answer: module path ("" for the root) -> that module's plan."""
    plan: Dict[str, ModuleShardingPlan] = field(default_factory=dict)

    def get_plan_for_module(self, module_path):
        return self.plan.get(module_path, None)

    def __str__(self):
        return "\n".join(f"module: {path}\n\n{module_plan}" for path, module_plan in self.plan.items())


@dataclass
class ShardingEnv:
    """TorchRec's description of the processes a sharded module runs on."""
    world_size: int
    rank: int
    pg: Optional[object] = None


def get_tensor_size_bytes(tensor):
    return tensor.numel() * tensor.element_size()


class ModuleSharder(abc.ABC):
    """Says how a module type can be sharded: the sharding types and compute kernels it
    offers on a compute device, its shardable parameters (table name -> weight) and their
    storage. `shard` builds the sharded module, which emberrec cannot do yet."""

    def __init__(self, qcomm_codecs_registry=None):
        if qcomm_codecs_registry:
            raise NotImplementedError("quantized communication codecs (qcomm_codecs_registry) are not in emberrec")
        self._qcomm_codecs_registry = qcomm_codecs_registry

    @property
    @abc.abstractmethod
    def module_type(self):
        ...

    def shard(self, module, params, env, device=None, module_fqn=None):
        raise NotImplementedError(
            f"{type(self).__name__}.shard: emberrec plans shardings but cannot run them yet "
            f"(sharded {self.module_type.__name__} and DistributedModelParallel are not present)")

    def shardable_parameters(self, module):
        return dict(module.named_parameters())

    def sharding_types(self, compute_device_type):
        return [t.value for t in ShardingType]

    def compute_kernels(self, sharding_type, compute_device_type):
        # imported here: embedding_types builds on this module
        from emberrec.distributed.embedding_types import EmbeddingComputeKernel
        return [EmbeddingComputeKernel.DENSE.value]

    def storage_usage(self, tensor, compute_device_type, compute_kernel):
        """{"hbm" or "ddr": bytes}: where the weights of `tensor` live."""
        storage = ParameterStorage.HBM if compute_device_type == "cuda" else ParameterStorage.DDR
        return {storage.value: get_tensor_size_bytes(tensor)}

    @property
    def qcomm_codecs_registry(self):
        return self._qcomm_codecs_registry


class ShardingPlanner(abc.ABC):
    """Makes a ShardingPlan for a module from the sharders of its submodules."""

    @abc.abstractmethod
    def plan(self, module, sharders):
        ...

    @abc.abstractmethod
    def collective_plan(self, module, sharders):
        ...
