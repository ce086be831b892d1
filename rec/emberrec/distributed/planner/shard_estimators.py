"""Per-shard estimates, as TorchRec's `torchrec.distributed.planner.shard_estimators`:
`EmbeddingPerfEstimator` (ms per iteration: forward and backward compute and comms) and
`EmbeddingStorageEstimator` (bytes of HBM and DDR). The formulas are TorchRec 1.9's default
ones (its "default_estimator": all coefficients 1), so estimates compare with the installed
TorchRec; prefetch compute is 0 (it needs cache statistics, which emberrec does not collect)."""
import math

from emberrec.distributed.embedding_types import EmbeddingComputeKernel
from emberrec.distributed.planner.constants import (
    BATCHED_COPY_PERF_FACTOR, BIGINT_DTYPE, DP_ELEMENTWISE_KERNELS_PERF_FACTOR, FULL_BLOCK_EMB_DIM,
    HALF_BLOCK_PENALTY, NUM_POOLINGS, QUARTER_BLOCK_PENALTY, UVM_CACHING_RATIO, WEIGHTED_KERNEL_MULTIPLIER,
    kernel_bw_lookup)
from emberrec.distributed.planner.types import CollectiveType, Perf, PlannerError, ShardEstimator, Storage
from emberrec.distributed.planner.utils import prod, sharder_name
from emberrec.distributed.types import ShardingType
from emberrec.modules.embedding_configs import DATA_TYPE_NUM_BITS

__all__ = ["EmbeddingPerfEstimator", "EmbeddingStorageEstimator", "calculate_shard_storages", "option_io_sizes", "get_num_poolings",
           "compute_block_usage_penalty"]

_TABLE_WISE_FAMILY = {ShardingType.TABLE_WISE.value, ShardingType.COLUMN_WISE.value,
                      ShardingType.TABLE_COLUMN_WISE.value}
_CACHED_KERNELS = {EmbeddingComputeKernel.FUSED_UVM_CACHING.value, EmbeddingComputeKernel.QUANT_UVM_CACHING.value}


def get_num_poolings(constraints, sharding_option):
    constraint = (constraints or {}).get(sharding_option.name)
    if constraint is not None and constraint.num_poolings:
        return list(constraint.num_poolings)
    return [NUM_POOLINGS] * sharding_option.num_inputs


def _batch_sizes(constraints, sharding_option):
    constraint = (constraints or {}).get(sharding_option.name)
    if constraint is not None and constraint.batch_sizes:
        return list(constraint.batch_sizes)
    return [sharding_option.batch_size] * sharding_option.num_inputs


def _fused_params(sharder_map, sharding_option):
    sharder = (sharder_map or {}).get(sharder_name(type(sharding_option.module[1])))
    return getattr(sharder, "fused_params", None) or {}


def _caching_ratio(sharding_option, fused_params):
    ratio = sharding_option.cache_load_factor
    return ratio if ratio is not None else fused_params.get("cache_load_factor")


def _output_data_type_size(sharding_option):
    if sharding_option.output_dtype is not None:
        return DATA_TYPE_NUM_BITS[sharding_option.output_dtype] / 8
    return sharding_option.tensor.element_size()


def compute_block_usage_penalty(embedding_dim):
    """FBGEMM's kernel reads 128 columns per block: narrower shards waste part of it."""
    if embedding_dim >= FULL_BLOCK_EMB_DIM:
        return 1.0
    return HALF_BLOCK_PENALTY if embedding_dim >= 64 else QUARTER_BLOCK_PENALTY


class _ShardContext:
    """What one shard's perf estimate depends on."""

    def __init__(self, sharding_option, emb_dim, hash_size, topology, batch_sizes, num_poolings, device_bw):
        self.sharding_type = sharding_option.sharding_type
        self.emb_dim = emb_dim
        self.hash_size = hash_size
        self.topology = topology
        self.world_size = topology.world_size
        self.local_world_size = topology.local_world_size
        self.is_weighted = bool(sharding_option.is_weighted)
        self.is_pooled = sharding_option.is_pooled
        self.table_size = sharding_option.tensor.element_size()
        # no quantized comms: the embeddings travel in the table's own dtype
        self.comm_size = self.table_size
        self.device_bw = device_bw
        lengths = sharding_option.input_lengths
        self.batch_inputs = sum(x * y * z for x, y, z in zip(lengths, num_poolings, batch_sizes))
        self.batch_outputs = (sum(min(1.0, x) * y * z for x, y, z in zip(lengths, num_poolings, batch_sizes))
                              if self.is_pooled else self.batch_inputs)

    def comms(self, size, collective, world_size=None, local_world_size=None):
        bw = self.topology.comms_bw(self.world_size if world_size is None else world_size,
                                    self.local_world_size if local_world_size is None else local_world_size,
                                    collective)
        return size / bw

    def batched_copy(self, size):
        return size * BATCHED_COPY_PERF_FACTOR / self.device_bw


def _weighted(size, ctx):
    return size * 2 if ctx.is_weighted else size


def _input_lookup_output(ctx):
    """(input read, embedding lookup, output write) bytes of a shard's forward pass, as each
    sharding type moves them (row-wise types see a share of the ids and write whole outputs)."""
    t, ws = ctx.sharding_type, ctx.world_size
    if t == ShardingType.DATA_PARALLEL.value:
        return (_weighted(math.ceil(ctx.batch_inputs * BIGINT_DTYPE), ctx),
                ctx.batch_inputs * ctx.emb_dim * ctx.table_size,
                ctx.batch_outputs * ctx.emb_dim * ctx.table_size)
    if t in (ShardingType.ROW_WISE.value, ShardingType.TABLE_ROW_WISE.value):
        divisor = ws if t == ShardingType.ROW_WISE.value else ctx.local_world_size
        share = ctx.batch_inputs / divisor
        outputs = ctx.batch_outputs if ctx.is_pooled else ctx.batch_outputs / divisor
        return (_weighted(math.ceil(share * ws * BIGINT_DTYPE), ctx),
                share * ws * ctx.emb_dim * ctx.table_size,
                outputs * ws * ctx.emb_dim * ctx.comm_size)
    # table-wise family: the kernel reads at least 32 columns per row
    return (_weighted(math.ceil(ctx.batch_inputs * ws * BIGINT_DTYPE), ctx),
            ctx.batch_inputs * ws * max(ctx.emb_dim, 32) * ctx.table_size,
            ctx.batch_outputs * ws * ctx.emb_dim * ctx.comm_size)


def _fwd_compute(ctx):
    penalty = compute_block_usage_penalty(ctx.emb_dim) if ctx.sharding_type in _TABLE_WISE_FAMILY else 1.0
    return sum(_input_lookup_output(ctx)) * penalty / ctx.device_bw


def _bwd_compute(ctx, fwd_compute):
    bwd = fwd_compute * ctx.topology.bwd_compute_multiplier
    if not ctx.is_weighted:
        return bwd
    # weighted features also run the kernel that computes the weights' gradients
    return (bwd * ctx.topology.weighted_feature_bwd_compute_multiplier
            + fwd_compute * WEIGHTED_KERNEL_MULTIPLIER)


def _comms(ctx):
    """(forward, backward) comms of a shard."""
    t = ctx.sharding_type
    output = _input_lookup_output(ctx)[2]
    if t == ShardingType.DATA_PARALLEL.value:
        return 0.0, _data_parallel_bwd_comms(ctx)
    if t == ShardingType.ROW_WISE.value:
        return (ctx.comms(output, CollectiveType.REDUCE_SCATTER),
                ctx.comms(output, CollectiveType.ALL_GATHER) + ctx.batched_copy(output))
    if t == ShardingType.TABLE_ROW_WISE.value:
        lws = ctx.local_world_size
        inter = 0.0
        num_hosts = ctx.topology.num_hosts
        if num_hosts > 1:
            inter = ctx.comms(ctx.batch_outputs * num_hosts * ctx.emb_dim * ctx.comm_size,
                              CollectiveType.ALL_TO_ALL, num_hosts, 1)
        return (ctx.comms(output, CollectiveType.REDUCE_SCATTER, lws, lws) + inter,
                inter + ctx.comms(output, CollectiveType.ALL_GATHER, lws, lws) + ctx.batched_copy(output))
    a2a = ctx.comms(output, CollectiveType.ALL_TO_ALL)
    return a2a, a2a


def _data_parallel_bwd_comms(ctx):
    """All-reduce of the whole table's gradient, then the optimizer's elementwise kernels."""
    table_bytes = ctx.hash_size * ctx.emb_dim * ctx.table_size
    num_nodes = min(ctx.world_size / ctx.local_world_size, 2)
    bw = ctx.topology.comms_bw(ctx.world_size, ctx.local_world_size, CollectiveType.ALL_REDUCE)
    all_reduce = table_bytes * (2 * num_nodes - 1) / num_nodes / bw
    if ctx.world_size > 2 * ctx.local_world_size:
        all_reduce *= 2
    return all_reduce + table_bytes * DP_ELEMENTWISE_KERNELS_PERF_FACTOR / ctx.device_bw


def _prefetch_pipelined(sharding_option, fused_params):
    if sharding_option.cache_params is not None and sharding_option.cache_params.prefetch_pipeline is not None:
        return sharding_option.cache_params.prefetch_pipeline
    return bool(fused_params.get("prefetch_pipeline", False))


class EmbeddingPerfEstimator(ShardEstimator):
    """Estimates each shard's forward/backward compute and comms time (ms per iteration) from
    the bytes it reads, looks up and writes, the kernel's memory bandwidth and the network's."""

    def __init__(self, topology, constraints=None, is_inference=False):
        super().__init__(topology, constraints)
        if is_inference:
            raise NotImplementedError("inference perf estimates are not in emberrec's planner (training only)")

    def estimate(self, sharding_options, sharder_map=None):
        topology = self._topology
        for option in sharding_options:
            fused_params = _fused_params(sharder_map, option)
            device_bw = kernel_bw_lookup(topology.compute_device, option.compute_kernel, topology.hbm_mem_bw,
                                         topology.ddr_mem_bw, topology.hbm_to_ddr_mem_bw,
                                         _caching_ratio(option, fused_params), _prefetch_pipelined(option, fused_params))
            if device_bw is None:
                raise PlannerError(f"No kernel bandwidth for compute device: {topology.compute_device}, "
                                   f"compute kernel: {option.compute_kernel}")
            batch_sizes = _batch_sizes(self._constraints, option)
            num_poolings = get_num_poolings(self._constraints, option)
            for shard in option.shards:
                ctx = _ShardContext(option, shard.size[1], shard.size[0], topology, batch_sizes, num_poolings, device_bw)
                fwd_compute = _fwd_compute(ctx)
                fwd_comms, bwd_comms = _comms(ctx)
                shard.perf = Perf(fwd_compute=fwd_compute, fwd_comms=fwd_comms,
                                  bwd_compute=_bwd_compute(ctx, fwd_compute), bwd_comms=bwd_comms)


def _io_sizes(sharding_type, shard_sizes, emb_dim, world_size, local_world_size, batch_sizes, input_lengths,
              num_poolings, is_pooled, output_data_type_size):
    """Bytes of ids in and embeddings out of each shard per iteration."""
    batch_inputs = sum(x * y * z for x, y, z in zip(input_lengths, num_poolings, batch_sizes))
    pooled_outputs = sum(min(1.0, x) * y * z for x, y, z in zip(input_lengths, num_poolings, batch_sizes))
    if sharding_type == ShardingType.DATA_PARALLEL.value:
        outputs = pooled_outputs if is_pooled else batch_inputs
        return ([math.ceil(batch_inputs * BIGINT_DTYPE)] * len(shard_sizes),
                [math.ceil(outputs * emb_dim * output_data_type_size)] * len(shard_sizes))
    if sharding_type in (ShardingType.ROW_WISE.value, ShardingType.TABLE_ROW_WISE.value):
        share = batch_inputs / (world_size if sharding_type == ShardingType.ROW_WISE.value else local_world_size)
        outputs = pooled_outputs if is_pooled else share
        return ([math.ceil(share * world_size * BIGINT_DTYPE) if prod(size) != 0 else 0 for size in shard_sizes],
                [math.ceil(outputs * world_size * size[1] * output_data_type_size) if prod(size) != 0 else 0
                 for size in shard_sizes])
    outputs = pooled_outputs if is_pooled else batch_inputs
    return ([math.ceil(batch_inputs * world_size * BIGINT_DTYPE)] * len(shard_sizes),
            [math.ceil(outputs * world_size * size[1] * output_data_type_size) for size in shard_sizes])


def option_io_sizes(option, topology, constraints=None):
    """(input bytes, output bytes) per iteration of each of a sharding option's shards."""
    return _io_sizes(option.sharding_type, [shard.size for shard in option.shards], option.tensor.shape[1],
                     topology.world_size, topology.local_world_size, _batch_sizes(constraints, option),
                     option.input_lengths, get_num_poolings(constraints, option), option.is_pooled,
                     _output_data_type_size(option))


def calculate_shard_storages(sharder, sharding_type, tensor, compute_device, compute_kernel, shard_sizes, batch_sizes,
                             world_size, local_world_size, input_lengths, num_poolings, caching_ratio, is_pooled,
                             output_data_type_size=None):
    """Storage of each shard: its share of the weights (in HBM or DDR as the kernel keeps
    them; a UVM cache also holds `caching_ratio` of the rows and its bookkeeping in HBM) plus
    the ids and embeddings it takes in and gives out per iteration (in the compute device's
    memory)."""
    output_size = tensor.element_size() if output_data_type_size is None else output_data_type_size
    input_sizes, output_sizes = _io_sizes(sharding_type, shard_sizes, tensor.shape[1], world_size, local_world_size,
                                          batch_sizes, input_lengths, num_poolings, is_pooled, output_size)
    usage = sharder.storage_usage(tensor, compute_device, compute_kernel)
    hbm_bytes, ddr_bytes = usage.get("hbm", 0), usage.get("ddr", 0)
    cached = compute_kernel in _CACHED_KERNELS
    if cached:
        hbm_bytes = round(ddr_bytes * caching_ratio)
    shape = tensor.shape

    def share(total, size):
        return total if sharding_type == ShardingType.DATA_PARALLEL.value else math.ceil(total * prod(size) / prod(shape))

    # the cache's index map (4 bytes a row) and its per-slot state and LRU stamps (8 + 8 bytes a slot)
    cache_state = [math.ceil(size[0] * (4 + caching_ratio * 16)) if cached else 0 for size in shard_sizes]
    storages = []
    for size, state, inputs, outputs in zip(shard_sizes, cache_state, input_sizes, output_sizes):
        hbm = share(hbm_bytes, size) + state
        ddr = share(ddr_bytes, size)
        if compute_device == "cuda":
            storages.append(Storage(hbm=hbm + inputs + outputs, ddr=ddr))
        else:
            storages.append(Storage(hbm=0, ddr=ddr + inputs + outputs))
    return storages


class EmbeddingStorageEstimator(ShardEstimator):
    """Estimates each shard's HBM and DDR bytes (weights plus per-iteration inputs and
    outputs); an optimizer's state is not counted (TorchRec counts it only for tables whose
    optimizer is fused into the model before planning)."""

    def estimate(self, sharding_options, sharder_map=None):
        if not sharder_map:
            raise ValueError("the storage estimator needs the sharders (sharder_map) to know each table's storage")
        topology = self._topology
        for option in sharding_options:
            sharder = sharder_map[sharder_name(type(option.module[1]))]
            ratio = _caching_ratio(option, _fused_params(sharder_map, option))
            storages = calculate_shard_storages(
                sharder=sharder, sharding_type=option.sharding_type, tensor=option.tensor,
                compute_device=topology.compute_device, compute_kernel=option.compute_kernel,
                shard_sizes=[shard.size for shard in option.shards],
                batch_sizes=_batch_sizes(self._constraints, option), world_size=topology.world_size,
                local_world_size=topology.local_world_size, input_lengths=option.input_lengths,
                num_poolings=get_num_poolings(self._constraints, option),
                caching_ratio=ratio if ratio else UVM_CACHING_RATIO, is_pooled=option.is_pooled,
                output_data_type_size=_output_data_type_size(option))
            for shard, storage in zip(option.shards, storages):
                shard.storage = storage
