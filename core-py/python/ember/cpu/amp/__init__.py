"""`ember.cpu.amp.autocast`: PyTorch's deprecated CPU spelling of `ember.autocast("cpu")`."""
import warnings

from ember import _C
from ember.amp.autocast_mode import autocast as _autocast

__all__ = ["autocast"]


class autocast(_autocast):
    """`ember.autocast("cpu", ...)` with this class's defaults (bfloat16, cache enabled)."""

    def __init__(self, enabled=True, dtype=_C.bfloat16, cache_enabled=True):
        warnings.warn("`ember.cpu.amp.autocast(args...)` is deprecated. Please use `ember.amp.autocast('cpu', args...)` instead.",
                      FutureWarning, stacklevel=2)
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
