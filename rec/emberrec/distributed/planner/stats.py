"""`EmbeddingStats`, as TorchRec's `torchrec.distributed.planner.stats`: the planner's report,
a '#'-framed table written to this module's logger at INFO level: per rank the estimated HBM
and DDR use, perf (ms), input and output (MB per iteration) and shards by sharding type; with
`debug`, a line per table and the storage reservation."""
import logging

from emberrec.distributed.planner.shard_estimators import option_io_sizes
from emberrec.distributed.planner.types import Perf, Stats, Storage
from emberrec.distributed.planner.utils import bytes_to_gb, bytes_to_mb
from emberrec.distributed.types import ShardingType

__all__ = ["EmbeddingStats"]

logger = logging.getLogger(__name__)

MIN_WIDTH = 90

_ABBREVIATIONS = {
    ShardingType.DATA_PARALLEL.value: "DP", ShardingType.TABLE_WISE.value: "TW",
    ShardingType.COLUMN_WISE.value: "CW", ShardingType.ROW_WISE.value: "RW",
    ShardingType.TABLE_ROW_WISE.value: "TWRW", ShardingType.TABLE_COLUMN_WISE.value: "TWCW",
}


def _format_table(rows):
    """Right-aligned columns, three spaces wider than their widest cell."""
    widths = [max(len(str(row[i])) for row in rows) + 3 for i in range(len(rows[0]))]
    return ["".join(f"{str(cell):>{w}}" for cell, w in zip(row, widths)) for row in rows]


def _one_significant_figure(x):
    return str(round(x)) if x >= 1 else f"{float(f'{x:.1g}'):g}"


def _format_perf(perf):
    parts = [perf.fwd_compute, perf.fwd_comms, perf.bwd_compute, perf.bwd_comms, perf.prefetch_compute]
    return f"{round(perf.total, 3)} ({','.join(_one_significant_figure(p) for p in parts)})"


class EmbeddingStats(Stats):
    """After `log`, the lines are also in `stats_table`."""

    def __init__(self):
        self._width = MIN_WIDTH
        self.stats_table = []

    def log(self, sharding_plan, topology, batch_size, storage_reservation, num_proposals, num_plans, run_time,
            best_plan, constraints=None, sharders=None, debug=False):
        rank_rows = self._rank_rows(topology, storage_reservation, best_plan, constraints)
        lines = [f"--- Evaluated {num_proposals} proposal(s), found {num_plans} possible plan(s), "
                 f"ran for {run_time:.2f}s ---"]
        body = []
        if sharding_plan.plan:
            body += rank_rows + ["", "Perf: Total perf (Forward compute, Forward comms, Backward compute, "
                                     "Backward comms, Prefetch compute)",
                                 "Input: MB/iteration, Output: MB/iteration, Shards: number of tables",
                                 "HBM: estimated peak memory usage for shards, dense tensors, and features (KJT)"]
        if debug:
            body += ["", "Parameter Info:"] + self._parameter_rows(best_plan, constraints)
        body += ["", f"Batch Size: {batch_size}"]
        if not sharding_plan.plan:
            body += ["", f"World Size: {topology.world_size}"]
        if debug:
            body += self._reservation_rows(storage_reservation)
        self._width = max([MIN_WIDTH] + [len(row) + 8 for row in body + lines])
        width = self._width
        table = ["#" * width, f"#{'--- Planner Statistics ---':^{width - 2}}#", f"#{lines[0]:^{width - 2}}#",
                 f"#{'-' * (width - 4):^{width - 2}}#"]
        table += [f"# {row:<{width - 3}}#" for row in body]
        table.append("#" * width)
        self.stats_table = table
        for row in table:
            logger.info(row)

    @staticmethod
    def _reserved(storage_reservation):
        dense = getattr(storage_reservation, "_dense_storage", None) or Storage(0, 0)
        kjt = getattr(storage_reservation, "_kjt_storage", None) or Storage(0, 0)
        return getattr(storage_reservation, "_percentage", 0.0), dense, kjt

    def _rank_rows(self, topology, storage_reservation, best_plan, constraints):
        percent, dense, kjt = self._reserved(storage_reservation)
        world = topology.world_size
        hbm, ddr = [dense.hbm + kjt.hbm] * world, [dense.ddr + kjt.ddr] * world
        perf = [Perf(0, 0, 0, 0) for _ in range(world)]
        inputs, outputs = [0.0] * world, [0.0] * world
        shards = [dict() for _ in range(world)]
        used_types = set()
        for option in best_plan:
            abbr = _ABBREVIATIONS[option.sharding_type]
            used_types.add(abbr)
            input_sizes, output_sizes = option_io_sizes(option, topology, constraints)
            for shard, input_size, output_size in zip(option.shards, input_sizes, output_sizes):
                if shard.rank is None or shard.rank < 0:
                    continue
                hbm[shard.rank] += shard.storage.hbm
                ddr[shard.rank] += shard.storage.ddr
                perf[shard.rank] += shard.perf
                shards[shard.rank][abbr] = shards[shard.rank].get(abbr, 0) + 1
                inputs[shard.rank] += bytes_to_mb(input_size)
                outputs[shard.rank] += bytes_to_mb(output_size)
        rows = [["Rank", "HBM (GB)", "DDR (GB)", "Perf (ms)", "Input (MB)", "Output (MB)", "Shards"],
                ["------", "----------", "----------", "-----------", "------------", "-------------", "--------"]]
        for device in topology.devices:
            rank = device.rank
            hbm_cap = (1 - percent) * device.storage.hbm
            hbm_ratio = hbm[rank] / hbm_cap if topology.compute_device == "cuda" and hbm_cap else 0
            ddr_ratio = ddr[rank] / device.storage.ddr if device.storage.ddr > 0 else 0
            counts = " ".join(f"{t}: {shards[rank].get(t, 0)}" for t in sorted(used_types))
            rows.append([rank, f"{round(bytes_to_gb(hbm[rank]), 3)} ({hbm_ratio:.0%})",
                         f"{round(bytes_to_gb(ddr[rank]), 3)} ({ddr_ratio:.0%})", _format_perf(perf[rank]),
                         f"{round(inputs[rank], 2)}", f"{round(outputs[rank], 2)}", counts])
        return _format_table(rows)

    @staticmethod
    def _parameter_rows(best_plan, constraints):
        rows = [["FQN", "Sharding", "Compute Kernel", "Perf (ms)", "Storage (HBM, DDR)", "Pooling Factor",
                 "Output", "Weighted", "Emb Dim", "Hash Size", "Ranks"],
                ["-----", "----------", "----------------", "-----------", "--------------------", "----------------",
                 "--------", "----------", "---------", "-----------", "-------"]]
        for option in best_plan:
            storage = option.total_storage
            dim = option.tensor.shape[1]
            if option.sharding_type in (ShardingType.COLUMN_WISE.value, ShardingType.TABLE_COLUMN_WISE.value):
                dim = f"{dim} ({option.shards[0].size[1]})"
            ranks = sorted({shard.rank for shard in option.shards if shard.rank is not None})
            rows.append([option.fqn, _ABBREVIATIONS[option.sharding_type], option.compute_kernel,
                         round(option.total_perf, 3),
                         f"({round(bytes_to_gb(storage.hbm), 3)} GB, {round(bytes_to_gb(storage.ddr), 3)} GB)",
                         str([round(f, 3) for f in option.input_lengths]), "pooled" if option.is_pooled else "sequence",
                         "weighted" if option.is_weighted else "unweighted", dim, option.tensor.shape[0],
                         ",".join(map(str, ranks)) if ranks else "None"])
        return _format_table(rows)

    @staticmethod
    def _reservation_rows(storage_reservation):
        percent, dense, kjt = EmbeddingStats._reserved(storage_reservation)
        return ["", "Reserved Memory:", f"    Percent of Total HBM: {percent:.0%}",
                f"    Dense Storage (per rank): HBM: {round(bytes_to_gb(dense.hbm), 3)} GB, "
                f"DDR: {round(bytes_to_gb(dense.ddr), 3)} GB",
                f"    KJT Storage (per rank): HBM: {round(bytes_to_gb(kjt.hbm), 3)} GB, "
                f"DDR: {round(bytes_to_gb(kjt.ddr), 3)} GB"]
