"""Padding a list of variable-length sequences into one tensor."""
import ember
from ember import _C

__all__ = ["pad_sequence"]


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stacks tensors of shape (L_i, *) into (L_max, B, *) (or (B, L_max, *) with
    `batch_first`), padded with `padding_value` on `padding_side`."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, _C.Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        gap = longest - s.shape[0]
        if gap:
            filler = ember.full((gap,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype)
            s = ember.cat([s, filler] if padding_side == "right" else [filler, s])
        padded.append(s)
    return ember.stack(padded, dim=0 if batch_first else 1)
