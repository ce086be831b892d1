"""TorchArrow's name for the tensor conversions: ``import torcharrow.pytorch as tap`` ports as
``import emberarrow.pytorch as tap`` (``tap.rec.Dense`` included). The conversions themselves live
in ``emberarrow.tensor_conversion``; this module only gives them TorchArrow's module names."""
from emberarrow import tensor_conversion as rec  # noqa: F401  (tap.rec.Dense, tap.rec.JaggedSparse, ...)
from emberarrow.tensor_conversion import (  # noqa: F401
    DefaultTensorConversion,
    PackedList,
    PackedMap,
    PadSequence,
    TensorConversion,
    WithPresence,
    from_tensor,
)
