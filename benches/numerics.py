"""Numerics benchmarks (issue 4): Ember against NumPy and PyTorch on the CPU, same thread count.
bf16 and float32 matmul, FFTs (power of two, prime length, batched 2-D), float64 linalg (svd, eigh,
solve, cholesky), a ResNet-50-shaped forward built from `nn` (float32 / bf16 autocast,
channels-first / channels-last), and the memory of bf16 tensors and of a bf16 matmul (peak RSS of
one child process per case)."""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

THREADS = os.cpu_count() or 1
LIBRARIES = ("ember", "torch")
MATMUL_LIMIT_S = 10.0  # a size is left out when one product takes longer than this in any library


def load(name):
    try:
        lib = __import__(name)
    except Exception:  # the anchor may be absent; the table says so
        return None
    lib.set_num_threads(THREADS)
    return lib


def best_seconds(fn, reps=3, budget=2.0):
    """Best wall time of `reps` calls after one warm-up; when the warm-up alone is slow (over a
    quarter of `budget`) it counts as a sample and fewer repetitions run, so slow cells stay short."""
    start = time.perf_counter()
    fn()
    first = time.perf_counter() - start
    times = [first] if first > budget / 4 else []
    spent = first
    while len(times) < reps and (spent < budget or not times):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        spent += times[-1]
    return min(times)


def cell(fn):
    """fn's value, or "error: <short message>" when the library raises."""
    try:
        return fn()
    except Exception as error:  # a missing op in one library must not stop the table
        message = str(error).splitlines()[0] if str(error) else ""
        return f"error: {type(error).__name__}: {message[:80]}".replace("|", "/")


def fmt(value, spec=".1f", suffix=""):
    if value is None:
        return "n/a"
    if isinstance(value, str):
        return value
    return f"{value:{spec}}{suffix}"


def num(value):
    return isinstance(value, (int, float))


def ratio(top, bottom, spec=".2f"):
    return f"{top / bottom:{spec}}x" if num(top) and num(bottom) and bottom else "n/a"


def met(ok):
    return "n/a" if ok is None else ("yes" if ok else "no")


# ----------------------------------------------------------------------------------------------
# 1. matmul


# Longer than the other library's threads spin after a call (OpenMP's KMP_BLOCKTIME is 200 ms),
# and how long each library's untimed calls run before its timed one.
IDLE_S = 0.3
WARM_S = 0.05


def matmul_section(libs):
    em, th = libs["ember"], libs["torch"]
    print(f"### 1. matmul (GFLOP/s, best of a few turns, the four in turn; {THREADS} threads)\n")
    print("Targets: Ember bf16 at least 2x Ember float32, and at least PyTorch bf16.\n")
    print("| n | Ember bf16 | Ember float32 | PyTorch bf16 | PyTorch float32 | Ember bf16 / Ember f32 | "
          "Ember bf16 / PyTorch bf16 | target met |")
    print("|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    left_out = []
    for n in (1024, 2048, 4096):
        a32 = rng.standard_normal((n, n)).astype(np.float32)
        b32 = rng.standard_normal((n, n)).astype(np.float32)
        flop = 2.0 * n ** 3
        reps, budget = (5, 2.0) if n < 4096 else (2, 4.0)
        results, too_slow = {}, []
        cases = [("ember bf16", em, "bfloat16"), ("ember f32", em, "float32"),
                 ("torch bf16", th, "bfloat16"), ("torch f32", th, "float32")]
        calls = {}
        for key, lib, dtype in cases:
            if lib is None:
                results[key] = None
                continue
            if n == 4096 and too_slow:
                results[key] = "skipped"
                continue

            def probe(lib=lib, dtype=dtype, key=key):
                a = lib.from_numpy(a32).to(getattr(lib, dtype))
                b = lib.from_numpy(b32).to(getattr(lib, dtype))
                t0 = time.perf_counter()
                lib.matmul(a, b)  # is this size affordable?
                seconds = time.perf_counter() - t0
                if seconds > MATMUL_LIMIT_S:
                    too_slow.append(f"{key} took {seconds:.0f} s for one product")
                else:
                    calls[key] = lambda: lib.matmul(a, b)
                return seconds

            results[key] = cell(probe)
        # The affordable ones in turns, so a slow spell of a shared machine hits them alike. Each
        # starts once the other library's idle threads have stopped spinning (PyTorch's OpenMP
        # workers spin 200 ms after a call: Ember's bf16 1024 product lost up to 30% to them),
        # and its timed call follows untimed ones that wake its own threads (after a pause, the
        # first products of either library often ran at one core's speed for up to 30 ms).
        started = time.perf_counter()
        for turn in range(reps):
            if turn and time.perf_counter() - started > 2 * len(calls) * budget:
                break
            for key, call in calls.items():
                time.sleep(IDLE_S)
                warm_until = time.perf_counter() + WARM_S
                call()
                while time.perf_counter() < warm_until:
                    call()
                t0 = time.perf_counter()
                call()
                results[key] = min(results[key], time.perf_counter() - t0)
        results = {k: flop / v / 1e9 if num(v) else v for k, v in results.items()}
        if too_slow:
            left_out.append(f"n={n}: " + "; ".join(too_slow))
        eb, ef, tb, tf = (results[k] for k in ("ember bf16", "ember f32", "torch bf16", "torch f32"))
        target = None
        if num(eb) and num(ef) and num(tb):
            target = eb >= 2 * ef and eb >= tb
        print(f"| {n} | {fmt(eb)} | {fmt(ef)} | {fmt(tb)} | {fmt(tf)} | {ratio(eb, ef)} | {ratio(eb, tb)} | "
              f"{met(target)} |", flush=True)
    if left_out:
        print("\nLeft out (over the 10 s per product limit): " + "; ".join(left_out))
    print()


# ----------------------------------------------------------------------------------------------
# 2. FFT


def _fft_cases():
    rng = np.random.default_rng(1)
    cases = []
    for n in (2 ** 20, 1_000_003):
        label = "2^20" if n == 2 ** 20 else f"{n:_} (prime)"
        z = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
        r = rng.standard_normal(n).astype(np.float32)
        cases.append((f"fft, complex64, n = {label}", z, "fft"))
        cases.append((f"rfft, float32, n = {label}", r, "rfft"))
    batch = (rng.standard_normal((16, 512, 512)) + 1j * rng.standard_normal((16, 512, 512))).astype(np.complex64)
    cases.append(("fft2, complex64, 16 x 512 x 512", batch, "fft2"))
    return cases


def fft_times(name):
    """{case: ms or error} for one library ("numpy" or a name `load` takes)."""
    lib = np if name == "numpy" else load(name)
    wrap = (lambda a: a) if name == "numpy" else lib.from_numpy
    times = {}
    for label, data, op in _fft_cases():
        def measure():
            x = wrap(data)
            return best_seconds(lambda: getattr(lib.fft, op)(x)) * 1e3
        times[label] = cell(measure)
    return times


def _linalg_data(n):
    rng = np.random.default_rng(2 + n)
    m = rng.standard_normal((n, n))
    return {"m": m, "spd": m @ m.T / n + np.eye(n), "rhs": rng.standard_normal((n, 1))}


LINALG_OPS = ("svd", "eigh", "solve", "cholesky")
LINALG_SIZES = (256, 1024)


def linalg_times(name):
    """{"op n": ms or error} for one library, float64."""
    lib = np if name == "numpy" else load(name)
    wrap = (lambda a: a) if name == "numpy" else lib.from_numpy
    times = {}
    for n in LINALG_SIZES:
        d = {k: wrap(v) for k, v in _linalg_data(n).items()}
        budget = 3.0 if n == 1024 else 1.0
        calls = {
            "svd": lambda: lib.linalg.svd(d["m"], full_matrices=False),
            "eigh": lambda: lib.linalg.eigh(d["spd"]),
            "solve": lambda: lib.linalg.solve(d["m"], d["rhs"]),
            "cholesky": lambda: lib.linalg.cholesky(d["spd"]),
        }
        for op in LINALG_OPS:
            times[f"{op} {n}"] = cell(lambda: best_seconds(calls[op], 3, budget) * 1e3)
    return times


CHILD_TIMES = {"fft": fft_times, "linalg": linalg_times}


def child_times(section, name):
    print(json.dumps(CHILD_TIMES[section](name)))


def times_in_child(section, name):
    """Runs one library's column of a section in its own process, so no other library's thread
    pool (PyTorch's OpenMP, NumPy's OpenBLAS, Ember's) spins against it while it is timed."""
    return run_child(["--child-times", section, name], timeout=150)


def run_child(args, timeout):
    """This script run with `args` in a child process: its last stdout line as JSON, or an
    `error: ...` cell carrying the child's last stderr line."""
    command = [sys.executable, os.path.abspath(__file__), *args]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=timeout)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["exit code %d" % done.returncode])[-1]
        return f"error: {last[:80]}".replace("|", "/")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _columns(section, libs):
    cols = {}
    for name in ("ember", "numpy", "torch"):
        if name != "numpy" and libs[name] is None:
            cols[name] = {}
            continue
        cols[name] = times_in_child(section, name)
    return {k: (v if isinstance(v, dict) else {"__error__": v}) for k, v in cols.items()}


def _get(col, key):
    return col.get(key, col.get("__error__"))


def fft_section(libs):
    print("### 2. FFT (ms, best of 3 after a warm-up; each library in its own process)\n")
    print("Target: Ember at least as fast as numpy.fft and torch.fft (ratios are their time / Ember's).\n")
    print("| transform | Ember | numpy.fft | torch.fft | numpy / Ember | torch / Ember | target met |")
    print("|---|---|---|---|---|---|---|")
    cols = _columns("fft", libs)
    for label, _, _ in _fft_cases():
        e, n_, t = (_get(cols[k], label) for k in ("ember", "numpy", "torch"))
        target = (e <= n_ and e <= t) if num(e) and num(n_) and num(t) else None
        print(f"| {label} | {fmt(e, '.2f')} | {fmt(n_, '.2f')} | {fmt(t, '.2f')} | {ratio(n_, e)} | "
              f"{ratio(t, e)} | {met(target)} |", flush=True)
    print()


def linalg_section(libs):
    print("### 3. linalg, float64 (ms, best of up to 3 after a warm-up; each library in its own process)\n")
    print("Target: Ember at least 0.8x NumPy's speed (LAPACK); speed ratio = NumPy's time / Ember's.\n")
    print("| op | n | Ember | numpy.linalg | torch.linalg | Ember speed vs NumPy | PyTorch speed vs NumPy | target met |")
    print("|---|---|---|---|---|---|---|---|")
    cols = _columns("linalg", libs)
    for n in LINALG_SIZES:
        for op in LINALG_OPS:
            e, n_, t = (_get(cols[k], f"{op} {n}") for k in ("ember", "numpy", "torch"))
            target = (n_ / e >= 0.8) if num(e) and num(n_) else None
            print(f"| {op} | {n} | {fmt(e, '.2f')} | {fmt(n_, '.2f')} | {fmt(t, '.2f')} | {ratio(n_, e)} | "
                  f"{ratio(n_, t)} | {met(target)} |", flush=True)
    print()


# ----------------------------------------------------------------------------------------------
# 4. ResNet-50-shaped forward


def resnet50(lib, num_classes=1000):
    """A ResNet-50 (bottleneck blocks [3, 4, 6, 3]) from `lib.nn`, so the same code builds it in
    either library."""
    nn = lib.nn

    class Bottleneck(nn.Module):
        def __init__(self, cin, width, stride):
            super().__init__()
            cout = width * 4
            self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(width)
            self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU()
            self.has_downsample = stride != 1 or cin != cout
            if self.has_downsample:
                self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            identity = self.downsample(x) if self.has_downsample else x
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            return self.relu(out + identity)

    layers = [nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
              nn.MaxPool2d(3, stride=2, padding=1)]
    cin = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
            cin = width * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, num_classes)]
    return nn.Sequential(*layers)


RESNET_VARIANTS = (("float32", False, False), ("float32, channels-last", True, False),
                   ("bf16 autocast", False, True), ("bf16 autocast, channels-last", True, True))


def resnet_forward_ms(lib, image, size, batch, channels_last, autocast, reps):
    lib.manual_seed(0)
    model = resnet50(lib).eval()
    x = lib.from_numpy(image)
    if channels_last:
        model = model.to(memory_format=lib.channels_last)
        x = x.to(memory_format=lib.channels_last)

    def forward():
        with lib.no_grad():
            if autocast:
                with lib.autocast("cpu", dtype=lib.bfloat16):
                    return model(x)
            return model(x)

    out = forward()
    if tuple(out.shape) != (batch, 1000):
        raise RuntimeError(f"output shape {tuple(out.shape)}")
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        forward()
        times.append(time.perf_counter() - t0)
    return min(times) * 1e3


def resnet_section(libs, size, batch, reps):
    print(f"### 4. ResNet-50-shaped forward from `nn` (batch {batch}, {size}x{size}, eval, no_grad; "
          f"ms per forward, best of {reps} after a warm-up)\n")
    print("Speed-ups are against the float32 channels-first (NCHW) forward of the same library; the seed "
          "reports 1.3-1.8x for channels-last and 1.4-2.2x for bf16 autocast.\n")
    print("| variant | Ember | PyTorch | Ember speed-up | PyTorch speed-up | PyTorch time / Ember time |")
    print("|---|---|---|---|---|---|")
    image = np.random.default_rng(3).standard_normal((batch, 3, size, size)).astype(np.float32)
    base = {}
    for label, channels_last, autocast in RESNET_VARIANTS:
        times = {}
        for key in LIBRARIES:
            lib = libs[key]
            times[key] = None if lib is None else cell(
                lambda: resnet_forward_ms(lib, image, size, batch, channels_last, autocast, reps))
            if label == "float32":
                base[key] = times[key]
        e, t = times["ember"], times["torch"]
        print(f"| {label} | {fmt(e)} | {fmt(t)} | {ratio(base['ember'], e)} | {ratio(base['torch'], t)} | "
              f"{ratio(t, e)} |", flush=True)
    print()


# ----------------------------------------------------------------------------------------------
# 5. memory

MEMORY_N = 4096


def _status_mib(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def _reset_peak():
    """Resets VmHWM to the current RSS (Linux: clear_refs 5); False where that is not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def child_memory(library_name, dtype_name):
    """Creates two MEMORY_N x MEMORY_N matrices directly in the dtype (`full`, no float32 staging
    on PyTorch's side) and multiplies them; the peak is reset before creating and again before the
    product, so each step's own peak shows."""
    lib = load(library_name)
    dtype = getattr(lib, dtype_name)
    lib.matmul(lib.ones(64, 64, dtype=dtype), lib.ones(64, 64, dtype=dtype))  # thread pools, kernels
    reset = _reset_peak()
    before = _status_mib("VmRSS")
    a = lib.full((MEMORY_N, MEMORY_N), 0.5, dtype=dtype)
    b = lib.full((MEMORY_N, MEMORY_N), 0.25, dtype=dtype)
    created_peak = _status_mib("VmHWM")
    created = _status_mib("VmRSS")
    reset = _reset_peak() and reset
    c = lib.matmul(a, b)
    peak = _status_mib("VmHWM")
    print(json.dumps({"before": before, "created": created, "created_peak": created_peak, "peak": peak,
                      "reset": reset, "dtype": str(c.dtype)}))


def measure_memory(library_name, dtype_name):
    return run_child(["--child-memory", library_name, dtype_name], timeout=120)


def memory_section(libs):
    print("### 5. Memory\n")
    print("| tensor | Ember element_size | Ember nbytes | PyTorch element_size | PyTorch nbytes |")
    print("|---|---|---|---|---|")
    for dtype_name in ("bfloat16", "float32"):
        cells = []
        for key in LIBRARIES:
            lib = libs[key]
            if lib is None:
                cells += ["n/a", "n/a"]
                continue
            t = cell(lambda: lib.zeros(1024, 1024, dtype=getattr(lib, dtype_name)))
            cells += [str(cell(lambda: t.element_size())), str(cell(lambda: t.nbytes))] if not isinstance(t, str) else [t, t]
        print(f"| 1024 x 1024 {dtype_name} | " + " | ".join(cells) + " |")
    mib = MEMORY_N * MEMORY_N / 2 ** 20
    print(f"\nPeak RSS of a child process that creates two {MEMORY_N} x {MEMORY_N} matrices with `full` and "
          f"multiplies them (MiB). Each operand takes {2 * mib:.0f} MiB in bf16 and {4 * mib:.0f} MiB in float32; "
          f"the product adds {2 * mib:.0f} MiB (bf16) or {4 * mib:.0f} MiB (float32), and float32 copies of both "
          f"bf16 operands would add {2 * 4 * mib:.0f} MiB more. The peak (VmHWM) is reset through "
          "/proc/self/clear_refs before creating and again before the product, so \"peak added by matmul\" "
          "is the product's own peak over the RSS after creating.\n")
    print("| library | dtype | RSS before | peak added by creating | RSS after creating | peak added by matmul | "
          "expected (the product) | extra | float32 operand copies? |")
    print("|---|---|---|---|---|---|---|---|---|")
    for key in LIBRARIES:
        if libs[key] is None:
            continue
        for dtype_name in ("bfloat16", "float32"):
            r = measure_memory(key, dtype_name)
            if isinstance(r, str):
                print(f"| {key} | {dtype_name} | {r} | | | | | | |", flush=True)
                continue
            size = 2 if dtype_name == "bfloat16" else 4
            added = r["peak"] - r["created"]
            extra = added - size * mib
            copies = "n/a"
            if dtype_name == "bfloat16":  # in units of one operand's float32 copy
                copies = f"yes, extra = {extra / (4 * mib):.1f}x one operand in float32" if extra > mib else "no"
            note = "" if r["reset"] else " (peak not reset)"
            print(f"| {key} | {dtype_name} | {r['before']:.0f} | {r['created_peak'] - r['before']:.0f}{note} | "
                  f"{r['created']:.0f} | {added:.0f} | {size * mib:.0f} | {extra:.0f} | {copies} |", flush=True)
    print()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child-memory", nargs=2, metavar=("LIBRARY", "DTYPE"), help=argparse.SUPPRESS)
    parser.add_argument("--child-times", nargs=2, metavar=("SECTION", "LIBRARY"), help=argparse.SUPPRESS)
    parser.add_argument("--resnet-size", type=int, default=224, help="ResNet input height and width (default 224)")
    parser.add_argument("--resnet-batch", type=int, default=8)
    parser.add_argument("--resnet-reps", type=int, default=3)
    parser.add_argument("--only", choices=("matmul", "fft", "linalg", "resnet", "memory"), help="run one section")
    args = parser.parse_args()
    if args.child_memory:
        child_memory(*args.child_memory)
        return
    if args.child_times:
        child_times(*args.child_times)
        return
    libs = {name: load(name) for name in LIBRARIES}
    versions = ", ".join(f"{k} {getattr(v, '__version__', '?')}" for k, v in libs.items() if v) + f", numpy {np.__version__}"
    print(f"{versions}; Ember and PyTorch on {THREADS} threads (set_num_threads), NumPy on its BLAS/LAPACK's default.\n")
    sections = {
        "matmul": lambda: matmul_section(libs),
        "fft": lambda: fft_section(libs),
        "linalg": lambda: linalg_section(libs),
        "resnet": lambda: resnet_section(libs, args.resnet_size, args.resnet_batch, args.resnet_reps),
        "memory": lambda: memory_section(libs),
    }
    for name, run in sections.items():
        if args.only in (None, name):
            start = time.perf_counter()
            run()
            print(f"{name} section: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
