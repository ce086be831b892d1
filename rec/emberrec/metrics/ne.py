"""Normalized entropy (NE), as TorchRec's: the weighted cross-entropy of the predictions (in
bits) over the entropy of the mean label; predictions are probabilities, clamped to
[eta, 1 - eta] with eta = 1e-12."""
import ember

from emberrec.metrics.metrics_namespace import MetricName, MetricNamespace, MetricPrefix
from emberrec.metrics.rec_metric import MetricComputationReport, RecMetric, RecMetricComputation

__all__ = ["compute_cross_entropy", "compute_ne", "get_ne_states", "NEMetricComputation", "NEMetric"]

_STATES = ("cross_entropy_sum", "weighted_num_samples", "pos_labels", "neg_labels")


def compute_cross_entropy(labels, predictions, weights, eta):
    predictions = predictions.double().clamp(eta, 1 - eta)
    return -weights * labels * ember.log2(predictions) - weights * (1.0 - labels) * ember.log2(1.0 - predictions)


def _cross_entropy_norm(mean_label, pos_labels, neg_labels, eta):
    mean_label = mean_label.double().clamp(eta, 1 - eta)
    return -pos_labels * ember.log2(mean_label) - neg_labels * ember.log2(1.0 - mean_label)


def compute_ne(ce_sum, weighted_num_samples, pos_labels, neg_labels, eta):
    mean_label = pos_labels / weighted_num_samples
    return ce_sum / _cross_entropy_norm(mean_label, pos_labels, neg_labels, eta)


def get_ne_states(labels, predictions, weights, eta):
    return {
        "cross_entropy_sum": compute_cross_entropy(labels, predictions, weights, eta).sum(-1),
        "weighted_num_samples": weights.sum(-1),
        "pos_labels": (weights * labels).sum(-1),
        "neg_labels": (weights * (1.0 - labels)).sum(-1),
    }


class NEMetricComputation(RecMetricComputation):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in _STATES:
            self._add_state(name, ember.zeros(self._n_tasks, dtype=ember.float64), add_window_state=True)
        self.eta = 1e-12

    def update(self, *, predictions, labels, weights, **kwargs):
        self._update_summed_states(get_ne_states(labels, predictions, weights, self.eta), predictions.shape[-1])

    def _compute(self):
        lifetime = [getattr(self, name) for name in _STATES]
        window = [self.get_window_state(name) for name in _STATES]
        return [MetricComputationReport(MetricName.NE, MetricPrefix.LIFETIME, compute_ne(*lifetime, self.eta)),
                MetricComputationReport(MetricName.NE, MetricPrefix.WINDOW, compute_ne(*window, self.eta))]


class NEMetric(RecMetric):
    _namespace = MetricNamespace.NE
    _computation_class = NEMetricComputation
