"""`EmbeddingEnumerator`, as TorchRec's `torchrec.distributed.planner.enumerators`: every
(sharding type, compute kernel) a table's sharder offers and its constraints allow, with its
shards and their perf and storage estimates."""
import copy
import logging

from emberrec.distributed.embedding_types import EmbeddingComputeKernel
from emberrec.distributed.planner.constants import BATCH_SIZE, POOLING_FACTOR
from emberrec.distributed.planner.shard_estimators import EmbeddingPerfEstimator, EmbeddingStorageEstimator
from emberrec.distributed.planner.types import Enumerator, PartitionByType, Shard, ShardingOption, module_pooled
from emberrec.distributed.planner.utils import sharder_name
from emberrec.distributed.sharding_plan import calculate_shard_sizes_and_offsets
from emberrec.distributed.types import ShardingType
from emberrec.modules.embedding_modules import EmbeddingBagCollectionInterface

__all__ = ["EmbeddingEnumerator", "get_partition_by_type"]

logger = logging.getLogger(__name__)


def get_partition_by_type(sharding_type):
    """How the partitioner places a sharding type's shards."""
    by_type = {
        ShardingType.TABLE_WISE.value: PartitionByType.DEVICE, ShardingType.COLUMN_WISE.value: PartitionByType.DEVICE,
        ShardingType.TABLE_ROW_WISE.value: PartitionByType.HOST,
        ShardingType.TABLE_COLUMN_WISE.value: PartitionByType.HOST,
        ShardingType.ROW_WISE.value: PartitionByType.UNIFORM, ShardingType.DATA_PARALLEL.value: PartitionByType.UNIFORM,
    }
    if sharding_type not in by_type:
        raise ValueError(f"Unrecognized or unsupported sharding type provided: {sharding_type}")
    return by_type[sharding_type].value


def _is_weighted(module, constraint):
    """A pooled collection says whether its lookups are weighted (TorchRec then ignores the
    constraint's `is_weighted`); for others the constraint says."""
    if isinstance(module, EmbeddingBagCollectionInterface):
        weighted = module.is_weighted
        return bool(weighted() if callable(weighted) else weighted)
    return bool(constraint and constraint.is_weighted)


class EmbeddingEnumerator(Enumerator):
    """Walks the module for submodules a sharder handles and lists each shardable table's
    sharding options, then fills in their estimates (by default perf, then storage)."""

    def __init__(self, topology, batch_size=BATCH_SIZE, constraints=None, estimator=None):
        self._compute_device = topology.compute_device
        self._world_size = topology.world_size
        self._local_world_size = topology.local_world_size
        self._batch_size = batch_size
        self._constraints = constraints
        if estimator:
            self._estimators = estimator if isinstance(estimator, list) else [estimator]
        else:
            self._estimators = [EmbeddingPerfEstimator(topology=topology, constraints=constraints),
                                EmbeddingStorageEstimator(topology=topology, constraints=constraints)]
        self._sharder_map = {}

    def enumerate(self, module, sharders):
        self._sharder_map = {sharder_name(sharder.module_type): sharder for sharder in sharders}
        sharding_options = []
        found_tables = set()
        # depth first, the last child first (TorchRec's order, which ties in placement follow)
        queue = [("", module)]
        while queue:
            path, child = queue.pop()
            sharder = self._sharder_map.get(sharder_name(type(child)))
            if sharder is None:
                queue.extend((f"{path}.{name}" if path else name, grandchild)
                             for name, grandchild in child.named_children())
                continue
            for name, param in sharder.shardable_parameters(child).items():
                found_tables.add(name)
                sharding_options.extend(self._table_options(name, param, path, child, sharder))
        self._check_constraints_name_tables(found_tables)
        self.populate_estimates(sharding_options)
        return sharding_options

    def _table_options(self, name, param, path, module, sharder):
        constraint = (self._constraints or {}).get(name)
        options = []
        for sharding_type in self._filter_sharding_types(name, sharder.sharding_types(self._compute_device)):
            for compute_kernel in self._filter_compute_kernels(
                    name, sharder.compute_kernels(sharding_type, self._compute_device)):
                sizes, offsets = calculate_shard_sizes_and_offsets(
                    param, self._world_size, self._local_world_size, sharding_type,
                    constraint.min_partition if constraint else None)
                options.append(ShardingOption(
                    name=name, tensor=param, module=(path, module),
                    input_lengths=list(constraint.pooling_factors) if constraint else [POOLING_FACTOR],
                    batch_size=self._batch_size, sharding_type=sharding_type,
                    partition_by=get_partition_by_type(sharding_type), compute_kernel=compute_kernel,
                    shards=[Shard(size=size, offset=offset) for size, offset in zip(sizes, offsets)],
                    cache_params=copy.deepcopy(constraint.cache_params) if constraint else None,
                    enforce_hbm=constraint.enforce_hbm if constraint else None,
                    stochastic_rounding=constraint.stochastic_rounding if constraint else None,
                    bounds_check_mode=constraint.bounds_check_mode if constraint else None,
                    is_pooled=module_pooled(module),
                    feature_names=constraint.feature_names if constraint else None,
                    output_dtype=constraint.output_dtype if constraint else None,
                    is_weighted=_is_weighted(module, constraint)))
        if not options:
            raise RuntimeError(f"No available sharding type and compute kernel combination after applying user "
                               f"provided constraints for {name}")
        return options

    def _check_constraints_name_tables(self, tables):
        unknown = sorted(set(self._constraints or {}) - tables)
        if unknown:
            raise ValueError(f"constraints name tables {unknown} that the module does not have "
                             f"(its shardable tables: {sorted(tables)})")

    def populate_estimates(self, sharding_options):
        for estimator in self._estimators:
            estimator.estimate(sharding_options, self._sharder_map)

    def _filter_sharding_types(self, name, allowed):
        constraint = (self._constraints or {}).get(name)
        if constraint is None or not constraint.sharding_types:
            return allowed
        filtered = [t for t in allowed if t in constraint.sharding_types]
        if not filtered:
            logger.warning(f"No available sharding types after applying user provided constraints for {name}: "
                           f"constrained to {constraint.sharding_types}, the sharder allows {allowed}")
        return filtered

    def _filter_compute_kernels(self, name, allowed):
        constraint = (self._constraints or {}).get(name)
        if constraint is not None and constraint.compute_kernels:
            filtered = [k for k in allowed if k in constraint.compute_kernels]
        else:
            filtered = list(allowed)
        # a fused kernel beats a dense one wherever both run (not for data_parallel)
        if EmbeddingComputeKernel.DENSE.value in filtered and EmbeddingComputeKernel.FUSED.value in filtered:
            filtered.remove(EmbeddingComputeKernel.DENSE.value)
        if not filtered:
            logger.warning(f"No available compute kernels after applying user provided constraints for {name}: "
                           f"the sharder allows {allowed}")
        return filtered
