"""ember.distributed in real MPI jobs: each suite of distributed_checks.py runs once on 2 and once
on 3 processes, started through `python -m ember.distributed.run` (so the launcher is under test
too), and every check becomes one test here. Skipped when mpi4py is not installed."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("mpi4py")

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import distributed_checks  # noqa: E402  (lists the checks; importing it starts no MPI)

JOB_SECONDS = 150


def run_job(suite, processes, out_dir):
    """Runs one MPI job of the suite; returns (exit code, output)."""
    command = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", str(processes),
               str(HERE / "distributed_checks.py"), suite, str(out_dir)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=JOB_SECONDS, env=dict(os.environ))
    return done.returncode, done.stdout + done.stderr


_jobs = {}


def suite_results(suite, processes, tmp_path_factory):
    """Every rank's outcome of every check, from one job per (suite, processes)."""
    key = (suite, processes)
    if key not in _jobs:
        out_dir = tmp_path_factory.mktemp(f"{suite}{processes}")
        code, output = run_job(suite, processes, out_dir)
        results = out_dir / "results.json"
        _jobs[key] = json.loads(results.read_text()) if code == 0 and results.exists() else output
    got = _jobs[key]
    if isinstance(got, str):
        pytest.fail(f"the {suite} job on {processes} processes failed:\n{got[-6000:]}")
    return got


CASES = [(suite, name, n) for suite in ("collectives", "training") for name in distributed_checks.CHECKS[suite] for n in (2, 3)]


@pytest.mark.parametrize("suite,name,processes", CASES, ids=[f"{s}-{c}-{n}ranks" for s, c, n in CASES])
def test_check(suite, name, processes, tmp_path_factory):
    outcomes = suite_results(suite, processes, tmp_path_factory)
    failures = {rank: o[name] for rank, o in enumerate(outcomes) if o[name] != "ok"}
    assert not failures, "\n".join(f"rank {r}:\n{text}" for r, text in failures.items())


def _failure_job(kind, processes, tmp_path):
    """Runs a failure suite; returns {rank: report} of the ranks that reported."""
    code, output = run_job(kind, processes, tmp_path)
    assert code != 0, "a failed rank must make the job fail"
    reports = {int(p.stem[4:]): json.loads(p.read_text()) for p in tmp_path.glob("rank*.json")}
    return reports, output


def test_a_rank_that_raises_makes_the_others_fail_at_once(tmp_path):
    reports, output = _failure_job("raise", 3, tmp_path)
    assert sorted(reports) == [0, 2], output[-4000:]
    for report in reports.values():
        # the failure notice, not the (60 s) timeout, ended the wait
        assert report.startswith("rank 1 failed: ValueError: rank one gave up"), report
        assert "then: the process group is unusable" in report


def test_a_rank_that_hangs_makes_the_others_time_out(tmp_path):
    reports, output = _failure_job("hang", 2, tmp_path)
    assert 0 in reports, output[-4000:]
    assert reports[0].startswith("all_reduce timed out after 2 s"), reports[0]
    assert "then: the process group is unusable" in reports[0]
    if 1 in reports:  # unless mpiexec ended it first: rank 0 told it why
        assert reports[1].startswith("rank 0 failed: all_reduce timed out"), reports[1]


def test_a_rank_that_dies_never_leaves_the_others_hanging(tmp_path):
    # The others time out, unless mpiexec (which sees the death) or MPICH (when the dead peer was
    # in the middle of a collective) ends the job first: either way it ends, within the timeout.
    reports, output = _failure_job("kill", 2, tmp_path)
    assert 1 not in reports
    for report in reports.values():
        assert report.startswith("all_reduce timed out after 2 s"), report


def test_training_example_runs_on_two_processes(tmp_path):
    example = HERE.parents[1] / "examples" / "distributed_training.py"
    saved = tmp_path / "weights.pt"
    done = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", "2", str(example),
                           "--epochs", "2", "--save", str(saved)], capture_output=True, text=True, timeout=JOB_SECONDS)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "epoch 1: mean loss over 2 ranks" in done.stdout and saved.exists()


def test_plain_mpiexec_works_too(tmp_path):
    from ember.distributed.run import mpiexec
    script = ("import sys, ember, ember.distributed as dist; dist.init_process_group('gloo'); t = ember.ones(2); "
              "dist.all_reduce(t); r = dist.get_rank(); "
              "open(f'{sys.argv[1]}/out{r}', 'w').write(f'{r} {dist.get_world_size()} {t.tolist()}')")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    done = subprocess.run([mpiexec(), "-n", "2", sys.executable, "-c", script, str(tmp_path)], capture_output=True,
                          text=True, timeout=JOB_SECONDS, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [(tmp_path / f"out{r}").read_text() for r in range(2)] == ["0 2 [2.0, 2.0]", "1 2 [2.0, 2.0]"]
