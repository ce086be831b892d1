"""emberdata benchmark: DataLoader throughput and memory, S3 multi-part vs single GET.

    python benches/data.py            # everything; torch.utils.data side by side where torch imports

Each pipeline runs in a fresh subprocess so that its peak RSS (main process and, separately, the
largest worker) is its own; the parent never imports torch, whose pages a child would otherwise
count in its own peak. Workloads, timed over EPOCHS epochs after a warm-up (DataLoader defaults,
so workers start again each epoch, as they do for users):
  small  map-and-batch of 20,000 small samples (a 16-float array each), batch 64
  1mb    map-and-batch of 256 samples of 1 MB (float32), batch 8
with 0 workers, 2 workers, and 2 persistent workers (started once: the steady state), then a Shuffler/Forker pipeline over 1 MB samples that shows buffers
bounded by their parameters (torch.utils.data.datapipes, or torchdata, side by side), and S3
throughput on a loopback moto server.
"""
import json
import os
import resource
import socket
import subprocess
import sys
import time

import numpy as np

EPOCHS = 5
SMALL_N, SMALL_BATCH = 20_000, 64
BIG_N, BIG_BATCH, BIG_FLOATS = 256, 8, 256 * 1024  # 1 MB of float32 per sample


class SmallSamples:
    def __len__(self):
        return SMALL_N

    def __getitem__(self, i):
        return np.full(16, i, dtype=np.float32), i


class BigSamples:
    def __len__(self):
        return BIG_N

    def __getitem__(self, i):
        return np.full(BIG_FLOATS, i, dtype=np.float32)


def _peak_rss_mb():
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, children


def _loader(lib, workload, workers, persistent):
    dataset = SmallSamples() if workload == "small" else BigSamples()
    args = dict(batch_size=SMALL_BATCH if workload == "small" else BIG_BATCH, num_workers=workers, persistent_workers=persistent)
    if lib == "torch":
        import torch.utils.data as tud

        return tud.DataLoader(dataset, **args), len(dataset)
    import emberdata

    return emberdata.DataLoader(dataset, **args), len(dataset)


def _worker_peak_rss_mb(iterator):
    """The largest peak RSS among the iterator's worker processes (read before they exit)."""
    peaks = [0.0]
    for w in getattr(iterator, "_workers", []):
        try:
            with open(f"/proc/{w.pid}/status") as f:
                peaks += [int(line.split()[1]) / 1024 for line in f if line.startswith("VmHWM:")]
        except OSError:
            pass
    return max(peaks)


def run_one(lib, workload, workers, persistent):
    loader, n = _loader(lib, workload, workers, persistent)
    for _ in loader:  # warm-up: imports and the first start of the worker machinery
        break
    start = time.perf_counter()
    worker_rss = 0.0
    for epoch in range(EPOCHS):
        seen, iterator = 0, iter(loader)
        for i, batch in enumerate(iterator):
            seen += len(batch[1] if workload == "small" else batch)
            if epoch == 0 and i == len(loader) - 2:
                worker_rss = _worker_peak_rss_mb(iterator)
        assert seen == n
    elapsed = time.perf_counter() - start
    own, _ = _peak_rss_mb()
    return {"samples_per_s": EPOCHS * n / elapsed, "rss_main_mb": own, "rss_worker_mb": worker_rss}


def run_buffers(lib):
    """A shuffle buffer of 32 and a fork buffer of 16 over 1 MB samples: RSS follows the buffers."""
    if lib == "torch":
        try:
            from torchdata.datapipes.iter import IterableWrapper
        except ImportError:
            from torch.utils.data.datapipes.iter import IterableWrapper
    else:
        from emberdata.datapipes.iter import IterableWrapper
    source = IterableWrapper(range(512)).map(_one_mb)
    a, b = source.shuffle(buffer_size=32).fork(2, buffer_size=16)
    start = time.perf_counter()
    count = sum(1 for _ in a.zip(b))
    elapsed = time.perf_counter() - start
    own, _ = _peak_rss_mb()
    return {"samples_per_s": count / elapsed, "rss_main_mb": own, "rss_worker_mb": 0.0}


def _one_mb(i):
    return np.full(BIG_FLOATS, i, dtype=np.float32)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_s3():
    """MB/s reading one 64 MB object: parallel ranged parts of 8 MB vs one streamed GET."""
    import boto3

    from emberdata.datapipes.iter import IterableWrapper

    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.environ.update(AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}", AWS_ACCESS_KEY_ID="b", AWS_SECRET_ACCESS_KEY="b",
                      AWS_DEFAULT_REGION="us-east-1", AWS_EC2_METADATA_DISABLED="true")
    try:
        client = _wait_for_s3(boto3)
        size = 64 * 1024 * 1024
        client.create_bucket(Bucket="bench")
        client.put_object(Bucket="bench", Key="blob", Body=os.urandom(size))
        out = {}
        for name, multi in (("multi-part", True), ("single GET", False)):
            start = time.perf_counter()
            for _, stream in IterableWrapper(["s3://bench/blob"]).load_files_by_s3(multi_part_download=multi):
                assert len(stream.read()) == size
            out[name] = size / 2**20 / (time.perf_counter() - start)
        return out
    finally:
        server.terminate()
        server.wait()


def _wait_for_s3(boto3):
    client = boto3.client("s3")
    for _ in range(300):
        try:
            client.list_buckets()
            return client
        except Exception:
            time.sleep(0.1)
    raise RuntimeError("moto server did not start")


def _torch_version():
    """torch's version when it imports, else None; asked in a child, see the module docstring."""
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True)
    return probe.stdout.strip() if probe.returncode == 0 else None


def _in_subprocess(*args):
    out = subprocess.run([sys.executable, __file__, "--one", *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    torch_version = _torch_version()
    libs = ["emberdata"] + (["torch"] if torch_version else [])
    print(f"Python {sys.version.split()[0]}, NumPy {np.__version__}, {os.cpu_count()} cores, "
          f"torch {torch_version or 'not importable here: reporting emberdata alone (make bench installs torch)'}\n")
    print(f"{'workload':<39}{'library':<11}{'samples/s':>12}{'peak RSS main':>15}{'worker':>9}")
    for workload in ("small", "1mb"):
        for workers, persistent in ((0, False), (2, False), (2, True)):
            for lib in libs:
                r = _in_subprocess(lib, workload, str(workers), str(persistent))
                label = f"{workload} map+batch, {workers}{' persistent' if persistent else ''} workers"
                print(f"{label:<39}{lib:<11}{r['samples_per_s']:>12,.0f}{r['rss_main_mb']:>12.0f} MB{r['rss_worker_mb']:>6.0f} MB")
    for lib in libs:
        r = _in_subprocess(lib, "buffers", "0", "False")
        print(f"{'shuffle(32)+fork(16), 1 MB':<39}{lib:<11}{r['samples_per_s']:>12,.0f}{r['rss_main_mb']:>12.0f} MB")
    try:
        s3 = _in_subprocess("emberdata", "s3", "0", "False")
    except subprocess.CalledProcessError as e:
        print(f"\nS3: skipped ({e.stderr.strip().splitlines()[-1] if e.stderr else e})")
        return
    print(f"\nS3 on loopback moto, 64 MB object: multi-part {s3['multi-part']:.0f} MB/s, single GET {s3['single GET']:.0f} MB/s")


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--one":
        lib, workload, workers, persistent = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] == "True"
        if workload == "s3":
            result = run_s3()
        elif workload == "buffers":
            result = run_buffers(lib)
        else:
            result = run_one(lib, workload, workers, persistent)
        print(json.dumps(result))
    else:
        main()
