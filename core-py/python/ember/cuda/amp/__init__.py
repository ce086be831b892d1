"""`ember.cuda.amp`: PyTorch's deprecated CUDA spellings of `ember.autocast("cuda")` and
`ember.amp.GradScaler("cuda")`."""
import warnings

from ember import _C
from ember.amp.autocast_mode import autocast as _autocast
from ember.amp.grad_scaler import GradScaler as _GradScaler

__all__ = ["autocast", "GradScaler"]


class autocast(_autocast):
    """`ember.autocast("cuda", ...)` with this class's defaults (float16, cache enabled)."""

    def __init__(self, enabled=True, dtype=_C.float16, cache_enabled=True):
        warnings.warn("`ember.cuda.amp.autocast(args...)` is deprecated. Please use `ember.amp.autocast('cuda', args...)` instead.",
                      FutureWarning, stacklevel=2)
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """`ember.amp.GradScaler("cuda", ...)`."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, enabled=True):
        warnings.warn("`ember.cuda.amp.GradScaler(args...)` is deprecated. Please use `ember.amp.GradScaler('cuda', args...)` instead.",
                      FutureWarning, stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)
