"""emberrec against TorchRec + FBGEMM (and against the same work in plain PyTorch ops) on the CPU:

- EBC training epoch: TorchRec's `benchmarks/ebc_benchmarks.py` DLRM configuration (26 tables
  with the Criteo row counts, those over 10M divided by 128, its smallest shrink; D = 128; B = 64;
  64 ids per feature; 10 batches; forward, sum of the pooled embeddings, backward, SGD step with
  lr 0.02), with every table further capped at CAP_ROWS rows to fit this machine. emberrec's
  EmbeddingBagCollection vs TorchRec's; "plain PyTorch" is one nn.EmbeddingBag per table called
  in a loop, which is what TorchRec's (unsharded) EBC runs.
- FusedEBC training epoch: the same tables and batches through TorchRec's
  FusedEmbeddingBagCollection (SGD lr 0.02 fused into the backward pass, as TorchRec's
  ebc_benchmarks runs it) against emberrec's; forward, sum of the pooled embeddings, backward
  (which updates the rows read). Each in a process of its own, so peak RSS is the fused one's.
- jagged_to_padded_dense: float32 values (total, 128) of PAD_BATCH samples of 0 to PAD_MAX ids,
  to (PAD_BATCH, PAD_MAX, 128): emberrec.ops (a Rust kernel) vs torch.ops.fbgemm; "plain PyTorch" runs
  it as vectorised torch ops (each value's slot from a running sum of segment starts, one index_put).
- KJT permute on 26 features (the EBC batch; keys reversed): KeyedJaggedTensor.permute in
  emberrec vs TorchRec (both on permute_2D_sparse_data: emberrec's a Rust kernel); "plain
  PyTorch" runs it as vectorised torch ops (the gather index as a running sum of steps, one gather).
- FBGEMM's sparse and jagged operators, emberrec.ops vs torch.ops.fbgemm on the CPU (OPS_REPEATS
  calls per timing): permute_2D_sparse_data (OPS_KEYS keys x OPS_BATCH samples of 0-OPS_MAX_LEN
  int64 ids with float32 weights, keys reversed), block_bucketize_sparse_features (the same ids
  below 1e6 into 4 row-wise buckets, with weights and the unbucketize permutation), and
  jagged_dense_elementwise_add (OPS_BATCH samples of 0-OPS_MAX_LEN rows x 64 float32 plus a dense
  (OPS_BATCH, OPS_MAX_LEN, 64), dense output).

Each library runs in its own process (the PyTorch ones in EMBER_BENCH_TORCH_PYTHON, default this
interpreter), all with every core's threads; the inputs and table weights come from the same
seeded NumPy generators, and the outputs' checksums are compared. Times are the best of REPEATS;
peak memory is each process's peak RSS (the tables, 464 MB, and their gradients included).
Without torchrec/fbgemm_gpu (or torch) in that interpreter their columns say so.

- Quantized inference TBE: FBGEMM's `nbit-cpu` benchmark configuration (B=512 samples, T=32
  tables of E=100,000 rows, D=128, L=20 ids per bag, fp16 output, SUM pooling), the tables INT4,
  INT8 or FP8 (random row bytes with a fixed binary16 scale and bias, the same in both);
  `emberrec.fbgemm`'s IntNBitTableBatchedEmbeddingBagsCodegen vs fbgemm_gpu's on the CPU, one
  process per library and type. GB/s counts the row bytes the lookups read (B * T * L rows);
  times are the best of TBE_REPEATS forwards."""
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
OPS_KEYS, OPS_BATCH, OPS_MAX_LEN, OPS_REPEATS, OPS_BUCKETS, OPS_IDS = 26, 512, 40, 20, 4, 1_000_000


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


def sparse_op_inputs():
    """(lengths (keys, batch), ids, weights, block sizes, jagged values, offsets, dense)."""
    rng = np.random.default_rng(2)
    lengths = rng.integers(0, OPS_MAX_LEN + 1, (OPS_KEYS, OPS_BATCH))
    ids = rng.integers(0, OPS_IDS, lengths.sum())
    weights = rng.random(lengths.sum()).astype(np.float32)
    blocks = np.full(OPS_KEYS, OPS_IDS // OPS_BUCKETS, np.int64)
    values = rng.standard_normal((lengths[0].sum(), 64)).astype(np.float32)
    offsets = np.concatenate([[0], np.cumsum(lengths[0])])
    dense = rng.standard_normal((OPS_BATCH, OPS_MAX_LEN, 64)).astype(np.float32)
    return lengths, ids, weights, blocks, values, offsets, dense


def time_sparse_ops(library, ops):
    """{op: seconds per call} and checksums of emberrec.ops or torch.ops.fbgemm."""
    lengths, ids, weights, blocks, values, offsets, dense = (library.from_numpy(a) for a in sparse_op_inputs())
    order = library.from_numpy(np.arange(OPS_KEYS - 1, -1, -1, dtype=np.int32))  # fbgemm wants int32
    calls = {
        "op_permute": lambda: ops.permute_2D_sparse_data(order, lengths, ids, weights),
        "op_bucketize": lambda: ops.block_bucketize_sparse_features(lengths.view(-1), ids, False, True, blocks,
                                                                    OPS_BUCKETS, weights),
        "op_jagged_add": lambda: ops.jagged_dense_elementwise_add(values, [offsets], dense),
    }
    checks = {
        "op_permute": float(calls["op_permute"]()[2][:1000].sum()),
        "op_bucketize": float(calls["op_bucketize"]()[1][:1000].double().sum()),
        "op_jagged_add": float(calls["op_jagged_add"]().sum()),
    }
    times = {name: best_seconds(lambda call=call: [call() for _ in range(OPS_REPEATS)]) / OPS_REPEATS
             for name, call in calls.items()}
    return times, checks


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
    op_times, op_checks = time_sparse_ops(ember, ops)
    return {
        "ebc_epoch": best_seconds(epoch),
        "padded": best_seconds(lambda: ops.jagged_to_padded_dense(values, [offsets], [PAD_MAX], 0.0)),
        "permute": best_seconds(lambda: [kjts[0].permute(order) for _ in range(PERMUTE_REPEATS)]) / PERMUTE_REPEATS,
        **op_times, "checks": {**checks, **op_checks}, "peak_mb": peak_rss_mb(), "versions": f"ember {ember.__version__}",
    }


def dlrm_tables(config):
    keys = [f"ebc_{i}_feat_1" for i in range(len(DLRM_ROWS))]
    return keys, [config(name=f"ebc_{i}", embedding_dim=DIM, num_embeddings=rows, feature_names=[keys[i]])
                  for i, rows in enumerate(table_rows())]


def ember_fused_worker():
    import ember
    from emberrec import EmbeddingBagConfig, KeyedJaggedTensor
    from emberrec.modules.fused_embedding_modules import FusedEmbeddingBagCollection

    ember.set_num_threads(THREADS)
    keys, tables = dlrm_tables(EmbeddingBagConfig)
    ebc = FusedEmbeddingBagCollection(tables, ember.optim.SGD, {"lr": LR})
    with ember.no_grad():
        for i, table in enumerate(tables):
            ebc.embedding_bags[table.name].weight.copy_(ember.from_numpy(table_weight(i, table.num_embeddings)))
    kjts = [KeyedJaggedTensor.from_lengths_sync(keys, ember.from_numpy(v), ember.from_numpy(l)) for l, v in sparse_batches()]
    checks = {"fused_first_output_sum": float(ebc(kjts[0]).values().detach().sum())}

    def epoch():
        for kjt in kjts:
            ebc(kjt).values().sum().backward()
    return {"fused_epoch": best_seconds(epoch), "checks": checks, "peak_mb": peak_rss_mb()}


def torchrec_fused_worker():
    import torch
    import fbgemm_gpu  # noqa: F401
    from torchrec import EmbeddingBagConfig, KeyedJaggedTensor
    from torchrec.modules.fused_embedding_modules import FusedEmbeddingBagCollection

    torch.set_num_threads(THREADS)
    keys, tables = dlrm_tables(EmbeddingBagConfig)
    ebc = FusedEmbeddingBagCollection(tables, optimizer_type=torch.optim.SGD, optimizer_kwargs={"lr": LR})
    with torch.no_grad():
        for i, table in enumerate(tables):
            ebc.embedding_bags[table.name].weight.copy_(torch.from_numpy(table_weight(i, table.num_embeddings)))
    kjts = [KeyedJaggedTensor.from_lengths_sync(keys, torch.from_numpy(v), torch.from_numpy(l)) for l, v in sparse_batches()]
    checks = {"fused_first_output_sum": float(ebc(kjts[0]).values().detach().sum())}

    def epoch():
        for kjt in kjts:
            ebc(kjt).values().sum().backward()
    return {"fused_epoch": best_seconds(epoch), "checks": checks, "peak_mb": peak_rss_mb(),
            "versions": versions("torch", "torchrec", "fbgemm-gpu-nightly-cpu", "fbgemm-gpu-cpu", "fbgemm-gpu")}


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
    op_times, op_checks = time_sparse_ops(torch, torch.ops.fbgemm)
    return {
        "ebc_epoch": best_seconds(epoch),
        "padded": best_seconds(lambda: padded(values, [offsets], [PAD_MAX], 0.0)),
        "permute": best_seconds(lambda: [kjts[0].permute(order) for _ in range(PERMUTE_REPEATS)]) / PERMUTE_REPEATS,
        **op_times, "checks": {**checks, **op_checks}, "peak_mb": peak_rss_mb(),
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

    def segment_ids(bounds, total):  # each value's sample: a running sum of segment starts
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

    def permute():  # the gather index as a running sum of steps, one gather
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


TBE_B, TBE_T, TBE_E, TBE_D, TBE_L = 512, 32, 100_000, 128, 20
TBE_TYPES = ["int4", "int8", "fp8"]
TBE_REPEATS = 10


def tbe_row_bytes(name):
    return {"int4": TBE_D // 2 + 4, "int8": TBE_D + 4, "fp8": TBE_D}[name]


def tbe_tables(name):
    """Per table (values, scale_shift or None) as NumPy uint8: random values; scale 0.01, bias -0.05."""
    rng = np.random.default_rng(5)
    header = 4 if name != "fp8" else 0
    tables = []
    for _ in range(TBE_T):
        values = rng.integers(0, 256, (TBE_E, tbe_row_bytes(name) - header), dtype=np.uint8)
        if name == "fp8":
            values &= 0xbf  # exponents below 8: values of a few units, as trained tables have
            tables.append((values, None))
        else:
            scale_shift = np.tile(np.array([0.01, -0.05], np.float16).view(np.uint8), (TBE_E, 1))
            tables.append((values, scale_shift))
    return tables


def tbe_bags():
    rng = np.random.default_rng(6)
    indices = rng.integers(0, TBE_E, TBE_B * TBE_T * TBE_L).astype(np.int32)
    offsets = (np.arange(TBE_B * TBE_T + 1) * TBE_L).astype(np.int32)
    return indices, offsets


def tbe_result(forward, name):
    seconds = best_seconds(forward, TBE_REPEATS)
    return {"seconds": seconds, "gbps": TBE_B * TBE_T * TBE_L * tbe_row_bytes(name) / seconds / 1e9,
            "checksum": float(np.asarray(forward(), np.float64).sum()), "peak_mb": peak_rss_mb()}


def ember_tbe_worker(name):
    import ember
    from emberrec.fbgemm.split_embedding_configs import SparseType
    from emberrec.fbgemm.split_table_batched_embeddings_ops_common import EmbeddingLocation
    from emberrec.fbgemm.split_table_batched_embeddings_ops_inference import IntNBitTableBatchedEmbeddingBagsCodegen

    ember.set_num_threads(THREADS)
    specs = [(f"t{t}", TBE_E, TBE_D, SparseType(name), EmbeddingLocation.HOST) for t in range(TBE_T)]
    tbe = IntNBitTableBatchedEmbeddingBagsCodegen(specs, output_dtype=SparseType.FP16)
    tbe.assign_embedding_weights([(ember.from_numpy(v), None if s is None else ember.from_numpy(s)) for v, s in tbe_tables(name)])
    indices, offsets = (ember.from_numpy(a) for a in tbe_bags())
    result = tbe_result(lambda: tbe(indices, offsets).numpy(), name)
    return {**result, "versions": f"ember {ember.__version__}"}


def fbgemm_tbe_worker(name):
    import torch
    from fbgemm_gpu.split_embedding_configs import SparseType
    from fbgemm_gpu.split_table_batched_embeddings_ops_common import EmbeddingLocation
    from fbgemm_gpu.split_table_batched_embeddings_ops_inference import IntNBitTableBatchedEmbeddingBagsCodegen

    torch.set_num_threads(THREADS)
    specs = [(f"t{t}", TBE_E, TBE_D, SparseType(name), EmbeddingLocation.HOST) for t in range(TBE_T)]
    tbe = IntNBitTableBatchedEmbeddingBagsCodegen(specs, device="cpu", output_dtype=SparseType.FP16)
    tbe.initialize_weights()
    tbe.assign_embedding_weights([(torch.from_numpy(v), None if s is None else torch.from_numpy(s)) for v, s in tbe_tables(name)])
    indices, offsets = (torch.from_numpy(a) for a in tbe_bags())
    result = tbe_result(lambda: tbe(indices, offsets).numpy(), name)
    return {**result, "versions": versions("torch", "fbgemm-gpu-nightly-cpu", "fbgemm-gpu-cpu", "fbgemm-gpu")}


WORKERS = {"ember": ember_worker, "torchrec": torchrec_worker, "torch": plain_torch_worker,
           "ember_fused": ember_fused_worker, "torchrec_fused": torchrec_fused_worker}
WORKERS.update({f"ember_tbe_{name}": (lambda name=name: ember_tbe_worker(name)) for name in TBE_TYPES})
WORKERS.update({f"fbgemm_tbe_{name}": (lambda name=name: fbgemm_tbe_worker(name)) for name in TBE_TYPES})


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


def agreement(ember, other):
    if "error" in other:
        return "-"
    mismatched = [k for k, v in ember["checks"].items()
                  if k in other["checks"] and not np.isclose(v, other["checks"][k], rtol=1e-4)]
    return "yes" if not mismatched else "NO: " + ", ".join(mismatched)


def main():
    with tempfile.TemporaryDirectory(prefix="emberrec-bench-") as folder:
        results = {name: run_worker(name, sys.executable if name.startswith("ember") else TORCH_PYTHON, folder)
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
    print(f"\nOutputs agree with emberrec's (EBC output, padded sum, permuted ids): TorchRec {agreement(ember, torchrec)}, "
          f"plain PyTorch {agreement(ember, torch)}.")
    for name, result in (("TorchRec + FBGEMM", torchrec), ("plain PyTorch", torch)):
        if "error" in result:
            print(f"\n{name} did not run in {TORCH_PYTHON}: {result['error']}")
    print_fused(results)
    print_sparse_ops(ember, torchrec)
    print_tbe(results)


def print_fused(results):
    ours, theirs = results["ember_fused"], results["torchrec_fused"]
    if "error" in ours:
        raise RuntimeError(f"the emberrec FusedEBC worker failed: {ours['error']}")
    print(f"\nFusedEmbeddingBagCollection training epoch (the EBC configuration above; SGD lr {LR} fused into the "
          f"backward pass); {cpu_model()} ({os.cpu_count()} cores, shared), {THREADS} threads; best of {REPEATS}.\n")
    print("| workload | emberrec | TorchRec + FBGEMM | TorchRec time / emberrec time | peak RSS emberrec / TorchRec |")
    print("|---|---|---|---|---|")
    agree = agreement(ours, theirs)
    agree = "" if agree in ("yes", "-") else f" ({agree})"
    print(f"| FusedEBC epoch, {BATCHES} batches | {cell(ours, 'fused_epoch')} | {cell(theirs, 'fused_epoch')} | "
          f"{ratio(theirs, ours, 'fused_epoch')}{agree} | {cell(ours, 'peak_mb', False)} / {cell(theirs, 'peak_mb', False)} |")
    if "error" in theirs:
        print(f"\nTorchRec's FusedEmbeddingBagCollection did not run in {TORCH_PYTHON}: {theirs['error']}")


def print_sparse_ops(ember, fbgemm):
    print(f"\nFBGEMM's operators, emberrec.ops vs torch.ops.fbgemm on the CPU ({cpu_model()}, {os.cpu_count()} cores, "
          f"shared; {THREADS} threads; time per call, best of {REPEATS} runs of {OPS_REPEATS} calls):\n")
    print("| operator | emberrec | fbgemm_gpu (CPU) | fbgemm time / emberrec time |")
    print("|---|---|---|---|")
    rows = [("op_permute", f"permute_2D_sparse_data: {OPS_KEYS} keys x {OPS_BATCH} samples of 0-{OPS_MAX_LEN} int64 ids "
                           f"+ float32 weights, keys reversed"),
            ("op_bucketize", f"block_bucketize_sparse_features: the same ids into {OPS_BUCKETS} buckets, weights, "
                             f"unbucketize permutation"),
            ("op_jagged_add", f"jagged_dense_elementwise_add: {OPS_BATCH} samples of 0-{OPS_MAX_LEN} rows x 64 float32 "
                              f"+ dense, dense output")]
    for key, label in rows:
        print(f"| {label} | {cell(ember, key)} | {cell(fbgemm, key)} | {ratio(fbgemm, ember, key)} |")


def print_tbe(results):
    fbgemm_versions = next((r["versions"] for n, r in results.items() if n.startswith("fbgemm_tbe") and "error" not in r), "n/a")
    print(f"\nQuantized inference TBE, FBGEMM's nbit-cpu configuration: B={TBE_B}, T={TBE_T}, E={TBE_E:,}, D={TBE_D}, "
          f"L={TBE_L}, SUM pooling, fp16 output; {cpu_model()} ({os.cpu_count()} cores, shared), {THREADS} threads; "
          f"best of {TBE_REPEATS}. fbgemm_gpu column: {fbgemm_versions}.\n")
    print("| rows | emberrec | GB/s | fbgemm_gpu (CPU) | GB/s | fbgemm time / emberrec time | peak RSS emberrec / fbgemm |")
    print("|---|---|---|---|---|---|---|")
    for name in TBE_TYPES:
        ours, theirs = results[f"ember_tbe_{name}"], results[f"fbgemm_tbe_{name}"]
        if "error" in ours:
            raise RuntimeError(f"the emberrec TBE worker ({name}) failed: {ours['error']}")
        if "error" in theirs:
            their_cells = "n/a | | |"
        else:
            agree = "" if np.isclose(ours["checksum"], theirs["checksum"], rtol=1e-3) else " (outputs DIFFER)"
            their_cells = (f"{theirs['seconds'] * 1e3:.2f} ms | {theirs['gbps']:.2f} | "
                           f"{theirs['seconds'] / ours['seconds']:.2f}x{agree} |")
        peak = f"{ours['peak_mb']:.0f} MB / " + ("n/a" if "error" in theirs else f"{theirs['peak_mb']:.0f} MB")
        print(f"| {name.upper()} ({tbe_row_bytes(name)} B/row) | {ours['seconds'] * 1e3:.2f} ms | {ours['gbps']:.2f} | "
              f"{their_cells} {peak} |")
    missing = [n for n, r in results.items() if n.startswith("fbgemm_tbe") and "error" in r]
    if missing:
        print(f"\nfbgemm_gpu did not run in {TORCH_PYTHON}: {results[missing[0]]['error']}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        result = WORKERS[sys.argv[2]]()
        with open(sys.argv[3], "w") as f:
            json.dump(result, f)
    else:
        main()
