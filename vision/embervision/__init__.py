"""embervision: TorchVision's datasets, transforms, models, io and utils, on Ember tensors.

What works and what is missing: README.md.
"""

__version__ = "0.1.0"

from . import datasets, io, models, ops, transforms, tv_tensors, utils  # noqa: E402,F401
