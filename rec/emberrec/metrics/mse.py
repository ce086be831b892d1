"""Mean squared error and its root, as TorchRec's (one metric, MSEMetric, reports both `mse`
and `rmse`): weighted squared errors over the summed weights (0 where those sum to 0)."""
import ember

from emberrec.metrics.metrics_namespace import MetricName, MetricNamespace, MetricPrefix
from emberrec.metrics.rec_metric import MetricComputationReport, RecMetric, RecMetricComputation

__all__ = ["compute_mse", "compute_rmse", "compute_error_sum", "get_mse_states", "MSEMetricComputation", "MSEMetric"]


def _safe_ratio(num, denom):
    return num / ember.where(denom == 0.0, ember.ones_like(denom), denom)


def compute_mse(error_sum, weighted_num_samples):
    return ember.where(weighted_num_samples == 0.0, ember.zeros_like(error_sum),
                       _safe_ratio(error_sum, weighted_num_samples)).double()


def compute_rmse(error_sum, weighted_num_samples):
    return ember.sqrt(compute_mse(error_sum, weighted_num_samples))


def compute_error_sum(labels, predictions, weights):
    return (weights * (labels - predictions) ** 2).sum(-1)


def get_mse_states(labels, predictions, weights):
    return {"error_sum": compute_error_sum(labels, predictions, weights), "weighted_num_samples": weights.sum(-1)}


class MSEMetricComputation(RecMetricComputation):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in ("error_sum", "weighted_num_samples"):
            self._add_state(name, ember.zeros(self._n_tasks, dtype=ember.float64), add_window_state=True)

    def update(self, *, predictions, labels, weights, **kwargs):
        self._update_summed_states(get_mse_states(labels, predictions, weights), predictions.shape[-1])

    def _compute(self):
        lifetime = (self.error_sum, self.weighted_num_samples)
        window = (self.get_window_state("error_sum"), self.get_window_state("weighted_num_samples"))
        return [MetricComputationReport(MetricName.MSE, MetricPrefix.LIFETIME, compute_mse(*lifetime)),
                MetricComputationReport(MetricName.RMSE, MetricPrefix.LIFETIME, compute_rmse(*lifetime)),
                MetricComputationReport(MetricName.MSE, MetricPrefix.WINDOW, compute_mse(*window)),
                MetricComputationReport(MetricName.RMSE, MetricPrefix.WINDOW, compute_rmse(*window))]


class MSEMetric(RecMetric):
    _namespace = MetricNamespace.MSE
    _computation_class = MSEMetricComputation
