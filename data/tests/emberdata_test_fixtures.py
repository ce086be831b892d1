"""Fixtures shared by the emberdata tests (imported by the test modules, see emberdata_test_helpers)."""
import multiprocessing

import pytest


@pytest.fixture
def no_leaked_workers():
    """Fails the test if it leaves worker processes running."""
    before = {p.pid for p in multiprocessing.active_children()}
    yield
    leaked = [p for p in multiprocessing.active_children() if p.pid not in before]
    for p in leaked:
        p.terminate()
        p.join()
    assert not leaked, f"worker processes left running: {leaked}"
