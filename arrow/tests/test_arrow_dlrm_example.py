"""arrow/examples/dlrm_criteo.py runs end to end: Criteo-format TSV, Parquet, emberdata DataPipes,
emberarrow's preprocessing and tensor hand-off, and emberrec's DLRM, whose loss goes down."""
import pathlib
import re
import subprocess
import sys

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "dlrm_criteo.py"


def test_dlrm_example_trains_on_emberarrow_batches():
    done = subprocess.run([sys.executable, str(EXAMPLE), "--rows", "2048", "--epochs", "3"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "a batch: dense features (256, 13), 27 sparse features (6912 ids), 256 labels" in done.stdout
    losses = [float(x) for x in re.findall(r"epoch \d+: mean loss ([\d.]+) over 8 batches", done.stdout)]
    assert len(losses) == 3 and losses[-1] < losses[0] - 0.1, done.stdout
