"""Settings applied across a whole DataPipe graph: sharding, shuffling on/off, shuffle seeds."""
from emberdata._seed import derived_seeds
from emberdata.graph import list_dps, traverse


def _is_shardable(dp):
    return callable(getattr(type(dp), "is_shardable", None)) and dp.is_shardable()


def apply_sharding(datapipe, num_of_instances, instance_id):
    """Keeps every `num_of_instances`-th sample starting at `instance_id` at each sharding point.

    Two sharding points on one path would shard twice (a likely mistake), so that raises.
    """
    if not isinstance(num_of_instances, int) or num_of_instances < 1:
        raise ValueError(f"apply_sharding(): num_of_instances must be an int >= 1, got {num_of_instances!r}")
    if not isinstance(instance_id, int) or not 0 <= instance_id < num_of_instances:
        raise ValueError(f"apply_sharding(): instance_id must be in [0, {num_of_instances}), got {instance_id!r}")

    def walk(graph, sharded_above):
        for dp, sub in graph.items():
            shardable = _is_shardable(dp)
            if shardable:
                if sharded_above is not None:
                    raise RuntimeError(f"Sharding twice on a single pipeline is likely unintended: {sharded_above!r} above {dp!r}")
                dp.apply_sharding(num_of_instances, instance_id)
            walk(sub, dp if shardable else sharded_above)

    walk(traverse(datapipe), None)
    return datapipe


def apply_shuffle_settings(datapipe, shuffle=None):
    """Turns every shuffling DataPipe (those with `set_shuffle`) on or off; None leaves them as they are."""
    if shuffle is None:
        return datapipe
    for dp in list_dps(traverse(datapipe)):
        if callable(getattr(type(dp), "set_shuffle", None)):
            dp.set_shuffle(bool(shuffle))
    return datapipe


def apply_shuffle_seed(datapipe, seed):
    """Gives each random DataPipe (those with `set_seed`) its own seed derived from `seed`.

    The graph is walked in a fixed order, so every worker and rank that receives the same `seed`
    shuffles identically before sharding: each sample is then seen exactly once.
    """
    randoms = [dp for dp in list_dps(traverse(datapipe)) if callable(getattr(type(dp), "set_seed", None))]
    for dp, s in zip(randoms, derived_seeds(seed, len(randoms))):
        dp.set_seed(s)
    return datapipe
