"""A forked child (os.fork, a DataLoader worker) runs every kernel on threads of its own, whatever
ran in the parent before the fork: the parent's threads do not exist in the child, so a child
that reused their pool would wait for them forever."""
import os
import threading
import time

import pytest

import ember

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def parallel_work():
    """Ops big enough for both kinds of threads: elementwise and reductions on the team, matmul
    and sort on the rayon pool. Returns values the child can check."""
    x = ember.arange(1 << 21, dtype=ember.float32)
    m = ember.ones(384, 384)
    return [
        (x * 2 + 1).sum().item(),
        (m @ m)[0, 0].item(),
        ember.sort(-x).values[0].item(),
        ember.fft.rfft(ember.ones(64, 4096)).abs().sum().item(),
    ]


def wait_for(pid, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail(f"the forked child hung for {timeout} s on parallel work")


def fork_and_check(expected, threads=None):
    pid = os.fork()
    if pid == 0:
        ok = False
        try:
            if threads is not None:
                ember.set_num_threads(threads)
            ok = parallel_work() == expected and (threads is None or ember.get_num_threads() == threads)
        finally:
            os._exit(0 if ok else 1)
    assert wait_for(pid) == 0, "the child computed wrong values"


def test_a_child_forked_after_parallel_work_runs_parallel_work():
    expected = parallel_work()
    fork_and_check(expected)
    fork_and_check(expected, threads=1)
    fork_and_check(expected, threads=3)
    assert parallel_work() == expected  # and the parent's threads still serve the parent


def test_forking_while_another_thread_computes():
    expected = parallel_work()
    stop = threading.Event()

    def churn():
        # Big buffers go through the allocation cache; its lock may be held at any moment.
        while not stop.is_set():
            parallel_work()

    busy = threading.Thread(target=churn)
    busy.start()
    try:
        for _ in range(5):
            fork_and_check(expected)
    finally:
        stop.set()
        busy.join()
