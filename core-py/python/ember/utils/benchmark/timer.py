"""`Timer`: `timeit.Timer` that sets Ember's thread count, warms up, and returns `Measurement`s."""
import contextlib
import textwrap
import timeit as _timeit

import numpy as np

import ember
from ember.utils.benchmark.common import Measurement, TaskSpec

__all__ = ["Timer", "timer"]

timer = _timeit.default_timer


@contextlib.contextmanager
def _ember_threads(n):
    """Runs the block with Ember's pool at `n` threads, then restores the previous count."""
    previous = ember.get_num_threads()
    ember.set_num_threads(n)
    try:
        yield
    finally:
        ember.set_num_threads(previous)


def _clean_code(code, name):
    if not isinstance(code, str):
        raise TypeError(f"Timer: {name} must be a str of Python code, got {type(code).__name__}")
    code = textwrap.dedent(code)
    return (code[1:] if code.startswith("\n") else code).rstrip()


def _check_optional_str(value, name):
    if value is not None and not isinstance(value, str):
        raise TypeError(f"Timer: {name} must be a str or None, got {type(value).__name__}")
    return value


def _check_positive(value, name, kinds=(int,)):
    expected = "an int" if kinds == (int,) else "a number"
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise TypeError(f"Timer: {name} must be {expected}, got {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"Timer: {name} must be positive, got {value!r}")
    return value


_NUMBER = (int, float)


class Timer:
    """Times Python statements that use Ember, as `torch.utils.benchmark.Timer` (PyTorch 1.8) does.

    `stmt` runs in a loop after `setup`, with `globals` (which get `ember` added) as its module
    namespace. Ember's thread pool is set to `num_threads` while timing and restored afterwards.
    `label`, `sub_label`, `description` and `env` only tag the result for printing and `Compare`.
    Only Python statements are timed: `language` must be "python" and `global_setup` None.
    """

    def __init__(self, stmt="pass", setup="pass", global_setup=None, timer=timer, globals=None, label=None,
                 sub_label=None, description=None, env=None, num_threads=1, language="python"):
        if language not in ("python", "py"):
            raise ValueError(f"Timer: language must be 'python'; Ember's Timer cannot time {language!r} code")
        if global_setup is not None:
            raise ValueError(f"Timer: global_setup is for C++ statements only and must be None, got {global_setup!r}")
        if globals is not None and not isinstance(globals, dict):
            raise TypeError(f"Timer: globals must be a dict or None, got {type(globals).__name__}")
        if not callable(timer):
            raise TypeError(f"Timer: timer must be a callable returning seconds, got {type(timer).__name__}")
        stmt, setup = _clean_code(stmt, "stmt"), _clean_code(setup, "setup")
        self._globals = dict(globals or {})
        self._globals.setdefault("ember", ember)
        self._timer = _timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = TaskSpec(
            stmt=stmt,
            setup=setup,
            label=_check_optional_str(label, "label"),
            sub_label=_check_optional_str(sub_label, "sub_label"),
            description=_check_optional_str(description, "description"),
            env=_check_optional_str(env, "env"),
            num_threads=_check_positive(num_threads, "num_threads"),
        )

    def _measurement(self, number, raw_times):
        return Measurement(number_per_run=number, raw_times=raw_times, task_spec=self._task_spec)

    def timeit(self, number=1000000):
        """One run of `number` executions, after a warm-up of `number // 100`."""
        _check_positive(number, "number")
        with _ember_threads(self._task_spec.num_threads):
            self._timer.timeit(number=max(number // 100, 1))
            return self._measurement(number, [self._timer.timeit(number=number)])

    def repeat(self, repeat=5, number=1000000):
        """`repeat` runs of `number` executions each, as `timeit.Timer.repeat`, in one Measurement.
        (PyTorch 1.8 raises NotImplementedError here; Ember implements the timeit semantics.)"""
        _check_positive(repeat, "repeat")
        _check_positive(number, "number")
        with _ember_threads(self._task_spec.num_threads):
            self._timer.timeit(number=max(number // 100, 1))
            return self._measurement(number, self._timer.repeat(repeat=repeat, number=number))

    def autorange(self, callback=None):
        """One run whose size grows through 1, 2, 5, 10, 20, ... until it lasts 0.2 s, as
        `timeit.Timer.autorange`; `callback(number, time_taken)` sees every trial.
        (PyTorch 1.8 raises NotImplementedError here; Ember implements the timeit semantics.)"""
        with _ember_threads(self._task_spec.num_threads):
            number, time_taken = self._timer.autorange(callback)
            return self._measurement(number, [time_taken])

    def _estimate_block_size(self, min_run_time):
        """Executions per run that make the timer's own overhead negligible (also a warm-up)."""
        overhead = float(np.median([self._timer.timeit(0) for _ in range(5)]))
        number = 1
        while True:
            time_taken = self._timer.timeit(number)
            if time_taken > min_run_time:
                return number
            if time_taken > 0 and overhead / time_taken <= 1e-4 and time_taken >= min_run_time / 1000:
                return number
            number *= 10

    def _measure_blocks(self, number, min_run_time, done, max_run_time=None, callback=None):
        times, total = [], 0.0
        while total < min_run_time or not done(times):
            time_taken = self._timer.timeit(number)
            times.append(time_taken)
            total += time_taken
            if callback is not None:
                callback(number, time_taken)
            if max_run_time is not None and total > max_run_time:
                break
        return times

    def blocked_autorange(self, callback=None, min_run_time=0.2):
        """Runs of a fixed block size (chosen so timer overhead is under 0.01 %) until `min_run_time`
        seconds have been spent timing; `callback(number, time_taken)` sees every run."""
        _check_positive(min_run_time, "min_run_time", _NUMBER)
        with _ember_threads(self._task_spec.num_threads):
            number = self._estimate_block_size(min_run_time)
            times = self._measure_blocks(number, min_run_time, done=lambda times: True, callback=callback)
        return self._measurement(number, times)

    def adaptive_autorange(self, threshold=0.1, *, min_run_time=0.01, max_run_time=10.0, callback=None):
        """Runs until at least four runs have an IQR below `threshold` times their median and
        `min_run_time` seconds have passed, or until `max_run_time` seconds have passed."""
        _check_positive(threshold, "threshold", _NUMBER)
        _check_positive(min_run_time, "min_run_time", _NUMBER)
        _check_positive(max_run_time, "max_run_time", _NUMBER)

        def confident(times):
            return len(times) > 3 and self._measurement(number, times).meets_confidence(threshold)

        with _ember_threads(self._task_spec.num_threads):
            number = self._estimate_block_size(min_run_time=0.05)
            times = self._measure_blocks(number, min_run_time, confident, max_run_time, callback)
        return self._measurement(number, times)
