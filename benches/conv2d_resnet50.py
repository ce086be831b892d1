"""conv2d on ResNet-50's layer shapes, float32: Ember's GFLOP/s, and PyTorch's side by side
where it is installed. Run: `.venv/bin/python benches/conv2d_resnet50.py [threads]`."""
import sys
import time

import numpy as np

import ember
import ember.nn.functional as F

# (name, C_in, C_out, kernel, stride, padding, input H=W)
SHAPES = [
    ("stem 7x7/2", 3, 64, 7, 2, 3, 224),
    ("1x1 64->64 @56", 64, 64, 1, 1, 0, 56),
    ("3x3 64->64 @56", 64, 64, 3, 1, 1, 56),
    ("1x1 64->256 @56", 64, 256, 1, 1, 0, 56),
    ("1x1 256->128 @56", 256, 128, 1, 1, 0, 56),
    ("3x3 128->128/2 @56", 128, 128, 3, 2, 1, 56),
    ("3x3 128->128 @28", 128, 128, 3, 1, 1, 28),
    ("1x1 512->128 @28", 512, 128, 1, 1, 0, 28),
    ("1x1 256->512/2 @56", 256, 512, 1, 2, 0, 56),
    ("3x3 256->256 @14", 256, 256, 3, 1, 1, 14),
    ("1x1 1024->256 @14", 1024, 256, 1, 1, 0, 14),
    ("3x3 512->512 @7", 512, 512, 3, 1, 1, 7),
    ("1x1 2048->512 @7", 2048, 512, 1, 1, 0, 7),
    ("1x1 512->2048 @7", 512, 2048, 1, 1, 0, 7),
]


def best_time(fn, min_time=0.3):
    fn()
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < min_time or len(times) < 3:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    ember.set_num_threads(threads)
    try:
        import torch

        torch.set_num_threads(threads)
    except ImportError:
        torch = None
    print(f"threads={threads}  (GFLOP/s; ratio = Ember / PyTorch speed)")
    rng = np.random.default_rng(0)
    for batch in (1, 8):
        for name, cin, cout, k, s, p, hw in SHAPES:
            x = rng.standard_normal((batch, cin, hw, hw)).astype(np.float32)
            w = rng.standard_normal((cout, cin, k, k)).astype(np.float32)
            ho = (hw + 2 * p - k) // s + 1
            flops = 2 * batch * cout * ho * ho * cin * k * k
            ex, ew = ember.from_numpy(x), ember.from_numpy(w)
            te = best_time(lambda: F.conv2d(ex, ew, stride=s, padding=p))
            line = f"N={batch} {name:<20} ember {flops / te / 1e9:7.1f}"
            if torch is not None:
                tx, tw = torch.from_numpy(x), torch.from_numpy(w)
                tt = best_time(lambda: torch.nn.functional.conv2d(tx, tw, stride=s, padding=p))
                line += f"   torch {flops / tt / 1e9:7.1f}   ratio {tt / te:5.2f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
