"""`ember.cpu.amp`: PyTorch's deprecated CPU spellings of `ember.autocast("cpu")` and
`ember.amp.GradScaler("cpu")`."""
import warnings

from ember import _C
from ember.amp.autocast_mode import autocast as _autocast
from ember.amp.grad_scaler import GradScaler as _GradScaler

__all__ = ["autocast", "GradScaler"]


class autocast(_autocast):
    """`ember.autocast("cpu", ...)` with this class's defaults (bfloat16, cache enabled)."""

    def __init__(self, enabled=True, dtype=_C.bfloat16, cache_enabled=True):
        warnings.warn("`ember.cpu.amp.autocast(args...)` is deprecated. Please use `ember.amp.autocast('cpu', args...)` instead.",
                      FutureWarning, stacklevel=2)
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """`ember.amp.GradScaler("cpu", ...)`."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, enabled=True):
        warnings.warn("`ember.cpu.amp.GradScaler(args...)` is deprecated. Please use `ember.amp.GradScaler('cpu', args...)` instead.",
                      FutureWarning, stacklevel=2)
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)
