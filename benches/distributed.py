"""ember.distributed on 2 CPU processes of one machine: all_reduce bandwidth (4 KB to 64 MB of
float32) against raw mpi4py (the same MPI underneath, no Ember layer) and torch.distributed's
gloo, and a DistributedDataParallel training step (MLP and small CNN, SGD + momentum) against
torch's DDP on gloo.

Ember runs under `python -m ember.distributed.run --nproc-per-node 2`, PyTorch as two processes
with torchrun's environment. Each process uses cores / 2 threads in both libraries. PyTorch runs
in the interpreter named by EMBER_BENCH_TORCH_PYTHON (default: this one); without torch its
columns say so."""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from run import cpu_model  # benches/run.py, beside this script
from train import cnn, mlp  # the workloads of benches/train.py

PROCESSES = 2
THREADS = max(1, (os.cpu_count() or 1) // PROCESSES)
SIZES = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20]
REPEATS = 3
STEPS_WARMUP, STEPS_TIMED = 3, 15
TORCH_PYTHON = os.environ.get("EMBER_BENCH_TORCH_PYTHON", sys.executable)


def iterations(nbytes):
    return max(5, min(300, (256 << 20) // (nbytes * 8)))


def time_loop(fn, n, barrier):
    """Best of REPEATS: seconds per call of `fn` over `n` calls, ranks started together."""
    best = float("inf")
    for _ in range(REPEATS):
        barrier()
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - start) / n)
    return best


# ---- models: train.py's, with the batch split across the ranks ----

MODELS = {"mlp 784-512-512-10, global batch 256": mlp, "cnn 2 conv + linear, global batch 64, 28x28": cnn}


def ddp_step_times(lib, wrap, rank, world, barrier):
    """Median ms per training step (zero_grad, forward, loss, backward with gradient averaging, step)."""
    out = {}
    for name, make in MODELS.items():
        lib.manual_seed(0)
        model, shape = make(lib)
        model = wrap(model)
        per_rank = (shape[0] // world,) + shape[1:]
        rng = np.random.default_rng(rank)
        x = lib.from_numpy(rng.standard_normal(per_rank).astype(np.float32))
        y = lib.from_numpy(rng.integers(0, 10, per_rank[0]))
        opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        loss_fn = lib.nn.CrossEntropyLoss()
        times = []
        for i in range(STEPS_WARMUP + STEPS_TIMED):
            barrier()
            start = time.perf_counter()
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
            if i >= STEPS_WARMUP:
                times.append(time.perf_counter() - start)
        out[name] = statistics.median(times) * 1e3
    return out


# ---- the worker processes ----

def ember_worker(out_path):
    import ember
    import ember.distributed as dist
    from mpi4py import MPI
    from ember.nn.parallel import DistributedDataParallel
    ember.set_num_threads(THREADS)
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    comm = MPI.COMM_WORLD
    result = {"ember": {}, "mpi4py": {}}
    for nbytes in SIZES:
        n = iterations(nbytes)
        array = np.ones(nbytes // 4, np.float32)
        tensor = ember.ones(nbytes // 4)
        result["mpi4py"][nbytes] = time_loop(lambda: comm.Allreduce(MPI.IN_PLACE, array), n, comm.Barrier)
        result["ember"][nbytes] = time_loop(lambda: dist.all_reduce(tensor), n, dist.barrier)
    result["ddp"] = ddp_step_times(ember, DistributedDataParallel, rank, world, dist.barrier)
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump(result, f)
    dist.destroy_process_group()


def torch_worker(out_path):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(THREADS)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    result = {"torch": {}}
    for nbytes in SIZES:
        tensor = torch.ones(nbytes // 4)
        result["torch"][nbytes] = time_loop(lambda: dist.all_reduce(tensor), iterations(nbytes), dist.barrier)
    result["ddp"] = ddp_step_times(torch, torch.nn.parallel.DistributedDataParallel, rank, world, dist.barrier)
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump(result, f)
    dist.destroy_process_group()


# ---- the parent ----

def run_ember(folder):
    path = os.path.join(folder, "ember.json")
    subprocess.run([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", str(PROCESSES),
                    os.path.abspath(__file__), "--worker", "ember", path], check=True)
    with open(path) as f:
        return json.load(f)


def run_torch(folder):
    probe = subprocess.run([TORCH_PYTHON, "-c", "import torch"], capture_output=True, text=True)
    if probe.returncode != 0:
        return None
    path = os.path.join(folder, "torch.json")
    env = dict(os.environ, WORLD_SIZE=str(PROCESSES), MASTER_ADDR="127.0.0.1", MASTER_PORT="29517")
    procs = [subprocess.Popen([TORCH_PYTHON, os.path.abspath(__file__), "--worker", "torch", path],
                              env=dict(env, RANK=str(r), LOCAL_RANK=str(r))) for r in range(PROCESSES)]
    if any(p.wait() for p in procs):
        raise RuntimeError("the torch.distributed workers failed")
    with open(path) as f:
        return json.load(f)


def fmt_size(nbytes):
    return f"{nbytes >> 20} MB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KB"


def main():
    with tempfile.TemporaryDirectory() as folder:
        ember_result = run_ember(folder)
        torch_result = run_torch(folder)
    print(f"{PROCESSES} processes on one machine ({cpu_model()}, {os.cpu_count()} cores), {THREADS} thread(s) each. "
          "Bandwidth is the algorithm bandwidth (bytes of the tensor / time per all_reduce); each time is the best "
          f"of {REPEATS} loops. Ratios are the other library's time divided by Ember's: above 1x, Ember is faster.\n")
    print("### all_reduce (SUM, float32): µs per call, and GB/s\n")
    print("| size | Ember | raw mpi4py | torch gloo | vs mpi4py | vs gloo |\n|---|---|---|---|---|---|")
    for nbytes in SIZES:
        key = str(nbytes)
        e, m = ember_result["ember"][key], ember_result["mpi4py"][key]
        t = torch_result["torch"][key] if torch_result else None
        cell = lambda s: f"{s * 1e6:.1f} ({nbytes / s / 1e9:.2f} GB/s)"
        print(f"| {fmt_size(nbytes)} | {cell(e)} | {cell(m)} | {cell(t) if t else 'torch missing'} | {m / e:.2f}x | "
              f"{f'{t / e:.2f}x' if t else ''} |")
    print(f"\n### DistributedDataParallel training step (ms, median of {STEPS_TIMED})\n")
    print("| workload | Ember DDP | torch DDP (gloo) | speed ratio |\n|---|---|---|---|")
    for name in MODELS:
        e = ember_result["ddp"][name]
        t = torch_result["ddp"][name] if torch_result else None
        print(f"| {name} | {e:.2f} | {f'{t:.2f}' if t else 'torch missing'} | {f'{t / e:.2f}x' if t else ''} |")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        (ember_worker if sys.argv[2] == "ember" else torch_worker)(sys.argv[3])
    else:
        main()
