"""Storage reservations, as TorchRec's `torchrec.distributed.planner.storage_reservations`:
memory each rank keeps for what the planner does not place (the dense part of the model, the
input KJTs, headroom), taken off the topology before partitioning."""
import copy
import math

from emberrec.distributed.planner.constants import BIGINT_DTYPE, POOLING_FACTOR
from emberrec.distributed.planner.types import PlannerError, PlannerErrorType, Storage, StorageReservation
from emberrec.distributed.planner.utils import sharder_name, storage_repr_in_gb
from emberrec.distributed.types import get_tensor_size_bytes

__all__ = ["HeuristicalStorageReservation", "FixedPercentageStorageReservation"]

# the input KJTs held at once per rank: a rough allowance for the pipelined batches and copies
KJT_STORAGE_MULTIPLIER = 20


def _check_percentage(percentage):
    if isinstance(percentage, bool) or not isinstance(percentage, (int, float)) or not 0 <= percentage <= 1:
        raise ValueError(f"percentage must be a number in [0, 1], got {percentage!r}")


def _module_size(module, multiplier):
    """Bytes of a module's parameters (times `multiplier`: gradients, optimizer state,
    copies) and buffers."""
    parameters = sum(multiplier * get_tensor_size_bytes(p) for p in module.parameters())
    buffers = sum(get_tensor_size_bytes(b) for b in module.buffers())
    return round(parameters + buffers)


def _on_compute_device(topology, size):
    return Storage(hbm=size, ddr=0) if topology.compute_device == "cuda" else Storage(hbm=0, ddr=size)


def _shardable_modules_and_batch_inputs(module, sharders, batch_size, constraints):
    """The submodules a sharder handles, and the ids per iteration of each of their tables."""
    sharder_map = {sharder_name(sharder.module_type): sharder for sharder in sharders}
    shardable, batch_inputs = [], []

    def visit(child):
        sharder = sharder_map.get(sharder_name(type(child)))
        if sharder is None:
            for _, grandchild in child.named_children():
                visit(grandchild)
            return
        shardable.append(child)
        for name in sharder.shardable_parameters(child):
            constraint = (constraints or {}).get(name)
            factors = constraint.pooling_factors if constraint else [POOLING_FACTOR]
            sizes = constraint.batch_sizes if constraint and constraint.batch_sizes else [batch_size] * len(factors)
            batch_inputs.extend(f * b for f, b in zip(factors, sizes))

    visit(module)
    return shardable, batch_inputs


def _kjt_storage(topology, batch_inputs):
    return _on_compute_device(topology, math.ceil(sum(batch_inputs) * BIGINT_DTYPE) * KJT_STORAGE_MULTIPLIER)


class HeuristicalStorageReservation(StorageReservation):
    """Keeps `percentage` of each rank's HBM free, then reserves the dense part of the model
    (its non-embedding parameters times `parameter_multiplier`, or `dense_tensor_estimate`
    bytes) and the input KJTs. Raises PlannerError when nothing is left."""

    def __init__(self, percentage, parameter_multiplier=6.0, dense_tensor_estimate=None):
        _check_percentage(percentage)
        self._percentage = percentage
        self._parameter_multiplier = parameter_multiplier
        self._dense_tensor_estimate = dense_tensor_estimate
        self._dense_storage = None
        self._kjt_storage = None
        self._last_reserved_topology = None

    def reserve(self, topology, batch_size, module, sharders, constraints=None):
        reserved = copy.deepcopy(topology)
        shardable, batch_inputs = _shardable_modules_and_batch_inputs(module, sharders, batch_size, constraints)
        for device in reserved.devices:
            device.storage.hbm = int((1 - self._percentage) * device.storage.hbm)
        dense = self._dense_tensor_estimate
        if not dense:
            dense = _module_size(module, self._parameter_multiplier) - sum(
                _module_size(m, self._parameter_multiplier) for m in shardable)
        self._dense_storage = _on_compute_device(topology, dense)
        self._kjt_storage = _kjt_storage(topology, batch_inputs)
        for device in reserved.devices:
            device.storage -= self._dense_storage + self._kjt_storage
        if reserved.devices[0].storage.hbm < 0:
            raise PlannerError(
                f"The reserved topology ({storage_repr_in_gb(reserved.devices[0].storage)}) has negative available "
                f"hbm storage, after taking into account of the reserved hbm percentage ({self._percentage}), the "
                f"storage for dense modules ({storage_repr_in_gb(self._dense_storage)}), and the kjt storages "
                f"({storage_repr_in_gb(self._kjt_storage)}). Hence it is not possible to find a valid sharding plan. "
                f"Possible solutions: reduce the local batch size ({batch_size}), the reserved hbm percentage, or "
                f"use hardware with more hbm than {storage_repr_in_gb(topology.devices[0].storage)} per rank.",
                PlannerErrorType.INSUFFICIENT_STORAGE)
        self._last_reserved_topology = copy.deepcopy(reserved)
        return reserved

    @property
    def last_reserved_topology(self):
        return self._last_reserved_topology


class FixedPercentageStorageReservation(StorageReservation):
    """Keeps `percentage` of each rank's HBM free and nothing else."""

    def __init__(self, percentage):
        _check_percentage(percentage)
        self._percentage = percentage
        self._kjt_storage = None
        self._last_reserved_topology = None

    def reserve(self, topology, batch_size, module, sharders, constraints=None):
        reserved = copy.deepcopy(topology)
        for device in reserved.devices:
            device.storage.hbm = int((1 - self._percentage) * device.storage.hbm)
        _, batch_inputs = _shardable_modules_and_batch_inputs(module, sharders, batch_size, constraints)
        self._kjt_storage = _kjt_storage(topology, batch_inputs)  # reported in the stats, not reserved
        self._last_reserved_topology = copy.deepcopy(reserved)
        return reserved

    @property
    def last_reserved_topology(self):
        return self._last_reserved_topology
