"""embervision against TorchVision on PyTorch, on the CPU with the same thread count: classifier
inference (float32 NCHW, channels-last, bfloat16 autocast), a ResNet-18 training step,
decode_jpeg of a 1080p JPEG, and a training-style transforms pipeline.

Each library runs in its own process, Ember in this interpreter, PyTorch in the one named by
EMBER_BENCH_TORCH_PYTHON (default: this one; without torch and torchvision its column says so).
The two take turns, one model or workload at a time, so neither competes with the other's
thread pool and a change in the load of the (shared) machine falls on both alike. Both run the same code
below, since embervision's API is TorchVision's: only the modules passed in differ. Models carry
their random initial weights (speed does not depend on the values); the JPEG is made here."""
import io as _io
import json
import os
import subprocess
import sys
import time

import numpy as np
from run import cpu_model  # benches/run.py, beside this script

THREADS = os.cpu_count() or 1
TORCH_PYTHON = os.environ.get("EMBER_BENCH_TORCH_PYTHON", sys.executable)
MODELS = ("resnet50", "mobilenet_v3_large", "efficientnet_b0", "vit_b_16", "swin_t")
# channels-last last: `.to(memory_format=...)` converts the model in place.
MODES = ("float32", "bf16 autocast", "channels-last")
# Batch 8 of every case would take a quarter of an hour on 2 shared cores: the transformers run it in
# float32 only, and bfloat16 (without native CPU support, several times slower than float32 in
# both libraries) runs it on the convolutional networks only.
BATCH8 = {"vit_b_16": ("float32",), "swin_t": ("float32",)}
TRAIN_BATCH = 8
PIPELINE_IMAGES = 32
RUNS, BUDGET_S = 3, 2.0


def best_seconds(fn, runs=RUNS, budget_s=BUDGET_S):
    """The best of up to `runs` timed calls after a warm-up, fewer once `budget_s` is spent
    (a slow case gets one), so that the whole benchmark stays within minutes."""
    fn()
    times, start = [], time.perf_counter()
    while not times or (len(times) < runs and time.perf_counter() - start < budget_s):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def inference_cases(name):
    for mode in MODES:
        for batch in (1, 8):
            if batch == 1 or mode in BATCH8.get(name, MODES):
                yield mode, batch


def inference(lib, models, name):
    """{"name|mode|batch": seconds per forward} for one model, in eval mode under no_grad."""
    lib.manual_seed(0)
    model = models.get_model(name).eval()
    result = {}
    for mode, batch in inference_cases(name):
        x = lib.randn(batch, 3, 224, 224)
        if mode == "channels-last":
            model = model.to(memory_format=lib.channels_last)
            x = x.contiguous(memory_format=lib.channels_last)

        def forward():
            with lib.no_grad(), lib.autocast("cpu", dtype=lib.bfloat16, enabled=mode == "bf16 autocast"):
                return model(x)

        result[f"{name}|{mode}|{batch}"] = best_seconds(forward)
    return result


def training_step(lib, models):
    """zero_grad, forward, cross-entropy, backward and an SGD + momentum step of ResNet-18."""
    lib.manual_seed(0)
    model = models.resnet18().train()
    x, y = lib.randn(TRAIN_BATCH, 3, 224, 224), lib.randint(0, 1000, (TRAIN_BATCH,))
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = lib.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    return best_seconds(step)


def jpeg_1080p():
    """A 1920x1080 photo-like JPEG (smooth gradients, edges and grain; quality 90, 4:2:0)."""
    from PIL import Image

    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:1080, 0:1920].astype(np.float32)
    base = np.stack([xx / 1920 * 255, yy / 1080 * 255, (np.sin(xx / 60) * np.cos(yy / 45) + 1) * 127], axis=-1)
    base[300:700, 600:1300] = (40, 160, 90)
    pixels = np.clip(base + rng.normal(0, 12, base.shape), 0, 255).astype(np.uint8)
    out = _io.BytesIO()
    Image.fromarray(pixels).save(out, format="JPEG", quality=90)
    return out.getvalue()


def decode(lib, vision_io, data):
    encoded = lib.from_numpy(np.frombuffer(data, dtype=np.uint8).copy())
    return 1 / best_seconds(lambda: vision_io.decode_jpeg(encoded), runs=20, budget_s=1.0)


def pipeline(lib, transforms, on_pil):
    """Images/s through RandomResizedCrop(224) + RandomHorizontalFlip + float + Normalize of
    640x480 images: uint8 tensors, or PIL images (with ToTensor in place of the dtype step)."""
    from PIL import Image

    lib.manual_seed(0)
    rng = np.random.default_rng(0)
    arrays = [rng.integers(0, 256, (480, 640, 3), dtype=np.uint8) for _ in range(PIPELINE_IMAGES)]
    to_float = transforms.ToTensor() if on_pil else transforms.ConvertImageDtype(lib.float32)
    steps = transforms.Compose([
        transforms.RandomResizedCrop(224, antialias=True),
        transforms.RandomHorizontalFlip(),
        to_float,
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    if on_pil:
        images = [Image.fromarray(a) for a in arrays]
    else:
        images = [lib.from_numpy(a).permute(2, 0, 1).contiguous() for a in arrays]

    def run():
        for image in images:
            steps(image)

    return PIPELINE_IMAGES / best_seconds(run)


def libraries(library):
    if library == "ember":
        import ember as lib
        import embervision.io as vision_io
        import embervision.models as models
        import embervision.transforms as transforms
    else:
        import torch as lib
        import torchvision.io as vision_io
        import torchvision.models as models
        import torchvision.transforms as transforms
    lib.set_num_threads(THREADS)
    return lib, models, vision_io, transforms


def measure(group, lib, models, vision_io, transforms):
    """One group's figures: seconds for inference and training, images/s for the rest."""
    if group in MODELS:
        return inference(lib, models, group)
    if group == "train":
        return {"train": training_step(lib, models)}
    if group == "decode":
        return {"decode": decode(lib, vision_io, jpeg_1080p())}
    return {"pipeline tensor": pipeline(lib, transforms, on_pil=False),
            "pipeline pil": pipeline(lib, transforms, on_pil=True)}


GROUPS = MODELS + ("train", "decode", "pipeline")


def worker(library):
    """Measures the groups named on stdin, one JSON line each on stdout, until stdin closes."""
    modules = libraries(library)
    for line in sys.stdin:
        print(json.dumps(measure(line.strip(), *modules)), flush=True)


class Worker:
    """One library's worker process (see `worker`)."""

    def __init__(self, python, library):
        self.library = library
        self.process = subprocess.Popen([python, os.path.abspath(__file__), "--worker", library],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def measure(self, group):
        print(f"{self.library}: {group}", file=sys.stderr, flush=True)
        self.process.stdin.write(group + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.library} worker died measuring {group}")
        return json.loads(line)

    def close(self):
        self.process.stdin.close()
        self.process.wait()


def start_worker(python, library):
    """The library's Worker, or None where the interpreter cannot import it."""
    probe = subprocess.run([python, "-c", f"import {'embervision' if library == 'ember' else 'torchvision'}"],
                           capture_output=True, text=True)
    return Worker(python, library) if probe.returncode == 0 else None


def run_all():
    """Both libraries' figures, measured one group at a time in turn."""
    workers = {"ember": start_worker(sys.executable, "ember"), "torch": start_worker(TORCH_PYTHON, "torch")}
    if workers["ember"] is None:
        raise RuntimeError("embervision does not import")
    results = {name: ({} if w else None) for name, w in workers.items()}
    for group in GROUPS:
        for name, w in workers.items():
            if w:
                results[name].update(w.measure(group))
    for w in workers.values():
        if w:
            w.close()
    return results["ember"], results["torch"]


def cells(ember_value, torch_value, higher_is_better, fmt):
    if torch_value is None:
        return f"{fmt(ember_value)} | torch missing | "
    ratio = ember_value / torch_value if higher_is_better else torch_value / ember_value
    return f"{fmt(ember_value)} | {fmt(torch_value)} | {ratio:.2f}x"


def main():
    ember_result, torch_result = run_all()
    theirs = (lambda key: torch_result[key]) if torch_result else (lambda key: None)
    ms = lambda s: f"{s * 1e3:.1f}"
    print(f"{cpu_model()}, {THREADS} threads in both libraries, each in its own process. Speed ratios are "
          "PyTorch's time divided by Ember's (images/s: Ember's over PyTorch's): above 1x, Ember is faster. "
          f"Each figure is the best of up to {RUNS} runs after a warm-up (fewer past {BUDGET_S:.0f} s); "
          "the libraries take turns, one model or workload at a time. Models have random initial weights; "
          "inference is in eval mode under no_grad.\n")
    print("### Inference, 224x224 (ms per batch)\n")
    print("| model | mode | batch | Ember | PyTorch | speed ratio |\n|---|---|---|---|---|---|")
    for name in MODELS:
        for mode, batch in inference_cases(name):
            key = f"{name}|{mode}|{batch}"
            print(f"| {name} | {mode} | {batch} | {cells(ember_result[key], theirs(key), False, ms)} |")
    print(f"\n### ResNet-18 training step (batch {TRAIN_BATCH}, 224x224, SGD + momentum; ms)\n")
    print("| workload | Ember | PyTorch | speed ratio |\n|---|---|---|---|")
    train = cells(ember_result["train"], theirs("train"), False, ms)
    print(f"| zero_grad, forward, cross-entropy, backward, step | {train} |")
    print("\n### Images per second\n")
    print("| workload | Ember | PyTorch | speed ratio |\n|---|---|---|---|")
    per_s = lambda v: f"{v:.0f}"
    rows = (("decode", "io.decode_jpeg, 1920x1080 JPEG (quality 90, 4:2:0)"),
            ("pipeline tensor", "RandomResizedCrop(224) + flip + ConvertImageDtype + Normalize, 640x480 uint8 tensor"),
            ("pipeline pil", "RandomResizedCrop(224) + flip + ToTensor + Normalize, 640x480 PIL image"))
    for key, label in rows:
        print(f"| {label} | {cells(ember_result[key], theirs(key), True, per_s)} |")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        worker(sys.argv[2])
    else:
        main()
