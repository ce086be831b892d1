"""What a RecMetricModule computes, as TorchRec's `metrics_config`: the tasks (`RecTaskInfo`:
which model outputs hold a task's labels, predictions and weights), the metrics of each
(`RecMetricDef`), throughput (`ThroughputDef`), and `MetricsConfig` gathering them."""
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Dict, List, Optional

__all__ = ["RecTaskInfo", "DefaultTaskInfo", "RecComputeMode", "RecMetricEnum", "RecMetricDef", "ThroughputDef",
           "StateMetricEnum", "MetricsConfig", "DefaultMetricsConfig", "EmptyMetricsConfig"]

_DEFAULT_WINDOW_SIZE = 10_000_000
_DEFAULT_THROUGHPUT_WINDOW_SECONDS = 100
_DEFAULT_THROUGHPUT_WARMUP_STEPS = 100


@dataclass(frozen=True)
class RecTaskInfo:
    name: str = "DefaultTask"
    label_name: str = "label"
    prediction_name: str = "prediction"
    weight_name: str = "weight"


DefaultTaskInfo = RecTaskInfo(name="DefaultTask", label_name="label", prediction_name="prediction", weight_name="weight")


class RecComputeMode(Enum):
    """UNFUSED_TASKS_COMPUTATION: one computation per task (the only mode emberrec has);
    the FUSED modes raise NotImplementedError."""
    FUSED_TASKS_COMPUTATION = 1
    UNFUSED_TASKS_COMPUTATION = 2
    FUSED_TASKS_AND_STATES_COMPUTATION = 3


class RecMetricEnum(Enum):
    NE = "ne"
    CTR = "ctr"
    AUC = "auc"
    CALIBRATION = "calibration"
    MSE = "mse"

    def __str__(self):
        return self.value


class StateMetricEnum(Enum):
    OPTIMIZERS = "optimizers"
    MODEL_CONFIGURATOR = "model_configurator"

    def __str__(self):
        return self.value


@dataclass
class RecMetricDef:
    """The tasks of one metric (`rec_tasks`, or `rec_task_indices` into MetricsConfig.rec_tasks)
    and its window in samples (all ranks together)."""
    rec_tasks: List[RecTaskInfo] = field(default_factory=list)
    rec_task_indices: List[int] = field(default_factory=list)
    window_size: int = _DEFAULT_WINDOW_SIZE
    arguments: Optional[Dict[str, Any]] = None


@dataclass
class ThroughputDef:
    window_size: int = _DEFAULT_THROUGHPUT_WINDOW_SECONDS
    warmup_steps: int = _DEFAULT_THROUGHPUT_WARMUP_STEPS


@dataclass
class MetricsConfig:
    rec_tasks: List[RecTaskInfo] = field(default_factory=list)
    rec_metrics: Dict[RecMetricEnum, RecMetricDef] = field(default_factory=dict)
    throughput_metric: Optional[ThroughputDef] = None
    rec_compute_mode: RecComputeMode = RecComputeMode.UNFUSED_TASKS_COMPUTATION
    fused_update_limit: int = 0
    state_metrics: List[StateMetricEnum] = field(default_factory=list)
    compute_interval_steps: int = 100
    min_compute_interval: float = 0.0
    max_compute_interval: float = float("inf")
    compute_on_all_ranks: bool = False
    should_validate_update: bool = False

    def __post_init__(self):
        for metric_enum, metric_def in self.rec_metrics.items():
            for index in metric_def.rec_task_indices:
                if not 0 <= index < len(self.rec_tasks):
                    raise ValueError(f"rec_task_indices {index} is out of range of {len(self.rec_tasks)} tasks "
                                     f"for metric {metric_enum}")


DefaultMetricsConfig = MetricsConfig(
    rec_tasks=[DefaultTaskInfo],
    rec_metrics={RecMetricEnum.NE: RecMetricDef(rec_tasks=[DefaultTaskInfo], window_size=_DEFAULT_WINDOW_SIZE)},
    throughput_metric=ThroughputDef(),
    state_metrics=[],
)

EmptyMetricsConfig = MetricsConfig(rec_tasks=[], rec_metrics={}, throughput_metric=None, state_metrics=[])
