"""Per-layer timing of ResNet-50's convolutions at batch 8 (the shapes of `numerics.py`'s model):
every distinct conv2d shape in NCHW and channels-last, float32 and bfloat16, Ember and PyTorch in
one process, alternating, best of a few runs; the weighted total counts each shape as often as the
model runs it. Use it to find which layers a layout or dtype loses on.

    python benches/resnet_layers.py [--libs ember,torch] [--variants 00,10,01,11] [--reps 3] [--threads 2]

A variant is two digits: channels-last (1) or NCHW (0), then bfloat16 (1) or float32 (0)."""
import argparse
import importlib
import time

import numpy as np

# (in channels, out channels, kernel, stride, input size, times in the model)
SHAPES = [
    (3, 64, 7, 2, 224, 1), (64, 64, 1, 1, 56, 1), (64, 64, 3, 1, 56, 3), (64, 256, 1, 1, 56, 4),
    (256, 64, 1, 1, 56, 2), (256, 128, 1, 1, 56, 1), (128, 128, 3, 2, 56, 1), (128, 512, 1, 1, 28, 4),
    (256, 512, 1, 2, 56, 1), (512, 128, 1, 1, 28, 3), (128, 128, 3, 1, 28, 3), (512, 256, 1, 1, 28, 1),
    (256, 256, 3, 2, 28, 1), (256, 1024, 1, 1, 14, 6), (512, 1024, 1, 2, 28, 1), (1024, 256, 1, 1, 14, 5),
    (256, 256, 3, 1, 14, 5), (1024, 512, 1, 1, 14, 1), (512, 512, 3, 2, 14, 1), (512, 2048, 1, 1, 7, 3),
    (1024, 2048, 1, 2, 14, 1), (2048, 512, 1, 1, 7, 2), (512, 512, 3, 1, 7, 2)]


def make_conv(lib, shape, channels_last, bf16):
    cin, cout, k, stride, size, _ = shape
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal((8, cin, size, size)).astype(np.float32))
    w = lib.from_numpy((rng.standard_normal((cout, cin, k, k)) * 0.05).astype(np.float32))
    if bf16:
        x, w = x.to(lib.bfloat16), w.to(lib.bfloat16)
    if channels_last:
        x, w = x.to(memory_format=lib.channels_last), w.to(memory_format=lib.channels_last)
    conv2d = lib.nn.functional.conv2d
    return lambda: conv2d(x, w, None, stride, k // 2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--libs", default="ember,torch")
    parser.add_argument("--variants", default="00,10,01,11")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    libs = {name: importlib.import_module(name) for name in args.libs.split(",")}
    for lib in libs.values():
        lib.set_num_threads(args.threads)
    columns = [(name, v[0] == "1", v[1] == "1") for name in libs for v in args.variants.split(",")]
    label = lambda name, cl, bf: f"{name[:5]} {'NHWC' if cl else 'NCHW'} {'bf16' if bf else 'f32'}"
    print("| conv (batch 8) | " + " | ".join(label(*c) for c in columns) + " |")
    print("|---|" + "---:|" * len(columns))
    totals = [0.0] * len(columns)
    for shape in SHAPES:
        fns = [make_conv(libs[name], shape, cl, bf) for name, cl, bf in columns]
        best = [float("inf")] * len(columns)
        for fn in fns:
            fn()
        for _ in range(args.reps):
            for i, fn in enumerate(fns):
                start = time.perf_counter()
                fn()
                best[i] = min(best[i], time.perf_counter() - start)
        cin, cout, k, stride, size, count = shape
        totals = [t + b * count * 1e3 for t, b in zip(totals, best)]
        print(f"| {cin}->{cout} {k}x{k}/{stride} @{size} (x{count}) | " + " | ".join(f"{b * 1e3:.2f}" for b in best) + " |")
    print("| weighted total (ms) | " + " | ".join(f"{t:.1f}" for t in totals) + " |")


if __name__ == "__main__":
    main()
