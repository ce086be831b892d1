"""`ember.autograd.graph`: the graph's node type (`tensor.grad_fn`)."""
from ember._C import Node

__all__ = ["Node"]
