"""`torch.backends.mkldnn`: oneDNN's flags. Ember's CPU kernels are its own, not oneDNN's:
`is_available()` is False and `enabled` has no effect."""
from ember.backends import _set_flags

enabled = True
deterministic = False


def is_available():
    """False: Ember does not use oneDNN."""
    return False


def flags(enabled=False, deterministic=False):
    """Sets the flags for a `with` block and restores them after."""
    import sys
    return _set_flags(sys.modules[__name__], enabled=enabled, deterministic=deterministic)
