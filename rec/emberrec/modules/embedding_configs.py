"""Embedding table descriptions, as TorchRec's: `EmbeddingBagConfig` (pooled tables),
`EmbeddingConfig` (sequence tables), `PoolingType`, `DataType`, and `QuantConfig` with the
type conversions the quantized modules use (`dtype_to_data_type`, `data_type_to_sparse_type`,
`pooling_type_to_pooling_mode`).

Unlike TorchRec, a config checks its fields when it is made (a TypeError or ValueError names
the field)."""
import math
from dataclasses import dataclass, field
from enum import Enum, unique
from typing import Any, Callable, Dict, List, NamedTuple, Optional

import ember
from emberrec.fbgemm.split_embedding_configs import SparseType
from emberrec.fbgemm.split_table_batched_embeddings_ops_common import PoolingMode

__all__ = [
    "PoolingType", "DataType", "DATA_TYPE_NUM_BITS", "BaseEmbeddingConfig", "EmbeddingBagConfig",
    "EmbeddingConfig", "EmbeddingTableConfig", "QuantConfig", "pooling_type_to_str", "pooling_type_to_pooling_mode",
    "data_type_to_dtype", "dtype_to_data_type", "data_type_to_sparse_type",
]


@unique
class PoolingType(Enum):
    SUM = "SUM"
    MEAN = "MEAN"
    NONE = "NONE"


@unique
class DataType(Enum):
    """The storage type of a table's rows. Training modules hold FP32, FP16 or BF16 tables; the
    quantized types (INT8, INT4, INT2) belong to the quantized inference modules of
    `emberrec.quant` (FP32 and FP16 tables work there too)."""
    FP32 = "FP32"
    FP16 = "FP16"
    BF16 = "BF16"
    INT8 = "INT8"
    INT4 = "INT4"
    INT2 = "INT2"


DATA_TYPE_NUM_BITS = {DataType.FP32: 32, DataType.FP16: 16, DataType.BF16: 16, DataType.INT8: 8,
                      DataType.INT4: 4, DataType.INT2: 2}

_FLOAT_DTYPES = {DataType.FP32: ember.float32, DataType.FP16: ember.float16, DataType.BF16: ember.bfloat16}


def data_type_to_dtype(data_type):
    """The ember dtype of a table stored as `data_type` (NotImplementedError for the quantized ones)."""
    if not isinstance(data_type, DataType):
        raise TypeError(f"data_type must be a DataType, got {data_type!r}")
    if data_type not in _FLOAT_DTYPES:
        raise NotImplementedError(f"{data_type} tables are for quantized inference: use emberrec.quant's modules "
                                  "(or quantize a float module with emberrec.inference.modules.quantize_embeddings)")
    return _FLOAT_DTYPES[data_type]


# Ember has no quantized dtypes (PyTorch's qint8, quint4x2, quint2x4), so a DataType stands for
# itself wherever TorchRec takes a dtype; int8 and uint8 mean INT8, as TorchRec's qint8/quint8.
_DTYPE_DATA_TYPES = {ember.float32: DataType.FP32, ember.float16: DataType.FP16, ember.bfloat16: DataType.BF16,
                     ember.int8: DataType.INT8, ember.uint8: DataType.INT8}


def dtype_to_data_type(dtype):
    """The DataType of tables quantized to `dtype`: an ember dtype (float32, float16, bfloat16,
    int8 or uint8) or a DataType itself (the only way to ask for INT4 and INT2)."""
    if isinstance(dtype, DataType):
        return dtype
    if isinstance(dtype, ember.dtype) and dtype in _DTYPE_DATA_TYPES:
        return _DTYPE_DATA_TYPES[dtype]
    raise ValueError(f"dtype must be ember.float32, float16, bfloat16, int8, uint8 or a DataType, got {dtype!r}")


_SPARSE_TYPES = {DataType.FP32: SparseType.FP32, DataType.FP16: SparseType.FP16, DataType.BF16: SparseType.BF16,
                 DataType.INT8: SparseType.INT8, DataType.INT4: SparseType.INT4, DataType.INT2: SparseType.INT2}


def data_type_to_sparse_type(data_type):
    """FBGEMM's SparseType of rows stored as `data_type`."""
    if not isinstance(data_type, DataType):
        raise TypeError(f"data_type must be a DataType, got {data_type!r}")
    return _SPARSE_TYPES[data_type]


def pooling_type_to_pooling_mode(pooling_type):
    """FBGEMM's PoolingMode for a PoolingType."""
    if not isinstance(pooling_type, PoolingType):
        raise TypeError(f"pooling_type must be a PoolingType, got {pooling_type!r}")
    return PoolingMode[pooling_type.name]


class QuantConfig(NamedTuple):
    """How `emberrec.quant`'s `from_float` quantizes a module (set as its `qconfig`), as
    TorchRec's: `weight` gives the tables' type, `activation` the output dtype (float32 or
    float16), `per_table_weight_dtype` a type per table name that overrides `weight`. Each is a
    dtype (or DataType, see `dtype_to_data_type`), or, as in TorchRec, a callable returning an
    observer that has a `dtype`."""
    activation: Any
    weight: Any
    per_table_weight_dtype: Optional[Dict[str, Any]] = None


def pooling_type_to_str(pooling_type):
    """"sum" or "mean", the `mode` of an embedding bag."""
    if pooling_type == PoolingType.SUM:
        return "sum"
    if pooling_type == PoolingType.MEAN:
        return "mean"
    raise ValueError(f"pooling {pooling_type!r} has no embedding-bag mode (SUM or MEAN)")


def _check_positive_int(value, name):
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value!r}")


@dataclass
class BaseEmbeddingConfig:
    """One table: `num_embeddings` rows of `embedding_dim` (any positive size), looked up by the
    features `feature_names`. Rows start uniform in [weight_init_min, weight_init_max]
    (default ±sqrt(1 / num_embeddings)), or as `init_fn(weight)` sets them."""
    num_embeddings: int
    embedding_dim: int
    name: str = ""
    data_type: DataType = DataType.FP32
    feature_names: List[str] = field(default_factory=list)
    weight_init_max: Optional[float] = None
    weight_init_min: Optional[float] = None
    init_fn: Optional[Callable] = None

    def __post_init__(self):
        _check_positive_int(self.num_embeddings, "num_embeddings")
        _check_positive_int(self.embedding_dim, "embedding_dim")
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a str, got {self.name!r}")
        if not isinstance(self.data_type, DataType):
            raise TypeError(f"data_type must be a DataType, got {self.data_type!r}")
        names = self.feature_names
        if isinstance(names, str) or not isinstance(names, (list, tuple)) or not all(isinstance(f, str) for f in names):
            raise TypeError(f"feature_names must be a list of str, got {names!r}")
        if len(set(names)) != len(names):
            raise ValueError(f"feature_names holds a name twice: {list(names)}")
        if self.init_fn is not None and not callable(self.init_fn):
            raise TypeError(f"init_fn must be callable, got {self.init_fn!r}")
        if self.get_weight_init_min() > self.get_weight_init_max():
            raise ValueError(f"weight_init_min {self.get_weight_init_min()} exceeds weight_init_max {self.get_weight_init_max()}")

    def get_weight_init_max(self):
        return math.sqrt(1 / self.num_embeddings) if self.weight_init_max is None else self.weight_init_max

    def get_weight_init_min(self):
        return -math.sqrt(1 / self.num_embeddings) if self.weight_init_min is None else self.weight_init_min

    def num_features(self):
        return len(self.feature_names)


@dataclass
class EmbeddingBagConfig(BaseEmbeddingConfig):
    """A table whose lookups are pooled per sample (SUM or MEAN) by EmbeddingBagCollection."""
    pooling: PoolingType = PoolingType.SUM

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.pooling, PoolingType):
            raise TypeError(f"pooling must be a PoolingType, got {self.pooling!r}")


@dataclass
class EmbeddingConfig(BaseEmbeddingConfig):
    """A table whose lookups stay one row per id (EmbeddingCollection)."""


@dataclass
class EmbeddingTableConfig(BaseEmbeddingConfig):
    """TorchRec's sharding-side table description."""
    pooling: PoolingType = PoolingType.SUM
    is_weighted: bool = False
    has_feature_processor: bool = False
    embedding_names: List[str] = field(default_factory=list)
