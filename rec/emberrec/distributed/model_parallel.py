"""`DistributedModelParallel` runs a model's tables sharded over processes by a plan; emberrec
has no distributed runtime yet, so it plans (`emberrec.distributed.planner`) but cannot run."""

__all__ = ["DistributedModelParallel"]


class DistributedModelParallel:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError("DistributedModelParallel: emberrec plans shardings "
                                  "(emberrec.distributed.planner) but cannot run a sharded model yet")
