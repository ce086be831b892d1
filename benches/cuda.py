"""CUDA benchmarks, Ember against PyTorch on the same GPU in one run (issue 22): elementwise add
and exp on 256M float32 against a device-to-device copy's bandwidth, 4096 matrix products in
float32, TF32 and bfloat16, softmax and layer_norm on [8192, 8192], an MLP and a small CNN
training step, and the per-op launch overhead on tiny tensors. Needs a GPU: `benches/gpu.sh`
runs it on one (it prints a note and exits where there is none)."""
import statistics
import time

N_ELEMENTWISE = 256 << 20
REPEATS = 10


def load(name):
    try:
        lib = __import__(name)
    except Exception:  # the anchor may be absent; the table says so
        return None
    return lib if lib.cuda.is_available() else None


def gpu_ms(lib, fn, repeats=REPEATS):
    """Median milliseconds of `fn` on the GPU, by the library's own events, after a warm-up."""
    fn()
    lib.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = lib.cuda.Event(enable_timing=True), lib.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def elementwise(lib):
    x, y = lib.full((N_ELEMENTWISE,), 0.5, device="cuda"), lib.full((N_ELEMENTWISE,), 0.25, device="cuda")
    out = lib.empty(N_ELEMENTWISE, device="cuda")
    gb = N_ELEMENTWISE * 4 / 1e9
    rows = {
        "copy (read + write)": (2 * gb, lambda: out.copy_(x)),
        "add (2 reads + write)": (3 * gb, lambda: lib.add(x, y, out=out)),
        "exp (read + write)": (2 * gb, lambda: lib.exp(x, out=out)),
    }
    return {name: moved / (gpu_ms(lib, fn) / 1e3) for name, (moved, fn) in rows.items()}


def matmuls(lib):
    results = {}
    for label, dtype, precision in [("float32", "float32", "highest"), ("TF32", "float32", "high"),
                                    ("bfloat16", "bfloat16", "highest")]:
        lib.set_float32_matmul_precision(precision)
        a = lib.randn(4096, 4096, device="cuda").to(getattr(lib, dtype))
        b = lib.randn(4096, 4096, device="cuda").to(getattr(lib, dtype))
        results[label] = 2 * 4096 ** 3 / (gpu_ms(lib, lambda: a @ b) / 1e3) / 1e12
    lib.set_float32_matmul_precision("highest")
    return results


def rows_ops(lib):
    x = lib.randn(8192, 8192, device="cuda")
    w, b = lib.ones(8192, device="cuda"), lib.zeros(8192, device="cuda")
    return {
        "softmax [8192, 8192]": gpu_ms(lib, lambda: lib.softmax(x, -1)),
        "layer_norm [8192, 8192]": gpu_ms(lib, lambda: lib.nn.functional.layer_norm(x, (8192,), w, b)),
    }


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)), (256, 784)


def cnn(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 10),
    ), (64, 1, 28, 28)


def training_step_ms(lib, make):
    lib.manual_seed(0)
    model, shape = make(lib)
    model = model.to("cuda")
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = lib.randn(*shape, device="cuda"), lib.randint(0, 10, (shape[0],), device="cuda")

    def step():
        opt.zero_grad()
        lib.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return gpu_ms(lib, step, repeats=20)


def launch_overhead_us(lib):
    """Wall-clock µs per op for a chain of adds on 16 elements (queueing cost, not GPU time)."""
    x = lib.ones(16, device="cuda")
    for _ in range(100):
        x = x + 1.0
    lib.cuda.synchronize()
    ops = 2000
    start = time.perf_counter()
    for _ in range(ops):
        x = x + 1.0
    lib.cuda.synchronize()
    return (time.perf_counter() - start) / ops * 1e6


def measure(lib, fn, *args):
    try:
        return fn(lib, *args)
    except (NotImplementedError, RuntimeError) as e:
        return f"not on CUDA yet ({str(e).splitlines()[0][:80]})"


def fmt(v, digits=1):
    return v if isinstance(v, str) else f"{v:.{digits}f}"


def ratio(ember_value, torch_value, higher_is_better):
    if isinstance(ember_value, str) or isinstance(torch_value, str) or torch_value is None:
        return ""
    return f"{(ember_value / torch_value if higher_is_better else torch_value / ember_value):.2f}x"


def table(title, unit, results, higher_is_better):
    print(f"\n### {title} ({unit})\n\n| workload | Ember | PyTorch | Ember / PyTorch |\n|---|---|---|---|")
    ember_rows, torch_rows = results["ember"], results.get("torch")
    if isinstance(ember_rows, str):
        print(f"| all | {ember_rows} | | |")
        return
    for name, value in ember_rows.items():
        theirs = torch_rows.get(name) if isinstance(torch_rows, dict) else None
        print(f"| {name} | {fmt(value)} | {fmt(theirs) if theirs is not None else '-'} | {ratio(value, theirs, higher_is_better)} |", flush=True)


def main():
    libs = {name: load(name) for name in ("ember", "torch")}
    if libs["ember"] is None:
        print("No CUDA GPU here: nothing measured (benches/gpu.sh runs this on a GPU machine).")
        return
    print(f"GPU: {libs['ember'].cuda.get_device_name()}. PyTorch {getattr(libs['torch'], '__version__', 'absent')}. "
          "Ratios above 1x: Ember is faster (or moves more bytes, or computes more).")
    present = {name: lib for name, lib in libs.items() if lib is not None}
    table("Elementwise on 256M float32", "GB/s", {n: measure(l, elementwise) for n, l in present.items()}, True)
    table("Matrix product 4096 x 4096", "TFLOP/s", {n: measure(l, matmuls) for n, l in present.items()}, True)
    table("Row ops", "ms", {n: measure(l, rows_ops) for n, l in present.items()}, False)
    steps = {n: {label: measure(l, training_step_ms, make) for label, make in
                 [("mlp 784-512-512-10, batch 256", mlp), ("cnn 2 conv + linear, batch 64", cnn)]} for n, l in present.items()}
    table("Training step with SGD + momentum", "ms", steps, False)
    table("Launch overhead", "µs per op, wall clock", {n: {"x + 1.0 on 16 elements": measure(l, launch_overhead_us)} for n, l in present.items()}, False)


if __name__ == "__main__":
    main()
