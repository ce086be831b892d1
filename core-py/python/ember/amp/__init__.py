"""Automatic mixed precision (PyTorch's `torch.amp`): `autocast` runs the ops of its policy in a
lower precision (bfloat16 by default on the CPU) or in float32. See `autocast_mode.py`."""
from ember.amp.autocast_mode import autocast, is_autocast_available

__all__ = ["autocast", "is_autocast_available"]
