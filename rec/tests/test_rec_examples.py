"""rec/examples run end to end on tiny generated data (each in its own interpreter, as a user
runs it)."""
import pathlib
import re
import subprocess
import sys

import pytest

from test_rec_datasets import criteo_rows, write_tsv

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def run(name, *args):
    done = subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_dlrm_on_criteo_tsv_files(tmp_path):
    import numpy as np
    rng = np.random.default_rng(0)
    days = [write_tsv(tmp_path / f"day_{i}", criteo_rows(rng, 150)) for i in range(2)]
    out = run("dlrm_criteo.py", "--tsv", *days, "--batch-size", "32", "--epochs", "2", "--num-embeddings", "100")
    assert re.findall(r"epoch (\d): loss [\d.]+  auc [\d.]+  \((\d+) batches\)", out) == [("0", "9"), ("1", "9")]


def test_dlrm_on_generated_data_learns():
    out = run("dlrm_criteo.py", "--rows", "1024", "--epochs", "3")
    losses = [float(v) for v in re.findall(r"loss ([\d.]+)", out)]
    assert len(losses) == 3 and losses[-1] < losses[0]


def test_quantized_dlrm_inference():
    out = run("dlrm_quantized_inference.py", "--rows", "512", "--epochs", "1")
    gaps = dict(re.findall(r"(\w+): +\d+ table bytes, predictions within ([\d.]+)", out))
    assert set(gaps) == {"FP16", "INT8", "INT4", "INT2"}
    assert float(gaps["FP16"]) <= float(gaps["INT8"]) < 0.01 and float(gaps["INT4"]) < 0.05


def test_two_tower_retrieval_with_faiss():
    pytest.importorskip("faiss")
    out = run("two_tower_retrieval.py")
    assert "indexed 640 items (IVFPQ" in out and "logits (200, 10)" in out
    share = float(re.search(r"taste: ([\d.]+)%", out).group(1))
    assert share > 50  # chance is 25%


def test_bert4rec_on_embedding_collection():
    out = run("bert4rec.py", "--users", "128", "--epochs", "5")
    assert re.search(r"epoch 4: loss [\d.]+", out)
    assert re.search(r"hit@10 of the next item on unseen users: [\d.]+%", out)
