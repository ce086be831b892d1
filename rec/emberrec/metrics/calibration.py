"""Calibration, as TorchRec's: the weighted sum of predictions over the weighted sum of labels
(0 where the labels sum to 0 or less)."""
import ember

from emberrec.metrics.metrics_namespace import MetricName, MetricNamespace, MetricPrefix
from emberrec.metrics.rec_metric import MetricComputationReport, RecMetric, RecMetricComputation

__all__ = ["compute_calibration", "get_calibration_states", "CalibrationMetricComputation", "CalibrationMetric"]


def compute_calibration(calibration_num, calibration_denom):
    safe = ember.where(calibration_denom <= 0.0, ember.ones_like(calibration_denom), calibration_denom)
    return ember.where(calibration_denom <= 0.0, ember.zeros_like(calibration_num), calibration_num / safe).double()


def get_calibration_states(labels, predictions, weights):
    return {"calibration_num": (predictions * weights).sum(-1), "calibration_denom": (labels * weights).sum(-1)}


class CalibrationMetricComputation(RecMetricComputation):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in ("calibration_num", "calibration_denom"):
            self._add_state(name, ember.zeros(self._n_tasks, dtype=ember.float64), add_window_state=True)

    def update(self, *, predictions, labels, weights, **kwargs):
        self._update_summed_states(get_calibration_states(labels, predictions, weights), predictions.shape[-1])

    def _compute(self):
        return [
            MetricComputationReport(MetricName.CALIBRATION, MetricPrefix.LIFETIME,
                                    compute_calibration(self.calibration_num, self.calibration_denom)),
            MetricComputationReport(MetricName.CALIBRATION, MetricPrefix.WINDOW,
                                    compute_calibration(self.get_window_state("calibration_num"),
                                                        self.get_window_state("calibration_denom"))),
        ]


class CalibrationMetric(RecMetric):
    _namespace = MetricNamespace.CALIBRATION
    _computation_class = CalibrationMetricComputation
