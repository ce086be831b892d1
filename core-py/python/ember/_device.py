"""`ember.device` and the checks every `device=` argument goes through. Device strings are
parsed by the core (`_C._parse_device`), with PyTorch's grammar and errors."""
from ember import _C


class device:
    """`ember.device("cpu")`, `device("cuda", 1)`, `device("cuda:1")`, `device("mps")`,
    `device(0)` (CUDA device 0, as PyTorch)."""

    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            self.type, self.index = type.type, type.index
            return
        if isinstance(type, int) and not isinstance(type, bool) and index is None:
            type, index = "cuda", type
        if not isinstance(type, str):
            raise TypeError(f"device(): argument 'type' must be str, not {type.__class__.__name__}")
        kind, parsed = _C._parse_device(type)
        if parsed is not None and index is not None:
            raise RuntimeError(f"type (string) must not include an index because index was passed explicitly: {type}")
        if index is not None:
            if isinstance(index, bool) or not isinstance(index, int):
                raise TypeError(f"device(): argument 'index' must be int, not {index.__class__.__name__}")
            if index < 0:
                raise RuntimeError(f"Device index must not be negative, got {index}")
        self.type, self.index = kind, parsed if index is None else index

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        idx = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{idx})"

    def __reduce__(self):
        return (device, (self.type, self.index))


def check(dev):
    """The device `dev` names (None stays None), refused with a RuntimeError naming what is
    missing when this build or machine has no backend for it."""
    if dev is None:
        return None
    d = dev if isinstance(dev, device) else device(dev)
    _C._check_device(str(d))
    return d


def same(t, dev):
    """Whether tensor `t` is on `dev` (an index-less device matches any index of its type)."""
    here = t.device
    return here.type == dev.type and (dev.index is None or dev.type == "cpu" or here.index == dev.index)


def move(t, dev):
    """`t` on `dev` (None: where it is): itself when it is there, else a copy."""
    if dev is None:
        return t
    dev = check(dev)
    return t if same(t, dev) else t._to_device(str(dev))
