"""TorchRec's quantized inference modules: `EmbeddingBagCollection` and `EmbeddingCollection`
over quantized tables (FP32, FP16, INT8, INT4, INT2 rows in FBGEMM's layouts), looked up by
`emberrec.fbgemm`'s `IntNBitTableBatchedEmbeddingBagsCodegen` (Rust): one table batch per
pooling type (EmbeddingBagCollection) or per data type (EmbeddingCollection), as TorchRec.

`from_float(module)` quantizes a trained module by its `qconfig` (a `QuantConfig`: the weight
type, per-table overrides, the output dtype), INT8/INT4/INT2 rows the way TorchRec does
(`FloatToFusedNBitRowwiseQuantizedSBHalf`, binary16 scale and bias), so the bytes match TorchRec's.
The state dict holds TorchRec's keys: `embedding_bags.<table>.weight` (uint8, the padded rows of
the table batch, scale and bias first) or, with `quant_state_dict_split_scale_bias=True`, the
packed values as `weight` and binary16 `weight_qscale` / `weight_qbias` (rows, 1). They are
views of the table batch's buffer, so `load_state_dict` changes what the module looks up.

Unlike TorchRec: output columns follow the tables' order whatever their pooling (TorchRec
groups them by pooling type); `embedding_bag_configs`, `is_weighted`, `output_dtype` and the
like are properties, as in emberrec's float modules; INT4/INT2 weights are plain uint8 tensors
of packed values (TorchRec 1.x wraps them in UInt4Tensor / UInt2Tensor); inputs are checked
(TypeError / ValueError) where TorchRec asserts or fails inside FBGEMM."""
import copy

import numpy as np

import ember
import ember.nn as nn

from emberrec.fbgemm.quantize_ops import FloatToFusedNBitRowwiseQuantizedSBHalf
from emberrec.fbgemm.split_embedding_configs import SparseType
from emberrec.fbgemm.split_table_batched_embeddings_ops_common import PoolingMode
from emberrec.fbgemm.split_table_batched_embeddings_ops_inference import IntNBitTableBatchedEmbeddingBagsCodegen
from emberrec.modules.embedding_configs import (
    DATA_TYPE_NUM_BITS, DataType, EmbeddingBagConfig, EmbeddingConfig, PoolingType, data_type_to_sparse_type,
    dtype_to_data_type, pooling_type_to_pooling_mode)
from emberrec.modules.embedding_modules import (
    EmbeddingBagCollection as FloatEmbeddingBagCollection, EmbeddingBagCollectionInterface,
    EmbeddingCollection as FloatEmbeddingCollection, EmbeddingCollectionInterface, get_embedding_names_by_table)
from emberrec.sparse.jagged_tensor import JaggedTensor, KeyedJaggedTensor, KeyedTensor

__all__ = ["EmbeddingBagCollection", "EmbeddingCollection", "quantize_state_dict", "DEFAULT_ROW_ALIGNMENT",
           "MODULE_ATTR_QUANT_STATE_DICT_SPLIT_SCALE_BIAS", "MODULE_ATTR_REGISTER_TBES_BOOL",
           "MODULE_ATTR_ROW_ALIGNMENT_INT"]

DEFAULT_ROW_ALIGNMENT = 16
# Attributes that, set on a float module, `from_float` passes on (TorchRec's names).
MODULE_ATTR_REGISTER_TBES_BOOL = "__register_tbes_in_named_modules"
MODULE_ATTR_QUANT_STATE_DICT_SPLIT_SCALE_BIAS = "__quant_state_dict_split_scale_bias"
MODULE_ATTR_ROW_ALIGNMENT_INT = "__register_row_alignment_in_named_modules"

QUANTIZED_DATA_TYPES = (DataType.INT8, DataType.INT4, DataType.INT2)
STORED_DATA_TYPES = (DataType.FP32, DataType.FP16) + QUANTIZED_DATA_TYPES
OUTPUT_SPARSE_TYPES = {ember.float32: SparseType.FP32, ember.float16: SparseType.FP16}
SCALE_BIAS_BYTES = 4


# ---- quantizing float tables ----

def _quantize_table(weight, data_type):
    """(values, scale_shift) of a float table as the table batch stores it (scale_shift None for
    FP32 / FP16): the row bytes TorchRec's quantize_state_dict makes."""
    if data_type in QUANTIZED_DATA_TYPES:
        rows = FloatToFusedNBitRowwiseQuantizedSBHalf(weight, DATA_TYPE_NUM_BITS[data_type]).numpy()
        # the operator puts scale and bias last; the table batch wants them first
        return ember.from_numpy(np.ascontiguousarray(rows[:, :-SCALE_BIAS_BYTES])), \
            ember.from_numpy(np.ascontiguousarray(rows[:, -SCALE_BIAS_BYTES:]))
    dtype = np.float32 if data_type == DataType.FP32 else np.float16
    values = np.ascontiguousarray(weight.detach().to(ember.float32).numpy().astype(dtype))
    return ember.from_numpy(values.view(np.uint8)), None


def quantize_state_dict(module, table_name_to_quantized_weights, table_name_to_data_type):
    """Quantizes every table of a float module's state dict (keys `...<table>.weight`) into
    `table_name_to_quantized_weights[table] = (values, scale_shift)`; returns the tables' device."""
    device = ember.device("cpu")
    for key, weight in module.state_dict().items():
        *_, table, leaf = key.split(".")
        if leaf != "weight" or table not in table_name_to_data_type:
            raise ValueError(f"quantize_state_dict: {key!r} is not the weight of one of the tables "
                             f"{sorted(table_name_to_data_type)}")
        if weight.dtype not in (ember.float32, ember.float16):
            raise TypeError(f"quantize_state_dict: table {table!r} must be float32 or float16, got {weight.dtype}")
        table_name_to_quantized_weights[table] = _quantize_table(weight, table_name_to_data_type[table])
        device = weight.device
    return device


def _observed_dtype(observer, what):
    """The dtype a QuantConfig field names: the dtype itself, or (TorchRec's way) the `dtype` of
    the observer that calling it makes."""
    if callable(observer) and not isinstance(observer, (ember.dtype, DataType)):
        observer = observer()
        if not hasattr(observer, "dtype"):
            raise TypeError(f"qconfig.{what}() must return an observer with a dtype, got {type(observer).__name__}")
        return observer.dtype
    return observer


def _quantized_configs(module, configs):
    """Copies of the float module's table configs with the data types its qconfig asks for, and
    the output dtype."""
    qconfig = getattr(module, "qconfig", None)
    if qconfig is None:
        raise ValueError(f"{type(module).__name__} input float module must have qconfig defined (a QuantConfig)")
    weight_type = dtype_to_data_type(_observed_dtype(qconfig.weight, "weight"))
    per_table = getattr(qconfig, "per_table_weight_dtype", None) or {}
    configs = copy.deepcopy(configs)
    for config in configs:
        config.data_type = dtype_to_data_type(per_table[config.name]) if config.name in per_table else weight_type
    return configs, _observed_dtype(qconfig.activation, "activation")


# ---- checks ----

def _check_tables(tables, config_type):
    if not isinstance(tables, (list, tuple)) or not all(isinstance(t, config_type) for t in tables):
        raise TypeError(f"tables must be a list of {config_type.__name__}")
    names = [t.name for t in tables]
    if len(set(names)) != len(names) or "" in names:
        raise ValueError(f"every table needs a name of its own, got {names}")
    for table in tables:
        if not table.feature_names:
            raise ValueError(f"table {table.name!r} has no feature_names")
        if table.data_type not in STORED_DATA_TYPES:
            raise NotImplementedError(f"table {table.name!r}: {table.data_type} rows are not supported "
                                      f"({', '.join(t.name for t in STORED_DATA_TYPES)})")
    return list(tables)


def _output_sparse_type(output_dtype):
    if output_dtype not in OUTPUT_SPARSE_TYPES:
        raise ValueError(f"output_dtype must be ember.float32 or ember.float16, got {output_dtype!r}")
    return OUTPUT_SPARSE_TYPES[output_dtype]


def _check_device(device):
    if device is not None and str(device) != "cpu":
        raise NotImplementedError(f"quantized embedding modules run on the CPU only, got device {device}")
    return ember.device("cpu")


def _check_row_alignment(row_alignment):
    if not isinstance(row_alignment, int) or isinstance(row_alignment, bool) or row_alignment < 1:
        raise ValueError(f"row_alignment must be a positive int, got {row_alignment!r}")
    return row_alignment


def _check_features(features, feature_names):
    if not isinstance(features, KeyedJaggedTensor):
        raise TypeError(f"features must be a KeyedJaggedTensor, got {type(features).__name__}")
    index = features._key_indices()
    missing = [f for f in feature_names if f not in index]
    if missing:
        raise ValueError(f"features lacks the keys {missing} that the tables read (it has {features.keys()})")
    return index


# ---- the table batches ----

class _TableBatch:
    """One IntNBitTableBatchedEmbeddingBagsCodegen over a group of tables, and the features it reads."""

    def __init__(self, tables, pooling_mode, output_type, row_alignment, quantized_weights):
        self.tables = tables
        self.feature_names = [f for t in tables for f in t.feature_names]
        specs = [(t.name, t.num_embeddings, t.embedding_dim, data_type_to_sparse_type(t.data_type)) for t in tables]
        self.tbe = IntNBitTableBatchedEmbeddingBagsCodegen(
            specs, feature_table_map=[i for i, t in enumerate(tables) for _ in t.feature_names],
            pooling_mode=pooling_mode, output_dtype=output_type, row_alignment=row_alignment)
        if quantized_weights is None:
            self.tbe.initialize_weights()
        else:
            self.tbe.assign_embedding_weights([quantized_weights[t.name] for t in tables])

    def lookup(self, features, key_index, weighted=False):
        """The table batch's output for its features of `features` (in any key order)."""
        order = [key_index[f] for f in self.feature_names]
        if order != list(range(len(features.keys()))):
            features = features.permute(order)
        weights = None
        if weighted:
            weights = features.weights_or_none()
            if weights is None:
                raise ValueError("this EmbeddingBagCollection is weighted (is_weighted=True), but features has no weights")
        return self.tbe(features.values(), features.offsets(), weights), features

    def state_buffers(self, split_scale_bias):
        """Per table, {buffer name: tensor viewing the table batch's bytes}."""
        whole_rows = self.tbe.split_embedding_weights(split_scale_shifts=False)
        for table, (rows, _) in zip(self.tables, whole_rows):
            if not split_scale_bias:
                yield table, {"weight": rows}
                continue
            rows = rows.numpy()
            sparse_type = data_type_to_sparse_type(table.data_type)
            header = 0 if sparse_type.is_float() else SCALE_BIAS_BYTES
            used = -(-table.embedding_dim * sparse_type.bit_rate() // 8) + header
            buffers = {"weight": ember.from_numpy(rows[:, header:used])}
            if header:
                buffers["weight_qscale"] = ember.from_numpy(rows[:, 0:2].view(np.float16))
                buffers["weight_qbias"] = ember.from_numpy(rows[:, 2:4].view(np.float16))
            yield table, buffers


def _register_state(module_dict, tables, batches, split_scale_bias):
    """Each table's buffers under `module_dict[table name]`, in the tables' order (the float
    module's state-dict order, whatever the table batches)."""
    per_table = {table.name: buffers for batch in batches for table, buffers in batch.state_buffers(split_scale_bias)}
    for table in tables:
        holder = nn.Module()
        for name, tensor in per_table[table.name].items():
            holder.register_buffer(name, tensor)
        module_dict[table.name] = holder


class _TablesInStateDict:
    """What both quantized collections share: their state dict views the table batches' bytes,
    so a deep copy must point the copied buffers at the copied table batches (a plain deep copy
    would give them bytes of their own, which lookups never read)."""

    def _expose_tables(self, holder_name, tables, split_scale_bias):
        self._state_holder, self._state_tables = holder_name, tables
        self._split_scale_bias = bool(split_scale_bias)
        holders = nn.ModuleDict()
        _register_state(holders, tables, self._emb_modules, self._split_scale_bias)
        setattr(self, holder_name, holders)

    def __deepcopy__(self, memo):
        clone = self.__class__.__new__(self.__class__)
        memo[id(self)] = clone
        for name, value in self.__dict__.items():
            clone.__dict__[name] = copy.deepcopy(value, memo)
        _register_state(getattr(clone, self._state_holder), clone._state_tables, clone._emb_modules,
                        self._split_scale_bias)
        return clone


def _group_by(tables, key):
    groups = {}
    for table in tables:
        groups.setdefault(key(table), []).append(table)
    return groups


class EmbeddingBagCollection(_TablesInStateDict, EmbeddingBagCollectionInterface):
    """Pooled embeddings of a KeyedJaggedTensor's features from quantized tables: `forward`
    returns a KeyedTensor (batch, sum of embedding dims) in `output_dtype`, keys and columns as
    the float EmbeddingBagCollection's. Build it with `from_float(ebc)` (the float module's
    `qconfig` says how), or from configs whose `data_type` is FP32, FP16, INT8, INT4 or INT2
    (zero tables, filled by `load_state_dict` or `table_name_to_quantized_weights`)."""

    def __init__(self, tables, is_weighted=False, device=None, output_dtype=ember.float32,
                 table_name_to_quantized_weights=None, register_tbes=False,
                 quant_state_dict_split_scale_bias=False, row_alignment=DEFAULT_ROW_ALIGNMENT):
        super().__init__()
        self._device = _check_device(device)
        self._embedding_bag_configs = _check_tables(tables, EmbeddingBagConfig)
        self._is_weighted = bool(is_weighted)
        self._output_dtype = output_dtype
        output_type = _output_sparse_type(output_dtype)
        self.row_alignment = _check_row_alignment(row_alignment)
        for table in tables:
            if table.pooling == PoolingType.NONE:
                raise ValueError(f"table {table.name!r} has pooling NONE: use EmbeddingCollection for unpooled lookups")
        groups = _group_by(self._embedding_bag_configs, lambda t: t.pooling)
        # a plain list, as TorchRec: the tables reach the state dict through `embedding_bags`
        self._emb_modules = [_TableBatch(group, pooling_type_to_pooling_mode(pooling), output_type, self.row_alignment,
                                         table_name_to_quantized_weights) for pooling, group in groups.items()]
        self.register_tbes = bool(register_tbes)
        if self.register_tbes:
            self.tbes = nn.ModuleList([batch.tbe for batch in self._emb_modules])
        self._expose_tables("embedding_bags", self._embedding_bag_configs, quant_state_dict_split_scale_bias)
        self._embedding_names = [name for names in get_embedding_names_by_table(tables) for name in names]
        self._length_per_key = [t.embedding_dim for t in tables for _ in t.feature_names]
        self._feature_names = [f for t in tables for f in t.feature_names]
        self._column_order = self._columns_in_table_order(groups)

    def _columns_in_table_order(self, groups):
        """The column index that puts the table batches' outputs in table order (None when
        they already are: every table has the same pooling)."""
        if len(groups) == 1:
            return None
        start, table_columns = 0, {}
        for group in groups.values():
            for table in group:
                width = table.embedding_dim * table.num_features()
                table_columns[table.name] = list(range(start, start + width))
                start += width
        return ember.tensor([c for t in self._embedding_bag_configs for c in table_columns[t.name]], dtype=ember.int64)

    def forward(self, features):
        key_index = _check_features(features, self._feature_names)
        pooled = [batch.lookup(features, key_index, self._is_weighted)[0] for batch in self._emb_modules]
        values = pooled[0] if len(pooled) == 1 else ember.cat(pooled, 1)
        if self._column_order is not None:
            values = ember.index_select(values, 1, self._column_order)
        return KeyedTensor(self._embedding_names, self._length_per_key, values)

    def _get_name(self):
        return "QuantizedEmbeddingBagCollection"

    @classmethod
    def from_float(cls, module):
        """The quantized twin of a float EmbeddingBagCollection, by its `qconfig`."""
        if not isinstance(module, FloatEmbeddingBagCollection):
            raise TypeError(f"from_float takes an emberrec EmbeddingBagCollection, got {type(module).__name__}")
        configs, output_dtype = _quantized_configs(module, module.embedding_bag_configs)
        weights = {}
        device = quantize_state_dict(module, weights, {c.name: c.data_type for c in configs})
        return cls(configs, module.is_weighted, device=device, output_dtype=output_dtype,
                   table_name_to_quantized_weights=weights, **_passed_on_attributes(module))

    @property
    def embedding_bag_configs(self):
        return self._embedding_bag_configs

    @property
    def is_weighted(self):
        return self._is_weighted

    @property
    def output_dtype(self):
        return self._output_dtype

    @property
    def device(self):
        return self._device


def _passed_on_attributes(module):
    return {"register_tbes": getattr(module, MODULE_ATTR_REGISTER_TBES_BOOL, False),
            "quant_state_dict_split_scale_bias": getattr(module, MODULE_ATTR_QUANT_STATE_DICT_SPLIT_SCALE_BIAS, False),
            "row_alignment": getattr(module, MODULE_ATTR_ROW_ALIGNMENT_INT, DEFAULT_ROW_ALIGNMENT)}


class EmbeddingCollection(_TablesInStateDict, EmbeddingCollectionInterface):
    """Unpooled embeddings from quantized tables: `forward(features)` returns {feature:
    JaggedTensor} whose values are the (n, embedding_dim) rows of the ids in `output_dtype`
    (the ids themselves as weights with `need_indices=True`). All tables share one
    embedding_dim, as in the float EmbeddingCollection."""

    def __init__(self, tables, device=None, need_indices=False, output_dtype=ember.float32,
                 table_name_to_quantized_weights=None, register_tbes=False,
                 quant_state_dict_split_scale_bias=False, row_alignment=DEFAULT_ROW_ALIGNMENT):
        super().__init__()
        self._device = _check_device(device)
        self._embedding_configs = _check_tables(tables, EmbeddingConfig)
        dims = {t.embedding_dim for t in tables}
        if len(dims) > 1:
            raise ValueError(f"all tables of an EmbeddingCollection need the same embedding_dim, got {sorted(dims)}")
        self._embedding_dim = dims.pop() if dims else 0
        self._need_indices = bool(need_indices)
        self._output_dtype = output_dtype
        output_type = _output_sparse_type(output_dtype)
        self.row_alignment = _check_row_alignment(row_alignment)
        groups = _group_by(self._embedding_configs, lambda t: t.data_type)
        self._emb_modules = [_TableBatch(group, PoolingMode.NONE, output_type, self.row_alignment,
                                         table_name_to_quantized_weights) for group in groups.values()]
        self.register_tbes = bool(register_tbes)
        if self.register_tbes:
            self.tbes = nn.ModuleList([batch.tbe for batch in self._emb_modules])
        self._expose_tables("embeddings", self._embedding_configs, quant_state_dict_split_scale_bias)
        self._embedding_names_by_table = get_embedding_names_by_table(tables)
        names = dict(zip((t.name for t in tables), self._embedding_names_by_table))
        # each table batch's output keys, in its features' order
        self._batch_embedding_names = [[n for t in batch.tables for n in names[t.name]] for batch in self._emb_modules]
        self._feature_names = [f for t in tables for f in t.feature_names]

    def forward(self, features):
        key_index = _check_features(features, self._feature_names)
        out = {}
        for batch, names in zip(self._emb_modules, self._batch_embedding_names):
            rows, ordered = batch.lookup(features, key_index)
            per_key = ordered.length_per_key()
            lengths = ordered.lengths()
            stride = ordered.stride()
            for k, (name, key_rows, ids) in enumerate(zip(names, ember.split(rows, per_key),
                                                          ember.split(ordered.values(), per_key))):
                out[name] = JaggedTensor(key_rows, ids if self._need_indices else None,
                                         lengths[k * stride:(k + 1) * stride])
        # the float module's key order: tables, then their features
        return {name: out[name] for names in self._embedding_names_by_table for name in names}

    def _get_name(self):
        return "QuantizedEmbeddingCollection"

    @classmethod
    def from_float(cls, module):
        """The quantized twin of a float EmbeddingCollection, by its `qconfig`."""
        if not isinstance(module, FloatEmbeddingCollection):
            raise TypeError(f"from_float takes an emberrec EmbeddingCollection, got {type(module).__name__}")
        configs, output_dtype = _quantized_configs(module, module.embedding_configs)
        weights = {}
        device = quantize_state_dict(module, weights, {c.name: c.data_type for c in configs})
        return cls(configs, device=device, need_indices=module.need_indices, output_dtype=output_dtype,
                   table_name_to_quantized_weights=weights, **_passed_on_attributes(module))

    @property
    def need_indices(self):
        return self._need_indices

    @property
    def embedding_dim(self):
        return self._embedding_dim

    @property
    def embedding_configs(self):
        return self._embedding_configs

    @property
    def embedding_names_by_table(self):
        return self._embedding_names_by_table

    @property
    def output_dtype(self):
        return self._output_dtype

    @property
    def device(self):
        return self._device
