"""`torch.backends.cudnn`: cuDNN's flags. Ember does not use cuDNN; the flags can be set (and
are kept for the CUDA backend) so that scripts which set them run unchanged."""
from ember.backends import _set_flags

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available():
    """False: Ember does not use cuDNN."""
    return False


def version():
    """None, as PyTorch returns when cuDNN is not available."""
    return None


def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """Sets the flags for a `with` block and restores them after, as `torch.backends.cudnn.flags`."""
    import sys
    return _set_flags(sys.modules[__name__], enabled=enabled, benchmark=benchmark, benchmark_limit=benchmark_limit,
                      deterministic=deterministic, allow_tf32=allow_tf32)
