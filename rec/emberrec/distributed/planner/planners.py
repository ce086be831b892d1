"""`EmbeddingShardingPlanner`, as TorchRec's `torchrec.distributed.planner.planners`: reserves
storage, enumerates every table's sharding options, then partitions the proposers' proposals
and keeps the best rated plan. It plans for any described topology ("cuda" ones too) on this
machine; running the plan is not in emberrec yet."""
import copy
import logging
import time
from functools import reduce

from emberrec.distributed.embedding_types import EmbeddingComputeKernel
from emberrec.distributed.planner.constants import MAX_SIZE
from emberrec.distributed.planner.enumerators import EmbeddingEnumerator
from emberrec.distributed.planner.partitioners import GreedyPerfPartitioner
from emberrec.distributed.planner.perf_models import NoopPerfModel
from emberrec.distributed.planner.proposers import GreedyProposer, GridSearchProposer, UniformProposer
from emberrec.distributed.planner.stats import EmbeddingStats
from emberrec.distributed.planner.storage_reservations import HeuristicalStorageReservation
from emberrec.distributed.planner.types import (
    ParameterConstraints, PlannerError, PlannerErrorType, Storage, Topology)
from emberrec.distributed.planner.utils import bytes_to_gb, placement, reset_shard_rank, storage_repr_in_gb
from emberrec.distributed.sharding_plan import get_default_sharders
from emberrec.distributed.types import (
    EmbeddingModuleShardingPlan, EnumerableShardingSpec, ModuleSharder, ParameterSharding, ShardingPlan,
    ShardingPlanner, ShardingType, ShardMetadata)

__all__ = ["EmbeddingShardingPlanner", "to_sharding_plan"]

logger = logging.getLogger(__name__)


def to_sharding_plan(sharding_options, topology):
    """The ShardingPlan of placed sharding options."""
    plan = {}
    for option in sharding_options:
        spec = None
        if option.sharding_type != ShardingType.DATA_PARALLEL.value:
            spec = EnumerableShardingSpec([
                ShardMetadata(shard_offsets=shard.offset, shard_sizes=shard.size,
                              placement=placement(topology.compute_device, shard.rank, topology.local_world_size))
                for shard in option.shards])
        module_plan = plan.setdefault(option.path, EmbeddingModuleShardingPlan())
        module_plan[option.name] = ParameterSharding(
            sharding_type=option.sharding_type, compute_kernel=option.compute_kernel,
            ranks=[shard.rank for shard in option.shards], sharding_spec=spec, cache_params=option.cache_params,
            enforce_hbm=option.enforce_hbm, stochastic_rounding=option.stochastic_rounding,
            bounds_check_mode=option.bounds_check_mode, output_dtype=option.output_dtype)
    return ShardingPlan(plan)


def _check_inputs(topology, batch_size, constraints):
    if not isinstance(topology, Topology):
        raise TypeError(f"topology must be a Topology (emberrec has no process group to derive one from), "
                        f"got {topology!r}")
    if batch_size is not None and (not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1):
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    if constraints is not None:
        if not isinstance(constraints, dict) or not all(
                isinstance(k, str) and isinstance(v, ParameterConstraints) for k, v in constraints.items()):
            raise TypeError("constraints must be a dict of table name -> ParameterConstraints")


def _check_compute_kernels(plan):
    """A dense kernel holds a whole table and trains it outside the kernel: only data_parallel
    can use it (a sharder offering it for other types is refused, as TorchRec does)."""
    wrong = [f"{option.fqn}: DENSE kernel requires DATA_PARALLEL sharding, got '{option.sharding_type}'"
             for option in plan if option.compute_kernel == EmbeddingComputeKernel.DENSE.value
             and option.sharding_type != ShardingType.DATA_PARALLEL.value]
    if wrong:
        raise PlannerError(f"Compute kernel validation failed with {len(wrong)} violation(s):\n"
                           + "\n".join(f"  - {v}" for v in wrong), PlannerErrorType.INVALID_COMPUTE_KERNEL)


def _sum_storage(storages):
    return reduce(lambda x, y: x + y, storages, Storage(0, 0))


class EmbeddingShardingPlanner(ShardingPlanner):
    """Plans how to shard a model's embedding tables over `topology`. Defaults as TorchRec's:
    batch size the topology's (512), the EmbeddingEnumerator with perf and storage estimators,
    HeuristicalStorageReservation(0.15), proposers [GridSearch, Greedy, Greedy(use_depth=False),
    Uniform], GreedyPerfPartitioner, NoopPerfModel (the slowest rank's perf) and EmbeddingStats.
    `plan` raises PlannerError when no proposal fits."""

    def __init__(self, topology, batch_size=None, enumerator=None, storage_reservation=None, proposer=None,
                 partitioner=None, performance_model=None, stats=None, constraints=None, debug=True):
        _check_inputs(topology, batch_size, constraints)
        self._topology = topology
        self._batch_size = batch_size if batch_size else topology.batch_size
        self._constraints = constraints
        self._enumerator = enumerator or EmbeddingEnumerator(topology=topology, batch_size=self._batch_size,
                                                             constraints=constraints)
        self._storage_reservation = storage_reservation or HeuristicalStorageReservation(percentage=0.15)
        self._partitioner = partitioner or GreedyPerfPartitioner()
        if proposer:
            self._proposers = proposer if isinstance(proposer, list) else [proposer]
        else:
            self._proposers = [GridSearchProposer(), GreedyProposer(), GreedyProposer(use_depth=False),
                               UniformProposer()]
        self._perf_model = performance_model or NoopPerfModel(topology=topology)
        if stats is None:
            self._stats = [EmbeddingStats()]
        else:
            self._stats = stats if isinstance(stats, list) else [stats]
        self._debug = debug
        self._num_proposals = 0
        self._num_plans = 0
        self._best_plan = None

    def collective_plan(self, module, sharders=None, pg=None):
        """The plan every process agrees on. Within one process that is `plan`'s; across
        processes (a process group `pg`) it needs emberrec's distributed runtime, not present."""
        if pg is not None:
            raise NotImplementedError("collective_plan across processes (a process group) needs emberrec's "
                                      "distributed runtime, which is not present; use plan()")
        return self.plan(module, sharders)

    def plan(self, module, sharders=None):
        sharders = get_default_sharders() if sharders is None else sharders
        if not isinstance(sharders, (list, tuple)) or not all(isinstance(s, ModuleSharder) for s in sharders):
            raise TypeError(f"sharders must be a list of ModuleSharder, got {sharders!r}")
        start_time = time.perf_counter()
        self._num_proposals = self._num_plans = 0
        storage_constraint = self._storage_reservation.reserve(
            topology=self._topology, batch_size=self._batch_size, module=module, sharders=list(sharders),
            constraints=self._constraints)
        search_space = self._enumerator.enumerate(module=module, sharders=list(sharders))
        if not search_space:
            return ShardingPlan({})
        best_plan, lowest_storage, failure = self._search(search_space, storage_constraint)
        if best_plan is None:
            self._log_stats(ShardingPlan({}), failure[1], sharders, start_time)
            raise self._no_plan_error(storage_constraint, lowest_storage, failure[0])
        self._best_plan = best_plan
        sharding_plan = to_sharding_plan(best_plan, self._topology)
        self._log_stats(sharding_plan, best_plan, sharders, start_time)
        _check_compute_kernels(best_plan)
        return sharding_plan

    def _search(self, search_space, storage_constraint):
        """(best plan or None, the least storage of a proposal that failed, (last PlannerError,
        its proposal))."""
        best_plan, best_rating = None, MAX_SIZE
        lowest_storage = Storage(MAX_SIZE, MAX_SIZE)
        last_error, last_proposal = None, []
        cache = {}
        for proposer in self._proposers:
            proposer.load(search_space=search_space, enumerator=self._enumerator)
        for proposer in self._proposers:
            proposal = proposer.propose()
            while proposal:
                key = tuple(sorted(map(hash, proposal)))
                if key in cache:
                    partitionable, plan, rating = cache[key]
                    proposer.feedback(partitionable=partitionable, plan=plan, perf_rating=rating,
                                      storage_constraint=storage_constraint)
                    proposal = proposer.propose()
                    continue
                self._num_proposals += 1
                try:
                    plan = self._partitioner.partition(proposal=proposal, storage_constraint=storage_constraint)
                    self._num_plans += 1
                    rating = self._perf_model.rate(plan=plan)
                    if rating < best_rating:
                        best_rating, best_plan = rating, copy.deepcopy(plan)
                    cache[key] = (True, plan, rating)
                    proposer.feedback(partitionable=True, plan=plan, perf_rating=rating,
                                      storage_constraint=storage_constraint)
                except PlannerError as error:
                    last_error, last_proposal = error, copy.copy(proposal)
                    lowest_storage = min(lowest_storage,
                                         _sum_storage(shard.storage for option in proposal for shard in option.shards))
                    cache[key] = (False, proposal, None)
                    proposer.feedback(partitionable=False, plan=proposal, storage_constraint=storage_constraint)
                reset_shard_rank(proposal)
                proposal = proposer.propose()
        return best_plan, lowest_storage, (last_error, last_proposal)

    def _no_plan_error(self, storage_constraint, lowest_storage, last_error):
        capacity = _sum_storage(device.storage for device in self._topology.devices)
        available = _sum_storage(device.storage for device in storage_constraint.devices)
        reservation = self._storage_reservation
        details = (
            f"Planner evaluated {self._num_proposals} proposals."
            f"\nPossible solutions:"
            f"\n  1) Increase the number of devices ({self._topology.world_size})"
            f"\n  2) Reduce the model size ("
            f"\n\t  Global storage: {round(bytes_to_gb(capacity.hbm), 3)} GB, "
            f"\n\t  Per rank hardware memory: {storage_repr_in_gb(self._topology.devices[0].storage)}, "
            f"\n\t  Storage reservation percentage: {getattr(reservation, '_percentage', None)}, "
            f"\n\t  Per rank reservation for dense storage: "
            f"{storage_repr_in_gb(getattr(reservation, '_dense_storage', None))}, "
            f"\n\t  Per rank reservation for kjt storage: "
            f"{storage_repr_in_gb(getattr(reservation, '_kjt_storage', None))}, "
            f"\n\t  Global storage available for model parallel: {storage_repr_in_gb(available)}, "
            f"\n\t  Global storage requirement for model parallel: {storage_repr_in_gb(lowest_storage)})"
            f"\n  3) Reduce local batch size ({self._batch_size})"
            f"\n  4) Remove planner constraints that might be reducing search space or available storage\n"
            f"Last planner error: \n\t{last_error}\n")
        if not lowest_storage.fits_in(available):
            return PlannerError("Unable to find a plan for this model because of insufficient storage. \n" + details,
                                PlannerErrorType.INSUFFICIENT_STORAGE)
        return PlannerError("Unable to find a plan for this model because of the strict constraints. \n" + details,
                            PlannerErrorType.STRICT_CONSTRAINTS)

    def _log_stats(self, sharding_plan, best_plan, sharders, start_time):
        if not sharding_plan.plan:
            # the last failed proposal is reported unplaced
            for option in best_plan:
                for shard in option.shards:
                    shard.rank = -1
        for stats in self._stats:
            stats.log(sharding_plan=sharding_plan, topology=self._topology, batch_size=self._batch_size,
                      storage_reservation=self._storage_reservation, num_proposals=self._num_proposals,
                      num_plans=self._num_plans, run_time=time.perf_counter() - start_time, best_plan=best_plan,
                      constraints=self._constraints, sharders=list(sharders), debug=self._debug)
