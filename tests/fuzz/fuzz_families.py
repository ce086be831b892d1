"""The op families of the differential suite, by name (each a function returning its ops)."""
import fuzz_ops_elementwise as elementwise
import fuzz_ops_index as index
import fuzz_ops_math as math_ops
import fuzz_ops_reduce as reduce
import fuzz_ops_shape as shape

FAMILIES = {
    "unary": elementwise.unary_ops,
    "binary": elementwise.binary_ops,
    "reduce": reduce.reduce_ops,
    "shape": shape.shape_ops,
    "index": index.index_ops,
    "sort": index.sort_ops,
    "matmul": math_ops.matmul_ops,
    "linalg": math_ops.linalg_ops,
    "fft": math_ops.fft_ops,
    "creation": math_ops.creation_ops,
    "convert": math_ops.convert_ops,
}
