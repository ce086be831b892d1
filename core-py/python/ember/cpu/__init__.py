"""`ember.cpu`: PyTorch's `torch.cpu` namespace (only `amp` so far)."""
from ember.cpu import amp

__all__ = ["amp"]
