"""The MPI side of ember.distributed: importing mpi4py, and ember tensors seen as MPI buffers.

Collectives work on the tensor's own memory (a NumPy view of it, or for bfloat16, which NumPy
lacks, a uint16 view made from `data_ptr()`), so nothing is copied on the way in or out."""
import ctypes
import enum
import sys

import numpy as np

import ember

try:
    import mpi4py

    # Importing ember.distributed starts nothing: init_process_group initialises MPI. And
    # MPI_Finalize waits for every rank, so after a failure the survivors must exit without it:
    # ember.distributed finalizes MPI itself (see _work.py) instead of mpi4py's atexit.
    if "mpi4py.MPI" not in sys.modules:
        mpi4py.rc.initialize = False
        mpi4py.rc.finalize = False
    from mpi4py import MPI
except ImportError:  # the `distributed` extra is not installed
    MPI = None


def require_mpi():
    if MPI is None:
        raise RuntimeError("ember.distributed needs mpi4py and an MPI library: pip install 'ember[distributed]' "
                           "(mpi4py with the MPICH wheel)")
    return MPI


class ReduceOp:
    """The reduction of all_reduce, reduce and reduce_scatter (torch.distributed.ReduceOp): the
    class attributes (ReduceOp.SUM, ...), or an instance wrapping one, as `ReduceOp(ReduceOp.MAX)`
    and `_make_nccl_premul_sum(factor)` make."""

    class RedOpType(enum.Enum):
        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7
        PREMUL_SUM = 8
        UNUSED = 9

        def __repr__(self):
            return f"<RedOpType.{self.name}: {self.value}>"

    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM
    UNUSED = RedOpType.UNUSED

    def __init__(self, op=RedOpType.SUM, factor=None):
        if not isinstance(op, ReduceOp.RedOpType):
            raise TypeError(f"ReduceOp: expected a ReduceOp.RedOpType, but got {op!r}")
        self.op = op
        self.factor = factor  # PREMUL_SUM's multiplier

    def __eq__(self, other):
        if isinstance(other, ReduceOp):
            return self.op == other.op and self.factor == other.factor
        return self.op == other

    def __hash__(self):
        return hash(self.op)

    def __repr__(self):
        return f"ReduceOp({self.op.name})" if self.factor is None else f"ReduceOp({self.op.name}, factor={self.factor!r})"


# dtype code (sent in collective fingerprints), NumPy type of the buffer view
DTYPES = {
    ember.float32: (0, np.float32), ember.float64: (1, np.float64), ember.float16: (2, np.float16),
    ember.bfloat16: (3, np.uint16), ember.int8: (4, np.int8), ember.int16: (5, np.int16),
    ember.int32: (6, np.int32), ember.int64: (7, np.int64), ember.uint8: (8, np.uint8),
    ember.bool: (9, np.bool_), ember.complex64: (10, np.complex64), ember.complex128: (11, np.complex128),
}
DTYPE_NAMES = {code: str(dtype) for dtype, (code, _) in DTYPES.items()}
FLOATING = (ember.float32, ember.float64, ember.float16, ember.bfloat16)
COMPLEX = (ember.complex64, ember.complex128)


def dtype_code(tensor):
    return DTYPES[tensor.dtype][0]


def check_tensor(tensor, what):
    if not isinstance(tensor, ember.Tensor):
        raise TypeError(f"{what}: expected an ember.Tensor, but got {type(tensor).__name__}")
    if tensor.dtype not in DTYPES:
        raise TypeError(f"{what}: ember.distributed does not support {tensor.dtype} tensors")
    if not tensor.is_contiguous():
        raise ValueError(f"{what}: Tensors must be contiguous")


def view(tensor):
    """A flat NumPy array sharing the memory of a contiguous tensor."""
    if tensor.dtype == ember.bfloat16:
        n = tensor.numel()
        if n == 0:
            return np.empty(0, np.uint16)
        raw = (ctypes.c_uint16 * n).from_address(tensor.data_ptr())
        return np.frombuffer(raw, np.uint16)
    return np.asarray(tensor.detach()).reshape(-1)


def _bfloat16_to_float32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _float32_to_bfloat16(values):
    """Round to nearest even, as ember's own conversion (NaN stays NaN)."""
    u = values.view(np.uint32)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(values), np.uint16(0x7FC0), rounded)


def _bfloat16_op(combine):
    def apply(inbuf, inoutbuf, datatype):
        a = np.frombuffer(inbuf, np.uint16)
        b = np.frombuffer(inoutbuf, np.uint16)
        b[...] = _float32_to_bfloat16(combine(_bfloat16_to_float32(a), _bfloat16_to_float32(b)))
    return apply


_MPI_OPS = {}


def _mpi_ops():
    """{ReduceOp: MPI op}; for bool, sums and maxima are ORs, as in torch."""
    plain = {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD, ReduceOp.MIN: MPI.MIN,
             ReduceOp.MAX: MPI.MAX, ReduceOp.BAND: MPI.BAND, ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR}
    boolean = {ReduceOp.SUM: MPI.LOR, ReduceOp.MAX: MPI.LOR, ReduceOp.MIN: MPI.LAND, ReduceOp.PRODUCT: MPI.LAND,
               ReduceOp.BAND: MPI.BAND, ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR}
    return plain, boolean


def mpi_op(op, dtype):
    """The MPI reduction for `op` on `dtype` (AVG is a SUM divided afterwards)."""
    if not _MPI_OPS:
        _MPI_OPS["plain"], _MPI_OPS["bool"] = _mpi_ops()
    if dtype == ember.bool:
        return _MPI_OPS["bool"][op]
    if dtype == ember.bfloat16:  # MPICH has no bfloat16 arithmetic: a user op over float32
        base = ReduceOp.SUM if op == ReduceOp.AVG else op
        key = ("bf16", base)
        if key not in _MPI_OPS:
            combine = {ReduceOp.SUM: np.add, ReduceOp.PRODUCT: np.multiply, ReduceOp.MIN: np.minimum,
                       ReduceOp.MAX: np.maximum}[base]
            _MPI_OPS[key] = MPI.Op.Create(_bfloat16_op(combine), commute=True)
        return _MPI_OPS[key]
    return _MPI_OPS["plain"][op]


def check_reduce_op(op, dtype, what):
    """The ReduceOp.RedOpType of `op` (a ReduceOp instance gives its own), checked against `dtype`."""
    if isinstance(op, ReduceOp):
        op = op.op
    if not isinstance(op, ReduceOp.RedOpType):
        raise TypeError(f"{what}: op must be a ReduceOp, but got {op!r}")
    if op == ReduceOp.PREMUL_SUM:
        # As torch's Gloo and MPI backends: only NCCL implements it.
        raise RuntimeError(f"{what}: Cannot use ReduceOp.PREMUL_SUM with MPI or Gloo (ember.distributed's CPU "
                           "backends); as in torch, only NCCL supports it: multiply the tensor by the factor, then "
                           "use ReduceOp.SUM")
    if op == ReduceOp.UNUSED:
        raise ValueError(f"{what}: Unhandled ReduceOp UNUSED")
    if op == ReduceOp.AVG and dtype not in FLOATING + COMPLEX:
        raise ValueError(f"{what}: ReduceOp.AVG needs a floating point tensor, but got {dtype}")
    if op in (ReduceOp.MIN, ReduceOp.MAX) and dtype in COMPLEX:
        raise ValueError(f"{what}: ReduceOp.{op.name} is not defined for complex tensors")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and (dtype in FLOATING + COMPLEX):
        raise ValueError(f"{what}: ReduceOp.{op.name} needs an integer or bool tensor, but got {dtype}")
    return op


def _mpi_type(dtype):
    """The MPI datatype where mpi4py cannot infer it from the NumPy view (bfloat16 travels as
    16-bit words)."""
    if dtype == ember.bfloat16:
        return MPI.UINT16_T
    if dtype == ember.float16:
        return MPI.FLOAT16_T
    return None


def mpi_buffer(array, dtype):
    """A buffer specification for mpi4py."""
    kind = _mpi_type(dtype)
    return array if kind is None else [array, kind]


def mpi_vector(array, counts, displacements, dtype):
    """A buffer specification with per-rank counts and displacements (the v-collectives)."""
    spec = [array, (list(map(int, counts)), list(map(int, displacements)))]
    kind = _mpi_type(dtype)
    return spec if kind is None else spec + [kind]
