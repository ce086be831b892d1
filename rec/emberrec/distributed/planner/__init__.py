"""The sharding planner, as TorchRec's `torchrec.distributed.planner`: finds how to shard a
model's embedding tables over a described topology (ranks, their HBM / DDR, bandwidths) from
estimates of each option's perf and storage. See planners.py for the pipeline."""
from emberrec.distributed.planner.planners import EmbeddingShardingPlanner
from emberrec.distributed.planner.types import ParameterConstraints, Topology
from emberrec.distributed.planner.utils import bytes_to_gb, sharder_name

__all__ = ["EmbeddingShardingPlanner", "ParameterConstraints", "Topology", "bytes_to_gb", "sharder_name"]
