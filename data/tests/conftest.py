import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

# Worker processes start from a fresh interpreter (forkserver/spawn) and unpickle the test helpers
# by module name: make this folder importable there too.
if HERE not in sys.path:
    sys.path.insert(0, HERE)
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (HERE, os.environ.get("PYTHONPATH")) if p)


def _child_pids():
    import multiprocessing

    return {p.pid for p in multiprocessing.active_children()}


@pytest.fixture
def no_leaked_workers():
    """Fails the test if it leaves worker processes running."""
    import multiprocessing

    before = _child_pids()
    yield
    leaked = [p for p in multiprocessing.active_children() if p.pid not in before]
    for p in leaked:
        p.terminate()
        p.join()
    assert not leaked, f"worker processes left running: {leaked}"
