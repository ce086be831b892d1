"""What a `Timer` ran (`TaskSpec`) and what it measured (`Measurement`), with the statistics and
number formatting that `Compare` shares."""
import collections
import dataclasses
import math
import textwrap

import numpy as np

__all__ = ["TaskSpec", "Measurement", "select_unit", "trim_sigfig"]

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9  # seconds: no timer resolves better than this
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25
_UNIT_NAMES = {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}
_UNIT_SCALES = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """Everything that defines a timed task except its globals."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self):
        """The label (or the one-line statement), with the sub-label after a colon."""
        suffix = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + suffix
        if "\n" not in self.stmt:
            return self.stmt + suffix
        sub = f" ({self.sub_label})" if self.sub_label else ""
        return f"stmt:{sub}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self):
        if not self.setup or self.setup == "pass":
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self):
        """The task's part of a Measurement's repr: title, description and setup."""
        sections = [s for s in (self.title, self.description or "", self.setup_str()) if s]
        return "\n".join(s + "\n" if "\n" in s else s for s in sections)


_TASK_SPEC_FIELDS = frozenset(f.name for f in dataclasses.fields(TaskSpec))


@dataclasses.dataclass(repr=False)
class Measurement:
    """The times of one or more runs of a statement; each run executed it `number_per_run` times.

    The fields of its `task_spec` (label, sub_label, description, env, num_threads, stmt, setup)
    read as attributes of the measurement itself.
    """

    number_per_run: int
    raw_times: list
    task_spec: TaskSpec
    metadata: dict | None = None

    def __post_init__(self):
        if isinstance(self.number_per_run, bool) or not isinstance(self.number_per_run, int) or self.number_per_run < 1:
            raise ValueError(f"Measurement: number_per_run must be a positive int, got {self.number_per_run!r}")
        if not self.raw_times:
            raise ValueError("Measurement: raw_times must hold at least one time, got none")
        self.raw_times = [float(t) for t in self.raw_times]

    def __getattr__(self, name):
        if name in _TASK_SPEC_FIELDS:
            return getattr(self.task_spec, name)
        raise AttributeError(f"'Measurement' object has no attribute '{name}'")

    @property
    def times(self):
        """Seconds per execution of the statement, one value per run."""
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def _sorted_times(self):
        return np.sort(np.asarray(self.times))

    @property
    def median(self):
        return float(np.median(self._sorted_times))

    @property
    def mean(self):
        return float(np.mean(self._sorted_times))

    @property
    def iqr(self):
        p25, p75 = np.percentile(self._sorted_times, [25, 75])
        return float(p75 - p25)

    @property
    def significant_figures(self):
        """Digits of the median that the spread of the middle half of the runs supports (1 to 4)."""
        ordered = self._sorted_times
        middle = ordered[len(ordered) // 4 : math.ceil(3 * len(ordered) / 4)]
        confidence_interval = max(1.645 * float(np.std(middle)) / math.sqrt(len(middle)), _MIN_CONFIDENCE_INTERVAL)
        figures = math.floor(math.log10(self.median / confidence_interval)) if self.median > 0 else 1
        return min(max(figures, 1), _MAX_SIGNIFICANT_FIGURES)

    def meets_confidence(self, threshold=_IQR_WARN_THRESHOLD):
        """True when the IQR is below `threshold` times the median."""
        return self.iqr < threshold * self.median

    @property
    def warnings(self):
        if self.meets_confidence(_IQR_WARN_THRESHOLD):
            return ()
        cause = (
            "This suggests significant environmental influence."
            if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD)
            else "This could indicate system fluctuation."
        )
        relative = self.iqr / self.median * 100 if self.median > 0 else math.inf
        return (f"  WARNING: Interquartile range is {relative:.1f}% of the median measurement.\n           {cause}",)

    @property
    def has_warnings(self):
        return bool(self.warnings)

    @property
    def title(self):
        return self.task_spec.title

    @property
    def env(self):
        return "Unspecified env" if self.task_spec.env is None else self.task_spec.env

    @property
    def as_row_name(self):
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self):
        n = len(self.raw_times)
        unit, scale = select_unit(self.median)
        lines = [object.__repr__(self), self.task_spec.summarize()]
        lines.append(f"  {'Median: ' if n > 1 else ''}{self.median / scale:.2f} {unit}")
        if n >= 4:
            p25, p75 = np.percentile(self._sorted_times, [25, 75]) / scale
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({p25:.2f} to {p75:.2f})")
        threads = f"{self.num_threads} thread{'s' if self.num_threads > 1 else ''}"
        if n > 1:
            lines.append(f"  {n} measurements, {self.number_per_run} runs per measurement, {threads}")
        else:
            lines.append(f"  1 measurement, {self.number_per_run} runs, {threads}")
        lines.extend(self.warnings)
        return "\n".join(line for line in "\n".join(lines).splitlines() if line.strip())

    @staticmethod
    def merge(measurements):
        """One Measurement per distinct TaskSpec, its times normalised to one execution per run.
        Metadata is dropped (replicates may disagree on it)."""
        groups = collections.defaultdict(list)
        for m in measurements:
            if not isinstance(m, Measurement):
                raise TypeError(f"Measurement.merge: expected Measurement objects, got {type(m).__name__}")
            groups[m.task_spec].extend(m.times)
        return [Measurement(number_per_run=1, raw_times=times, task_spec=spec) for spec, times in groups.items()]


def select_unit(t):
    """The unit (`"ns"`, `"us"`, `"ms"` or `"s"`) and its scale in seconds that print `t` seconds
    with one to three leading digits."""
    if t < 1e-6:
        unit = "ns"
    elif t < 1e-3:
        unit = "us"
    elif t < 1.0:
        unit = "ms"
    else:
        unit = "s"
    return unit, _UNIT_SCALES[unit]


def unit_to_english(unit):
    return _UNIT_NAMES[unit]


def trim_sigfig(x, n):
    """`x` rounded to `n` significant figures (3.14159, 2 -> 3.1)."""
    if x == 0 or not math.isfinite(x):
        return x
    scale = 10 ** (math.ceil(math.log10(abs(x))) - n)
    return float(round(x / scale) * scale)


def ordered_unique(items):
    return list(dict.fromkeys(items))
