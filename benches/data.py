"""emberdata benchmark: DataLoader throughput and memory, S3 multi-part vs single GET.

    python benches/data.py            # everything; torch.utils.data side by side where torch imports

Each pipeline runs in a fresh subprocess so that its peak RSS (main process and, separately, the
largest worker) is its own. Workloads:
  small  map-and-batch of 20,000 small samples (a 16-float array each), batch 64
  1mb    map-and-batch of 256 samples of 1 MB (float32), batch 8
both with 0 and 2 workers, then a Shuffler/Forker pipeline over 1 MB samples that shows buffers
bounded by their parameters, and S3 throughput on a loopback moto server.
"""
import json
import os
import resource
import socket
import subprocess
import sys
import time

import numpy as np

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


def _loader(lib, workload, workers):
    dataset = SmallSamples() if workload == "small" else BigSamples()
    batch = SMALL_BATCH if workload == "small" else BIG_BATCH
    if lib == "torch":
        import torch.utils.data as tud

        return tud.DataLoader(dataset, batch_size=batch, num_workers=workers), len(dataset)
    import emberdata

    return emberdata.DataLoader(dataset, batch_size=batch, num_workers=workers), len(dataset)


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


def run_one(lib, workload, workers):
    loader, n = _loader(lib, workload, workers)
    for _ in loader:  # warm-up epoch: worker start-up and imports are not what is measured
        break
    start = time.perf_counter()
    seen, worker_rss = 0, 0.0
    iterator = iter(loader)
    for i, batch in enumerate(iterator):
        seen += len(batch[1] if workload == "small" else batch)
        if i == len(loader) - 2:
            worker_rss = _worker_peak_rss_mb(iterator)
    elapsed = time.perf_counter() - start
    assert seen == n
    own, _ = _peak_rss_mb()
    return {"samples_per_s": n / elapsed, "rss_main_mb": own, "rss_worker_mb": worker_rss}


def run_buffers(lib):
    """A shuffle buffer of 32 and a fork buffer of 16 over 1 MB samples: RSS follows the buffers."""
    if lib == "torch":
        from torchdata.datapipes.iter import IterableWrapper
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


def _torch_available():
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def _in_subprocess(*args):
    out = subprocess.run([sys.executable, __file__, "--one", *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    libs = ["emberdata"] + (["torch"] if _torch_available() else [])
    if len(libs) == 1:
        print("torch is not importable here: reporting emberdata alone (make bench installs torch)\n")
    print(f"{'workload':<28}{'library':<11}{'samples/s':>12}{'peak RSS main':>15}{'worker':>9}")
    for workload in ("small", "1mb"):
        for workers in (0, 2):
            for lib in libs:
                r = _in_subprocess(lib, workload, str(workers))
                label = f"{workload} map+batch, {workers} workers"
                print(f"{label:<28}{lib:<11}{r['samples_per_s']:>12,.0f}{r['rss_main_mb']:>12.0f} MB{r['rss_worker_mb']:>6.0f} MB")
    for lib in libs:
        if lib == "torch":
            try:
                import torchdata  # noqa: F401
            except ImportError:
                continue
        r = _in_subprocess(lib, "buffers", "0")
        print(f"{'shuffle(32)+fork(16), 1 MB':<28}{lib:<11}{r['samples_per_s']:>12,.0f}{r['rss_main_mb']:>12.0f} MB")
    try:
        s3 = _in_subprocess("emberdata", "s3", "0")
    except subprocess.CalledProcessError as e:
        print(f"\nS3: skipped ({e.stderr.strip().splitlines()[-1] if e.stderr else e})")
        return
    print(f"\nS3 on loopback moto, 64 MB object: multi-part {s3['multi-part']:.0f} MB/s, single GET {s3['single GET']:.0f} MB/s")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--one":
        lib, workload, workers = sys.argv[2], sys.argv[3], int(sys.argv[4])
        if workload == "s3":
            result = run_s3()
        elif workload == "buffers":
            result = run_buffers(lib)
        else:
            result = run_one(lib, workload, workers)
        print(json.dumps(result))
    else:
        main()
