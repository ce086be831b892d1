"""TorchText's `torchtext.functional`: each function takes one sequence or a batch of them."""
import numpy as np

import ember


def _is_seq(x):
    return isinstance(x, (list, tuple))


def _kind(input, fn):
    """'single' for a list of scalars (int or str), 'batch' for a list of such lists."""
    if not _is_seq(input):
        raise TypeError(f"{fn}(): input must be a list or a list of lists, got {type(input).__name__}")
    if all(_is_seq(x) for x in input) and input:
        return "batch"
    if any(_is_seq(x) for x in input):
        raise TypeError(f"{fn}(): input mixes lists and scalars")
    return "single"


def _check_ints(values, fn):
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{fn}(): expected int ids, got an element of type {type(v).__name__}")


def to_tensor(input, padding_value=None, dtype=ember.long):
    """A list of ids → a 1-D tensor; a batch → a 2-D tensor, its rows padded at the end with
    `padding_value` (a ragged batch without `padding_value` is an error)."""
    if _kind(input, "to_tensor") == "single":
        _check_ints(input, "to_tensor")
        return ember.tensor(list(input), dtype=dtype)
    for row in input:
        _check_ints(row, "to_tensor")
    width = max(len(row) for row in input)
    if padding_value is None:
        if any(len(row) != width for row in input):
            raise ValueError("to_tensor(): rows have different lengths; pass padding_value to pad them")
        padding_value = 0
    out = np.full((len(input), width), padding_value, dtype=np.int64)
    for i, row in enumerate(input):
        out[i, : len(row)] = row
    return ember.from_numpy(out).to(dtype)


def truncate(input, max_seq_len):
    """Keeps the first `max_seq_len` items of the sequence (or of each sequence of a batch)."""
    if isinstance(max_seq_len, bool) or not isinstance(max_seq_len, int):
        raise TypeError(f"truncate(): max_seq_len must be an int, got {type(max_seq_len).__name__}")
    if _kind(input, "truncate") == "single":
        return list(input[:max_seq_len])
    return [list(ids[:max_seq_len]) for ids in input]


def add_token(input, token_id, begin=True):
    """Adds `token_id` (an int or a str) at the start (or end) of the sequence or of each
    sequence of a batch."""
    if isinstance(token_id, bool) or not isinstance(token_id, (int, str)):
        raise TypeError(f"add_token(): token_id must be an int or a str, got {type(token_id).__name__}")
    if _kind(input, "add_token") == "single":
        return [token_id] + list(input) if begin else list(input) + [token_id]
    return [[token_id] + list(ids) if begin else list(ids) + [token_id] for ids in input]


def str_to_int(input):
    """Converts strings of digits (TorchText's BERTTokenizer ids) to ints."""
    if _kind(input, "str_to_int") == "single":
        return [int(x) for x in input]
    return [[int(x) for x in ids] for ids in input]


__all__ = ["to_tensor", "truncate", "add_token", "str_to_int"]
