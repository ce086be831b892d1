"""The planner's vocabulary, as TorchRec's `torchrec.distributed.planner.types`: `Topology`
(the devices planned for), `Storage` and `Perf` (estimates), `Shard` and `ShardingOption` (one
way to shard one table), `ParameterConstraints` (what the user allows per table),
`PlannerError`, and the interfaces of the planner's parts (`Enumerator`, `ShardEstimator`,
`StorageReservation`, `Proposer`, `Partitioner`, `PerfModel`, `Stats`)."""
import abc
import copy
from dataclasses import dataclass, field
from enum import Enum
from typing import List, Optional

from emberrec.distributed.embedding_types import COMPUTE_KERNEL_VALUES
from emberrec.distributed.planner.constants import (
    BATCH_SIZE, BWD_COMPUTE_MULTIPLIER, CROSS_NODE_BANDWIDTH, DDR_CAP, DDR_MEM_BW, HBM_CAP, HBM_MEM_BW,
    HBM_TO_DDR_MEM_BW, INTRA_NODE_BANDWIDTH, POOLING_FACTOR, WEIGHTED_FEATURE_BWD_COMPUTE_MULTIPLIER)
from emberrec.distributed.types import SHARDING_TYPE_VALUES, CacheParams
from emberrec.modules.embedding_configs import DataType

__all__ = [
    "Perf", "Storage", "DeviceHardware", "CollectiveType", "Topology", "Shard", "ShardingOption", "PartitionByType",
    "ParameterConstraints", "PlannerErrorType", "PlannerError", "StorageReservation", "PerfModel", "ShardEstimator",
    "Enumerator", "Proposer", "Partitioner", "Stats",
]

COMPUTE_DEVICES = ("cpu", "cuda")


@dataclass
class Perf:
    """A shard's estimated time per iteration (ms), by phase."""
    fwd_compute: float
    fwd_comms: float
    bwd_compute: float
    bwd_comms: float
    prefetch_compute: float = 0.0

    @property
    def total(self):
        return self.fwd_compute + self.bwd_compute + self.fwd_comms + self.bwd_comms + self.prefetch_compute

    def __add__(self, other):
        return Perf(self.fwd_compute + other.fwd_compute, self.fwd_comms + other.fwd_comms,
                    self.bwd_compute + other.bwd_compute, self.bwd_comms + other.bwd_comms,
                    self.prefetch_compute + other.prefetch_compute)

    def __hash__(self):
        return hash((self.fwd_compute, self.fwd_comms, self.bwd_compute, self.bwd_comms, self.prefetch_compute))

    def __deepcopy__(self, memo):
        # all fields are floats; the partitioner copies devices per proposal, so skip the generic walk
        return Perf(self.fwd_compute, self.fwd_comms, self.bwd_compute, self.bwd_comms, self.prefetch_compute)


@dataclass(order=True)
class Storage:
    """Bytes of device memory (hbm) and host memory (ddr); ordered by hbm, then ddr."""
    hbm: int
    ddr: int

    def __add__(self, other):
        return Storage(hbm=self.hbm + other.hbm, ddr=self.ddr + other.ddr)

    def __sub__(self, other):
        return Storage(hbm=self.hbm - other.hbm, ddr=self.ddr - other.ddr)

    def __hash__(self):
        return hash((self.hbm, self.ddr))

    def __deepcopy__(self, memo):
        return Storage(self.hbm, self.ddr)

    def fits_in(self, other):
        return self.hbm <= other.hbm and self.ddr <= other.ddr


@dataclass
class DeviceHardware:
    """One rank: the storage left on it and the perf of the shards placed on it."""
    rank: int
    storage: Storage
    perf: Perf


class CollectiveType(Enum):
    ALL_TO_ALL = "all_to_all"
    REDUCE_SCATTER = "reduce_scatter"
    ALL_GATHER = "all_gather"
    ALL_REDUCE = "all_reduce"


def _check_int(value, name, minimum):
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")


def _check_positive_number(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")


class Topology:
    """The devices a plan is made for: `world_size` ranks on `compute_device` ("cuda": each
    rank has `hbm_cap` bytes of device memory, default 32 GiB; "cpu": none), `ddr_cap` bytes
    of host memory per rank (default 128 GiB), `local_world_size` ranks per host (default all),
    bandwidths in bytes/ms, and the default `batch_size` per rank. Nothing here needs the
    devices to exist: a "cuda" topology plans on a CPU-only machine."""

    def __init__(self, world_size, compute_device, hbm_cap=None, ddr_cap=None, local_world_size=None,
                 intra_host_bw=INTRA_NODE_BANDWIDTH, inter_host_bw=CROSS_NODE_BANDWIDTH, batch_size=BATCH_SIZE, *,
                 hbm_mem_bw=HBM_MEM_BW, ddr_mem_bw=DDR_MEM_BW, hbm_to_ddr_mem_bw=HBM_TO_DDR_MEM_BW,
                 bwd_compute_multiplier=BWD_COMPUTE_MULTIPLIER,
                 weighted_feature_bwd_compute_multiplier=WEIGHTED_FEATURE_BWD_COMPUTE_MULTIPLIER):
        _check_int(world_size, "world_size", 1)
        if compute_device not in COMPUTE_DEVICES:
            raise ValueError(f"unsupported compute device {compute_device!r}: one of {COMPUTE_DEVICES}")
        for cap, name in ((hbm_cap, "hbm_cap"), (ddr_cap, "ddr_cap")):
            if cap is not None:
                _check_int(cap, name, 0)
        if local_world_size is not None:
            _check_int(local_world_size, "local_world_size", 1)
        _check_int(batch_size, "batch_size", 1)
        for value, name in ((intra_host_bw, "intra_host_bw"), (inter_host_bw, "inter_host_bw"),
                            (hbm_mem_bw, "hbm_mem_bw"), (ddr_mem_bw, "ddr_mem_bw"),
                            (hbm_to_ddr_mem_bw, "hbm_to_ddr_mem_bw"), (bwd_compute_multiplier, "bwd_compute_multiplier"),
                            (weighted_feature_bwd_compute_multiplier, "weighted_feature_bwd_compute_multiplier")):
            _check_positive_number(value, name)
        self._compute_device = compute_device
        self._world_size = world_size
        hbm = (HBM_CAP if hbm_cap is None else hbm_cap) if compute_device == "cuda" else 0
        ddr = DDR_CAP if ddr_cap is None else ddr_cap
        self._devices = [DeviceHardware(rank, Storage(hbm=hbm, ddr=ddr), Perf(0, 0, 0, 0)) for rank in range(world_size)]
        self._local_world_size = local_world_size if local_world_size else world_size
        self._intra_host_bw = intra_host_bw
        self._inter_host_bw = inter_host_bw
        self._batch_size = batch_size
        self._hbm_mem_bw = hbm_mem_bw
        self._ddr_mem_bw = ddr_mem_bw
        self._hbm_to_ddr_mem_bw = hbm_to_ddr_mem_bw
        self._bwd_compute_multiplier = bwd_compute_multiplier
        self._weighted_feature_bwd_compute_multiplier = weighted_feature_bwd_compute_multiplier

    compute_device = property(lambda self: self._compute_device)
    devices = property(lambda self: self._devices)
    world_size = property(lambda self: self._world_size)
    local_world_size = property(lambda self: self._local_world_size)
    intra_host_bw = property(lambda self: self._intra_host_bw)
    inter_host_bw = property(lambda self: self._inter_host_bw)
    batch_size = property(lambda self: self._batch_size)
    hbm_mem_bw = property(lambda self: self._hbm_mem_bw)
    ddr_mem_bw = property(lambda self: self._ddr_mem_bw)
    hbm_to_ddr_mem_bw = property(lambda self: self._hbm_to_ddr_mem_bw)
    bwd_compute_multiplier = property(lambda self: self._bwd_compute_multiplier)
    weighted_feature_bwd_compute_multiplier = property(lambda self: self._weighted_feature_bwd_compute_multiplier)

    @property
    def num_hosts(self):
        return max(1, self._world_size // self._local_world_size)

    def comms_bw(self, world_size, local_world_size, collective_type):
        """Bytes/ms of a collective among `world_size` ranks, `local_world_size` per host: an
        all-reduce has one NIC per rank; the rest run at NVLink speed within a host and at
        network speed across hosts."""
        if collective_type == CollectiveType.ALL_REDUCE:
            return self._inter_host_bw * local_world_size
        return self._intra_host_bw if world_size <= local_world_size else self._inter_host_bw

    def __repr__(self):
        devices = "".join(f"\tdevice {d.rank} {d}\n" for d in self._devices)
        return (f"world_size={self._world_size} \ncompute_device={self._compute_device}\ndevices=\n{devices}"
                f"local_world_size={self._local_world_size} \nintra_host_bw={self._intra_host_bw} \n"
                f"inter_host_bw={self._inter_host_bw} \nbatch_size={self._batch_size} \n")


@dataclass
class Shard:
    """A block of a table: `size` [rows, cols] at `offset`, with its estimates and rank."""
    size: List[int]
    offset: List[int]
    storage: Optional[Storage] = None
    perf: Optional[Perf] = None
    rank: Optional[int] = None

    def __hash__(self):
        return hash((tuple(self.size), tuple(self.offset), self.storage, self.perf, self.rank))


class PartitionByType(Enum):
    DEVICE = "device"    # each shard on whichever rank suits it (table_wise, column_wise)
    HOST = "host"        # all shards within one host (table_row_wise, table_column_wise)
    UNIFORM = "uniform"  # shard i on rank i (row_wise, data_parallel)


class ShardingOption:
    """One way to shard one table (`name`, weight `tensor`, in `module` = (path, module)):
    a sharding type, a compute kernel and its shards. The enumerator makes many per table;
    a plan keeps one."""

    def __init__(self, name, tensor, module, input_lengths, batch_size, sharding_type, partition_by, compute_kernel,
                 shards, cache_params=None, enforce_hbm=None, stochastic_rounding=None, bounds_check_mode=None,
                 dependency=None, is_pooled=None, feature_names=None, output_dtype=None, is_weighted=False):
        self.name = name
        self._tensor = tensor
        self._module = module
        self.input_lengths = input_lengths
        self.batch_size = batch_size
        self.sharding_type = sharding_type
        self.partition_by = partition_by
        self.compute_kernel = compute_kernel
        self.shards = shards
        self.cache_params = cache_params
        self.enforce_hbm = enforce_hbm
        self.stochastic_rounding = stochastic_rounding
        self.bounds_check_mode = bounds_check_mode
        self.dependency = dependency
        self._is_pooled = is_pooled if is_pooled is not None else module_pooled(module[1])
        self.feature_names = feature_names
        self.output_dtype = output_dtype
        self.is_weighted = is_weighted

    tensor = property(lambda self: self._tensor)
    module = property(lambda self: self._module)
    is_pooled = property(lambda self: self._is_pooled)

    @property
    def fqn(self):
        return self._module[0] + "." + self.name

    @property
    def path(self):
        return self._module[0]

    @property
    def cache_load_factor(self):
        return self.cache_params.load_factor if self.cache_params is not None else None

    @property
    def num_shards(self):
        return len(self.shards)

    @property
    def num_inputs(self):
        return len(self.input_lengths)

    @property
    def total_storage(self):
        total = Storage(0, 0)
        for shard in self.shards:
            total += shard.storage
        return total

    @property
    def total_perf(self):
        return sum(shard.perf.total for shard in self.shards)

    def __hash__(self):
        return hash((self.fqn, self.sharding_type, self.compute_kernel, tuple(self.shards), self.cache_params))

    def __deepcopy__(self, memo):
        # the weights and the module are shared, never copied: plans only describe them
        result = copy.copy(self)
        result.shards = copy.deepcopy(self.shards, memo)
        result.cache_params = copy.deepcopy(self.cache_params, memo)
        return result

    def __str__(self):
        return (f"ShardingOption(name={self.name}, sharding_type={self.sharding_type}, "
                f"compute_kernel={self.compute_kernel}, num_shards={self.num_shards})")


def module_pooled(module):
    """Whether a module's lookups are pooled (an EmbeddingCollection's are not)."""
    from emberrec.modules.embedding_modules import EmbeddingCollectionInterface
    return not isinstance(module, EmbeddingCollectionInterface)


@dataclass
class ParameterConstraints:
    """What the planner may do with one table: the `sharding_types` and `compute_kernels`
    it may pick (their string values; default all the sharder offers), `min_partition` (the
    smallest column-wise block), and what its inputs look like: `pooling_factors` (ids per
    sample, one per feature), `num_poolings`, `batch_sizes`, `is_weighted`. A UVM cache holds
    `cache_params.load_factor` of the rows (TorchRec 0.2's `caching_ratio` sets it too)."""
    sharding_types: Optional[List[str]] = None
    compute_kernels: Optional[List[str]] = None
    min_partition: Optional[int] = None
    pooling_factors: List[float] = field(default_factory=lambda: [POOLING_FACTOR])
    num_poolings: Optional[List[float]] = None
    batch_sizes: Optional[List[int]] = None
    is_weighted: bool = False
    cache_params: Optional[CacheParams] = None
    enforce_hbm: Optional[bool] = None
    stochastic_rounding: Optional[bool] = None
    bounds_check_mode: Optional[object] = None
    feature_names: Optional[List[str]] = None
    output_dtype: Optional[DataType] = None
    caching_ratio: Optional[float] = None  # TorchRec 0.2's name for cache_params.load_factor

    def __post_init__(self):
        self._check_names(self.sharding_types, SHARDING_TYPE_VALUES, "sharding type")
        self._check_names(self.compute_kernels, COMPUTE_KERNEL_VALUES, "compute kernel")
        if self.min_partition is not None:
            _check_int(self.min_partition, "min_partition", 1)
        factors = self.pooling_factors
        if not isinstance(factors, (list, tuple)) or not factors or not all(
                isinstance(f, (int, float)) and not isinstance(f, bool) and f >= 0 for f in factors):
            raise ValueError(f"pooling_factors must be a non-empty list of numbers >= 0, got {factors!r}")
        for name in ("num_poolings", "batch_sizes"):
            values = getattr(self, name)
            if values is not None and len(values) != len(factors):
                raise ValueError(f"{name} must have one entry per pooling factor ({len(factors)}), got {values!r}")
        if self.batch_sizes is not None:
            for size in self.batch_sizes:
                _check_int(size, "each of batch_sizes", 1)
        if self.cache_params is not None and not isinstance(self.cache_params, CacheParams):
            raise TypeError(f"cache_params must be a CacheParams, got {self.cache_params!r}")
        if self.caching_ratio is not None:
            if self.cache_params is not None:
                raise ValueError("give the cache load factor once: caching_ratio or cache_params, not both")
            self.cache_params = CacheParams(load_factor=self.caching_ratio)
        if self.output_dtype is not None and not isinstance(self.output_dtype, DataType):
            raise TypeError(f"output_dtype must be a DataType, got {self.output_dtype!r}")

    @staticmethod
    def _check_names(names, known, what):
        if names is None:
            return
        if isinstance(names, str) or not isinstance(names, (list, tuple)):
            raise TypeError(f"the {what}s must be a list of str, got {names!r}")
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ValueError(f"unknown {what} {unknown}: one of {sorted(known)}")


class PlannerErrorType(Enum):
    INSUFFICIENT_STORAGE = "insufficient_storage"
    STRICT_CONSTRAINTS = "strict_constraints"
    PARTITION = "partition"
    INVALID_COMPUTE_KERNEL = "invalid_compute_kernel"
    OTHER = "other"


class PlannerError(Exception):
    def __init__(self, message, error_type=PlannerErrorType.OTHER):
        self.error_type = error_type
        super().__init__(message)


class StorageReservation(abc.ABC):
    """Takes the memory of what is not sharded off a topology's devices."""

    @abc.abstractmethod
    def reserve(self, topology, batch_size, module, sharders, constraints=None):
        ...


class PerfModel(abc.ABC):
    """Rates a placed plan (lower is better)."""

    @abc.abstractmethod
    def rate(self, plan):
        ...


class ShardEstimator(abc.ABC):
    """Fills in an estimate (perf or storage) of every shard of the sharding options."""

    def __init__(self, topology, constraints=None):
        self._topology = topology
        self._constraints = constraints

    @abc.abstractmethod
    def estimate(self, sharding_options, sharder_map=None):
        ...


class Enumerator(abc.ABC):
    """Lists every sharding option of every shardable table, with estimates."""

    @abc.abstractmethod
    def enumerate(self, module, sharders):
        ...


class Proposer(abc.ABC):
    """Proposes plans (one sharding option per table), one at a time, learning from the
    feedback on each."""

    @abc.abstractmethod
    def load(self, search_space, enumerator=None):
        ...

    @abc.abstractmethod
    def feedback(self, partitionable, plan=None, perf_rating=None, storage_constraint=None):
        ...

    @abc.abstractmethod
    def propose(self):
        ...


class Partitioner(abc.ABC):
    """Places a proposal's shards on ranks (raises PlannerError when they do not fit)."""

    @abc.abstractmethod
    def partition(self, proposal, storage_constraint):
        ...


class Stats(abc.ABC):
    """Reports on a finished planning run."""

    @abc.abstractmethod
    def log(self, sharding_plan, topology, batch_size, storage_reservation, num_proposals, num_plans, run_time,
            best_plan, constraints=None, sharders=None, debug=False):
        ...
