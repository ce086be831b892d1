"""Automatic mixed precision (PyTorch's `torch.amp`): `autocast` runs the ops of its device
type's policy in a lower precision (bfloat16 by default on the CPU, float16 on CUDA) or in
float32 (see `autocast_mode.py` and `_policy.py`); `GradScaler` scales the loss so low-precision
gradients keep their small values."""
from ember.amp.autocast_mode import autocast, is_autocast_available
from ember.amp.grad_scaler import GradScaler

__all__ = ["autocast", "is_autocast_available", "GradScaler"]
