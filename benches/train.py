"""Training-step benchmarks, Ember against PyTorch on the CPU with the same thread count: an MLP
(784-512-512-10, batch 256) and a small CNN (batch 64) trained with SGD + momentum, the
autograd overhead per op on small tensors, per-sample gradients (`func.vmap(func.grad(...))`
against a Python loop of backward passes), and each training step's peak RSS (one child process
per model and library, so one library's memory never counts against the other)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

THREADS = os.cpu_count() or 1
LIBRARIES = ("ember", "torch")
STEPS_TIMED, MEMORY_STEPS = 20, 10
OVERHEAD_OPS = 60


def load(name):
    try:
        lib = __import__(name)
    except Exception:  # the anchor may be absent; the table says so
        return None
    lib.set_num_threads(THREADS)
    return lib


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)), (256, 784)


def cnn(lib):
    nn = lib.nn
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 10),
    )
    return model, (64, 1, 28, 28)


MODELS = {"mlp 784-512-512-10, batch 256": mlp, "cnn 2 conv + linear, batch 64, 28x28": cnn}


def _training_step(lib, make):
    """A zero-argument training step (zero_grad, forward, cross-entropy, backward, SGD step) on
    fixed random data shared by both libraries."""
    lib.manual_seed(0)
    model, shape = make(lib)
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal(shape).astype(np.float32))
    y = lib.from_numpy(rng.integers(0, 10, shape[0]))
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = lib.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


PER_SAMPLE_BATCH = 64


def _per_sample_grads(lib, vectorised):
    """Per-sample gradients of a small MLP's loss over a batch: by `func.vmap(func.grad(...))`
    over the batch, or by one backward pass per sample."""
    lib.manual_seed(0)
    nn, func = lib.nn, lib.func
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal((PER_SAMPLE_BATCH, 32)).astype(np.float32))
    y = lib.from_numpy(rng.integers(0, 10, PER_SAMPLE_BATCH))
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi, yi):
        return nn.functional.cross_entropy(func.functional_call(model, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))

    if vectorised:
        per_sample = func.vmap(func.grad(loss), in_dims=(None, 0, 0))
        return lambda: per_sample(params, x, y)

    def loop():
        grads = []
        for i in range(PER_SAMPLE_BATCH):
            model.zero_grad()
            nn.functional.cross_entropy(model(x[i:i + 1]), y[i:i + 1]).backward()
            grads.append([p.grad.clone() for p in model.parameters()])
        return grads

    return loop


def _median_seconds(fn, repeats):
    fn()
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _overhead_chain(lib):
    """OVERHEAD_OPS small recorded ops and their backward: the per-op cost of the autograd
    machinery (recording, the engine, the Python layer), not of arithmetic."""
    x = lib.ones(16, requires_grad=True)

    def run():
        y = x
        for i in range(OVERHEAD_OPS // 3):
            y = (y * 1.01 + 0.5).sin()
        y.sum().backward()

    return run


def _peak_rss_mib():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def child_memory(model_name, library_name):
    lib = load(library_name)
    step = _training_step(lib, MODELS[model_name])
    baseline = _peak_rss_mib()
    for _ in range(MEMORY_STEPS):
        step()
    print(json.dumps({"peak": _peak_rss_mib(), "baseline": baseline}))


def measure_memory(model_name, library_name):
    command = [sys.executable, os.path.abspath(__file__), "--child-memory", model_name, library_name]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def _ratio(ours, theirs):
    return "n/a" if ours is None or theirs is None else f"{theirs / ours:.2f}x"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child-memory", nargs=2, metavar=("MODEL", "LIBRARY"), help=argparse.SUPPRESS)
    parser.add_argument("--per-sample-only", action="store_true", help="run only the per-sample gradients section")
    args = parser.parse_args()
    if args.child_memory:
        child_memory(*args.child_memory)
        return
    libs = {name: load(name) for name in LIBRARIES}
    if args.per_sample_only:
        per_sample_section(libs)
        return
    print("Speed ratios are PyTorch's time divided by Ember's: above 1x, Ember is faster.")
    print(f"Both libraries run on {THREADS} threads; each time is the median of {STEPS_TIMED} runs.\n")
    print("### Training step (ms)\n\n| workload | Ember | PyTorch | speed ratio |\n|---|---|---|---|")
    for name, make in MODELS.items():
        times = {k: (_median_seconds(_training_step(lib, make), STEPS_TIMED) * 1e3 if lib else None) for k, lib in libs.items()}
        print(f"| {name} | {_fmt(times['ember'])} | {_fmt(times['torch'])} | {_ratio(times['ember'], times['torch'])} |", flush=True)
    print(f"\n### Autograd overhead (µs per op: {OVERHEAD_OPS} recorded ops on 16 elements, forward + backward)\n")
    print("| workload | Ember | PyTorch | speed ratio |\n|---|---|---|---|")
    per_op = {k: (_median_seconds(_overhead_chain(lib), STEPS_TIMED) / OVERHEAD_OPS * 1e6 if lib else None) for k, lib in libs.items()}
    print(f"| mul, add, sin chain | {_fmt(per_op['ember'])} | {_fmt(per_op['torch'])} | {_ratio(per_op['ember'], per_op['torch'])} |")
    per_sample_section(libs)
    print(f"\n### Peak RSS of {MEMORY_STEPS} training steps (MiB; in parentheses: added over the RSS after imports and model)\n")
    print("| workload | Ember | PyTorch |\n|---|---|---|")
    for name in MODELS:
        cells = []
        for lib_name in LIBRARIES:
            report = measure_memory(name, lib_name) if libs[lib_name] else None
            cells.append("n/a" if report is None else f"{report['peak']:.0f} (+{report['peak'] - report['baseline']:.0f})")
        print(f"| {name} | {cells[0]} | {cells[1]} |", flush=True)


def per_sample_section(libs):
    """vmap(grad) (Ember: batching rules; PyTorch: torch.func) against a loop of backward passes."""
    print(f"\n### Per-sample gradients (ms for a batch of {PER_SAMPLE_BATCH}, MLP 32-64-10)\n")
    print("| workload | Ember | PyTorch | speed ratio |\n|---|---|---|---|")
    rows = {}
    for label, vectorised in (("func.vmap(func.grad(loss))", True), ("Python loop of backward passes", False)):
        fallbacks = _fallbacks(libs)
        rows[vectorised] = {k: (_median_seconds(_per_sample_grads(lib, vectorised), 5) * 1e3 if lib else None) for k, lib in libs.items()}
        if vectorised and _fallbacks(libs) != fallbacks:
            raise RuntimeError("Ember's vmap fell back to running per sample; the benchmark measures the batching rules")
        times = rows[vectorised]
        print(f"| {label} | {_fmt(times['ember'])} | {_fmt(times['torch'])} | {_ratio(times['ember'], times['torch'])} |", flush=True)
    speedups = {k: (rows[False][k] / rows[True][k] if rows[True][k] else None) for k in libs}
    print(f"| vmap speed-up over the loop | {_fmt(speedups['ember'])}x | {_fmt(speedups['torch'])}x | |")


def _fallbacks(libs):
    return libs["ember"]._functorch.STATS["fallbacks"] if libs["ember"] else 0


def _fmt(value):
    return "n/a" if value is None else f"{value:.2f}"


if __name__ == "__main__":
    main()
