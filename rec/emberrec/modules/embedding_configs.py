"""Embedding table descriptions, as TorchRec's: `EmbeddingBagConfig` (pooled tables),
`EmbeddingConfig` (sequence tables), `PoolingType`, `DataType`.

Unlike TorchRec, a config checks its fields when it is made (a TypeError or ValueError names
the field)."""
import math
from dataclasses import dataclass, field
from enum import Enum, unique
from typing import Callable, List, Optional

import ember

__all__ = [
    "PoolingType", "DataType", "DATA_TYPE_NUM_BITS", "BaseEmbeddingConfig", "EmbeddingBagConfig",
    "EmbeddingConfig", "EmbeddingTableConfig", "pooling_type_to_str", "data_type_to_dtype",
]


@unique
class PoolingType(Enum):
    SUM = "SUM"
    MEAN = "MEAN"
    NONE = "NONE"


@unique
class DataType(Enum):
    """The storage type of a table's rows. Training modules hold FP32, FP16 or BF16 tables; the
    quantized types (INT8, INT4, INT2) belong to quantized inference modules, which emberrec
    does not have yet."""
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
        raise NotImplementedError(f"{data_type} tables need quantized embedding modules, which emberrec does not have yet")
    return _FLOAT_DTYPES[data_type]


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
