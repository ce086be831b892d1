"""Loader fuzzing (issue 28) in `make test`: mutated checkpoints, safetensors, ARPA and vocab files
must load or raise an Exception; a crash, a hang or a BaseException (pyo3's PanicException) is a
failure with the input that caused it. `make fuzz` runs the same targets under atheris."""
import os
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fuzz_parent import run_isolated  # noqa: E402
from fuzz_parent import examples_per_family  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.parametrize("target", ["load", "safetensors", "arpa", "vocab"])
def test_mutated_files_load_or_raise_cleanly(target):
    import json
    iterations = examples_per_family(300)
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, os.path.join(HERE, "fuzz_loaders.py"), "mutate", target,
               "--iterations", str(iterations), "--seed", "28", "--out", out]
        rc, died = run_isolated(cmd, out, "current.bin", hang_seconds=20)
        if rc != 0:
            data = open(os.path.join(out, "current.bin"), "rb").read()
            pytest.fail(f"{target}: the loader died ({died.splitlines()[0]}) on the input "
                        f"bytes.fromhex({data.hex()!r})\n{died}")
        result = json.load(open(os.path.join(out, "result.json")))
    assert result["finding_count"] == 0, "\n".join(
        f"{target}: {f['error']} on bytes.fromhex({f['data']!r})" for f in result["findings"])
