"""embertext: TorchText-style tokenizers, transforms and datasets, on Ember tensors.

Nothing is implemented in this package yet; see README.md for what is planned.
"""

__version__ = "0.1.0"
