"""Ember's core ops against NumPy and PyTorch, side by side in one process on the same inputs.

Every library runs on all cores (Ember and PyTorch are set to os.cpu_count() threads; NumPy's BLAS
uses all cores by default) and is timed by `ember.utils.benchmark.Timer.blocked_autorange`. The
inputs are NumPy arrays; Ember and PyTorch each time a copy in their own memory (strides kept), as
a tensor the library made itself would be: NumPy's large arrays start 16 bytes into a cache line,
which costs AVX-512 loads (Ember's row sum streams 20-30% faster from its own aligned buffers).
Peak memory (VmHWM) comes from one child process per (group, library) running the group's ops alone.

Prints Markdown tables; `benches/run.py` collects them into RESULTS.md.
Usage: python benches/core.py [--groups matmul,elementwise,...]
"""
import argparse
import dataclasses
import json
import math
import os
import resource
import subprocess
import sys
import types
from typing import Callable

import numpy as np

THREADS = os.cpu_count() or 1
MIN_RUN_TIME = 0.2
MEMORY_REPEATS = 2
LIBRARIES = ("ember", "numpy", "torch")
TITLES = {"ember": "Ember", "numpy": "NumPy", "torch": "PyTorch"}


# ---- NumPy versions of the ops NumPy lacks, written as a NumPy user would ----


def _numpy_gelu(x):
    from scipy.special import erf

    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def _numpy_softmax(x, dim):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def _numpy_layer_norm(x, normalized_shape, eps=1e-5):
    axes = tuple(range(-len(normalized_shape), 0))
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


class _NumpyFunctional:
    """`nn.functional` for NumPy: the ops above, and a clear error for the others."""

    gelu = staticmethod(_numpy_gelu)
    softmax = staticmethod(_numpy_softmax)
    layer_norm = staticmethod(_numpy_layer_norm)

    def __getattr__(self, name):
        raise AttributeError(f"NumPy has no {name}")


@dataclasses.dataclass
class Library:
    name: str
    module: types.ModuleType
    functional: object
    wrap: Callable  # NumPy array -> this library's tensor: a copy in its own memory, same strides


def load_library(name):
    """The library, set to all cores, or None when it is not installed."""
    if name == "numpy":
        return Library("numpy", np, _NumpyFunctional(), lambda a: a)
    try:
        module = __import__(name)
    except Exception:  # not installed, or installed without the libraries it loads at import
        return None
    module.set_num_threads(THREADS)
    return Library(name, module, module.nn.functional, lambda a: module.from_numpy(a).clone())


# ---- workloads ----


@dataclasses.dataclass
class Workload:
    name: str
    unit: str  # "GFLOP/s", "GB/s" (higher is better) or "us" (lower is better)
    amount: float  # flops or bytes per call; unused for "us"
    inputs: tuple  # names of the group's input arrays
    op: Callable  # (library, *tensors) -> result
    stmt: str = "op()"  # what the Timer runs; "a + b" times the bare operator


@dataclasses.dataclass
class Group:
    name: str
    title: str
    make_inputs: Callable  # np.random.Generator -> {name: np.ndarray}
    workloads: list


def _matmul_group():
    sizes = (256, 1024, 2048, 4096)

    def make_inputs(rng):
        return {f"{x}{n}": rng.standard_normal((n, n), dtype=np.float32) for n in sizes for x in "ab"}

    workloads = [
        Workload(f"matmul {n}x{n} @ {n}x{n}", "GFLOP/s", 2.0 * n**3, (f"a{n}", f"b{n}"), lambda lib, a, b: a @ b)
        for n in sizes
    ]
    return Group("matmul", "Matmul, float32", make_inputs, workloads)


ELEMENTWISE_N = 4096 * 4096  # 16M float32


def _copy(lib, src, dst):
    if lib.name == "numpy":
        return np.copyto(dst, src)
    return dst.copy_(src)


def _elementwise_group():
    def make_inputs(rng):
        shape = (4096, 4096)
        return {"a": rng.standard_normal(shape, dtype=np.float32), "b": rng.standard_normal(shape, dtype=np.float32),
                "out": np.empty(shape, dtype=np.float32)}

    four = 4.0 * ELEMENTWISE_N
    ops = [
        ("add", 3 * four, ("a", "b"), lambda lib, a, b: a + b),
        ("mul", 3 * four, ("a", "b"), lambda lib, a, b: a * b),
        ("exp", 2 * four, ("a",), lambda lib, a: lib.module.exp(a)),
        ("gelu", 2 * four, ("a",), lambda lib, a: lib.functional.gelu(a)),
    ]
    workloads = []
    for name, nbytes, names, op in ops:
        workloads.append(Workload(f"{name}, 16M contiguous", "GB/s", nbytes, names, op))
        workloads.append(Workload(f"{name}, 16M transposed", "GB/s", nbytes, names, _transposed(op)))
    workloads.append(Workload("copy (copyto / copy_), 16M", "GB/s", 2 * four, ("a", "out"), _copy))
    return Group("elementwise", "Elementwise, float32, 4096x4096 (16M elements)", make_inputs, workloads)


def _transposed(op):
    return lambda lib, *xs: op(lib, *(x.T for x in xs))


def _reduction_group():
    n = 4096

    def make_inputs(rng):
        return {"x": rng.standard_normal((n, n), dtype=np.float32)}

    nbytes = 4.0 * n * n
    workloads = [
        Workload("sum(dim=-1)", "GB/s", nbytes, ("x",), lambda lib, x: x.sum(-1)),
        Workload("softmax(dim=-1)", "GB/s", 2 * nbytes, ("x",), lambda lib, x: lib.functional.softmax(x, -1)),
        Workload("layer_norm((4096,))", "GB/s", 2 * nbytes, ("x",), lambda lib, x: lib.functional.layer_norm(x, (n,))),
    ]
    return Group("reductions", "Reductions over the last dim, float32 4096x4096", make_inputs, workloads)


# (name, in channels, out channels, kernel, stride, input height = width) of ResNet-50's convolutions:
# the stem, then per stage the 1x1 reduce, the 3x3 (stride 2 in the stage's first block), the 1x1
# expand and the strided 1x1 shortcut.
RESNET50_CONVS = [
    ("conv1 7x7/2", 3, 64, 7, 2, 224),
    ("layer1 1x1 reduce", 256, 64, 1, 1, 56),
    ("layer1 3x3", 64, 64, 3, 1, 56),
    ("layer1 1x1 expand", 64, 256, 1, 1, 56),
    ("layer2 3x3/2", 128, 128, 3, 2, 56),
    ("layer2 3x3", 128, 128, 3, 1, 28),
    ("layer2 1x1 expand", 128, 512, 1, 1, 28),
    ("layer2 shortcut 1x1/2", 256, 512, 1, 2, 56),
    ("layer3 3x3", 256, 256, 3, 1, 14),
    ("layer3 1x1 expand", 256, 1024, 1, 1, 14),
    ("layer4 3x3", 512, 512, 3, 1, 7),
    ("layer4 1x1 expand", 512, 2048, 1, 1, 7),
]


def _conv_output(size, kernel, stride):
    padding = kernel // 2
    return (size + 2 * padding - kernel) // stride + 1


def _conv_group():
    def make_inputs(rng):
        arrays = {}
        for name, cin, cout, k, _, size in RESNET50_CONVS:
            arrays[f"w {name}"] = rng.standard_normal((cout, cin, k, k), dtype=np.float32) * 0.05
            for batch in (1, 8):
                arrays[f"x {name} {batch}"] = rng.standard_normal((batch, cin, size, size), dtype=np.float32)
        return arrays

    workloads = []
    for batch in (1, 8):
        for name, cin, cout, k, stride, size in RESNET50_CONVS:
            out = _conv_output(size, k, stride)
            flops = 2.0 * batch * cout * out * out * cin * k * k

            def op(lib, x, w, stride=stride, padding=k // 2):
                return lib.functional.conv2d(x, w, stride=stride, padding=padding)

            workloads.append(Workload(f"N={batch} {name} {cin}->{cout} @{size}", "GFLOP/s", flops,
                                      (f"x {name} {batch}", f"w {name}"), op))
    return Group("conv2d", "conv2d on ResNet-50's layer shapes, float32 NCHW", make_inputs, workloads)


# The channels-last group: ResNet-50's 1x1 and 3x3 shapes at N=8.
CHANNELS_LAST_CONVS = [c for c in RESNET50_CONVS if c[3] in (1, 3)]


def _channels_last_group():
    """The same convs with input and weight in channels-last memory (NHWC arrays seen as NCHW,
    copied with their strides, so both libraries get channels-last tensors), next to the NCHW runs."""
    def make_inputs(rng):
        arrays = {}
        for name, cin, cout, k, _, size in CHANNELS_LAST_CONVS:
            w = rng.standard_normal((cout, k, k, cin), dtype=np.float32) * 0.05
            x = rng.standard_normal((8, size, size, cin), dtype=np.float32)
            arrays[f"w {name} nhwc"], arrays[f"x {name} nhwc"] = w.transpose(0, 3, 1, 2), x.transpose(0, 3, 1, 2)
            arrays[f"w {name} nchw"], arrays[f"x {name} nchw"] = (np.ascontiguousarray(a.transpose(0, 3, 1, 2)) for a in (w, x))
        return arrays

    workloads = []
    for layout in ("nhwc", "nchw"):
        for name, cin, cout, k, stride, size in CHANNELS_LAST_CONVS:
            out = _conv_output(size, k, stride)

            def op(lib, x, w, stride=stride, padding=k // 2):
                return lib.functional.conv2d(x, w, stride=stride, padding=padding)

            workloads.append(Workload(f"N=8 {layout.upper()} {name} {cin}->{cout} @{size}", "GFLOP/s",
                                      2.0 * 8 * cout * out * out * cin * k * k, (f"x {name} {layout}", f"w {name} {layout}"), op))
    return Group("channels_last", "conv2d at N=8 in channels-last (NHWC) memory and in NCHW, float32", make_inputs, workloads)


def _overhead_group():
    def make_inputs(rng):
        return {"a": rng.standard_normal(4, dtype=np.float32), "b": rng.standard_normal(4, dtype=np.float32)}

    return Group("overhead", "Per-op Python overhead", make_inputs,
                 [Workload("a + b on 4 floats", "us", 0.0, ("a", "b"), lambda lib, a, b: a + b, stmt="a + b")])


def _fft_flops(n, batch=1, real=False):
    """The conventional FFT operation count, 5·n·log2(n) per complex transform (half for real
    input), used to turn times into comparable GFLOP/s as benchFFT does."""
    return (2.5 if real else 5.0) * n * math.log2(n) * batch


def _fft_group():
    big, prime, rows, cols = 4096 * 4096, 1_000_003, 1024, 4096

    def make_inputs(rng):
        def cplx(*shape):
            return (rng.standard_normal(shape, dtype=np.float32) + 1j * rng.standard_normal(shape, dtype=np.float32)).astype(np.complex64)

        return {"x": rng.standard_normal(big, dtype=np.float32), "p": rng.standard_normal(prime, dtype=np.float32),
                "z": cplx(1 << 20), "b": rng.standard_normal((rows, cols), dtype=np.float32), "zb": cplx(rows, cols)}

    workloads = [
        Workload("fft, 16M float32", "GFLOP/s", _fft_flops(big), ("x",), lambda lib, x: lib.module.fft.fft(x)),
        Workload("rfft, 16M float32", "GFLOP/s", _fft_flops(big, real=True), ("x",), lambda lib, x: lib.module.fft.rfft(x)),
        Workload("rfft, prime 1_000_003 float32", "GFLOP/s", _fft_flops(prime, real=True), ("p",), lambda lib, x: lib.module.fft.rfft(x)),
        Workload("fft, 2^20 complex64", "GFLOP/s", _fft_flops(1 << 20), ("z",), lambda lib, z: lib.module.fft.fft(z)),
        Workload("rfft, 1024x4096 float32, dim=-1", "GFLOP/s", _fft_flops(cols, rows, real=True), ("b",), lambda lib, b: lib.module.fft.rfft(b)),
        Workload("fft, 1024x4096 complex64, dim=-1", "GFLOP/s", _fft_flops(cols, rows), ("zb",), lambda lib, z: lib.module.fft.fft(z)),
        Workload("fft, 1024x4096 complex64, dim=0", "GFLOP/s", _fft_flops(rows, cols), ("zb",), lambda lib, z: lib.module.fft.fft(z, dim=0) if lib.name != "numpy" else np.fft.fft(z, axis=0)),
        Workload("fft2, 1024x4096 complex64", "GFLOP/s", _fft_flops(rows * cols), ("zb",), lambda lib, z: lib.module.fft.fft2(z)),
    ]
    return Group("fft", "FFT (ember.fft on rustfft/realfft vs numpy.fft and torch.fft)", make_inputs, workloads)


def _linalg_group():
    """float64 factorisations at 256 and 1024, and a batch of 64 small ones; times in microseconds
    (the flop counts of eigh/svd depend on the algorithm, so no GFLOP/s)."""
    sizes, batch, small = (256, 1024), 64, 64

    def make_inputs(rng):
        arrays = {}
        for n, shape in [(n, (n, n)) for n in sizes] + [(f"b{small}", (batch, small, small))]:
            x = rng.standard_normal(shape)
            k = shape[-1]
            arrays[f"a{n}"] = x + k**0.5 * np.eye(k)
            arrays[f"h{n}"] = (x + np.swapaxes(x, -1, -2)) / 2
            arrays[f"p{n}"] = x @ np.swapaxes(x, -1, -2) + k * np.eye(k)
            arrays[f"r{n}"] = rng.standard_normal((*shape[:-1], 8))
        return arrays

    def linalg(lib):
        return np.linalg if lib.name == "numpy" else lib.module.linalg

    ops = [
        ("solve", ("a", "r"), lambda lib, a, b: linalg(lib).solve(a, b)),
        ("inv", ("a",), lambda lib, a: linalg(lib).inv(a)),
        ("cholesky", ("p",), lambda lib, a: linalg(lib).cholesky(a)),
        ("eigh", ("h",), lambda lib, a: linalg(lib).eigh(a)),
        ("svd", ("a",), lambda lib, a: linalg(lib).svd(a, full_matrices=False)),
    ]
    workloads = []
    for label, suffix in [(f"{n}x{n}", n) for n in sizes] + [(f"{batch}x{small}x{small}", f"b{small}")]:
        for name, inputs, op in ops:
            workloads.append(Workload(f"{name} {label}", "us", 0.0, tuple(f"{x}{suffix}" for x in inputs), op))
    return Group("linalg", "Linear algebra, float64 (ember.linalg on faer vs numpy.linalg and torch.linalg)", make_inputs, workloads)


_HALF_CACHE = {}


def _half(lib, x, name):
    """`x` cast to the half dtype `name` once per input (the cast is not what is timed)."""
    key = (id(x), name)
    if key not in _HALF_CACHE:
        dtype = getattr(np if lib.name == "numpy" else lib.module, name)
        _HALF_CACHE[key] = (x, x.astype(dtype) if lib.name == "numpy" else x.to(dtype))
    return _HALF_CACHE[key][1]


def _cast(lib, x, name):
    return x.astype(getattr(np, name)) if lib.name == "numpy" else x.to(getattr(lib.module, name))


def _at_medium(lib, a, b):
    """A float32 matmul at float32 matmul precision "medium" (bfloat16 operands where supported)."""
    lib.module.set_float32_matmul_precision("medium")
    try:
        return a @ b
    finally:
        lib.module.set_float32_matmul_precision("highest")


def _half_group():
    n_elem, n_mm = 2048 * 2048, 1024

    def make_inputs(rng):
        shape = (2048, 2048)
        return {"a": rng.standard_normal(shape, dtype=np.float32), "b": rng.standard_normal(shape, dtype=np.float32),
                "ma": rng.standard_normal((n_mm, n_mm), dtype=np.float32), "mb": rng.standard_normal((n_mm, n_mm), dtype=np.float32)}

    two = 2.0 * n_elem
    workloads = []
    for name in ("bfloat16", "float16"):
        h = lambda lib, x, name=name: _half(lib, x, name)  # noqa: E731
        workloads += [
            Workload(f"{name} add, 4M", "GB/s", 3 * two, ("a", "b"), lambda lib, a, b, h=h: h(lib, a) + h(lib, b)),
            Workload(f"{name} exp, 4M", "GB/s", 2 * two, ("a",), lambda lib, a, h=h: lib.module.exp(h(lib, a))),
            Workload(f"{name} sum, 4M", "GB/s", two, ("a",), lambda lib, a, h=h: h(lib, a).sum()),
            Workload(f"float32 -> {name}, 4M", "GB/s", 3 * two, ("a",), lambda lib, a, name=name: _cast(lib, a, name)),
            Workload(f"{name} -> float32, 4M", "GB/s", 3 * two, ("a",), lambda lib, a, h=h: h(lib, a).astype(np.float32) if lib.name == "numpy" else h(lib, a).float()),
            Workload(f"{name} matmul {n_mm}", "GFLOP/s", 2.0 * n_mm**3, ("ma", "mb"), lambda lib, a, b, h=h: h(lib, a) @ h(lib, b)),
        ]
    workloads.append(Workload(f"float32 matmul {n_mm} at precision 'medium'", "GFLOP/s", 2.0 * n_mm**3, ("ma", "mb"), _at_medium))
    return Group("half", "bfloat16 / float16 (2048x2048 elementwise, 1024 matmul)", make_inputs, workloads)


GROUPS = [_matmul_group(), _elementwise_group(), _reduction_group(), _conv_group(), _channels_last_group(), _overhead_group(),
          _fft_group(), _linalg_group(), _half_group()]


# ---- timing (parent process, all libraries side by side) ----


def _runner(workload, lib, arrays):
    """A zero-argument call of the workload on this library's views of the inputs, already run once
    (so a missing op fails here, outside the timer)."""
    tensors = [lib.wrap(arrays[name]) for name in workload.inputs]
    call = lambda: workload.op(lib, *tensors)  # noqa: E731
    call()
    return call, tensors


def _time(workload, lib, arrays):
    """Seconds per call (median of the blocked runs)."""
    from ember.utils.benchmark import Timer

    call, tensors = _runner(workload, lib, arrays)
    env = {"op": call, "a": tensors[0], "b": tensors[-1]}
    timer = Timer(stmt=workload.stmt, globals=env, label=workload.name, description=lib.name, num_threads=THREADS)
    return timer.blocked_autorange(min_run_time=MIN_RUN_TIME).median


def _metric(workload, seconds):
    if workload.unit == "us":
        return seconds * 1e6
    return workload.amount / seconds / 1e9


def _why_missing(error):
    first_line = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {first_line}"[:120]


def time_group(group, libraries, notes):
    """{workload name: {library: seconds or None}}; failures are explained in `notes`."""
    arrays = group.make_inputs(np.random.default_rng(0))
    results = {}
    for workload in group.workloads:
        row = results.setdefault(workload.name, {})
        for lib in libraries:
            try:
                row[lib.name] = _time(workload, lib, arrays)
            except Exception as error:  # an op the library lacks shows as n/a
                row[lib.name] = None
                notes.setdefault((lib.name, _why_missing(error)), []).append(workload.name)
            print(f"  {group.name}: {workload.name} [{lib.name}] done", file=sys.stderr, flush=True)
    return results


# ---- peak memory (one child process per group and library) ----


def _peak_rss_mib():
    """This process's RSS high-water mark (VmHWM). getrusage's ru_maxrss would include the parent's
    peak, which Linux carries across fork and exec."""
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def child_memory(group_name, library_name):
    """Runs in the child: the group's ops, `MEMORY_REPEATS` times each; prints peak RSS as JSON."""
    group = next(g for g in GROUPS if g.name == group_name)
    lib = load_library(library_name)
    arrays = group.make_inputs(np.random.default_rng(0))
    baseline = _peak_rss_mib()
    for workload in group.workloads:
        try:
            call, _ = _runner(workload, lib, arrays)
            for _ in range(MEMORY_REPEATS - 1):
                call()
        except Exception:  # the parent already reports the op as n/a
            continue
    print(json.dumps({"peak": _peak_rss_mib(), "baseline": baseline}))


def measure_memory(group, library_name):
    """(peak RSS, RSS after imports and inputs) in MiB, from a fresh child process."""
    command = [sys.executable, os.path.abspath(__file__), "--child-memory", group.name, library_name]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return report["peak"], report["baseline"]


# ---- report ----


def _fmt(value, unit):
    if value is None:
        return "n/a"
    return f"{value:.2f}" if unit == "us" or value < 10 else f"{value:.1f}"


def _speed_ratio(ember_seconds, other_seconds):
    if ember_seconds is None or other_seconds is None:
        return "n/a"
    return f"{other_seconds / ember_seconds:.2f}x"


def group_table(group, results):
    lines = [
        f"### {group.title}",
        "",
        "| workload | unit | Ember | NumPy | PyTorch | Ember/PyTorch | Ember/NumPy |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for workload in group.workloads:
        row = results[workload.name]
        cells = [_fmt(None if row.get(n) is None else _metric(workload, row[n]), workload.unit) for n in LIBRARIES]
        ratios = [_speed_ratio(row.get("ember"), row.get(anchor)) for anchor in ("torch", "numpy")]
        lines.append(f"| {workload.name} | {workload.unit} | " + " | ".join(cells + ratios) + " |")
    return "\n".join(lines)


def memory_table(memory):
    lines = [
        "### Peak memory (RSS of a child process running one group's ops with one library)",
        "",
        "Each cell: peak RSS in MiB, and in parentheses how much the ops added over the RSS after",
        "imports and inputs.",
        "",
        "| group | Ember | NumPy | PyTorch |",
        "|---|---:|---:|---:|",
    ]
    for group_name, by_library in memory.items():
        cells = []
        for name in LIBRARIES:
            usage = by_library.get(name)
            cells.append("n/a" if usage is None else f"{usage[0]:.0f} (+{usage[0] - usage[1]:.0f})")
        lines.append(f"| {group_name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def notes_section(notes):
    if not notes:
        return ""
    lines = ["### n/a", ""]
    for (library, reason), workloads in notes.items():
        count = f"{len(workloads)} workload{'s' if len(workloads) > 1 else ''}"
        lines.append(f"- {TITLES[library]}: `{reason}` ({count}, e.g. {workloads[0]})")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", default=",".join(g.name for g in GROUPS), help="comma-separated group names")
    parser.add_argument("--child-memory", nargs=2, metavar=("GROUP", "LIBRARY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_memory:
        child_memory(*args.child_memory)
        return
    wanted = args.groups.split(",")
    unknown = set(wanted) - {g.name for g in GROUPS}
    if unknown:
        parser.error(f"--groups: unknown group(s) {sorted(unknown)}; choose from {[g.name for g in GROUPS]}")
    libraries = [lib for lib in map(load_library, LIBRARIES) if lib is not None]
    notes, memory, sections = {}, {}, []
    print(
        "Speed ratios are the other library's time divided by Ember's: above 1x, Ember is faster.\n"
        f"All libraries run on {THREADS} threads.\n"
    )
    for group in (g for g in GROUPS if g.name in wanted):
        sections.append(group_table(group, time_group(group, libraries, notes)))
        memory[group.name] = {lib.name: measure_memory(group, lib.name) for lib in libraries}
    print("\n\n".join(sections + [memory_table(memory), notes_section(notes)]).rstrip())


if __name__ == "__main__":
    main()
