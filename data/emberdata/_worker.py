"""What runs inside a DataLoader worker process, and what it sends back.

Everything here is importable at module level so the worker can be started with any
multiprocessing method (spawn, forkserver, fork): the dataset and functions travel by pickle.
"""
import ctypes
import os
import queue
import random
import sys
import traceback
from dataclasses import dataclass
from multiprocessing.reduction import ForkingPickler

import numpy as np

import ember

from emberdata import _shm

# How often a waiting worker checks that the main process is still alive, and how often the main
# process checks for dead workers while it waits for data.
MP_STATUS_CHECK_INTERVAL = 1.0

_worker_info = None


@dataclass(frozen=True)
class WorkerInfo:
    """What `get_worker_info()` returns inside a worker: id, num_workers, seed and its dataset copy."""

    id: int
    num_workers: int
    seed: int
    dataset: object


def get_worker_info():
    """The WorkerInfo of this DataLoader worker process, or None in the main process."""
    return _worker_info


class _KeyErrorMessage(str):
    """KeyError shows repr() of its message; this keeps the traceback's newlines readable."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception caught in a worker, carried to the main process with its formatted traceback."""

    def __init__(self, where):
        exc_type, exc, _ = sys.exc_info()
        self.exc_type = exc_type
        self.exc_msg = "".join(traceback.format_exception(exc_type, exc, exc.__traceback__))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exc = self.exc_type(msg)
        except TypeError:
            exc = RuntimeError(msg)  # the type needs other arguments: keep the text at least
        raise exc


@dataclass(frozen=True)
class IterableDatasetStopIteration:
    """A worker's iterable dataset is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class Fetch:
    """A task: fetch the sample or batch at `index` (None is a valid index: iterable datasets)."""

    index: object


@dataclass(frozen=True)
class ResumeIteration:
    """Persistent workers: start a new epoch (with this shared seed for DataPipe shuffling)."""

    shared_seed: int


@dataclass(frozen=True)
class WorkerConfig:
    """Everything a worker needs besides its queues."""

    dataset_kind: str  # "map" or "iterable"
    dataset: object
    auto_collation: bool
    collate_fn: object
    drop_last: bool
    base_seed: int
    init_fn: object
    worker_id: int
    num_workers: int
    shared_seed: int
    world_size: int
    rank: int
    main_pid: int
    shm_prefix: object  # str: send big tensors through /dev/shm files named with it; None: pickle them


# glibc's mallopt parameters, and the largest values its dynamic thresholds reach by themselves.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD_MAX = 32 * 1024 * 1024


def keep_freed_memory():
    """Lets glibc keep what a batch freed for the next batch instead of returning it to the OS.

    A worker builds batch after batch from samples of similar sizes. glibc maps blocks above its
    mmap threshold afresh and trims freed heap above twice that threshold, so each batch would
    page-fault its samples' memory back in (about 4 us per 4 KiB page on a VM). The thresholds
    normally rise once a large block is freed, which the main process sees with each collated
    batch, but a worker collates into shared memory and never does: pin them at glibc's own
    maxima. Nothing to do where the C library is not glibc.
    """
    if _libc_name().startswith("glibc"):
        mallopt = ctypes.CDLL(None).mallopt
        mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX)
        mallopt(_M_TRIM_THRESHOLD, 2 * _MMAP_THRESHOLD_MAX)


def _libc_name():
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):  # not a GNU system
        return ""


def seed_process(seed):
    """Seeds Python's, NumPy's and ember's generators of this process."""
    random.seed(seed)
    ember.manual_seed(seed)
    np.random.seed(seed % 2**32)


def prepare_datapipe(dataset, shared_seed, num_shards, shard_id):
    """Shuffles with the seed every worker and rank shares, then keeps this process's shard."""
    from emberdata.datapipes._base import IterDataPipe
    from emberdata.datapipes.graph_settings import apply_sharding, apply_shuffle_seed

    if isinstance(dataset, IterDataPipe):
        apply_shuffle_seed(dataset, shared_seed)
        apply_sharding(dataset, num_shards, shard_id)
    return dataset


def make_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
    if kind == "map":
        return MapDatasetFetcher(dataset, auto_collation, collate_fn)
    return IterableDatasetFetcher(dataset, auto_collation, collate_fn, drop_last)


class MapDatasetFetcher:
    def __init__(self, dataset, auto_collation, collate_fn):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def fetch(self, index):
        if self.auto_collation:
            return self.collate_fn([self.dataset[i] for i in index])
        return self.collate_fn(self.dataset[index])


class IterableDatasetFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.iterator = iter(dataset)
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.iterator))
        batch = []
        for _ in index:
            try:
                batch.append(next(self.iterator))
            except StopIteration:
                self.ended = True
                break
        if not batch or (self.drop_last and len(batch) < len(index)):
            raise StopIteration
        return self.collate_fn(batch)


def _main_alive(pid):
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def _start_epoch(cfg, shared_seed):
    dataset = cfg.dataset
    if cfg.dataset_kind == "iterable":
        dataset = prepare_datapipe(dataset, shared_seed, cfg.world_size * cfg.num_workers, cfg.rank * cfg.num_workers + cfg.worker_id)
    return make_fetcher(cfg.dataset_kind, dataset, cfg.auto_collation, cfg.collate_fn, cfg.drop_last)


def _send(conn, data, worker_id):
    """Pickles and writes `data` from this thread; False when the main process stopped listening.

    A result that cannot be pickled is replaced by the error saying why, so the main process is
    told instead of waiting forever.
    """
    try:
        payload = ForkingPickler.dumps(data)
    except Exception:
        payload = ForkingPickler.dumps(ExceptionWrapper(f"in DataLoader worker process {worker_id} while pickling its result"))
    try:
        conn.send_bytes(payload)
    except OSError:  # EPIPE: the iterator shut down
        return False
    return True


def worker_loop(cfg, index_queue, result_conn, done_event):
    """Runs the `Fetch` tasks from `index_queue` until it receives None, answering each on `result_conn`."""
    global _worker_info
    # One kernel thread per worker, as PyTorch's workers: the workers already use the cores.
    ember.set_num_threads(1)
    seed = cfg.base_seed + cfg.worker_id
    seed_process(seed)
    _worker_info = WorkerInfo(cfg.worker_id, cfg.num_workers, seed, cfg.dataset)
    _shm.collate_into_shared_memory(cfg.shm_prefix)
    keep_freed_memory()
    init_error, fetcher = None, None
    try:
        if cfg.init_fn is not None:
            cfg.init_fn(cfg.worker_id)
        fetcher = _start_epoch(cfg, cfg.shared_seed)
    except Exception:
        init_error = ExceptionWrapper(f"in DataLoader worker process {cfg.worker_id}")
    iteration_end = False
    while True:
        try:
            request = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
        except queue.Empty:
            if not _main_alive(cfg.main_pid):
                break
            continue
        if request is None:
            break
        if isinstance(request, ResumeIteration):
            if not _send(result_conn, request, cfg.worker_id):
                break
            iteration_end = False
            try:
                fetcher = _start_epoch(cfg, request.shared_seed)
            except Exception:
                init_error = ExceptionWrapper(f"in DataLoader worker process {cfg.worker_id}")
            continue
        if done_event.is_set() or iteration_end:
            continue
        if init_error is not None:
            data, init_error = init_error, None
        else:
            data = _fetch(cfg, fetcher, request.index)
            iteration_end = isinstance(data, IterableDatasetStopIteration)
        if not _send(result_conn, data, cfg.worker_id):
            break
    _shm.leave()
    result_conn.close()


def _fetch(cfg, fetcher, index):
    """The batch for `index`, ready to send: big tensors moved to shared memory, errors wrapped."""
    try:
        data = fetcher.fetch(index)
    except StopIteration:
        if cfg.dataset_kind == "iterable":
            return IterableDatasetStopIteration(cfg.worker_id)
        return ExceptionWrapper(f"in DataLoader worker process {cfg.worker_id}")
    except Exception:
        return ExceptionWrapper(f"in DataLoader worker process {cfg.worker_id}")
    return _shm.export(data)
