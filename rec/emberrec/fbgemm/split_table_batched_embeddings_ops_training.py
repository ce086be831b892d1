"""FBGEMM's training table-batched embedding bags on the CPU, by the Rust kernels of
`ember._C.rec` (crate `ember-rec`, module `train`):

- `SplitTableBatchedEmbeddingBagsCodegen`: many float32 or float16 tables looked up in one
  call, the optimizer fused into the backward pass: the backward sums each touched row's
  gradient over the batch (duplicates first, as FBGEMM's EXACT optimizers) and updates those
  rows, and their optimizer state, in place; the weights get no `.grad`. The per-sample
  weights get their gradient as usual.
- `DenseTableBatchedEmbeddingBagsCodegen`: the same lookups over one dense Parameter whose
  `.grad` the backward fills, for an ordinary `ember.optim` optimizer.

As FBGEMM: `embedding_specs` are (rows, dim, EmbeddingLocation, ComputeDevice); the weights are
one flat Parameter `weights`, `split_embedding_weights()` its (rows, dim) views per table;
`feature_table_map` lets features share tables; `forward(indices, offsets, per_sample_weights)`
takes table-major offsets (F * B + 1) and returns (B, total_D), or (number of indices, D) with
PoolingMode.NONE; weights start at zero (`init_embedding_weights_uniform` fills them); the
optimizer formulas are FBGEMM's (see `ember_rec::train`); `split_optimizer_states()` gives each
table's states ([] for EXACT_SGD; [momentum1 (rows, dim)] for EXACT_ADAGRAD; [momentum1 (rows,)]
for EXACT_ROWWISE_ADAGRAD; [momentum1, momentum2 (rows, dim) or (rows,)] for the ADAM and LAMB
families); `iter` counts the forward passes that record a backward (FBGEMM counts every forward).

Unlike FBGEMM: float16 weights are updated in float32 and rounded to nearest (FBGEMM rounds
stochastically by default); ADAM and LAMB run on the CPU (FBGEMM's CPU build lacks them); inputs
are validated (ValueError / TypeError; indices outside their tables raise IndexError under
BoundsCheckMode.FATAL, and under WARNING / IGNORE read and train row 0, as FBGEMM's
`bounds_check_indices` makes them, without rewriting the caller's indices). Not here: caches
and UVM / GPU placements (EmbeddingLocation.HOST only), gradient clipping, `max_norm`,
stochastic rounding, the approximate (SGD, ROWWISE_ADAGRAD), LARS_SGD and counter-based
optimizers (each raises NotImplementedError).
"""
import itertools
import warnings

import numpy as np

import ember
import ember.nn as nn
from emberrec.fbgemm.split_embedding_configs import EmbOptimType as OptimType
from emberrec.fbgemm.split_embedding_configs import SparseType
from emberrec.fbgemm.split_table_batched_embeddings_ops_common import (
    BoundsCheckMode, ComputeDevice, EmbeddingLocation, PoolingMode, WeightDecayMode)
from emberrec.fbgemm.split_table_batched_embeddings_ops_inference import BOUNDS_CHECK, POOLING, _index_array

__all__ = ["SplitTableBatchedEmbeddingBagsCodegen", "DenseTableBatchedEmbeddingBagsCodegen", "pooled_embedding_bags", "OptimType",
           "WeightDecayMode", "SparseType", "PoolingMode", "BoundsCheckMode", "EmbeddingLocation", "ComputeDevice"]

WEIGHT_DTYPES = {SparseType.FP32: ember.float32, SparseType.FP16: ember.float16}
OUTPUT_DTYPES = {SparseType.FP32: np.float32, SparseType.FP16: np.float16}
FUSED = (OptimType.EXACT_SGD, OptimType.EXACT_ADAGRAD, OptimType.EXACT_ROWWISE_ADAGRAD, OptimType.ADAM,
         OptimType.PARTIAL_ROWWISE_ADAM, OptimType.LAMB, OptimType.PARTIAL_ROWWISE_LAMB)
# Optimizers whose bias corrections read the step number.
COUNTS_STEPS = (OptimType.ADAM, OptimType.PARTIAL_ROWWISE_ADAM, OptimType.LAMB, OptimType.PARTIAL_ROWWISE_LAMB)


def _state_shapes(optimizer, rows, dim):
    """The shapes of a table's optimizer states, in FBGEMM's order."""
    return {
        OptimType.EXACT_SGD: [],
        OptimType.EXACT_ADAGRAD: [(rows, dim)],
        OptimType.EXACT_ROWWISE_ADAGRAD: [(rows,)],
        OptimType.ADAM: [(rows, dim), (rows, dim)],
        OptimType.LAMB: [(rows, dim), (rows, dim)],
        OptimType.PARTIAL_ROWWISE_ADAM: [(rows, dim), (rows,)],
        OptimType.PARTIAL_ROWWISE_LAMB: [(rows, dim), (rows,)],
    }[optimizer]


def _check_precision(weights_precision, output_dtype, name):
    if not isinstance(weights_precision, SparseType) or not isinstance(output_dtype, SparseType):
        raise TypeError(f"{name}: weights_precision and output_dtype must be SparseType")
    if weights_precision not in WEIGHT_DTYPES:
        raise NotImplementedError(f"{name}: weights_precision {weights_precision} is not supported (FP32, FP16)")
    if output_dtype not in OUTPUT_DTYPES:
        raise NotImplementedError(f"{name}: output_dtype {output_dtype} is not supported (FP32, FP16)")


class _Tables:
    """The sizes shared by both embedding bags: per-table rows and dims, features, pooling,
    and the flat weights' per-table spans."""

    def __init__(self, rows_dims, feature_table_map, pooling_mode, name):
        if not rows_dims:
            raise ValueError(f"{name}: embedding_specs must not be empty")
        for i, (rows, dim) in enumerate(rows_dims):
            if int(rows) < 0 or int(dim) < 1:
                raise ValueError(f"{name}: embedding_specs[{i}] needs rows >= 0 and dim >= 1, got {rows} and {dim}")
        self.rows = [int(r) for r, _ in rows_dims]
        self.dims = [int(d) for _, d in rows_dims]
        tables = len(rows_dims)
        self.feature_table_map = list(range(tables)) if feature_table_map is None else [int(t) for t in feature_table_map]
        if any(not 0 <= t < tables for t in self.feature_table_map):
            raise ValueError(f"{name}: feature_table_map entries must be table numbers below {tables}, got {self.feature_table_map}")
        if set(self.feature_table_map) != set(range(tables)):
            raise ValueError(f"{name}: each table must have at least one feature")
        self.pooling_mode = PoolingMode(pooling_mode)
        feature_dims = [self.dims[t] for t in self.feature_table_map]
        if self.pooling_mode is PoolingMode.NONE and len(set(feature_dims)) > 1:
            raise ValueError(f"{name}: mixed dimension tables are only supported for pooling tables")
        self.total_D = sum(feature_dims)
        self.D_offsets = list(itertools.accumulate([0] + feature_dims))
        self.spans = list(itertools.accumulate([0] + [r * d for r, d in zip(self.rows, self.dims)]))

    def views(self, flat):
        """Per table, a (rows, dim) view of a flat tensor or array."""
        return [flat[start:end].reshape(rows, dim) for start, end, rows, dim in
                zip(self.spans[:-1], self.spans[1:], self.rows, self.dims)]

    def output_shape(self, indices, offsets):
        features = len(self.feature_table_map)
        if len(offsets) < 1 or (len(offsets) - 1) % features:
            raise ValueError(f"offsets must have F * B + 1 entries for F = {features} features, got {len(offsets)}")
        if self.pooling_mode is PoolingMode.NONE:
            return len(indices), self.dims[0]
        return (len(offsets) - 1) // features, self.total_D


def _per_sample_array(per_sample_weights):
    if per_sample_weights is None:
        return None
    if not isinstance(per_sample_weights, ember.Tensor):
        raise TypeError(f"per_sample_weights must be an ember.Tensor, got {type(per_sample_weights).__name__}")
    if per_sample_weights.dtype not in (ember.float32, ember.float16):
        raise TypeError(f"per_sample_weights must be float32 or float16, got {per_sample_weights.dtype}")
    if per_sample_weights.dim() != 1:
        raise ValueError(f"per_sample_weights must be 1-D, got shape {tuple(per_sample_weights.shape)}")
    return np.ascontiguousarray(per_sample_weights.detach().to(ember.float32).numpy())


class _Lookup:
    """One call's inputs as the kernels take them."""

    def __init__(self, tables, weight_arrays, half, indices, offsets, per_sample):
        self.tables, self.weights, self.half = tables, weight_arrays, half
        self.indices, self.offsets, self.per_sample = indices, offsets, per_sample
        self.pooling = POOLING[tables.pooling_mode]

    def kernel_weights(self):
        return [w.view(np.uint16) if self.half else w for w in self.weights]

    def forward(self, bounds_check, output_dtype):
        rows, width = self.tables.output_shape(self.indices, self.offsets)
        out = np.empty((rows, width), output_dtype)
        outside = ember._C.rec.train_forward(
            self.kernel_weights(), self.tables.dims, self.half, self.tables.feature_table_map, self.indices,
            self.offsets, self.per_sample, self.pooling, bounds_check,
            out.view(np.uint16) if output_dtype == np.float16 else out, output_dtype == np.float16)
        return out, outside

    def per_sample_grads(self, grad):
        out = np.empty(len(self.indices), np.float32)
        ember._C.rec.train_per_sample_weight_grads(
            self.kernel_weights(), self.tables.dims, self.half, self.tables.feature_table_map, self.indices,
            self.offsets, self.per_sample, self.pooling, grad, out)
        return out

    def backward(self, targets, half_targets, grad, optimizer, hyperparameters, momentum1, momentum2):
        ember._C.rec.train_backward(
            [t.view(np.uint16) if half_targets else t for t in targets], self.tables.dims, half_targets,
            self.tables.feature_table_map, self.indices, self.offsets, self.per_sample, self.pooling, grad, optimizer,
            hyperparameters, momentum1, momentum2)


def _float32_grad(grad_output):
    return np.ascontiguousarray(grad_output.detach().to(ember.float32).numpy())


class _FusedEmbeddingBagFunction(ember.autograd.Function):
    """Pooled lookups whose backward applies the module's fused update to the rows read and
    returns the per-sample weights' gradient (the weights get none)."""

    @staticmethod
    def forward(ctx, module, lookup, per_sample_weights, weights):
        out, outside = lookup.forward(module._bounds_check(), OUTPUT_DTYPES[SparseType.from_int(module.output_dtype)])
        module._report_outside(outside)
        ctx.module, ctx.lookup = module, lookup
        ctx.per_sample_dtype = None if per_sample_weights is None else per_sample_weights.dtype
        return ember.from_numpy(out)

    @staticmethod
    def backward(ctx, grad_output):
        lookup, grad = ctx.lookup, _float32_grad(grad_output)
        per_sample_grad = None
        if ctx.needs_input_grad[2]:
            values = lookup.per_sample_grads(grad)  # before the update changes the rows
            per_sample_grad = ember.from_numpy(ctx.module._mask_features(values, lookup)).to(ctx.per_sample_dtype)
        ctx.module._apply_update(lookup, grad)
        return None, None, per_sample_grad, None


class _DenseEmbeddingBagFunction(ember.autograd.Function):
    """Pooled lookups whose backward returns the weights' dense gradient (duplicate rows summed)
    and the per-sample weights' gradient. The weights are either one tensor per table, (rows,
    dim) each, or one flat tensor holding every table (DenseTableBatchedEmbeddingBagsCodegen's)."""

    @staticmethod
    def forward(ctx, lookup, output_dtype, per_sample_weights, *weights):
        out, _ = lookup.forward("fatal", output_dtype)
        ctx.lookup, ctx.flat = lookup, weights[0].dim() == 1
        ctx.dtypes = [w.dtype for w in weights]
        ctx.per_sample_dtype = None if per_sample_weights is None else per_sample_weights.dtype
        return ember.from_numpy(out)

    @staticmethod
    def backward(ctx, grad_output):
        lookup, grad = ctx.lookup, _float32_grad(grad_output)
        per_sample_grad = None
        if ctx.needs_input_grad[2]:
            per_sample_grad = ember.from_numpy(lookup.per_sample_grads(grad)).to(ctx.per_sample_dtype)
        # np.zeros maps zero pages lazily: only the pages of rows read are ever written
        if ctx.flat:
            flat = np.zeros(lookup.tables.spans[-1], np.float32)
            buffers, per_table = [flat], lookup.tables.views(flat)
        else:
            buffers = per_table = [np.zeros(w.shape, np.float32) for w in lookup.weights]
        empty = [np.zeros(0, np.float32)] * len(per_table)
        lookup.backward(per_table, False, grad, "accumulate", (0.0, 0.0, 0.0, 0.0, 0.0, 0, 1), empty, empty)
        weight_grads = [ember.from_numpy(b).to(dtype) if needed else None
                        for b, dtype, needed in zip(buffers, ctx.dtypes, ctx.needs_input_grad[3:])]
        return (None, None, per_sample_grad, *weight_grads)


def pooled_embedding_bags(weights, feature_table_map, indices, offsets, per_sample_weights=None,
                          pooling_mode=PoolingMode.SUM):
    """The table-batched lookup as a function of per-table weight tensors (all float32 or all
    float16, each (rows, dim)): (B, total_D), or (indices, D) unpooled, in the tables' dtype;
    differentiable w.r.t. the weights (dense gradients) and the per-sample weights. Indices
    outside their tables raise IndexError."""
    if not weights or any(not isinstance(w, ember.Tensor) or w.dim() != 2 for w in weights):
        raise TypeError("weights must be a non-empty list of 2-D ember tensors")
    dtypes = {w.dtype for w in weights}
    if dtypes not in ({ember.float32}, {ember.float16}):
        raise TypeError(f"weights must be all float32 or all float16, got {sorted(map(str, dtypes))}")
    half = dtypes == {ember.float16}
    tables = _Tables([tuple(w.shape) for w in weights], feature_table_map, pooling_mode, "pooled_embedding_bags")
    arrays = [np.ascontiguousarray(w.detach().numpy()) for w in weights]
    lookup = _Lookup(tables, arrays, half, _index_array(indices, "indices"), _index_array(offsets, "offsets"),
                     _per_sample_array(per_sample_weights))
    return _DenseEmbeddingBagFunction.apply(lookup, np.float16 if half else np.float32, per_sample_weights, *weights)


class _TableBatchedEmbeddingBags(nn.Module):
    """What both embedding bags share: the sizes, the flat Parameter `weights` and its views."""

    _name = "TableBatchedEmbeddingBags"

    def _setup(self, rows_dims, feature_table_map, pooling_mode, weights_precision, output_dtype):
        _check_precision(weights_precision, output_dtype, self._name)
        self._tables = _Tables(rows_dims, feature_table_map, pooling_mode, self._name)
        self.pooling_mode = self._tables.pooling_mode
        self.feature_table_map = self._tables.feature_table_map
        self.weights_precision = weights_precision
        self.output_dtype = output_dtype.as_int()
        self.total_D = self._tables.total_D
        self.register_buffer("D_offsets", ember.tensor(self._tables.D_offsets, dtype=ember.int32))
        self.weights = nn.Parameter(ember.zeros(self._tables.spans[-1], dtype=WEIGHT_DTYPES[weights_precision]))

    def split_embedding_weights(self):
        """Per table, a (rows, dim) view of `weights` (writes reach the module)."""
        return self._tables.views(self.weights.detach())

    def init_embedding_weights_uniform(self, min_val, max_val):
        with ember.no_grad():
            nn.init.uniform_(self.weights, a=min_val, b=max_val)


class SplitTableBatchedEmbeddingBagsCodegen(_TableBatchedEmbeddingBags):
    _name = "SplitTableBatchedEmbeddingBagsCodegen"

    def __init__(self, embedding_specs, feature_table_map=None, cache_algorithm=None, cache_load_factor=0.2,
                 cache_sets=0, cache_reserved_memory=0.0, cache_precision=None, weights_precision=SparseType.FP32,
                 output_dtype=SparseType.FP32, enforce_hbm=False, optimizer=OptimType.EXACT_SGD,
                 record_cache_metrics=None, stochastic_rounding=True, gradient_clipping=False, max_gradient=1.0,
                 max_norm=0.0, learning_rate=0.01, eps=1.0e-8, momentum=0.9, weight_decay=0.0,
                 weight_decay_mode=WeightDecayMode.NONE, eta=0.001, beta1=0.9, beta2=0.999,
                 pooling_mode=PoolingMode.SUM, device=None, bounds_check_mode=BoundsCheckMode.WARNING):
        super().__init__()
        self._check_unsupported(optimizer, weight_decay_mode, gradient_clipping, max_norm, device)
        self._setup([self._spec(spec, i) for i, spec in enumerate(embedding_specs)], feature_table_map, pooling_mode,
                    weights_precision, output_dtype)
        self.optimizer = optimizer
        self.learning_rate = float(learning_rate)
        self.eps, self.momentum, self.weight_decay = float(eps), float(momentum), float(weight_decay)
        self.weight_decay_mode = WeightDecayMode(weight_decay_mode)
        self.beta1, self.beta2, self.eta = float(beta1), float(beta2), float(eta)
        self.stochastic_rounding = stochastic_rounding
        self.bounds_check_mode_int = int(BoundsCheckMode(bounds_check_mode))
        self.register_buffer("iter", ember.zeros(1, dtype=ember.int64))
        self.register_buffer("bounds_check_warning", ember.zeros(1, dtype=ember.int64))
        self._allocate_states()

    @staticmethod
    def _check_unsupported(optimizer, weight_decay_mode, gradient_clipping, max_norm, device):
        name = SplitTableBatchedEmbeddingBagsCodegen._name
        if not isinstance(optimizer, OptimType):
            raise TypeError(f"{name}: optimizer must be an OptimType, got {type(optimizer).__name__}")
        if optimizer not in FUSED:
            raise NotImplementedError(f"{name}: optimizer {optimizer.name} is not supported "
                                      f"({', '.join(o.name for o in FUSED)})")
        if WeightDecayMode(weight_decay_mode) not in (WeightDecayMode.NONE, WeightDecayMode.L2, WeightDecayMode.DECOUPLE):
            raise NotImplementedError(f"{name}: weight_decay_mode {WeightDecayMode(weight_decay_mode).name} is not supported "
                                      "(NONE, L2, DECOUPLE)")
        if gradient_clipping or max_norm:
            raise NotImplementedError(f"{name}: gradient_clipping and max_norm are not supported")
        if device is not None and str(device) != "cpu":
            raise NotImplementedError(f"{name}: only the CPU is supported, got device {device}")

    @staticmethod
    def _spec(spec, i):
        if len(spec) != 4:
            raise ValueError(f"embedding_specs[{i}] must be (rows, dim, EmbeddingLocation, ComputeDevice), got {spec!r}")
        rows, dim, location, compute_device = spec
        if EmbeddingLocation(location) is not EmbeddingLocation.HOST or ComputeDevice(compute_device) is not ComputeDevice.CPU:
            raise NotImplementedError(f"embedding_specs[{i}]: only EmbeddingLocation.HOST with ComputeDevice.CPU is supported, "
                                      f"got {EmbeddingLocation(location).name} and {ComputeDevice(compute_device).name}")
        return rows, dim

    def _allocate_states(self):
        """One flat float32 buffer per state (FBGEMM's momentum1_host / momentum2_host), with
        per-table views."""
        shapes = [_state_shapes(self.optimizer, r, d) for r, d in zip(self._tables.rows, self._tables.dims)]
        self._state_views = [[] for _ in shapes]
        for k, name in enumerate(("momentum1_host", "momentum2_host")):
            sizes = [int(np.prod(s[k])) if len(s) > k else 0 for s in shapes]
            if not any(len(s) > k for s in shapes):
                continue
            self.register_buffer(name, ember.zeros(sum(sizes), dtype=ember.float32))
            starts = list(itertools.accumulate([0] + sizes))
            for t, table_shapes in enumerate(shapes):
                if len(table_shapes) > k:
                    self._state_views[t].append((name, starts[t], starts[t + 1], table_shapes[k]))

    def split_optimizer_states(self):
        """Per table, its optimizer states as views (FBGEMM's order: momentum1, momentum2)."""
        return [[getattr(self, name)[start:end].view(*shape) for name, start, end, shape in views]
                for views in self._state_views]

    def _state_arrays(self, k):
        """Per table, state k as a flat float32 array (empty where the optimizer keeps none)."""
        empty = np.zeros(0, np.float32)
        arrays = []
        for views in self._state_views:
            if len(views) > k:
                name, start, end, _ = views[k]
                arrays.append(getattr(self, name).numpy()[start:end])
            else:
                arrays.append(empty)
        return arrays

    def set_learning_rate(self, lr):
        self.learning_rate = float(lr)

    def get_learning_rate(self):
        return self.learning_rate

    def flush(self):
        """Nothing to write back: the weights live in host memory (no cache)."""

    def _bounds_check(self):
        return BOUNDS_CHECK[BoundsCheckMode(self.bounds_check_mode_int)]

    def _report_outside(self, outside):
        if outside and BoundsCheckMode(self.bounds_check_mode_int) is BoundsCheckMode.WARNING:
            self.bounds_check_warning += outside
            warnings.warn(f"{self._name}: {outside} indices outside their tables read row 0", RuntimeWarning, stacklevel=4)

    def forward(self, indices, offsets, per_sample_weights=None, feature_requires_grad=None):
        lookup = _Lookup(self._tables, self._tables.views(self.weights.detach().numpy()),
                         self.weights_precision is SparseType.FP16, _index_array(indices, "indices"),
                         _index_array(offsets, "offsets"), _per_sample_array(per_sample_weights))
        lookup.feature_requires_grad = self._feature_mask(feature_requires_grad)
        recording = ember.is_grad_enabled() and (self.weights.requires_grad or (
            per_sample_weights is not None and per_sample_weights.requires_grad))
        out = _FusedEmbeddingBagFunction.apply(self, lookup, per_sample_weights, self.weights)
        if recording and self.optimizer in COUNTS_STEPS:
            self.iter += 1
        lookup.step = int(self.iter.item())
        return out

    def _feature_mask(self, feature_requires_grad):
        if feature_requires_grad is None:
            return None
        if not isinstance(feature_requires_grad, ember.Tensor) or tuple(feature_requires_grad.shape) != (len(self.feature_table_map),):
            raise ValueError(f"feature_requires_grad must be a tensor of {len(self.feature_table_map)} flags, one per feature")
        return feature_requires_grad.numpy().astype(bool)

    def _mask_features(self, values, lookup):
        """Zeroes the per-sample-weight gradient of features that do not require it."""
        mask = lookup.feature_requires_grad
        if mask is not None and not mask.all():
            features = len(self.feature_table_map)
            batch = (len(lookup.offsets) - 1) // features
            bounds = lookup.offsets[::batch] if batch else np.zeros(features + 1, np.int64)
            values = values * np.repeat(mask, np.diff(bounds)).astype(np.float32)
        return values

    def _apply_update(self, lookup, grad):
        hyperparameters = (self.learning_rate, self.eps, self.beta1, self.beta2, self.weight_decay,
                           int(self.weight_decay_mode), max(lookup.step, 1))
        lookup.backward(lookup.weights, lookup.half, grad, self.optimizer.value, hyperparameters,
                        self._state_arrays(0), self._state_arrays(1))


class DenseTableBatchedEmbeddingBagsCodegen(_TableBatchedEmbeddingBags):
    """The lookups over one dense Parameter `weights`; the backward gives it a dense `.grad`
    (duplicate rows summed) for any `ember.optim` optimizer."""

    _name = "DenseTableBatchedEmbeddingBagsCodegen"

    def __init__(self, embedding_specs, feature_table_map=None, weights_precision=SparseType.FP32,
                 pooling_mode=PoolingMode.SUM, use_cpu=True, output_dtype=SparseType.FP32, use_mtia=False):
        super().__init__()
        if not use_cpu or use_mtia:
            raise NotImplementedError(f"{self._name}: only the CPU is supported (use_cpu=True)")
        for i, spec in enumerate(embedding_specs):
            if len(spec) != 2:
                raise ValueError(f"embedding_specs[{i}] must be (rows, dim), got {spec!r}")
        self._setup(list(embedding_specs), feature_table_map, pooling_mode, weights_precision, output_dtype)
        self.use_cpu = True

    def forward(self, indices, offsets, per_sample_weights=None):
        lookup = _Lookup(self._tables, self._tables.views(self.weights.detach().numpy()),
                         self.weights_precision is SparseType.FP16, _index_array(indices, "indices"),
                         _index_array(offsets, "offsets"), _per_sample_array(per_sample_weights))
        output_dtype = OUTPUT_DTYPES[SparseType.from_int(self.output_dtype)]
        return _DenseEmbeddingBagFunction.apply(lookup, output_dtype, per_sample_weights, self.weights)
