"""`ember.serialization`: `save` and `load` in PyTorch's checkpoint formats (zip and legacy),
with no PyTorch needed. `ember.save` / `ember.load` are these functions."""
from ember.serialization._load import load
from ember.serialization._save import save

__all__ = ["save", "load"]
