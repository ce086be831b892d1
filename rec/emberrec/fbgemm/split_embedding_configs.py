"""FBGEMM's `SparseType` (the row formats of its embedding tables), the FP8 configuration, and
`EmbOptimType` (the optimizers of the training embedding bag)."""
import enum

__all__ = ["SparseType", "QuantizationConfig", "FP8QuantizationConfig", "EmbOptimType"]


class EmbOptimType(enum.Enum):
    """The optimizers FBGEMM fuses into the training embedding bag's backward pass, with
    FBGEMM's values. The training embedding bag runs EXACT_SGD, EXACT_ADAGRAD,
    EXACT_ROWWISE_ADAGRAD, ADAM, PARTIAL_ROWWISE_ADAM, LAMB and PARTIAL_ROWWISE_LAMB; the
    others raise NotImplementedError."""
    SGD = "sgd"
    EXACT_SGD = "exact_sgd"
    LAMB = "lamb"
    ADAM = "adam"
    EXACT_ADAGRAD = "exact_adagrad"
    EXACT_ROWWISE_ADAGRAD = "exact_row_wise_adagrad"
    LARS_SGD = "lars_sgd"
    PARTIAL_ROWWISE_ADAM = "partial_row_wise_adam"
    PARTIAL_ROWWISE_LAMB = "partial_row_wise_lamb"
    ROWWISE_ADAGRAD = "row_wise_adagrad"
    NONE = "none"

    def __str__(self):
        return self.value


class QuantizationConfig:
    """A format's quantization parameters (none, for formats other than FP8)."""

    def __init__(self):
        self.config = {}

    def get(self, name):
        return self.config.get(name, -1)


class FP8QuantizationConfig(QuantizationConfig):
    """HFP8 with `exponent_bits` exponent bits biased by `exponent_bias`; `max_position` is
    FBGEMM's saturation value, 2^(2^bits - 2 - bias) * (2 - 2^(bits - 7))."""

    def __init__(self, exponent_bits, exponent_bias):
        super().__init__()
        self.config = {
            "exponent_bits": exponent_bits,
            "exponent_bias": exponent_bias,
            "max_position": 2.0 ** ((1 << exponent_bits) - 2 - exponent_bias) * (2 - 2.0 ** (exponent_bits - 7)),
        }

    def get(self, name):
        if name not in self.config:
            raise RuntimeError(f"{name} must be set in config")
        return self.config[name]


_CODES = {"fp32": 0, "fp16": 1, "int8": 2, "int4": 3, "int2": 4, "bf16": 5, "fp8": 6}
_BITS = {"fp32": 32, "fp16": 16, "fp8": 8, "int8": 8, "int4": 4, "int2": 2, "bf16": 16}


class SparseType(enum.Enum):
    """A row format. The inference embedding bag stores FP32, FP16, FP8, INT8, INT4 and INT2
    rows; BF16 exists as an output type name only (not supported here)."""
    FP32 = "fp32"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"
    INT4 = "int4"
    INT2 = "int2"
    BF16 = "bf16"

    def __str__(self):
        return self.value

    @staticmethod
    def from_int(ty):
        for name, code in _CODES.items():
            if code == ty:
                return SparseType(name)
        raise ValueError(f"Unsupported sparse type: {ty}")

    def as_int(self):
        return _CODES[self.value]

    def bit_rate(self):
        return _BITS[self.value]

    def is_float(self):
        return self in (SparseType.FP32, SparseType.FP16, SparseType.FP8, SparseType.BF16)

    def default_config(self):
        return FP8QuantizationConfig(4, 7) if self is SparseType.FP8 else QuantizationConfig()
