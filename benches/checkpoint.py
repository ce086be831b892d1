"""Checkpoints: ember.save / ember.load against torch.save / torch.load on the same state dicts,
and ember.safetensors. Times are the best of 3 in one process; the memory column is the peak RSS a
child process adds while loading (over its RSS after the imports), i.e. the copies a load makes.

    python benches/checkpoint.py
"""
import os
import subprocess
import sys
import tempfile
import time

import ember

CASES = {
    "64 x 4 MiB float32 (256 MiB)": [(1 << 20,)] * 64,
    "2000 x 1 KiB float32 (small tensors)": [(256,)] * 2000,
}


def best(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def state_dict(lib, shapes):
    return {f"layer{i}.weight": lib.ones(*s) for i, s in enumerate(shapes)}


# Peak RSS from VmHWM: ru_maxrss of a child starts at its parent's peak (Linux keeps it across
# fork and exec), which would hide the load.
CHILD = """
import sys
def peak_kib():
    return int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1])
lib = __import__(sys.argv[1]); path = sys.argv[2]; kw = eval(sys.argv[3])
load = lib.safetensors.load_file if path.endswith('.safetensors') else lib.load
before = peak_kib()
sd = load(path, **kw)
print((peak_kib() - before) // 1024)
"""


def load_rss_mib(lib, path, kwargs="{}"):
    out = subprocess.run([sys.executable, "-c", CHILD, lib, path, kwargs], capture_output=True, text=True, check=True)
    return int(out.stdout)


def row(workload, op, ember_s, torch_s, ember_mib="", torch_mib=""):
    ratio = f"{torch_s / ember_s:.2f}x" if torch_s else "n/a"
    torch_txt = f"{torch_s * 1e3:.1f}" if torch_s else "n/a"
    return f"| {workload} | {op} | {ember_s * 1e3:.1f} | {torch_txt} | {ratio} | {ember_mib} | {torch_mib} |"


def main():
    try:
        import torch
    except ImportError:
        torch = None
    print("| workload | op | ember ms | torch ms | torch/ember | ember load +MiB | torch load +MiB |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        for workload, shapes in CASES.items():
            e_path, t_path, st_path = (os.path.join(d, n) for n in ("e.pt", "t.pt", "e.safetensors"))
            e_sd = state_dict(ember, shapes)
            e_save = best(lambda: ember.save(e_sd, e_path))
            e_load = best(lambda: ember.load(e_path))
            e_mmap = best(lambda: ember.load(e_path, mmap=True))
            t_save = t_load = t_mmap = 0.0
            t_mib = t_mmap_mib = ""
            if torch is not None:
                t_sd = state_dict(torch, shapes)
                t_save = best(lambda: torch.save(t_sd, t_path))
                t_load = best(lambda: torch.load(t_path))
                t_mmap = best(lambda: torch.load(t_path, mmap=True))
                t_mib, t_mmap_mib = load_rss_mib("torch", t_path), load_rss_mib("torch", t_path, "{'mmap': True}")
            print(row(workload, "save", e_save, t_save))
            print(row(workload, "load", e_load, t_load, load_rss_mib("ember", e_path), t_mib))
            print(row(workload, "load mmap=True", e_mmap, t_mmap, load_rss_mib("ember", e_path, "{'mmap': True}"), t_mmap_mib))
            st_save = best(lambda: ember.safetensors.save_file(e_sd, st_path))
            st_load = best(lambda: ember.safetensors.load_file(st_path))
            print(row(workload, "safetensors save_file", st_save, 0.0))
            print(row(workload, "safetensors load_file", st_load, 0.0, load_rss_mib("ember", st_path)))


if __name__ == "__main__":
    main()
