"""`ember.utils`."""
from ember.utils import hooks  # noqa: F401
