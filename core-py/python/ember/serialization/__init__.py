"""`ember.serialization`: `save` and `load` in PyTorch's checkpoint formats (zip and legacy),
with no PyTorch needed, and the globals `weights_only` loading may use beyond Ember's own
(`add_safe_globals` ...). `ember.save` / `ember.load` are these functions."""
from ember.serialization._load import load
from ember.serialization._safe_globals import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals
from ember.serialization._save import save

__all__ = ["save", "load", "add_safe_globals", "safe_globals", "get_safe_globals", "clear_safe_globals"]
