"""Metric names and keys as TorchRec's: a metric's key is
`{namespace}-{task}|{prefix}{name}`, e.g. `ne-DefaultTask|lifetime_ne`."""
from enum import Enum

__all__ = ["MetricName", "MetricNamespace", "MetricPrefix", "compose_metric_namespace",
           "compose_customized_metric_key", "compose_metric_key"]


class _StrValue(Enum):
    def __str__(self):
        return self.value


class MetricName(_StrValue):
    DEFAULT = ""
    NE = "ne"
    THROUGHPUT = "throughput"
    TOTAL_EXAMPLES = "total_examples"
    CTR = "ctr"
    CALIBRATION = "calibration"
    MSE = "mse"
    RMSE = "rmse"
    AUC = "auc"


class MetricNamespace(_StrValue):
    DEFAULT = ""
    NE = "ne"
    THROUGHPUT = "throughput"
    CTR = "ctr"
    CALIBRATION = "calibration"
    MSE = "mse"
    AUC = "auc"
    OPTIMIZERS = "optimizers"
    MODEL_CONFIGURATOR = "model_configurator"


class MetricPrefix(_StrValue):
    DEFAULT = ""
    LIFETIME = "lifetime_"
    WINDOW = "window_"


def compose_metric_namespace(namespace, task_name):
    return f"{namespace}-{task_name}"


def compose_customized_metric_key(namespace, metric_name, description=None):
    return f"{namespace}|{metric_name}{description or ''}"


def compose_metric_key(namespace, task_name, metric_name, metric_prefix=MetricPrefix.DEFAULT, description=None):
    return compose_customized_metric_key(compose_metric_namespace(namespace, task_name),
                                         f"{metric_prefix}{metric_name}", description)
