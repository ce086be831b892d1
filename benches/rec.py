"""emberrec against TorchRec + FBGEMM (and against the same work in plain PyTorch ops) on the CPU:

- EBC training epoch: TorchRec's `benchmarks/ebc_benchmarks.py` DLRM configuration (26 tables
  with the Criteo row counts, those over 10M divided by 128, its smallest shrink; D = 128; B = 64;
  64 ids per feature; 10 batches; forward, sum of the pooled embeddings, backward, SGD step with
  lr 0.02), with every table further capped at CAP_ROWS rows to fit this machine. emberrec's
  EmbeddingBagCollection vs TorchRec's; "plain PyTorch" is one nn.EmbeddingBag per table called
  in a loop, which is what TorchRec's (unsharded) EBC runs.
- jagged_to_padded_dense: float32 values (total, 128) of PAD_BATCH samples of 0 to PAD_MAX ids,
  to (PAD_BATCH, PAD_MAX, 128): emberrec.ops vs torch.ops.fbgemm; "plain PyTorch" runs emberrec's
  algorithm in torch ops (each value's slot from a running sum of segment starts, one index_put).
- KJT permute on 26 features (the EBC batch; keys reversed): KeyedJaggedTensor.permute in
  emberrec vs TorchRec (fbgemm's permute_2D_sparse_data); "plain PyTorch" runs emberrec's
  algorithm in torch ops (the gather index as a running sum of steps, one gather).

Each library runs in its own process (the PyTorch ones in EMBER_BENCH_TORCH_PYTHON, default this
interpreter), all with every core's threads; the inputs and table weights come from the same
seeded NumPy generators, and the outputs' checksums are compared. Times are the best of REPEATS;
peak memory is each process's peak RSS (the tables, 464 MB, and their gradients included).
Without torchrec/fbgemm_gpu (or torch) in that interpreter their columns say so."""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from run import cpu_model  # benches/run.py, beside this script

TORCH_PYTHON = os.environ.get("EMBER_BENCH_TORCH_PYTHON", sys.executable)
THREADS = os.cpu_count() or 1
REPEATS = 3

DLRM_ROWS = [45833188, 36746, 17245, 7413, 20243, 3, 7114, 1441, 62, 29275261, 1572176, 345138, 10, 2209, 11267,
             128, 4, 974, 14, 48937457, 11316796, 40094537, 452104, 12606, 104, 35]
CAP_ROWS = 100_000
DIM, BATCH, IDS_PER_FEATURE, BATCHES, LR = 128, 64, 64, 10, 0.02
PAD_BATCH, PAD_MAX, PAD_DIM = 512, 100, 128
PERMUTE_REPEATS = 50


def table_rows():
    shrunk = [rows if rows < 10_000_000 else rows // 128 for rows in DLRM_ROWS]
    return [min(rows, CAP_ROWS) for rows in shrunk]


def table_weight(index, rows):
    return np.random.default_rng(1000 + index).uniform(-0.01, 0.01, (rows, DIM)).astype(np.float32)


def sparse_batches():
    """(lengths, values) per batch: key-major, IDS_PER_FEATURE ids per sample and feature."""
    rng = np.random.default_rng(0)
    rows = table_rows()
    lengths = np.full(len(rows) * BATCH, IDS_PER_FEATURE, np.int64)
    return [(lengths, np.concatenate([rng.integers(0, r, BATCH * IDS_PER_FEATURE) for r in rows]))
            for _ in range(BATCHES)]


def jagged_input():
    rng = np.random.default_rng(1)
    lengths = rng.integers(0, PAD_MAX + 1, PAD_BATCH)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return rng.standard_normal((offsets[-1], PAD_DIM)).astype(np.float32), offsets


def best_seconds(run, repeats=REPEATS):
    run()  # warm-up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def versions(*distributions):
    from importlib import metadata

    found = []
    for name in distributions:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue  # not installed: nothing to report
    return ", ".join(found)


def peak_rss_mb():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---- the workers: each imports only its own library ----

def ember_worker():
    import ember
    from emberrec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor
    from emberrec import ops

    ember.set_num_threads(THREADS)
    keys = [f"ebc_{i}_feat_1" for i in range(len(DLRM_ROWS))]
    tables = [EmbeddingBagConfig(name=f"ebc_{i}", embedding_dim=DIM, num_embeddings=rows, feature_names=[keys[i]])
              for i, rows in enumerate(table_rows())]
    ebc = EmbeddingBagCollection(tables)
    with ember.no_grad():
        for i, table in enumerate(tables):
            ebc.embedding_bags[table.name].weight.copy_(ember.from_numpy(table_weight(i, table.num_embeddings)))
    kjts = [KeyedJaggedTensor.from_lengths_sync(keys, ember.from_numpy(v), ember.from_numpy(l)) for l, v in sparse_batches()]
    checks = {"ebc_first_output_sum": float(ebc(kjts[0]).values().sum())}
    optimizer = ember.optim.SGD(ebc.parameters(), lr=LR)

    def epoch():
        for kjt in kjts:
            pooled = ebc(kjt)
            optimizer.zero_grad()
            ember.cat(list(pooled.to_dict().values()), 1).sum().backward()
            optimizer.step()

    values, offsets = jagged_input()
    values, offsets = ember.from_numpy(values), ember.from_numpy(offsets)
    checks["padded_sum"] = float(ops.jagged_to_padded_dense(values, [offsets], [PAD_MAX], 0.0).sum())
    order = list(range(len(keys)))[::-1]
    checks["permute_checksum"] = int((kjts[0].permute(order).values()[: BATCH * IDS_PER_FEATURE]).sum())
    return {
        "ebc_epoch": best_seconds(epoch),
        "padded": best_seconds(lambda: ops.jagged_to_padded_dense(values, [offsets], [PAD_MAX], 0.0)),
        "permute": best_seconds(lambda: [kjts[0].permute(order) for _ in range(PERMUTE_REPEATS)]) / PERMUTE_REPEATS,
        "checks": checks, "peak_mb": peak_rss_mb(), "versions": f"ember {ember.__version__}",
    }


def torch_epoch(torch, forward, params, kjts):
    optimizer = torch.optim.SGD(params, lr=LR)

    def epoch():
        for kjt in kjts:
            pooled = forward(kjt)
            optimizer.zero_grad()
            pooled.sum().backward()
            optimizer.step()
    return epoch


def torchrec_worker():
    import torch
    import fbgemm_gpu  # noqa: F401  (registers torch.ops.fbgemm)
    from torchrec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor

    torch.set_num_threads(THREADS)
    keys = [f"ebc_{i}_feat_1" for i in range(len(DLRM_ROWS))]
    tables = [EmbeddingBagConfig(name=f"ebc_{i}", embedding_dim=DIM, num_embeddings=rows, feature_names=[keys[i]])
              for i, rows in enumerate(table_rows())]
    ebc = EmbeddingBagCollection(tables)
    with torch.no_grad():
        for i, table in enumerate(tables):
            ebc.embedding_bags[table.name].weight.copy_(torch.from_numpy(table_weight(i, table.num_embeddings)))
    kjts = [KeyedJaggedTensor.from_lengths_sync(keys, torch.from_numpy(v), torch.from_numpy(l)) for l, v in sparse_batches()]
    checks = {"ebc_first_output_sum": float(ebc(kjts[0]).values().sum())}
    epoch = torch_epoch(torch, lambda kjt: torch.cat(list(ebc(kjt).to_dict().values()), 1), ebc.parameters(), kjts)
    values, offsets = jagged_input()
    values, offsets = torch.from_numpy(values), torch.from_numpy(offsets)
    padded = torch.ops.fbgemm.jagged_to_padded_dense
    checks["padded_sum"] = float(padded(values, [offsets], [PAD_MAX], 0.0).sum())
    order = list(range(len(keys)))[::-1]
    checks["permute_checksum"] = int((kjts[0].permute(order).values()[: BATCH * IDS_PER_FEATURE]).sum())
    return {
        "ebc_epoch": best_seconds(epoch),
        "padded": best_seconds(lambda: padded(values, [offsets], [PAD_MAX], 0.0)),
        "permute": best_seconds(lambda: [kjts[0].permute(order) for _ in range(PERMUTE_REPEATS)]) / PERMUTE_REPEATS,
        "checks": checks, "peak_mb": peak_rss_mb(),
        "versions": versions("torch", "torchrec", "fbgemm-gpu-nightly-cpu", "fbgemm-gpu-cpu", "fbgemm-gpu"),
    }


def plain_torch_worker():
    import torch

    torch.set_num_threads(THREADS)
    rows = table_rows()
    bags = torch.nn.ModuleList([torch.nn.EmbeddingBag(r, DIM, mode="sum") for r in rows])
    with torch.no_grad():
        for i, bag in enumerate(bags):
            bag.weight.copy_(torch.from_numpy(table_weight(i, rows[i])))
    batches = [(torch.from_numpy(l), torch.from_numpy(v)) for l, v in sparse_batches()]

    def forward(batch):
        lengths, values = batch
        per_key = lengths.view(len(rows), BATCH).sum(1).tolist()
        pooled = []
        for bag, ids, key_lengths in zip(bags, values.split(per_key), lengths.split(BATCH)):
            offsets = torch.cat([key_lengths.new_zeros(1), key_lengths.cumsum(0)[:-1]])
            pooled.append(bag(ids, offsets))
        return torch.cat(pooled, 1)

    checks = {"ebc_first_output_sum": float(forward(batches[0]).sum())}
    epoch = torch_epoch(torch, forward, bags.parameters(), batches)
    values, offsets = jagged_input()
    values, offsets = torch.from_numpy(values), torch.from_numpy(offsets)

    def segment_ids(bounds, total):  # emberrec.ops' algorithm, in torch ops
        starts = bounds[1:-1]
        return torch.zeros(total + 1, dtype=torch.int64).index_add(0, starts, torch.ones_like(starts))[:total].cumsum(0)

    def padded():
        total = values.shape[0]
        rows = segment_ids(offsets, total)
        slots = rows * PAD_MAX + torch.arange(total) - offsets[rows]
        kept = slots - rows * PAD_MAX < PAD_MAX
        out = torch.zeros(PAD_BATCH * PAD_MAX, PAD_DIM).index_put((slots[kept],), values[kept])
        return out.view(PAD_BATCH, PAD_MAX, PAD_DIM)

    checks["padded_sum"] = float(padded().sum())
    lengths, ids = batches[0]
    keys = len(rows)
    order = torch.arange(keys - 1, -1, -1)

    def permute():  # emberrec.ops' algorithm, in torch ops
        per_key = lengths.view(keys, BATCH).sum(1)
        starts = torch.cat([per_key.new_zeros(1), per_key.cumsum(0)[:-1]])[order]
        sizes = per_key[order]
        out_starts = torch.cat([sizes.new_zeros(1), sizes.cumsum(0)[:-1]])
        total = int(sizes.sum())
        shift = starts - out_starts
        jumps = shift - torch.cat([shift.new_ones(1), shift[:-1]])
        gather = torch.ones(total + 1, dtype=torch.int64).index_add(0, out_starts, jumps)[:total].cumsum(0)
        return lengths.view(keys, BATCH)[order].flatten(), ids.gather(0, gather)

    checks["permute_checksum"] = int(permute()[1][: BATCH * IDS_PER_FEATURE].sum())
    return {
        "ebc_epoch": best_seconds(epoch),
        "padded": best_seconds(padded),
        "permute": best_seconds(lambda: [permute() for _ in range(PERMUTE_REPEATS)]) / PERMUTE_REPEATS,
        "checks": checks, "peak_mb": peak_rss_mb(), "versions": versions("torch"),
    }


WORKERS = {"ember": ember_worker, "torchrec": torchrec_worker, "torch": plain_torch_worker}


def run_worker(name, python, folder):
    """The worker's results, or the reason it has none (its last line of error)."""
    path = os.path.join(folder, f"{name}.json")
    done = subprocess.run([python, os.path.abspath(__file__), "--worker", name, path], capture_output=True, text=True)
    if done.returncode != 0:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        return {"error": lines[-1][:120] if lines else f"exit code {done.returncode}"}
    with open(path) as f:
        return json.load(f)


def cell(result, key, unit_ms=True):
    if "error" in result:
        return "n/a"
    return f"{result[key] * 1e3:.2f} ms" if unit_ms else f"{result[key]:.0f} MB"


def ratio(result, ember, key):
    return "" if "error" in result else f"{result[key] / ember[key]:.2f}x"


def agree(ember, other):
    if "error" in other:
        return "-"
    mismatched = [k for k, v in ember["checks"].items() if not np.isclose(v, other["checks"][k], rtol=1e-4)]
    return "yes" if not mismatched else "NO: " + ", ".join(mismatched)


def main():
    with tempfile.TemporaryDirectory(prefix="emberrec-bench-") as folder:
        results = {name: run_worker(name, sys.executable if name == "ember" else TORCH_PYTHON, folder)
                   for name in WORKERS}
    ember, torchrec, torch = results["ember"], results["torchrec"], results["torch"]
    if "error" in ember:
        raise RuntimeError(f"the emberrec worker failed: {ember['error']}")
    print(f"{cpu_model()} ({os.cpu_count()} cores, shared), {THREADS} threads in every library; best of {REPEATS} "
          f"runs after a warm-up. emberrec on {ember['versions']}; TorchRec column: "
          f"{torchrec.get('versions', 'n/a')}; plain PyTorch column: {torch.get('versions', 'n/a')}.\n")
    print("| workload | emberrec | TorchRec + FBGEMM | plain PyTorch ops | TorchRec time / emberrec time "
          "| PyTorch time / emberrec time |")
    print("|---|---|---|---|---|---|")
    rows = [("ebc_epoch", f"EBC training epoch: 26 DLRM tables ({sum(table_rows()):,} rows x {DIM}), B={BATCH}, "
                          f"{IDS_PER_FEATURE} ids/feature, {BATCHES} batches, SGD"),
            ("padded", f"jagged_to_padded_dense: {PAD_BATCH} samples of 0-{PAD_MAX} rows x {PAD_DIM} float32"),
            ("permute", f"KJT permute, 26 features reversed, B={BATCH} x {IDS_PER_FEATURE} ids")]
    for key, label in rows:
        print(f"| {label} | {cell(ember, key)} | {cell(torchrec, key)} | {cell(torch, key)} | "
              f"{ratio(torchrec, ember, key)} | {ratio(torch, ember, key)} |")
    print(f"| peak RSS of the process (all three workloads) | {cell(ember, 'peak_mb', False)} | "
          f"{cell(torchrec, 'peak_mb', False)} | {cell(torch, 'peak_mb', False)} | | |")
    print(f"\nOutputs agree with emberrec's (EBC output, padded sum, permuted ids): TorchRec {agree(ember, torchrec)}, "
          f"plain PyTorch {agree(ember, torch)}.")
    for name, result in (("TorchRec + FBGEMM", torchrec), ("plain PyTorch", torch)):
        if "error" in result:
            print(f"\n{name} did not run in {TORCH_PYTHON}: {result['error']}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        result = WORKERS[sys.argv[2]]()
        with open(sys.argv[3], "w") as f:
            json.dump(result, f)
    else:
        main()
