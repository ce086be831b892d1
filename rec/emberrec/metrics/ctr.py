"""Click-through rate, as TorchRec's: the weighted mean label (0 where the weights sum to 0)."""
import ember

from emberrec.metrics.metrics_namespace import MetricName, MetricNamespace, MetricPrefix
from emberrec.metrics.rec_metric import MetricComputationReport, RecMetric, RecMetricComputation

__all__ = ["compute_ctr", "get_ctr_states", "CTRMetricComputation", "CTRMetric"]


def compute_ctr(ctr_num, ctr_denom):
    return ember.where(ctr_denom == 0.0, ember.zeros_like(ctr_num), ctr_num / ctr_denom).double()


def get_ctr_states(labels, predictions, weights):
    return {"ctr_num": (labels * weights).sum(-1), "ctr_denom": weights.sum(-1)}


class CTRMetricComputation(RecMetricComputation):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in ("ctr_num", "ctr_denom"):
            self._add_state(name, ember.zeros(self._n_tasks, dtype=ember.float64), add_window_state=True)

    def update(self, *, predictions, labels, weights, **kwargs):
        self._update_summed_states(get_ctr_states(labels, predictions, weights), predictions.shape[-1])

    def _compute(self):
        return [
            MetricComputationReport(MetricName.CTR, MetricPrefix.LIFETIME, compute_ctr(self.ctr_num, self.ctr_denom)),
            MetricComputationReport(MetricName.CTR, MetricPrefix.WINDOW,
                                    compute_ctr(self.get_window_state("ctr_num"), self.get_window_state("ctr_denom"))),
        ]


class CTRMetric(RecMetric):
    _namespace = MetricNamespace.CTR
    _computation_class = CTRMetricComputation
