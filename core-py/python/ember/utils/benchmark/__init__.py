"""`ember.utils.benchmark`: PyTorch 1.8's `torch.utils.benchmark` for Ember statements.

`Timer` runs a statement with Ember's thread pool set to `num_threads` and returns a
`Measurement`; `Compare` prints many measurements as one table per label.
"""
from ember.utils.benchmark.common import Measurement, TaskSpec, select_unit, trim_sigfig
from ember.utils.benchmark.compare import Colorize, Compare
from ember.utils.benchmark.timer import Timer, timer

__all__ = ["Colorize", "Compare", "Measurement", "TaskSpec", "Timer", "select_unit", "timer", "trim_sigfig"]
