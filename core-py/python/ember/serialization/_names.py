"""The PyTorch global names a checkpoint uses for Ember's dtypes and storages."""
import ember

# The typed storage class PyTorch names in a checkpoint for each dtype.
STORAGE_CLASS = {
    ember.float32: "FloatStorage", ember.float64: "DoubleStorage", ember.float16: "HalfStorage",
    ember.bfloat16: "BFloat16Storage", ember.int64: "LongStorage", ember.int32: "IntStorage",
    ember.int16: "ShortStorage", ember.int8: "CharStorage", ember.uint8: "ByteStorage",
    ember.bool: "BoolStorage", ember.complex64: "ComplexFloatStorage", ember.complex128: "ComplexDoubleStorage",
}
STORAGE_DTYPE = {name: dtype for dtype, name in STORAGE_CLASS.items()}

# `torch.<name>` for every dtype Ember has, aliases included (`torch.float`, `torch.long` ...).
DTYPE_NAMES = {
    **{d.name: d for d in STORAGE_CLASS},
    "float": ember.float32, "double": ember.float64, "half": ember.float16, "long": ember.int64,
    "int": ember.int32, "short": ember.int16, "cfloat": ember.complex64, "cdouble": ember.complex128,
}
