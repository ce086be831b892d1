class device:
    """`ember.device("cpu")`, `device("cuda", 1)`, `device("cuda:1")`, `device("mps")`."""

    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            self.type, self.index = type.type, type.index
            return
        if not isinstance(type, str):
            raise TypeError(f"device(): expected a string or device, got {type.__class__.__name__}")
        kind, _, ordinal = type.partition(":")
        if kind not in ("cpu", "cuda", "mps"):
            raise RuntimeError(f"Expected one of cpu, cuda, mps device type at start of device string: {type}")
        if ordinal:
            if index is not None:
                raise RuntimeError(f"device(): index given twice in '{type}' and index={index}")
            if not ordinal.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(ordinal)
        self.type, self.index = kind, index

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


def check_cpu(dev):
    """Ember runs on the CPU today; any other device is refused clearly."""
    if dev is None:
        return
    d = device(dev) if not isinstance(dev, device) else dev
    if d.type != "cpu":
        raise RuntimeError(f"device '{d}' is not available: this build of Ember supports only the CPU backend")
