"""What runs inside a DataLoader worker process, and what it sends back.

Everything here is importable at module level so the worker can be started with any
multiprocessing method (spawn, forkserver, fork): the dataset and functions travel by pickle.
"""
import os
import queue
import random
import sys
import traceback
from dataclasses import dataclass

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


def worker_loop(cfg, index_queue, data_queue, done_event):
    """Fetches `(send_idx, index)` requests from `index_queue` until it receives None."""
    global _worker_info
    seed = cfg.base_seed + cfg.worker_id
    seed_process(seed)
    _worker_info = WorkerInfo(cfg.worker_id, cfg.num_workers, seed, cfg.dataset)
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
            data_queue.put((request, None))
            iteration_end = False
            try:
                fetcher = _start_epoch(cfg, request.shared_seed)
            except Exception:
                init_error = ExceptionWrapper(f"in DataLoader worker process {cfg.worker_id}")
            continue
        if done_event.is_set() or iteration_end:
            continue
        send_idx, index = request
        if init_error is not None:
            data, init_error = init_error, None
        else:
            try:
                data = fetcher.fetch(index)
            except StopIteration:
                if cfg.dataset_kind != "iterable":
                    data = ExceptionWrapper(f"in DataLoader worker process {cfg.worker_id}")
                else:
                    data = IterableDatasetStopIteration(cfg.worker_id)
                    iteration_end = True
            except Exception:
                data = ExceptionWrapper(f"in DataLoader worker process {cfg.worker_id}")
            else:
                if cfg.shm_prefix is not None and not isinstance(data, IterableDatasetStopIteration):
                    data = _shm.export(data, cfg.shm_prefix)
        data_queue.put((send_idx, data))
    data_queue.cancel_join_thread()
    data_queue.close()
