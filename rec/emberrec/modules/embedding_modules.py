"""`EmbeddingBagCollection` and `EmbeddingCollection`, as TorchRec's (state-dict keys
`embedding_bags.<table>.weight` / `embeddings.<table>.weight`), on Ember's embedding ops.

A forward call does one gather that puts the input features in table order (skipped when they
already are). EmbeddingBagCollection then pools every table in one call of the Rust
table-batched embedding bag (`emberrec.fbgemm`'s `pooled_embedding_bags`, whose backward gives
each table a dense gradient with duplicate rows summed) when its tables are all float32 or all
float16, and otherwise calls one embedding bag per table, as EmbeddingCollection calls one
embedding per table. Gradients reach the tables (and per-sample weights) through Ember's autograd.
A feature read by several tables gets the output key "feature@table" (TorchRec's rule).
`embedding_bag_configs`, `is_weighted` and the like are properties, as in TorchRec 0.2 (later
TorchRec versions made them methods)."""
import abc

import ember
import ember.nn as nn
import ember.nn.functional as F

from emberrec.fbgemm.split_table_batched_embeddings_ops_training import pooled_embedding_bags
from emberrec.modules.embedding_configs import (
    EmbeddingBagConfig, EmbeddingConfig, PoolingType, data_type_to_dtype, pooling_type_to_str)
from emberrec.ops import lengths_to_offsets
from emberrec.sparse.jagged_tensor import JaggedTensor, KeyedJaggedTensor, KeyedTensor

__all__ = ["EmbeddingBagCollectionInterface", "EmbeddingCollectionInterface", "EmbeddingBagCollection",
           "EmbeddingCollection", "get_embedding_names_by_table"]


def get_embedding_names_by_table(tables):
    """Per table, the output key of each of its features: the feature's name, or
    "feature@table" where several tables read the feature."""
    readers = {}
    for table in tables:
        for feature in table.feature_names:
            readers[feature] = readers.get(feature, 0) + 1
    return [[f"{feature}@{table.name}" if readers[feature] > 1 else feature for feature in table.feature_names]
            for table in tables]


def _check_tables(tables, config_type):
    if not isinstance(tables, (list, tuple)) or not all(isinstance(t, config_type) for t in tables):
        raise TypeError(f"tables must be a list of {config_type.__name__}")
    names = [t.name for t in tables]
    if len(set(names)) != len(names) or "" in names:
        raise ValueError(f"every table needs a name of its own, got {names}")
    taken = [name for name in names if hasattr(nn.ModuleDict, name) or "." in name]
    if taken:
        # the tables live in an nn.ModuleDict, as in TorchRec, whose keys cannot shadow its methods
        raise ValueError(f"table names {taken} cannot be keys of an nn.ModuleDict (a method's name, or a '.')")
    for table in tables:
        if not table.feature_names:
            raise ValueError(f"table {table.name!r} has no feature_names")
        data_type_to_dtype(table.data_type)  # NotImplementedError for quantized tables
    return list(tables)


def _check_device(device):
    """Refuses a device this build or machine has no backend for (the core says which)."""
    if device is not None:
        ember.empty(0, device=device)


def _init_weight(weight, config):
    with ember.no_grad():
        if config.init_fn is not None:
            config.init_fn(weight)
        else:
            nn.init.uniform_(weight, a=config.get_weight_init_min(), b=config.get_weight_init_max())


class _FeatureRouter:
    """Puts a KJT's features in the order the tables read them (each table's features in turn)
    and hands out each table's slice."""

    def __init__(self, tables):
        self.feature_order = [feature for table in tables for feature in table.feature_names]
        self.bounds = [0]
        for table in tables:
            self.bounds.append(self.bounds[-1] + table.num_features())

    def in_table_order(self, features):
        if not isinstance(features, KeyedJaggedTensor):
            raise TypeError(f"features must be a KeyedJaggedTensor, got {type(features).__name__}")
        if features.keys() == self.feature_order:
            return features
        index = features._key_indices()
        missing = [f for f in self.feature_order if f not in index]
        if missing:
            raise ValueError(f"features lacks the keys {missing} that the tables read (it has {features.keys()})")
        return features.permute([index[f] for f in self.feature_order])

    def table_slices(self, features):
        """(values, weights or None, lengths, offsets) of each table's features, as views."""
        stride, offset_per_key, lengths = features.stride(), features.offset_per_key(), features.lengths()
        weights = features.weights_or_none()
        for first, last in zip(self.bounds[:-1], self.bounds[1:]):
            start, end = offset_per_key[first], offset_per_key[last]
            table_lengths = lengths[first * stride:last * stride]
            yield (features.values()[start:end], None if weights is None else weights[start:end],
                   table_lengths, lengths_to_offsets(table_lengths))


class EmbeddingBagCollectionInterface(nn.Module, abc.ABC):
    """What every pooled embedding collection offers (TorchRec's interface, for isinstance checks)."""

    @abc.abstractmethod
    def forward(self, features):
        ...

    @property
    @abc.abstractmethod
    def embedding_bag_configs(self):
        ...

    @property
    @abc.abstractmethod
    def is_weighted(self):
        ...


class EmbeddingCollectionInterface(nn.Module, abc.ABC):
    """What every unpooled embedding collection offers."""

    @abc.abstractmethod
    def forward(self, features):
        ...

    @property
    @abc.abstractmethod
    def embedding_configs(self):
        ...

    @property
    @abc.abstractmethod
    def embedding_dim(self):
        ...


class EmbeddingBagCollection(EmbeddingBagCollectionInterface):
    """Pooled embeddings of a KeyedJaggedTensor's features: `forward(features)` returns a
    KeyedTensor of (batch, sum of embedding dims), one key per (table, feature). With
    `is_weighted=True` each id's row is scaled by the KJT's weight for it (SUM pooling only, as
    PyTorch's embedding bags)."""

    def __init__(self, tables, is_weighted=False, device=None):
        super().__init__()
        _check_device(device)
        self._embedding_bag_configs = _check_tables(tables, EmbeddingBagConfig)
        self._is_weighted = bool(is_weighted)
        for table in tables:
            if table.pooling == PoolingType.NONE:
                raise ValueError(f"table {table.name!r} has pooling NONE: use EmbeddingCollection for unpooled lookups")
            if self._is_weighted and table.pooling != PoolingType.SUM:
                raise ValueError(f"table {table.name!r}: weighted lookups need SUM pooling, got {table.pooling}")
        self.embedding_bags = nn.ModuleDict()
        for table in tables:
            bag = nn.EmbeddingBag(table.num_embeddings, table.embedding_dim, mode=pooling_type_to_str(table.pooling),
                                  include_last_offset=True, dtype=data_type_to_dtype(table.data_type))
            _init_weight(bag.weight, table)
            self.embedding_bags[table.name] = bag
        self._router = _FeatureRouter(tables)
        self._embedding_names = [name for names in get_embedding_names_by_table(tables) for name in names]
        self._lengths_per_embedding = [t.embedding_dim for t in tables for _ in t.feature_names]
        dtypes = {data_type_to_dtype(t.data_type) for t in tables}
        self._table_batched = dtypes in ({ember.float32}, {ember.float16})
        self._feature_table_map = [t for t, table in enumerate(tables) for _ in table.feature_names]
        # which features MEAN-pool, and each output column's feature, to divide those by their lengths
        self._mean_features = [table.pooling == PoolingType.MEAN for table in tables for _ in table.feature_names]
        self._column_feature = ember.tensor([f for f, dim in enumerate(self._lengths_per_embedding) for _ in range(dim)])

    def forward(self, features):
        features = self._router.in_table_order(features)
        if self._is_weighted and features.weights_or_none() is None:
            raise ValueError("this EmbeddingBagCollection is weighted (is_weighted=True), but features has no weights")
        values = self._table_batched_forward(features) if self._table_batched else self._per_table_forward(features)
        return KeyedTensor(self._embedding_names, self._lengths_per_embedding, values)

    def _table_batched_forward(self, features):
        """Every table summed in one call; MEAN features are then divided by their bag lengths."""
        weights = [self.embedding_bags[table.name].weight for table in self._embedding_bag_configs]
        pooled = pooled_embedding_bags(weights, self._feature_table_map, features.values(),
                                       lengths_to_offsets(features.lengths()),
                                       features.weights() if self._is_weighted else None)
        if not any(self._mean_features):
            return pooled
        lengths = features.lengths().view(len(self._feature_table_map), features.stride()).t().clamp(min=1)
        scale = ember.where(ember.tensor(self._mean_features), 1.0 / lengths.to(pooled.dtype), 1.0)
        return pooled * scale[:, self._column_feature]

    def _per_table_forward(self, features):
        batch = features.stride()
        pooled = []
        for table, (values, weights, lengths, offsets) in zip(self._embedding_bag_configs,
                                                               self._router.table_slices(features)):
            bag = self.embedding_bags[table.name]
            out = F.embedding_bag(values, bag.weight, offsets, mode=bag.mode, include_last_offset=True,
                                  per_sample_weights=weights if self._is_weighted else None)
            # bags are feature-major (feature, sample); the output is sample-major
            pooled.append(out.view(table.num_features(), batch, table.embedding_dim).transpose(0, 1)
                          .reshape(batch, table.num_features() * table.embedding_dim))
        return ember.cat(pooled, 1)

    @property
    def is_weighted(self):
        return self._is_weighted

    @property
    def embedding_bag_configs(self):
        return self._embedding_bag_configs

    def reset_parameters(self):
        for table in self._embedding_bag_configs:
            _init_weight(self.embedding_bags[table.name].weight, table)


class EmbeddingCollection(EmbeddingCollectionInterface):
    """Unpooled embeddings: `forward(features)` returns {feature: JaggedTensor} whose values are
    the (n, embedding_dim) rows of the ids, with the feature's lengths. Every table must have the
    same embedding_dim (TorchRec's rule). With `need_indices=True` each JaggedTensor's weights
    are the ids looked up."""

    def __init__(self, tables, device=None, need_indices=False):
        super().__init__()
        _check_device(device)
        self._embedding_configs = _check_tables(tables, EmbeddingConfig)
        dims = {t.embedding_dim for t in tables}
        if len(dims) > 1:
            raise ValueError(f"all tables of an EmbeddingCollection need the same embedding_dim, got {sorted(dims)}")
        self._embedding_dim = dims.pop() if dims else 0
        self._need_indices = bool(need_indices)
        self.embeddings = nn.ModuleDict()
        for table in tables:
            embedding = nn.Embedding(table.num_embeddings, table.embedding_dim, dtype=data_type_to_dtype(table.data_type))
            _init_weight(embedding.weight, table)
            self.embeddings[table.name] = embedding
        self._router = _FeatureRouter(tables)
        self._embedding_names_by_table = get_embedding_names_by_table(tables)

    def forward(self, features):
        features = self._router.in_table_order(features)
        out = {}
        per_key = features.length_per_key()
        for t, (table, (values, _, lengths, _)) in enumerate(zip(self._embedding_configs,
                                                                 self._router.table_slices(features))):
            rows = F.embedding(values, self.embeddings[table.name].weight)
            first = self._router.bounds[t]
            feature_sizes = per_key[first:first + table.num_features()]
            for name, feature_rows, feature_ids, feature_lengths in zip(
                    self._embedding_names_by_table[t], ember.split(rows, feature_sizes), ember.split(values, feature_sizes),
                    ember.split(lengths, features.stride()) if features.stride() else [lengths] * table.num_features()):
                out[name] = JaggedTensor._trusted(feature_rows, feature_ids if self._need_indices else None,
                                                  feature_lengths)
        return out

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

    def reset_parameters(self):
        for table in self._embedding_configs:
            _init_weight(self.embeddings[table.name].weight, table)
