"""FBGEMM's enums for table-batched embeddings, with FBGEMM's values."""
import enum

__all__ = ["EmbeddingLocation", "PoolingMode", "BoundsCheckMode", "ComputeDevice", "WeightDecayMode"]


class EmbeddingLocation(enum.IntEnum):
    DEVICE = 0
    MANAGED = 1
    MANAGED_CACHING = 2
    HOST = 3
    MTIA = 4


class PoolingMode(enum.IntEnum):
    SUM = 0
    MEAN = 1
    NONE = 2

    def do_pooling(self):
        return self is not PoolingMode.NONE


class BoundsCheckMode(enum.IntEnum):
    """What an index outside its table does: FATAL raises IndexError; WARNING reads row 0 in
    its place, warns and counts it in `bounds_check_warning`; IGNORE reads row 0 silently.
    NONE, which in FBGEMM skips the check, behaves as IGNORE here (nothing reads outside a
    table)."""
    FATAL = 0
    WARNING = 1
    IGNORE = 2
    NONE = 3


class ComputeDevice(enum.IntEnum):
    CPU = 0
    CUDA = 1
    MTIA = 2


class WeightDecayMode(enum.IntEnum):
    """How EXACT_ROWWISE_ADAGRAD decays the weights: L2 adds `weight_decay * w` to the gradient,
    DECOUPLE shrinks the weights by `learning_rate * weight_decay` apart from the adaptive step.
    COUNTER, COWCLIP and DECOUPLE_GLOBAL raise NotImplementedError."""
    NONE = 0
    L2 = 1
    DECOUPLE = 2
    COUNTER = 3
    COWCLIP = 4
    DECOUPLE_GLOBAL = 5
