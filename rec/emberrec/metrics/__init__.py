"""TorchRec's RecMetrics: NE, AUC, Calibration, CTR, MSE (with RMSE) and Throughput, windowed
and lifetime, with TorchRec's formulas and keys, gathered by `RecMetricModule`."""
from emberrec.metrics.metric_module import RecMetricModule, StateMetric, generate_metric_module
from emberrec.metrics.metrics_config import (
    DefaultMetricsConfig, DefaultTaskInfo, EmptyMetricsConfig, MetricsConfig, RecComputeMode, RecMetricDef, RecMetricEnum,
    RecTaskInfo, StateMetricEnum, ThroughputDef)
from emberrec.metrics.rec_metric import RecMetric, RecMetricException, RecMetricList

__all__ = [
    "RecMetricModule", "StateMetric", "generate_metric_module", "DefaultMetricsConfig", "DefaultTaskInfo",
    "EmptyMetricsConfig", "MetricsConfig", "RecComputeMode", "RecMetricDef", "RecMetricEnum", "RecTaskInfo",
    "StateMetricEnum", "ThroughputDef", "RecMetric", "RecMetricException", "RecMetricList",
]
