"""The frame every RecMetric shares, as TorchRec's `rec_metric`: a `RecMetric` (an nn.Module
per metric) holds one `RecMetricComputation` per task, whose states are buffers (lifetime states
go into the state dict, so metrics checkpoint with the model) plus windowed copies that hold
only the last `window_size` samples.

Differences from TorchRec: the states are summed in this process only (world_size must be 1:
metrics across processes are not implemented), the FUSED compute modes are not implemented, and
bad inputs (predictions, labels and weights of different shapes, a non-tensor) raise ValueError
or TypeError before any state changes."""
import abc
import math
from collections import deque
from dataclasses import dataclass
from typing import Optional

import ember
import ember.nn as nn

from emberrec.metrics.metrics_config import RecComputeMode
from emberrec.metrics.metrics_namespace import MetricPrefix, compose_metric_key

__all__ = ["RecMetricException", "MetricComputationReport", "WindowBuffer", "RecMetricComputation", "RecMetric",
           "RecMetricList"]

MAX_BUFFER_COUNT = 1000


class RecMetricException(Exception):
    """TorchRec's error for a metric used wrongly (its name, for code that catches it)."""


@dataclass(frozen=True)
class MetricComputationReport:
    name: object
    metric_prefix: MetricPrefix
    value: ember.Tensor
    description: Optional[str] = None


class WindowBuffer:
    """The per-batch contributions to a windowed state: the oldest leave while the batches hold
    more than `max_size` samples (or there are more than `max_buffer_count` of them)."""

    def __init__(self, max_size, max_buffer_count=MAX_BUFFER_COUNT):
        self._max_size = max_size
        self._buffers = deque(maxlen=max_buffer_count)
        self._used_sizes = deque(maxlen=max_buffer_count)
        self._window_used_size = 0

    def aggregate_state(self, window_state, curr_state, size):
        """Adds `curr_state` into `window_state` (in place) and drops what fell out."""
        if len(self._buffers) == self._buffers.maxlen:
            self._remove_oldest(window_state)
        self._buffers.append(curr_state)
        self._used_sizes.append(size)
        window_state.add_(curr_state)
        self._window_used_size += size
        while self._window_used_size > self._max_size:
            self._remove_oldest(window_state)

    def _remove_oldest(self, window_state):
        window_state.sub_(self._buffers.popleft())
        self._window_used_size -= self._used_sizes.popleft()

    @property
    def buffers(self):
        return self._buffers


class RecMetricComputation(nn.Module, abc.ABC):
    """The states and formulas of one metric for `n_tasks` tasks (one, here). A subclass adds
    its states with `_add_state` and defines `update(*, predictions, labels, weights)` on
    (n_tasks, batch) tensors and `_compute()`."""

    def __init__(self, my_rank, batch_size, n_tasks, window_size, compute_on_all_ranks=False,
                 should_validate_update=False, process_group=None, fused_update_limit=0, **kwargs):
        super().__init__()
        self._my_rank, self._n_tasks, self._batch_size = my_rank, n_tasks, batch_size
        self._window_size = window_size
        self._compute_on_all_ranks = compute_on_all_ranks
        self._should_validate_update = should_validate_update
        self._defaults = {}
        self._window_buffers = {}
        if should_validate_update:
            self._add_state("has_valid_update", ember.zeros(n_tasks, dtype=ember.uint8), add_window_state=False)

    @staticmethod
    def get_window_state_name(state_name):
        return f"window_{state_name}"

    def get_window_state(self, state_name):
        return getattr(self, self.get_window_state_name(state_name))

    def _add_state(self, name, default, add_window_state, persistent=True, **kwargs):
        self.register_buffer(name, default.clone(), persistent=persistent)
        self._defaults[name] = default.clone()
        if add_window_state:
            window_name = self.get_window_state_name(name)
            self.register_buffer(window_name, default.clone(), persistent=False)
            self._defaults[window_name] = default.clone()
            self._window_buffers[window_name] = WindowBuffer(self._window_size)

    def _aggregate_window_state(self, state_name, state, num_samples):
        window_name = self.get_window_state_name(state_name)
        self._window_buffers[window_name].aggregate_state(getattr(self, window_name), state, num_samples)

    def _update_summed_states(self, states, num_samples):
        """Adds each batch state to its lifetime and window states."""
        for name, value in states.items():
            getattr(self, name).add_(value)
            self._aggregate_window_state(name, value, num_samples)

    @abc.abstractmethod
    def update(self, *, predictions, labels, weights, **kwargs):
        ...

    @abc.abstractmethod
    def _compute(self):
        ...

    def pre_compute(self):
        return None

    def compute(self):
        return self._compute() if self._my_rank == 0 or self._compute_on_all_ranks else []

    def local_compute(self):
        return self._compute()

    def reset(self):
        for name, default in self._defaults.items():
            setattr(self, name, default.clone())  # a registered buffer: stays one, persistent or not
        self._window_buffers = {name: WindowBuffer(self._window_size) for name in self._window_buffers}


def _as_task_dict(name, value, tasks):
    """{task name: tensor}: a dict as given, or one tensor for the only task."""
    if isinstance(value, dict):
        return value
    if isinstance(value, ember.Tensor):
        if len(tasks) != 1:
            raise ValueError(f"{name} must be a dict of task name -> tensor when there are {len(tasks)} tasks")
        return {tasks[0].name: value}
    raise TypeError(f"{name} must be an ember.Tensor or a dict of task name -> tensor, got {type(value).__name__}")


class RecMetric(nn.Module, abc.ABC):
    """A metric over the tasks `tasks`: `update(predictions=, labels=, weights=)` per batch
    (each a tensor, or a dict of task name -> tensor), `compute()` -> {key: value}, with keys
    `{namespace}-{task}|{lifetime_|window_}{name}`. `window_size` counts samples."""

    _computation_class = None
    _namespace = None

    PREDICTIONS, LABELS, WEIGHTS = "predictions", "labels", "weights"

    def __init__(self, world_size, my_rank, batch_size, tasks, compute_mode=RecComputeMode.UNFUSED_TASKS_COMPUTATION,
                 window_size=100, fused_update_limit=0, compute_on_all_ranks=False, should_validate_update=False,
                 process_group=None, **kwargs):
        super().__init__()
        if world_size != 1:
            raise NotImplementedError(f"world_size {world_size}: emberrec's metrics sum their states in one process "
                                      "only (world_size=1)")
        if compute_mode != RecComputeMode.UNFUSED_TASKS_COMPUTATION:
            raise NotImplementedError(f"{compute_mode}: emberrec has only RecComputeMode.UNFUSED_TASKS_COMPUTATION")
        if not tasks:
            raise ValueError("tasks must hold at least one RecTaskInfo")
        self._world_size, self._my_rank, self._batch_size = world_size, my_rank, batch_size
        self._window_size = math.ceil(window_size / world_size)
        if self._window_size < batch_size:
            raise ValueError(f"Local window size must be larger than batch size. Got local window size "
                             f"{self._window_size} and batch size {batch_size}.")
        self._tasks = list(tasks)
        self._fused_update_limit = fused_update_limit
        self._should_validate_update = should_validate_update
        self._update_buffers = {self.PREDICTIONS: [], self.LABELS: [], self.WEIGHTS: []}
        self._metrics_computations = nn.ModuleList([
            self._computation_class(my_rank=my_rank, batch_size=batch_size, n_tasks=1, window_size=self._window_size,
                                    compute_on_all_ranks=compute_on_all_ranks,
                                    should_validate_update=should_validate_update, **kwargs)
            for _ in self._tasks])

    def update(self, *, predictions, labels, weights=None, **kwargs):
        batch = self._checked_batch(predictions, labels, weights)
        if self._fused_update_limit > 0:
            for key, value in zip((self.PREDICTIONS, self.LABELS, self.WEIGHTS), batch):
                self._update_buffers[key].append(value)
            if len(self._update_buffers[self.PREDICTIONS]) >= self._fused_update_limit:
                self._flush_fused_updates()
        else:
            self._update(*batch)

    def _checked_batch(self, predictions, labels, weights):
        """(predictions, labels, weights) as {task: (1, n) float64 tensor}, checked."""
        predictions = _as_task_dict("predictions", predictions, self._tasks)
        labels = _as_task_dict("labels", labels, self._tasks)
        weights = None if weights is None else _as_task_dict("weights", weights, self._tasks)
        out = ({}, {}, {})
        for task in self._tasks:
            if task.name not in predictions:
                continue
            if task.name not in labels:
                raise ValueError(f"labels has no entry for task {task.name!r}")
            prediction, label = predictions[task.name], labels[task.name]
            weight = ember.ones_like(prediction) if weights is None or task.name not in weights else weights[task.name]
            for name, tensor in (("predictions", prediction), ("labels", label), ("weights", weight)):
                if not isinstance(tensor, ember.Tensor):
                    raise TypeError(f"{name}[{task.name!r}] must be an ember.Tensor, got {type(tensor).__name__}")
            if not prediction.numel() == label.numel() == weight.numel():
                raise ValueError(f"task {task.name!r}: predictions, labels and weights must hold as many values, got "
                                 f"{prediction.numel()}, {label.numel()} and {weight.numel()}")
            if prediction.numel() == 0:
                continue
            for store, tensor in zip(out, (prediction, label, weight)):
                store[task.name] = tensor.detach().reshape(1, -1).to(ember.float64)
        return out

    def _update(self, predictions, labels, weights):
        for task, computation in zip(self._tasks, self._metrics_computations):
            if task.name not in predictions:
                continue
            task_weights = weights[task.name]
            if self._should_validate_update:
                has_valid_weights = bool((task_weights != 0).any())
                if not has_valid_weights:
                    continue
                computation.has_valid_update.fill_(1)
            computation.update(predictions=predictions[task.name], labels=labels[task.name], weights=task_weights)

    def _flush_fused_updates(self):
        batches = [self._update_buffers[key] for key in (self.PREDICTIONS, self.LABELS, self.WEIGHTS)]
        if not batches[0]:
            return
        fused = tuple({task: ember.cat([b[task] for b in batch if task in b], 1)
                       for task in {t for b in batch for t in b}} for batch in batches)
        for batch in batches:
            batch.clear()
        self._update(*fused)

    def _reports(self, scope):
        for task, computation in zip(self._tasks, self._metrics_computations):
            computation.pre_compute()
            for report in getattr(computation, scope + "compute")():
                value = report.value
                if self._should_validate_update and int(computation.has_valid_update[0]) == 0:
                    value = ember.zeros_like(value)
                yield task, report, value

    def compute(self):
        self._flush_fused_updates()
        return {compose_metric_key(self._namespace, task.name, report.name, report.metric_prefix, report.description):
                value for task, report, value in self._reports("")}

    def local_compute(self):
        self._flush_fused_updates()
        return {compose_metric_key(self._namespace, task.name, report.name, report.metric_prefix, report.description):
                value for task, report, value in self._reports("local_")}

    def sync(self):
        """Nothing to gather: one process holds every state."""

    def unsync(self):
        """Nothing to restore: see sync()."""

    def reset(self):
        for computation in self._metrics_computations:
            computation.reset()

    def state_dict(self, *args, **kwargs):
        self._flush_fused_updates()  # a checkpoint includes the updates not yet applied
        return super().state_dict(*args, **kwargs)

    def get_required_inputs(self):
        return set()


class RecMetricList(nn.Module):
    """Several RecMetrics updated and computed together."""

    def __init__(self, rec_metrics):
        super().__init__()
        if not all(isinstance(m, RecMetric) for m in rec_metrics):
            raise TypeError("rec_metrics must be a list of RecMetric")
        self.rec_metrics = nn.ModuleList(rec_metrics)
        self.required_inputs = None

    def __len__(self):
        return len(self.rec_metrics)

    def __getitem__(self, index):
        return self.rec_metrics[index]

    def get_required_inputs(self):
        return self.required_inputs

    def update(self, *, predictions, labels, weights, **kwargs):
        for metric in self.rec_metrics:
            metric.update(predictions=predictions, labels=labels, weights=weights, **kwargs)

    def compute(self):
        out = {}
        for metric in self.rec_metrics:
            out.update(metric.compute())
        return out

    def local_compute(self):
        out = {}
        for metric in self.rec_metrics:
            out.update(metric.local_compute())
        return out

    def sync(self):
        for metric in self.rec_metrics:
            metric.sync()

    def unsync(self):
        for metric in self.rec_metrics:
            metric.unsync()

    def reset(self):
        for metric in self.rec_metrics:
            metric.reset()
