"""`ember.nn`: neural-network building blocks. The functional kernels are in `ember.nn.functional`;
modules come with the training issue."""
from ember.nn import functional  # noqa: F401
