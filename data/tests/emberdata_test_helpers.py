"""Module-level datasets and functions for the tests: worker processes unpickle them by name, so
this module stays light (no pytest import: every worker would pay for it).

(No conftest.py: other packages' tests import theirs as the module `conftest`, and a second one
would shadow it in a shared pytest run.)
"""
import os
import socket
import time

import numpy as np

import ember
import emberdata
from emberdata.datapipes.iter import IterableWrapper

HERE = os.path.dirname(os.path.abspath(__file__))
# Worker processes start from a fresh interpreter (forkserver/spawn) and unpickle these helpers
# by module name: make this folder importable there too.
if HERE not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (HERE, os.environ.get("PYTHONPATH")) if p)


class SquaresDataset(emberdata.Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return {"x": np.full(3, i, dtype=np.float32), "y": i * i}

    def __len__(self):
        return self.n


class BigDataset(SquaresDataset):
    """Samples of 256 KiB: their batches cross from the workers through shared memory."""

    def __getitem__(self, i):
        return np.full((64, 1024), i, dtype=np.float32)


class FailingDataset(emberdata.Dataset):
    def __getitem__(self, i):
        if i == 5:
            raise ValueError(f"bad sample {i}")
        return i

    def __len__(self):
        return 10


class SlowDataset(emberdata.Dataset):
    def __getitem__(self, i):
        time.sleep(5)
        return i

    def __len__(self):
        return 4


class CountingIterable(emberdata.IterableDataset):
    """Shards itself with get_worker_info(), as PyTorch's docs show."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = emberdata.get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))


class WorkerInfoDataset(emberdata.Dataset):
    def __getitem__(self, i):
        info = emberdata.get_worker_info()
        return (info.id, info.seed, os.getpid(), np.random.randint(0, 2**31), int(ember.randint(0, 2**31, (1,)).item()))

    def __len__(self):
        return 6


class PidDataset(emberdata.Dataset):
    def __getitem__(self, i):
        return os.getpid()

    def __len__(self):
        return 100


def double(x):
    return 2 * x


def is_even(x):
    return x % 2 == 0


def make_generator(x):
    """A sample that cannot be pickled."""
    return (x for _ in range(1))


def raise_on_seven(x):
    if x == 7:
        raise KeyError("seven")
    return x


def set_env_marker(worker_id):
    os.environ["EMBERDATA_TEST_WORKER"] = str(worker_id)


def read_env_marker(_):
    return int(os.environ["EMBERDATA_TEST_WORKER"])


def free_port():
    """A TCP port of 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def collect(out_queue, procs, count, timeout=120):
    """`count` items from `out_queue`; fails at once (not after `timeout`) when a process dies."""
    import queue

    items, deadline = [], time.monotonic() + timeout
    while len(items) < count:
        try:
            items.append(out_queue.get(timeout=0.2))
        except queue.Empty:
            failed = [p for p in procs if p.exitcode not in (None, 0)]
            if failed or time.monotonic() > deadline:
                raise AssertionError(f"{len(items)} of {count} results; exit codes {[p.exitcode for p in procs]}") from None
    return items


def shuffled_pipeline(n=40, buffer_size=1000):
    return IterableWrapper(range(n)).shuffle(buffer_size=buffer_size).sharding_filter().map(double)


def run_rank(rank, world_size, store_env, n, epochs, out_queue):
    """One simulated rank of a DistributedReadingService job (its store named by `store_env`,
    e.g. EMBERDATA_STORE or MASTER_ADDR/MASTER_PORT); sends its epochs back."""
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world_size), **store_env)
    from emberdata.dataloader2 import DataLoader2, DistributedReadingService

    ember.manual_seed(100 + rank)  # different on each rank: the shared seed must come from rank 0
    dl = DataLoader2(shuffled_pipeline(n), reading_service=DistributedReadingService(timeout=60))
    if rank == 0:
        out_queue.put(("seed", dl.state_dict()["base_seed"]))
    result = [list(dl) for _ in range(epochs)]
    dl.shutdown()
    out_queue.put((rank, result))


class DyingDataset(emberdata.Dataset):
    """The worker process dies outright (no Python exception to carry back)."""

    def __getitem__(self, i):
        os._exit(3)

    def __len__(self):
        return 4
