"""TorchRec's DeepFM pieces: `DeepFM` (a dense module over the flattened embeddings) and
`FactorizationMachine` (TorchRec's second-order term over the flattened embeddings)."""
import ember
import ember.nn as nn

__all__ = ["DeepFM", "FactorizationMachine"]


def _flatten_input(embeddings):
    if not isinstance(embeddings, (list, tuple)) or not embeddings \
            or not all(isinstance(e, ember.Tensor) and e.dim() >= 1 for e in embeddings):
        raise TypeError("embeddings must be a non-empty list of tensors, each (batch, ...)")
    batch = {e.shape[0] for e in embeddings}
    if len(batch) != 1:
        raise ValueError(f"every embedding tensor must have the same batch size, got {sorted(batch)}")
    return ember.cat([e.flatten(1) if e.dim() > 1 else e.unsqueeze(1) for e in embeddings], 1)


class DeepFM(nn.Module):
    """dense_module(all embeddings flattened and concatenated): (batch, ...) -> whatever the
    dense module returns. State-dict keys `dense_module.*`."""

    def __init__(self, dense_module):
        super().__init__()
        if not isinstance(dense_module, nn.Module):
            raise TypeError(f"dense_module must be an ember.nn.Module, got {type(dense_module).__name__}")
        self.dense_module = dense_module

    def forward(self, embeddings):
        return self.dense_module(_flatten_input(embeddings))


class FactorizationMachine(nn.Module):
    """0.5 * ((sum_i x_i)^2 - sum_i x_i^2) over the flattened, concatenated embeddings x:
    (batch, 1). (TorchRec's formula: every entry of every embedding is one factor.)"""

    def forward(self, embeddings):
        fm_input = _flatten_input(embeddings)
        sum_of_input = fm_input.sum(1, keepdim=True)
        sum_of_square = (fm_input * fm_input).sum(1, keepdim=True)
        return 0.5 * (sum_of_input * sum_of_input - sum_of_square)
