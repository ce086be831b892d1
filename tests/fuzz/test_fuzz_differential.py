"""The differential, property-based suite (issue 28): every op family run on generated shapes,
views, dtypes and dims, compared with NumPy (and with PyTorch where it is installed).

Each family runs in a worker process (fuzz_worker.py) with a fixed seed and EMBER_FUZZ_EXAMPLES
cases (400 by default; `make fuzz` runs a long campaign through campaign.py). A crash of the
extension fails the family's test with the case that caused it; every finding is printed with a
one-line reproducer.
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fuzz_families import FAMILIES  # noqa: E402
from fuzz_parent import cases, examples_per_family, report, run_family  # noqa: E402


def _check(family, result):
    if result["missing"]:
        print(f"{family}: APIs ember lacks (skipped): {result['missing']}")
    found = report(family, result)
    assert not found, f"{family}: {cases(result)} cases, findings:\n{found}"
    assert cases(result) > 0


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_matches_numpy(family):
    result = run_family(family, examples_per_family())
    _check(family, result)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_matches_torch(family):
    pytest.importorskip("torch")
    result = run_family(family, max(examples_per_family() // 4, 25), torch=True)
    _check(family, result)


def test_a_crashing_case_is_reported_with_its_reproducer(monkeypatch):
    monkeypatch.setenv("EMBER_FUZZ_ABORT_ON", "eye")
    result = run_family("creation", 40)
    crash = result["crashes"][0]
    assert crash["op"] == "eye" and "ember.eye(" in crash["repro"]
    assert "SIGABRT" in crash["how"]
    assert cases(result) > 0 and "eye" not in result["counts"]    # the rest of the family ran
