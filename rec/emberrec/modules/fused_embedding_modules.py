"""TorchRec's `FusedEmbeddingBagCollection`: an EmbeddingBagCollection whose optimizer runs
inside its backward pass, on `emberrec.fbgemm`'s training embedding bag
(`SplitTableBatchedEmbeddingBagsCodegen`): the backward updates only the rows the batch read,
and the tables get no `.grad`.

As TorchRec: `optimizer_type` is an optimizer class (`ember.optim.SGD` -> EXACT_SGD,
`ember.optim.Adagrad` -> EXACT_ADAGRAD, `ember.optim.Adam` -> ADAM) or, here also, an
`EmbOptimType` itself (EXACT_ROWWISE_ADAGRAD, LAMB, ...); `optimizer_kwargs` are its
hyperparameters (`lr` becomes `learning_rate`); tables are grouped by (pooling, data type), one
embedding bag per group; the state-dict keys are `embedding_bags.<table>.weight`, views of the
kernels' weights; `fused_optimizer()` exposes the learning rate and the optimizer states
(KeyedOptimizer-style `state_dict`, `param_groups`; `step` and `zero_grad` only pass a changed
learning rate on, the update having happened in the backward pass).

Unlike TorchRec, the output's columns follow the tables' order whatever their pooling (TorchRec
concatenates the groups' outputs but labels them in table order, so mixed pooling mislabels
its keys)."""
import ember
import ember.nn as nn

from emberrec.fbgemm.split_embedding_configs import EmbOptimType, SparseType
from emberrec.fbgemm.split_table_batched_embeddings_ops_common import ComputeDevice, EmbeddingLocation
from emberrec.fbgemm.split_table_batched_embeddings_ops_training import SplitTableBatchedEmbeddingBagsCodegen
from emberrec.modules.embedding_configs import DataType, EmbeddingBagConfig, PoolingType
from emberrec.modules.embedding_modules import (
    EmbeddingBagCollectionInterface, _check_device, _check_tables, _FeatureRouter, _init_weight, get_embedding_names_by_table)
from emberrec.ops import lengths_to_offsets
from emberrec.sparse.jagged_tensor import KeyedTensor

__all__ = ["FusedEmbeddingBagCollection", "EmbeddingFusedOptimizer", "convert_optimizer_type_and_kwargs"]

POOLING_MODES = {PoolingType.SUM: 0, PoolingType.MEAN: 1}
PRECISIONS = {DataType.FP32: SparseType.FP32, DataType.FP16: SparseType.FP16}


def convert_optimizer_type_and_kwargs(optimizer_type, optimizer_kwargs):
    """(EmbOptimType, the embedding bag's keyword arguments) for an optimizer class and its
    arguments, or None when the optimizer has no fused form."""
    kwargs = dict(optimizer_kwargs)
    if "lr" in kwargs:
        kwargs["learning_rate"] = kwargs.pop("lr")
    if isinstance(optimizer_type, EmbOptimType):
        return optimizer_type, kwargs
    fused = {ember.optim.SGD: EmbOptimType.EXACT_SGD, ember.optim.Adagrad: EmbOptimType.EXACT_ADAGRAD,
             ember.optim.Adam: EmbOptimType.ADAM}
    return (fused[optimizer_type], kwargs) if optimizer_type in fused else None


class EmbeddingFusedOptimizer:
    """The optimizer state of fused embedding bags, shaped as TorchRec's KeyedOptimizer: `params`
    ({"<table>.weight": weight}), `state` ({weight: {"<table>.weight.momentum_1": tensor, ...}}),
    `param_groups` (one per embedding bag, with its "lr"). `step` and `zero_grad` pass each
    group's learning rate to its embedding bag (the update itself ran in the backward pass)."""

    def __init__(self, groups):
        self._modules = [module for _, module in groups]
        self.params, self.state, self.param_groups = {}, {}, []
        for tables, module in groups:
            group = {"params": [], "lr": module.get_learning_rate()}
            for table, weight, states in zip(tables, module.split_embedding_weights(), module.split_optimizer_states()):
                key = f"{table.name}.weight"
                self.params[key] = weight
                group["params"].append(weight)
                self.state[weight] = {f"{key}.momentum_{k + 1}": s for k, s in enumerate(states)}
            self.param_groups.append(group)

    def step(self, closure=None):
        self._push_learning_rates()
        return None if closure is None else closure()

    def zero_grad(self, set_to_none=False):
        self._push_learning_rates()

    def _push_learning_rates(self):
        for group, module in zip(self.param_groups, self._modules):
            module.set_learning_rate(group["lr"])

    def _names(self):
        return {id(weight): key for key, weight in self.params.items()}

    def state_dict(self):
        """{"state": {"<table>.weight": {state name: tensor}}, "param_groups": [{"params":
        [names], "lr": ...}]}; the tensors are the live states."""
        names = self._names()
        groups = [{**{k: v for k, v in group.items() if k != "params"}, "params": [names[id(p)] for p in group["params"]]}
                  for group in self.param_groups]
        return {"state": {names[id(w)]: dict(s) for w, s in self.state.items()}, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Copies the states and learning rates of a `state_dict()` in (shapes checked first)."""
        names = self._names()
        saved_states = state_dict["state"]
        for weight, states in self.state.items():
            saved = saved_states.get(names[id(weight)], {})
            for name, tensor in states.items():
                if name not in saved or tuple(saved[name].shape) != tuple(tensor.shape):
                    raise ValueError(f"load_state_dict: state {name!r} is missing or has another shape")
        if len(state_dict["param_groups"]) != len(self.param_groups):
            raise ValueError(f"load_state_dict: {len(self.param_groups)} param groups, got {len(state_dict['param_groups'])}")
        with ember.no_grad():
            for weight, states in self.state.items():
                for name, tensor in states.items():
                    tensor.copy_(saved_states[names[id(weight)]][name])
        for group, saved in zip(self.param_groups, state_dict["param_groups"]):
            group["lr"] = saved["lr"]
        self._push_learning_rates()


class FusedEmbeddingBagCollection(EmbeddingBagCollectionInterface):
    """Pooled embeddings of a KeyedJaggedTensor's features (KeyedTensor of (batch, sum of the
    tables' dims), keys as EmbeddingBagCollection's) with the optimizer fused into the backward
    pass. `fused_optimizer()` holds its learning rate and state."""

    def __init__(self, tables, optimizer_type, optimizer_kwargs, is_weighted=False, device=None, location=None):
        super().__init__()
        _check_device(device)
        if location is not None and EmbeddingLocation(location) is not EmbeddingLocation.HOST:
            raise NotImplementedError(f"FusedEmbeddingBagCollection: only EmbeddingLocation.HOST is supported, got {location!r}")
        converted = convert_optimizer_type_and_kwargs(optimizer_type, optimizer_kwargs)
        if converted is None:
            raise ValueError(f"Cannot fuse optimizer_type={optimizer_type} with kwargs {optimizer_kwargs}")
        self._optimizer_type, self._optimizer_kwargs = optimizer_type, optimizer_kwargs
        self._embedding_bag_configs = _check_tables(tables, EmbeddingBagConfig)
        self._is_weighted = bool(is_weighted)
        self._groups = self._group_tables()
        # The embedding bags live in a plain list, as in TorchRec: their flat weights are not
        # parameters of this module; `embedding_bags.<table>.weight` (views of them) are.
        self._emb_modules = [self._embedding_bag(key, group, *converted) for key, group in self._groups.items()]
        self._optim = EmbeddingFusedOptimizer(list(zip(self._groups.values(), self._emb_modules)))
        weights = {table.name: weight for group, module in zip(self._groups.values(), self._emb_modules)
                   for table, weight in zip(group, module.split_embedding_weights())}
        self.embedding_bags = nn.ModuleDict()
        for table in tables:  # in table order, whatever the groups
            holder = nn.Module()
            holder.register_parameter("weight", nn.Parameter(weights[table.name]))
            self.embedding_bags[table.name] = holder
        self._routers = [_FeatureRouter(group) for group in self._groups.values()]
        self._embedding_names = [name for names in get_embedding_names_by_table(tables) for name in names]
        self._length_per_key = [t.embedding_dim for t in tables for _ in t.feature_names]
        self._column_order = self._table_order_columns()

    def _group_tables(self):
        groups = {}
        for table in self._embedding_bag_configs:
            if table.pooling not in POOLING_MODES:
                raise ValueError(f"table {table.name!r} has pooling {table.pooling}: FusedEmbeddingBagCollection pools (SUM, MEAN)")
            if table.data_type not in PRECISIONS:
                raise NotImplementedError(f"table {table.name!r}: data type {table.data_type} is not supported (FP32, FP16)")
            if self._is_weighted and table.pooling != PoolingType.SUM:
                raise ValueError(f"table {table.name!r}: weighted lookups need SUM pooling, got {table.pooling}")
            groups.setdefault((table.pooling, table.data_type), []).append(table)
        return groups

    @staticmethod
    def _embedding_bag(key, group, optimizer, kwargs):
        pooling, data_type = key
        specs = [(t.num_embeddings, t.embedding_dim, EmbeddingLocation.HOST, ComputeDevice.CPU) for t in group]
        feature_table_map = [i for i, t in enumerate(group) for _ in t.feature_names]
        module = SplitTableBatchedEmbeddingBagsCodegen(
            specs, feature_table_map=feature_table_map, optimizer=optimizer, pooling_mode=POOLING_MODES[pooling],
            weights_precision=PRECISIONS[data_type], **kwargs)
        for table, weight in zip(group, module.split_embedding_weights()):
            _init_weight(weight, table)
        return module

    def _table_order_columns(self):
        """(group, first column, last column) of each table, in table order; None when the
        groups' outputs side by side are already in table order."""
        spans = {}
        for g, group in enumerate(self._groups.values()):
            columns = 0
            for table in group:
                width = table.embedding_dim * table.num_features()
                spans[table.name] = (g, columns, columns + width)
                columns += width
        order = [spans[t.name] for t in self._embedding_bag_configs]
        in_order = [s[0] for s in order] == sorted(s[0] for s in order)
        return None if in_order else order

    def forward(self, features):
        if self._is_weighted and features.weights_or_none() is None:
            raise ValueError("this FusedEmbeddingBagCollection is weighted (is_weighted=True), but features has no weights")
        outputs = [self._group_forward(router, module, features) for router, module in zip(self._routers, self._emb_modules)]
        if self._column_order is None:
            values = outputs[0] if len(outputs) == 1 else ember.cat(outputs, 1)
        else:
            values = ember.cat([outputs[g][:, start:end] for g, start, end in self._column_order], 1)
        return KeyedTensor(self._embedding_names, self._length_per_key, values)

    def _group_forward(self, router, module, features):
        group_features = router.in_table_order(features)
        weights = group_features.weights_or_none() if self._is_weighted else None
        if len(router.feature_order) != len(group_features.keys()):
            raise ValueError("features must hold each feature once")
        offsets = lengths_to_offsets(group_features.lengths())
        return module(group_features.values(), offsets, weights)

    @property
    def is_weighted(self):
        return self._is_weighted

    @property
    def embedding_bag_configs(self):
        return self._embedding_bag_configs

    def optimizer_type(self):
        return self._optimizer_type

    def optimizer_kwargs(self):
        return self._optimizer_kwargs

    def fused_optimizer(self):
        return self._optim
