"""`NoopPerfModel`, as TorchRec's: rates a placed plan by its slowest rank's estimated perf."""
from emberrec.distributed.planner.types import PerfModel

__all__ = ["NoopPerfModel"]


class NoopPerfModel(PerfModel):

    def __init__(self, topology):
        self._topology = topology

    def rate(self, plan):
        perfs = [0] * self._topology.world_size
        for sharding_option in plan:
            for shard in sharding_option.shards:
                perfs[shard.rank] += shard.perf.total
        return max(perfs)
