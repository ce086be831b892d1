"""`GreedyPerfPartitioner`, as TorchRec's `torchrec.distributed.planner.partitioners`: places
a proposal's shards on ranks. Uniform options (row_wise, data_parallel) put shard i on rank i;
then the other tables, largest first, go greedily to the least loaded (by estimated perf) rank
that has room (table_wise, column_wise), or all onto the least loaded host that has room
(table_row_wise, table_column_wise)."""
import copy
import heapq
import logging
from dataclasses import dataclass
from enum import Enum

from emberrec.distributed.planner.types import (
    DeviceHardware, PartitionByType, Partitioner, PlannerError, PlannerErrorType, Storage)
from emberrec.distributed.types import ShardingType

__all__ = ["GreedyPerfPartitioner", "SortBy", "ShardingOptionGroup"]

logger = logging.getLogger(__name__)


class SortBy(Enum):
    STORAGE = "storage"
    PERF = "perf"


@dataclass
class ShardingOptionGroup:
    sharding_options: list
    storage_sum: Storage
    perf_sum: float
    param_count: int


def _group_and_sort_non_uniform_sharding_options(sharding_options, sort_by=SortBy.STORAGE, balance_modules=False):
    """The non-uniform options grouped by dependency (else by table), the largest first (by
    storage or perf; with `balance_modules`, modules with fewer tables first)."""
    param_count = {}
    for option in sharding_options:
        param_count[option.path] = param_count.get(option.path, 0) + 1
    groups = {}
    for option in sharding_options:
        if option.partition_by == PartitionByType.UNIFORM.value:
            continue
        key = option.dependency or option.fqn
        if key not in groups:
            groups[key] = ShardingOptionGroup([option], option.total_storage, option.total_perf,
                                              param_count=-param_count[option.path])
        else:
            groups[key].sharding_options.append(option)
            groups[key].storage_sum += option.total_storage
            groups[key].perf_sum += option.total_perf
    attributes = (["param_count"] if balance_modules else []) + [
        "storage_sum" if sort_by == SortBy.STORAGE else "perf_sum"]
    return sorted(groups.values(), key=lambda g: [getattr(g, a) for a in attributes], reverse=True)


@dataclass
class _OrderedDevice:
    """A rank in the heap: least loaded first, ties to the lower local rank, then lower rank
    (so hosts fill evenly)."""
    device: DeviceHardware
    local_world_size: int

    def key(self):
        return self.device.perf.total, self.device.rank % self.local_world_size, self.device.rank

    def __lt__(self, other):
        return self.key() < other.key()


def _place(shard, device):
    shard.rank = device.rank
    device.storage -= shard.storage
    device.perf += shard.perf


class GreedyPerfPartitioner(Partitioner):

    def __init__(self, sort_by=SortBy.STORAGE, balance_modules=False):
        if not isinstance(sort_by, SortBy):
            raise TypeError(f"sort_by must be a SortBy, got {sort_by!r}")
        self._sort_by = sort_by
        self._balance_modules = balance_modules

    def partition(self, proposal, storage_constraint):
        """Sets every shard's rank (in place) and returns the proposal; raises PlannerError
        when a shard fits nowhere."""
        devices = [DeviceHardware(d.rank, copy.deepcopy(d.storage), copy.deepcopy(d.perf))
                   for d in storage_constraint.devices]
        hosts = self._host_level_devices(storage_constraint, devices)
        self._uniform_partition([o for o in proposal if o.partition_by == PartitionByType.UNIFORM.value], devices)
        heap = None
        for group in _group_and_sort_non_uniform_sharding_options(proposal, self._sort_by, self._balance_modules):
            if group.sharding_options[0].partition_by == PartitionByType.HOST.value:
                self._cohost_partition(group, hosts)
                heap = None  # the host's ranks changed under the heap
            else:
                if heap is None:
                    heap = [_OrderedDevice(d, storage_constraint.local_world_size) for d in devices]
                    heapq.heapify(heap)
                for option in group.sharding_options:
                    self._device_partition(option, heap)
        return proposal

    @staticmethod
    def _host_level_devices(topology, devices):
        size = topology.local_world_size
        return [devices[i * size:(i + 1) * size] for i in range(topology.world_size // size)]

    @staticmethod
    def _device_partition(option, heap):
        """Each shard to the least loaded rank it fits on."""
        for shard in option.shards:
            skipped = []
            while heap:
                device = heap[0].device
                if shard.storage.fits_in(device.storage):
                    _place(shard, device)
                    heapq.heapreplace(heap, heap[0])
                    break
                skipped.append(heapq.heappop(heap))
            else:
                largest = max(ordered.device.storage for ordered in skipped)
                raise PlannerError(f"Device partition failed. Couldn't find a rank for shard {shard} of table "
                                   f"{option.name}, largest device storage: {largest}", PlannerErrorType.PARTITION)
            for ordered in skipped:
                heapq.heappush(heap, ordered)

    @classmethod
    def _cohost_partition(cls, group, hosts):
        """The group's shards onto one host: the least loaded one where they fit."""
        for devices in sorted(hosts, key=lambda host: sum(d.perf.total for d in host)):
            trial = copy.deepcopy(devices)
            room = Storage(0, 0)
            for device in trial:
                room += device.storage
            if not group.storage_sum.fits_in(room):
                continue
            try:
                heap = None
                for option in group.sharding_options:
                    if option.sharding_type == ShardingType.TABLE_ROW_WISE.value:
                        cls._uniform_partition([option], trial)
                        heap = None
                    elif option.sharding_type == ShardingType.TABLE_COLUMN_WISE.value:
                        if heap is None:
                            heap = [_OrderedDevice(d, len(trial)) for d in trial]
                            heapq.heapify(heap)
                        cls._device_partition(option, heap)
                    else:
                        raise PlannerError(f"unexpected cohost sharding type: {option.sharding_type}",
                                           PlannerErrorType.PARTITION)
            except PlannerError:
                continue
            trial.sort(key=lambda device: device.rank)
            for device, placed in zip(devices, trial):
                device.storage, device.perf = placed.storage, placed.perf
            return
        raise PlannerError(f"can't find a host for sharding option group {group}", PlannerErrorType.PARTITION)

    @staticmethod
    def _uniform_partition(options, devices):
        for option in options:
            if option.num_shards != len(devices):
                raise PlannerError(f"For a uniform partition, the number of shards ({option.num_shards}) must equal "
                                   f"the number of devices ({len(devices)})", PlannerErrorType.PARTITION)
            for shard, device in zip(option.shards, devices):
                if not shard.storage.fits_in(device.storage):
                    raise PlannerError(f"Shard of size {shard.storage} bytes does not fit on any rank. Device memory "
                                       f"cap: {device.storage}.", PlannerErrorType.PARTITION)
                _place(shard, device)
