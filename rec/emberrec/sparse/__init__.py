"""Jagged (variable-length) sparse data: `JaggedTensor`, `KeyedJaggedTensor`, `KeyedTensor`."""
from emberrec.sparse.jagged_tensor import JaggedTensor, KeyedJaggedTensor, KeyedTensor

__all__ = ["JaggedTensor", "KeyedJaggedTensor", "KeyedTensor"]
