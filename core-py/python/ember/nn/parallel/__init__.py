"""`ember.nn.parallel`: DistributedDataParallel (data parallelism over ember.distributed)."""
from ember.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
