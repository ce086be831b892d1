"""`ember.utils.benchmark`: Timer, Measurement and Compare. Real timings of cheap statements;
assertions are on structure, never on speed."""
import pytest

import ember
from ember.utils import benchmark
from ember.utils.benchmark import Compare, Measurement, TaskSpec, Timer


def synthetic(raw_times, number=10, **spec):
    spec.setdefault("stmt", "x + y")
    spec.setdefault("setup", "pass")
    return Measurement(number_per_run=number, raw_times=raw_times, task_spec=TaskSpec(**spec))


# ---- Timer ----


def test_timeit_runs_the_statement_number_times():
    calls = []
    m = Timer("calls.append(1)", globals={"calls": calls}).timeit(number=200)
    assert m.number_per_run == 200 and len(m.raw_times) == 1
    assert len(calls) == 200 + 2  # the warm-up runs number // 100
    assert m.median > 0 and m.iqr == 0


def test_setup_and_the_ember_global_are_available():
    m = Timer("y = x * 2", setup="x = ember.ones(8)").timeit(number=50)
    assert m.stmt == "y = x * 2" and m.setup == "x = ember.ones(8)"


def test_multiline_code_is_dedented():
    timer = Timer(
        """
        a = ember.arange(4)
        b = a + 1
        """
    )
    assert timer.timeit(number=5).stmt == "a = ember.arange(4)\nb = a + 1"


def test_repeat_returns_one_time_per_run():
    m = Timer("x + y", globals={"x": ember.ones(3), "y": ember.ones(3)}).repeat(repeat=4, number=20)
    assert m.number_per_run == 20 and len(m.raw_times) == 4
    assert m.median > 0 and m.iqr >= 0


def test_autorange_reports_each_trial_to_the_callback():
    trials = []
    m = Timer("sum(range(50))").autorange(callback=lambda number, t: trials.append((number, t)))
    assert trials and trials[-1][0] == m.number_per_run
    assert m.raw_times == [trials[-1][1]]


def test_blocked_autorange_spends_at_least_min_run_time():
    seen = []
    m = Timer("x + y", globals={"x": ember.ones(16), "y": ember.ones(16)}, label="add").blocked_autorange(
        callback=lambda number, t: seen.append(number), min_run_time=0.05
    )
    assert len(seen) == len(m.raw_times) >= 1
    assert set(seen) == {m.number_per_run}
    assert sum(m.raw_times) >= 0.05
    assert m.median > 0 and m.mean > 0 and m.iqr >= 0
    assert 1 <= m.significant_figures <= 4


def test_adaptive_autorange_stops_when_confident_or_out_of_time():
    m = Timer("sum(range(20))").adaptive_autorange(threshold=0.5, min_run_time=0.01, max_run_time=1.0)
    assert len(m.raw_times) > 3 or sum(m.raw_times) > 1.0
    assert m.median > 0 and m.iqr >= 0


def test_timer_sets_ember_threads_and_restores_them():
    previous = ember.get_num_threads()
    ember.set_num_threads(3)
    try:
        seen = []
        Timer("seen.append(ember.get_num_threads())", globals={"seen": seen}, num_threads=1).timeit(number=10)
        assert set(seen) == {1}
        assert ember.get_num_threads() == 3
        with pytest.raises(ZeroDivisionError):
            Timer("1 / 0", num_threads=2).timeit(number=1)
        assert ember.get_num_threads() == 3
    finally:
        ember.set_num_threads(previous)


def test_timer_bad_arguments():
    with pytest.raises(TypeError, match="stmt must be a str"):
        Timer(stmt=3)
    with pytest.raises(ValueError, match="num_threads must be positive"):
        Timer(num_threads=0)
    with pytest.raises(TypeError, match="num_threads must be an int"):
        Timer(num_threads=1.5)
    with pytest.raises(ValueError, match="language must be 'python'"):
        Timer(language="c++")
    with pytest.raises(ValueError, match="global_setup is for C\\+\\+"):
        Timer(global_setup="#include <x>")
    with pytest.raises(TypeError, match="globals must be a dict"):
        Timer(globals=[1])
    with pytest.raises(TypeError, match="label must be a str"):
        Timer(label=1)
    with pytest.raises(ValueError, match="number must be positive"):
        Timer().timeit(number=0)
    with pytest.raises(TypeError, match="min_run_time must be a number"):
        Timer().blocked_autorange(min_run_time="1")


# ---- Measurement ----


def test_measurement_statistics():
    m = synthetic([1e-3, 2e-3, 3e-3, 4e-3, 5e-3], number=10)
    assert m.times == pytest.approx([1e-4, 2e-4, 3e-4, 4e-4, 5e-4])
    assert m.median == pytest.approx(3e-4)
    assert m.mean == pytest.approx(3e-4)
    assert m.iqr == pytest.approx(2e-4)
    assert m.has_warnings and not m.meets_confidence(0.1)
    assert m.label is None and m.num_threads == 1 and m.env == "Unspecified env"


def test_measurement_repr_layout():
    m = synthetic([2.0e-5, 2.04e-5, 2.08e-5, 2.12e-5], number=10, label="Add", sub_label="float32",
                  description="n=16", setup="x = 1", num_threads=2)
    lines = repr(m).splitlines()
    assert lines[0].startswith("<ember.utils.benchmark.common.Measurement object at 0x")
    assert lines[1:4] == ["Add: float32", "n=16", "setup: x = 1"]
    assert lines[4] == "  Median: 2.06 us"
    assert lines[5] == "  IQR:    0.06 us (2.03 to 2.09)"
    assert lines[6] == "  4 measurements, 10 runs per measurement, 2 threads"
    assert len(lines) == 7


def test_single_measurement_repr_and_warnings():
    single = repr(synthetic([5e-3], number=1000))
    assert "  5.00 us" in single and "Median" not in single and "IQR" not in single
    assert "1 measurement, 1000 runs, 1 thread" in single
    noisy = repr(synthetic([1.0, 1.0, 2.0, 3.0, 9.0], number=1))
    assert "WARNING: Interquartile range is 100.0% of the median measurement." in noisy
    assert "significant environmental influence" in noisy


def test_merge_groups_replicates_by_task():
    a1 = synthetic([1.0, 2.0], number=10, label="A")
    a2 = synthetic([3.0], number=100, label="A")
    b = synthetic([4.0], number=1, label="B")
    merged = Measurement.merge([a1, a2, b])
    assert [m.label for m in merged] == ["A", "B"]
    assert merged[0].number_per_run == 1
    assert merged[0].raw_times == pytest.approx([0.1, 0.2, 0.03])


def test_measurement_bad_arguments():
    with pytest.raises(ValueError, match="number_per_run must be a positive int"):
        synthetic([1.0], number=0)
    with pytest.raises(ValueError, match="at least one time"):
        synthetic([])
    with pytest.raises(AttributeError):
        synthetic([1.0]).not_a_field


def test_select_unit_and_trim_sigfig():
    assert benchmark.select_unit(3e-9) == ("ns", 1e-9)
    assert benchmark.select_unit(3e-5) == ("us", 1e-6)
    assert benchmark.select_unit(0.2) == ("ms", 1e-3)
    assert benchmark.select_unit(12.0) == ("s", 1.0)
    assert benchmark.trim_sigfig(3.14159, 2) == pytest.approx(3.1)
    assert benchmark.trim_sigfig(1234.5, 3) == pytest.approx(1230.0)


# ---- Compare ----


def grid():
    """Two rows (sub_labels) x two columns (descriptions) x two thread counts, one label."""
    out = []
    for threads in (1, 2):
        for row, base in (("float32", 10e-6), ("float64", 20e-6)):
            for col, factor in (("n=16", 1.0), ("n=1024", 3.0)):
                t = base * factor / threads
                out.append(synthetic([t * 10 * (1 + k / 1000) for k in range(5)], number=10, label="Add",
                                     sub_label=row, description=col, num_threads=threads))
    return out


def test_compare_table_layout():
    text = str(Compare(grid()))
    lines = text.splitlines()
    assert lines[0].startswith("[") and lines[0].endswith("]") and " Add " in lines[0]
    header = lines[1]
    assert "|" in header and header.index("n=16") < header.index("n=1024")
    assert lines[2].startswith("1 threads: ") and set(lines[2][len("1 threads: "):]) == {"-"}
    assert lines[3].strip().startswith("float32") and lines[4].strip().startswith("float64")
    assert lines[5].startswith("2 threads: ")
    assert "10.0" in lines[3] and "30.1" in lines[3]
    assert lines[-1] == "Times are in microseconds (us)."
    assert len({len(line) for line in lines[1:6]}) == 1  # every row is as wide as the header


def test_compare_separates_labels_and_envs():
    measurements = grid() + [synthetic([1e-3], label="Mul", sub_label="float32", env="A"),
                             synthetic([2e-3], label="Mul", sub_label="float32", env="B")]
    text = str(Compare(measurements))
    assert text.count("Times are in") == 2
    assert " Mul " in text and "(A)" in text and "(B)" in text


def test_compare_options():
    noisy = synthetic([1.0, 1.0, 2.0, 3.0, 9.0], number=1000, label="Noisy", sub_label="row", description="col")
    quiet = synthetic([2e-3] * 5, number=1, label="Noisy", sub_label="row2", description="col")
    compare = Compare([noisy, quiet])
    compare.trim_significant_figures()
    compare.highlight_warnings()
    compare.colorize()
    text = str(compare)
    assert "(! 100%)" in text
    assert "(! XX%) Measurement has high variance" in text
    assert "\033[92m" in text and "\033[0m" in text


def test_compare_prints_real_timings(capsys):
    measurements = [
        Timer("x + x", globals={"x": ember.ones(n)}, label="add", sub_label=f"n={n}", description=d,
              num_threads=1).blocked_autorange(min_run_time=0.01)
        for n in (4, 4096)
        for d in ("ember",)
    ]
    Compare(measurements).print()
    out = capsys.readouterr().out
    assert " add " in out and "n=4" in out and "n=4096" in out and "ember" in out and "1 threads:" in out


def test_compare_rejects_other_objects():
    with pytest.raises(TypeError, match="expected Measurement objects, got int"):
        Compare([1])


def test_compare_matches_pytorch_layout():
    torch_benchmark = pytest.importorskip("torch.utils.benchmark")
    ours = grid() + [
        synthetic([1.0, 1.0, 2.0, 3.0, 9.0], number=1000, label="Noisy", sub_label="row", description="a", env="A"),
        synthetic([2e-3] * 5, number=1, label="Noisy", sub_label="row2", description="a", env="B"),
        synthetic([3e-3] * 5, number=1, label="Noisy", sub_label="row2", description="b", env="B", num_threads=4),
    ]
    theirs = [
        torch_benchmark.Measurement(
            number_per_run=m.number_per_run,
            raw_times=m.raw_times,
            task_spec=torch_benchmark.utils.common.TaskSpec(
                stmt=m.stmt, setup=m.setup, label=m.label, sub_label=m.sub_label,
                description=m.description, env=m.task_spec.env, num_threads=m.num_threads,
            ),
        )
        for m in ours
    ]
    for options in ([], ["trim_significant_figures"], ["highlight_warnings"], ["colorize"],
                    ["trim_significant_figures", "highlight_warnings", "colorize"]):
        a, b = Compare(ours), torch_benchmark.Compare(theirs)
        for option in options:
            getattr(a, option)()
            getattr(b, option)()
        assert str(a) == str(b), options
    for m, reference in zip(ours, theirs):
        assert repr(m).splitlines()[1:] == repr(reference).splitlines()[1:]
