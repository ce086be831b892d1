"""Communication hooks for DistributedDataParallel.register_comm_hook: `default_hooks`
(allreduce, fp16/bf16 compression) and `powerSGD_hook` (low-rank compression)."""
from ember.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook  # noqa: F401
