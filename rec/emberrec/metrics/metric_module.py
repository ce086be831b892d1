"""`RecMetricModule`, as TorchRec's: the metrics of a training loop in one module.
`update(model_out)` per batch reads each task's labels, predictions and weights from the model
output dict (by the names in its RecTaskInfo) and ticks the throughput; `compute()` returns
{key: value} of every metric; `should_compute()` says whether `compute_interval_steps` batches
have passed; the lifetime states are in `state_dict()`, so the module checkpoints with the model.
`generate_metric_module` builds one from a MetricsConfig."""
import time

import ember
import ember.nn as nn

from emberrec.metrics.auc import AUCMetric
from emberrec.metrics.calibration import CalibrationMetric
from emberrec.metrics.ctr import CTRMetric
from emberrec.metrics.metrics_config import RecMetricEnum, StateMetricEnum
from emberrec.metrics.metrics_namespace import MetricNamespace, compose_customized_metric_key, compose_metric_namespace
from emberrec.metrics.mse import MSEMetric
from emberrec.metrics.ne import NEMetric
from emberrec.metrics.rec_metric import RecMetricList
from emberrec.metrics.throughput import ThroughputMetric

__all__ = ["REC_METRICS_MAPPING", "StateMetric", "RecMetricModule", "generate_metric_module"]

REC_METRICS_MAPPING = {
    RecMetricEnum.NE: NEMetric,
    RecMetricEnum.CTR: CTRMetric,
    RecMetricEnum.CALIBRATION: CalibrationMetric,
    RecMetricEnum.AUC: AUCMetric,
    RecMetricEnum.MSE: MSEMetric,
}

STATE_METRICS_NAMESPACE_MAPPING = {
    StateMetricEnum.OPTIMIZERS: MetricNamespace.OPTIMIZERS,
    StateMetricEnum.MODEL_CONFIGURATOR: MetricNamespace.MODEL_CONFIGURATOR,
}


class StateMetric:
    """Anything whose `get_metrics()` returns {name: value} (an optimizer's state, say)."""

    def get_metrics(self):
        raise NotImplementedError


def _parse_task_outputs(tasks, model_out):
    """{task: labels}, {task: predictions}, {task: weights} from the model output dict."""
    if not isinstance(model_out, dict):
        raise TypeError(f"model_out must be a dict of output name -> tensor, got {type(model_out).__name__}")
    labels, predictions, weights = {}, {}, {}
    for task in tasks:
        for name in (task.label_name, task.prediction_name, task.weight_name):
            if name not in model_out:
                raise ValueError(f"{name!r} (task {task.name!r}) not found in model output (it has {sorted(model_out)})")
        label = model_out[task.label_name].squeeze()
        prediction = model_out[task.prediction_name].squeeze()
        weight = model_out[task.weight_name].squeeze()
        if label.numel() or prediction.numel() or weight.numel():
            labels[task.name], predictions[task.name], weights[task.name] = label, prediction, weight
    return labels, predictions, weights


class RecMetricModule(nn.Module):
    def __init__(self, batch_size, world_size, rec_tasks=None, rec_metrics=None, throughput_metric=None,
                 state_metrics=None, compute_interval_steps=100, min_compute_interval=0.0,
                 max_compute_interval=float("inf")):
        super().__init__()
        if not isinstance(compute_interval_steps, int) or compute_interval_steps < 1:
            raise ValueError(f"compute_interval_steps must be a positive int, got {compute_interval_steps!r}")
        self.rec_tasks = list(rec_tasks) if rec_tasks else []
        self.rec_metrics = rec_metrics if rec_metrics else RecMetricList([])
        self.throughput_metric = throughput_metric
        self.state_metrics = state_metrics if state_metrics else {}
        self.trained_batches = 0
        self.batch_size, self.world_size = batch_size, world_size
        self.compute_count = 0
        self.compute_interval_steps = compute_interval_steps
        self.min_compute_interval, self.max_compute_interval = min_compute_interval, max_compute_interval
        if min_compute_interval == 0.0 and max_compute_interval == float("inf"):
            self.min_compute_interval = self.max_compute_interval = -1.0  # fixed interval
        elif max_compute_interval <= 0.0:
            raise ValueError("Max compute interval should not be smaller than 0.0.")
        elif min_compute_interval < 0.0:
            raise ValueError("Min compute interval should not be smaller than 0.0.")
        self.last_compute_time = -1.0

    def update(self, model_out, **kwargs):
        """Call once per batch, after forward, with the model's outputs by name."""
        with ember.no_grad():
            if len(self.rec_metrics) and self.rec_tasks:
                labels, predictions, weights = _parse_task_outputs(self.rec_tasks, model_out)
                self.rec_metrics.update(predictions=predictions, labels=labels, weights=weights)
        if self.throughput_metric:
            self.throughput_metric.update()
        self.trained_batches += 1

    def _adjust_compute_interval(self):
        """With min/max_compute_interval set, re-sizes compute_interval_steps (once, at the
        second compute()) so that computes come that many seconds apart."""
        if self.last_compute_time > 0 and self.min_compute_interval >= 0:
            interval = time.time() - self.last_compute_time
            if not self.max_compute_interval >= interval >= self.min_compute_interval:
                per_step = interval / self.compute_interval_steps
                if self.max_compute_interval == float("inf"):
                    target = self.min_compute_interval + 1.0
                elif self.min_compute_interval == 0.0:
                    target = self.max_compute_interval - (0.0 if self.max_compute_interval <= 1.0 else 1.0)
                else:
                    target = (self.max_compute_interval + self.min_compute_interval) / 2
                self.compute_interval_steps = max(1, int(target / per_step))
            self.min_compute_interval = self.max_compute_interval = -1.0
        self.last_compute_time = time.time()

    def should_compute(self):
        return self.trained_batches % self.compute_interval_steps == 0

    def compute(self):
        self.compute_count += 1
        out = {}
        if len(self.rec_metrics):
            self._adjust_compute_interval()
            out.update(self.rec_metrics.compute())
        if self.throughput_metric:
            out.update(self.throughput_metric.compute())
        for namespace, component in self.state_metrics.items():
            out.update({compose_customized_metric_key(namespace, name): value
                        for name, value in component.get_metrics().items()})
        return out

    def local_compute(self):
        return self.rec_metrics.local_compute() if len(self.rec_metrics) else {}

    def sync(self):
        self.rec_metrics.sync()

    def unsync(self):
        self.rec_metrics.unsync()

    def reset(self):
        self.rec_metrics.reset()

    def get_required_inputs(self):
        return self.rec_metrics.get_required_inputs()


def _generate_rec_metrics(metrics_config, world_size, my_rank, batch_size):
    metrics = []
    for metric_enum, metric_def in metrics_config.rec_metrics.items():
        if metric_enum not in REC_METRICS_MAPPING:
            raise NotImplementedError(f"{metric_enum} is not in emberrec (it has {sorted(map(str, REC_METRICS_MAPPING))})")
        if metric_def.rec_tasks and metric_def.rec_task_indices:
            raise ValueError("Only one of RecMetricDef.rec_tasks and RecMetricDef.rec_task_indices should be specified.")
        tasks = metric_def.rec_tasks or [metrics_config.rec_tasks[i] for i in metric_def.rec_task_indices]
        if not tasks:
            raise ValueError("One of RecMetricDef.rec_tasks and RecMetricDef.rec_task_indices should be a non-empty list")
        metrics.append(REC_METRICS_MAPPING[metric_enum](
            world_size=world_size, my_rank=my_rank, batch_size=batch_size, tasks=tasks,
            compute_mode=metrics_config.rec_compute_mode, window_size=metric_def.window_size,
            fused_update_limit=metrics_config.fused_update_limit, compute_on_all_ranks=metrics_config.compute_on_all_ranks,
            should_validate_update=metrics_config.should_validate_update, **(metric_def.arguments or {})))
    return RecMetricList(metrics)


def _generate_state_metrics(metrics_config, state_metrics_mapping):
    out = {}
    for metric_enum in metrics_config.state_metrics:
        namespace = STATE_METRICS_NAMESPACE_MAPPING.get(metric_enum)
        if namespace is None:
            raise ValueError(f"Unknown StateMetrics {metric_enum}")
        out[compose_metric_namespace(namespace, str(namespace))] = state_metrics_mapping[metric_enum]
    return out


def generate_metric_module(metric_class, metrics_config, batch_size, world_size, my_rank, state_metrics_mapping,
                           device=None, process_group=None):
    """A `metric_class` (RecMetricModule) with the metrics `metrics_config` describes."""
    if device is not None:
        ember.empty(0, device=device)  # refuses a device this build or machine has no backend for
    throughput = None
    if metrics_config.throughput_metric:
        throughput = ThroughputMetric(batch_size=batch_size, world_size=world_size,
                                      window_seconds=metrics_config.throughput_metric.window_size,
                                      warmup_steps=metrics_config.throughput_metric.warmup_steps)
    return metric_class(
        batch_size=batch_size, world_size=world_size, rec_tasks=metrics_config.rec_tasks,
        rec_metrics=_generate_rec_metrics(metrics_config, world_size, my_rank, batch_size),
        throughput_metric=throughput, state_metrics=_generate_state_metrics(metrics_config, state_metrics_mapping),
        compute_interval_steps=metrics_config.compute_interval_steps,
        min_compute_interval=metrics_config.min_compute_interval, max_compute_interval=metrics_config.max_compute_interval)
