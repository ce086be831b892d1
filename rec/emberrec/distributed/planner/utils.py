"""Small helpers of the planner, as TorchRec's `torchrec.distributed.planner.utils`."""
from functools import reduce

__all__ = ["bytes_to_gb", "bytes_to_mb", "gb_to_bytes", "prod", "sharder_name", "placement", "storage_repr_in_gb",
           "reset_shard_rank"]


def sharder_name(module_type):
    """The key a module type's sharder is found under: its qualified class name."""
    return module_type.__module__ + "." + module_type.__name__


def bytes_to_gb(num_bytes):
    return float(num_bytes / (1024 * 1024 * 1024))


def bytes_to_mb(num_bytes):
    return float(num_bytes / (1024 * 1024))


def gb_to_bytes(gb):
    return int(gb * 1024 * 1024 * 1024)


def prod(iterable):
    return reduce(lambda x, y: x * y, iterable, 1)


def placement(compute_device, rank, local_size):
    """Where a shard lives: "rank:3/cuda:3" (the device index within its host) or "rank:0/cpu"."""
    device = f"{compute_device}:{rank % local_size}" if compute_device == "cuda" else compute_device
    return f"rank:{rank}/{device}"


def storage_repr_in_gb(storage):
    if storage is None:
        return ""
    return f"Storage(hbm={round(bytes_to_gb(storage.hbm), 3)} GB, ddr={round(bytes_to_gb(storage.ddr), 3)} GB)"


def reset_shard_rank(proposal):
    for sharding_option in proposal:
        for shard in sharding_option.shards:
            shard.rank = None
