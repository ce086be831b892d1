"""Area under the ROC curve over the last `window_size` samples, as TorchRec's (window only:
`auc-<task>|window_auc`): samples sorted by descending prediction, weighted cumulative true and
false positives, trapezoids; 0.5 where the window has no positive or no negative weight. Tied
predictions keep their arrival order (a stable sort), so the value is deterministic."""
import ember

from emberrec.metrics.metrics_namespace import MetricName, MetricNamespace, MetricPrefix
from emberrec.metrics.rec_metric import MetricComputationReport, RecMetric, RecMetricComputation

__all__ = ["compute_auc", "AUCMetricComputation", "AUCMetric"]

_STATES = ("predictions", "labels", "weights")


def _auc_of_one_task(predictions, labels, weights):
    if weights.numel() == 0:
        return ember.tensor(0.5, dtype=ember.float64)
    order = ember.argsort(predictions, descending=True, stable=True)
    sorted_labels, sorted_weights = labels.index_select(0, order), weights.index_select(0, order)
    cum_fp = ember.cumsum(sorted_weights * (1.0 - sorted_labels), 0)
    cum_tp = ember.cumsum(sorted_weights * sorted_labels, 0)
    total_fp, total_tp = float(cum_fp[-1]), float(cum_tp[-1])
    if total_fp * total_tp == 0:
        return ember.tensor(0.5, dtype=ember.float64)
    area = ((cum_fp[1:] - cum_fp[:-1]) * (cum_tp[1:] + cum_tp[:-1])).sum() / 2
    return (area / total_fp / total_tp).double()


def compute_auc(n_tasks, predictions, labels, weights):
    """AUC of each task's row of the (n_tasks, n) tensors, as an (n_tasks,) tensor."""
    return ember.stack([_auc_of_one_task(p, l, w) for p, l, w in zip(predictions, labels, weights)])


class AUCMetricComputation(RecMetricComputation):
    """Keeps the last window_size samples' predictions, labels and weights (persistent: a
    checkpoint restores the window)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in _STATES:
            self._add_state(name, ember.zeros((self._n_tasks, 0), dtype=ember.float64), add_window_state=False)

    def update(self, *, predictions, labels, weights, **kwargs):
        for name, batch in zip(_STATES, (predictions, labels, weights)):
            kept = ember.cat([getattr(self, name), batch.double()], 1)
            setattr(self, name, kept[:, max(kept.shape[1] - self._window_size, 0):].contiguous())

    def _compute(self):
        return [MetricComputationReport(MetricName.AUC, MetricPrefix.WINDOW,
                                        compute_auc(self._n_tasks, self.predictions, self.labels, self.weights))]


class AUCMetric(RecMetric):
    _namespace = MetricNamespace.AUC
    _computation_class = AUCMetricComputation
