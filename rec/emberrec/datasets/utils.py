"""`Batch`: one training batch of a recommendation model, as TorchRec's."""
from dataclasses import dataclass

import ember

from emberrec.sparse.jagged_tensor import KeyedJaggedTensor

__all__ = ["Batch"]


@dataclass
class Batch:
    dense_features: ember.Tensor
    sparse_features: KeyedJaggedTensor
    labels: ember.Tensor

    def to(self, device, non_blocking=False):
        return Batch(self.dense_features.to(device), self.sparse_features.to(device, non_blocking),
                     self.labels.to(device))

    def pin_memory(self):
        """`self`: a CPU-only build has no accelerator to pin memory for."""
        return self
