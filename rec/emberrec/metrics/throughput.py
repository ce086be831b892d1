"""Training throughput (examples per second over all ranks), as TorchRec's ThroughputMetric:
after `warmup_steps` updates, `lifetime_throughput` (every example since the warm-up over the
time since) and `window_throughput` (the examples of the updates in the last `window_seconds`
over their time), besides `total_examples`. Keys `throughput-throughput|...`."""
import math
import time
from collections import deque

import ember
import ember.nn as nn

from emberrec.metrics.metrics_namespace import MetricName, MetricNamespace, MetricPrefix, compose_metric_key

__all__ = ["ThroughputMetric"]

MAX_WINDOW_TS = 2 * 60 * 60


class ThroughputMetric(nn.Module):
    _namespace = MetricNamespace.THROUGHPUT
    _metric_name = MetricName.THROUGHPUT

    def __init__(self, *, batch_size, world_size, window_seconds, warmup_steps=100):
        super().__init__()
        if window_seconds < 1:
            raise ValueError("window_seconds must be at least 1 to give window throughput the minimum time window")
        if warmup_steps < 1:
            raise ValueError("warmup_steps must be at least 1 to give throughput a reasonable begin time.")
        self._batch_size, self._world_size = batch_size, world_size
        self._window_seconds = min(window_seconds, MAX_WINDOW_TS)
        self._warmup_steps = warmup_steps
        self.register_buffer("total_examples", ember.tensor(0, dtype=ember.int64))
        self.register_buffer("warmup_examples", ember.tensor(0, dtype=ember.int64))
        self.register_buffer("time_lapse_after_warmup", ember.tensor(0.0, dtype=ember.float64))
        self._window_time_lapse_buffer = deque(maxlen=MAX_WINDOW_TS)
        self._window_time_lapse = 0.0
        self._previous_ts = 0.0
        self._steps = 0
        name = str(self._namespace)
        self._lifetime_throughput_key = compose_metric_key(self._namespace, name, self._metric_name, MetricPrefix.LIFETIME)
        self._window_throughput_key = compose_metric_key(self._namespace, name, self._metric_name, MetricPrefix.WINDOW)
        self._total_examples_key = compose_metric_key(self._namespace, name, MetricName.TOTAL_EXAMPLES)

    def _batch_examples(self):
        return self._batch_size * self._world_size

    def update(self):
        """Call once per trained batch."""
        now = time.monotonic()
        self._steps += 1
        self.total_examples.add_(self._batch_examples())
        if self._steps <= self._warmup_steps:
            self.warmup_examples.add_(self._batch_examples())
            if self._steps == self._warmup_steps:
                self._previous_ts = now
            return
        lapse = now - self._previous_ts
        self.time_lapse_after_warmup.add_(lapse)
        buffer = self._window_time_lapse_buffer
        if len(buffer) == buffer.maxlen:
            self._window_time_lapse -= buffer.popleft()
        self._window_time_lapse += lapse
        buffer.append(lapse)
        while self._window_time_lapse > self._window_seconds:
            self._window_time_lapse -= buffer.popleft()
        self._previous_ts = now

    def compute(self):
        out = {self._total_examples_key: self.total_examples.clone()}
        elapsed = float(self.time_lapse_after_warmup)
        if self._steps > self._warmup_steps and not math.isclose(elapsed, 0):
            lifetime = (self.total_examples - self.warmup_examples).double() / self.time_lapse_after_warmup
            window = 0.0 if math.isclose(self._window_time_lapse, 0) else \
                len(self._window_time_lapse_buffer) * self._batch_examples() / self._window_time_lapse
            if not math.isclose(float(lifetime), 0):
                out[self._lifetime_throughput_key] = lifetime
                out[self._window_throughput_key] = ember.tensor(window, dtype=ember.float64)
        return out
