"""`ember.distributed.optim`: ZeroRedundancyOptimizer (optimizer state sharded across ranks)."""
from ember.distributed.optim.zero_redundancy_optimizer import ZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer"]
