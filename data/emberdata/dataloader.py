"""DataLoader (PyTorch 1.12 semantics) over map-style datasets, iterable datasets and DataPipes.

Worker processes follow PyTorch's design (one index queue per worker, prefetching, exceptions
re-raised in the main process with the worker's traceback), except that each worker answers on a
pipe of its own, in order (see _MultiProcessingDataLoaderIter). They start with Python's default
method, as PyTorch's: 'fork' on Linux (ember's threads are remade in a forked child).
"""
import atexit
import collections
import itertools
import multiprocessing
import os
import pickle
import time
import warnings
import weakref

from emberdata import _shm, _worker
from emberdata._collate import default_collate, default_convert
from emberdata._dist import process_group
from emberdata._seed import draw_seed
from emberdata.dataset import IterableDataset
from emberdata.datapipes._base import IterDataPipe, MapDataPipe, picklable_function
from emberdata.datapipes.graph_settings import apply_shuffle_settings
from emberdata.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

get_worker_info = _worker.get_worker_info


class _InfiniteConstantSampler(Sampler):
    """For iterable datasets: an endless stream of None 'indices' (the worker decides what comes)."""

    def __iter__(self):
        while True:
            yield None


def _identity(x):
    return x


def _env_sharding():
    """(world_size, rank) of the process group when one is initialised, else from WORLD_SIZE/RANK,
    else a single process."""
    dist = process_group()
    if dist is not None:
        return dist.get_world_size(), dist.get_rank()
    world, rank = os.environ.get("WORLD_SIZE"), os.environ.get("RANK")
    if world is None or rank is None:
        return 1, 0
    world, rank = int(world), int(rank)
    if not 0 <= rank < world:
        raise ValueError(f"RANK must be in [0, WORLD_SIZE={world}), got RANK={rank}")
    return world, rank


def _start_context(requested):
    """The multiprocessing context workers start with: `multiprocessing_context` if given, else
    Python's default, as PyTorch's (``fork`` on Linux before Python 3.14), so scripts without an
    ``if __name__ == "__main__":`` guard and datasets defined in them work. Ember's threads are
    remade in a forked child, whatever ran in the parent before the fork."""
    if requested is None:
        ctx = multiprocessing.get_context()
    elif isinstance(requested, str):
        ctx = multiprocessing.get_context(requested)
    else:
        ctx = requested
    if ctx.get_start_method() == "forkserver":
        # The server imports emberdata (and so ember and NumPy) once; every worker forked from it
        # then starts in milliseconds instead of importing them again.
        ctx.set_forkserver_preload(["__main__", "emberdata"])
    return ctx


def _check_args(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, drop_last, timeout, prefetch_factor, persistent_workers):
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
        raise ValueError(f"num_workers option should be a non-negative integer, got num_workers={num_workers!r}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout option should be a number of seconds, got {type(timeout).__name__}")
    if timeout < 0:
        raise ValueError(f"timeout option should be non-negative, got timeout={timeout!r}")
    if num_workers == 0 and prefetch_factor != 2:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing. let num_workers > 0 to enable multiprocessing.")
    if not isinstance(prefetch_factor, int) or prefetch_factor <= 0:
        raise ValueError(f"prefetch_factor option should be a positive integer, got prefetch_factor={prefetch_factor!r}")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    if isinstance(dataset, IterableDataset) and not isinstance(dataset, IterDataPipe):
        if shuffle not in (None, False):
            raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle={shuffle}")
        if sampler is not None:
            raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got sampler={sampler}")
        if batch_sampler is not None:
            raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but got batch_sampler={batch_sampler}")
    if sampler is not None and shuffle:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None or drop_last):
        raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last")
    if batch_size is None and drop_last:
        raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")


def _is_iterable(dataset):
    return isinstance(dataset, (IterableDataset, IterDataPipe)) or (
        hasattr(dataset, "__iter__") and not hasattr(dataset, "__getitem__")
    )


class DataLoader:
    """Batches of samples from `dataset`, optionally loaded by `num_workers` processes.

    Randomness: the sampler, each epoch's DataPipe shuffle seed (shared by every worker and rank)
    and the workers' base seed all come from `generator`, or from ember's default generator, so
    `ember.manual_seed` reproduces a run; each epoch draws new ones. Worker `i` is seeded with
    `base_seed + i` (Python's `random`, NumPy and ember). DataPipes are sharded across
    `WORLD_SIZE * num_workers` shards (rank and world size from the process group, else RANK/WORLD_SIZE) after shuffling,
    so each sample is seen exactly once per epoch. `pin_memory` has nothing to pin on CPU and warns.
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=2, persistent_workers=False,
                 pin_memory_device=""):
        _check_args(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, drop_last, timeout, prefetch_factor, persistent_workers)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        self.persistent_workers = persistent_workers
        self.multiprocessing_context = multiprocessing_context
        if pin_memory:
            warnings.warn("pin_memory=True: ember has no accelerator to pin memory for; ignored", stacklevel=2)
        self.pin_memory = False
        self.pin_memory_device = pin_memory_device
        if isinstance(dataset, IterDataPipe):
            apply_shuffle_settings(dataset, shuffle=shuffle)
        self._dataset_kind = "iterable" if _is_iterable(dataset) else "map"
        if self._dataset_kind == "iterable":
            sampler = _InfiniteConstantSampler()
        elif sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._sharding = None  # (world_size, rank); None: from the environment
        self._shared_seed = None  # the next epoch's DataPipe seed; None: drawn from the generator
        self._iterator = None

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _sharding_info(self):
        return self._sharding if self._sharding is not None else _env_sharding()

    def _next_shared_seed(self):
        seed, self._shared_seed = self._shared_seed, None
        return seed if seed is not None else draw_seed(self.generator)

    def __iter__(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        if self.persistent_workers:
            if self._iterator is None:
                self._iterator = _MultiProcessingDataLoaderIter(self)
            else:
                self._iterator._reset(self)
            return self._iterator
        return _MultiProcessingDataLoaderIter(self)

    def __len__(self):
        if self._dataset_kind == "iterable":
            n = len(self.dataset)
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self._index_sampler)


class _BaseDataLoaderIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._collate_fn = loader.collate_fn
        self._world_size, self._rank = loader._sharding_info()
        self._base_seed = draw_seed(loader.generator)
        self._shared_seed = loader._next_shared_seed()
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._shared_seed = loader._next_shared_seed()

    def _next_index(self):
        return next(self._sampler_iter)

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        return data

    def __len__(self):
        return len(self._index_sampler)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        dataset = self._dataset
        if self._dataset_kind == "iterable":
            dataset = _worker.prepare_datapipe(dataset, self._shared_seed, self._world_size, self._rank)
        self._fetcher = _worker.make_fetcher(self._dataset_kind, dataset, self._auto_collation, self._collate_fn, self._drop_last)

    def _next_data(self):
        index = self._next_index()
        return self._fetcher.fetch(index)


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Workers fed through per-worker index queues; each answers on its own pipe, in order.

    Tasks go to the workers round-robin and each worker answers its own in order, so the next
    result in sampler order is always the next message on one known pipe: nothing to reorder.
    Workers write their results themselves (no feeder thread, which would wait for the GIL while
    the worker computes the next batch), and a worker's exit shows up at once as EOF on its pipe.
    """

    def __init__(self, loader):
        super().__init__(loader)
        self._num_workers = loader.num_workers
        self._prefetch_factor = loader.prefetch_factor
        self._timeout = loader.timeout
        self._persistent_workers = loader.persistent_workers
        ctx = _start_context(loader.multiprocessing_context)
        self._shutdown = False
        self._shm_prefix = _shm.new_prefix() if _shm.available() else None
        self._shm_receiver = _shm.Receiver()
        self._workers, self._index_queues, self._result_conns = [], [], []
        self._workers_done_event = ctx.Event()
        _LIVE_ITERATORS.add(self)
        try:
            for worker_id in range(self._num_workers):
                self._start_worker(ctx, loader, worker_id)
        except BaseException:
            self._shutdown_workers()
            raise
        self._begin_epoch()

    def _start_worker(self, ctx, loader, worker_id):
        index_queue = ctx.Queue()
        index_queue.cancel_join_thread()  # never block the main process on exit for unread indices
        reader, writer = ctx.Pipe(duplex=False)
        cfg = _worker.WorkerConfig(
            self._dataset_kind, self._dataset, self._auto_collation, picklable_function(self._collate_fn),
            self._drop_last, self._base_seed, picklable_function(loader.worker_init_fn), worker_id, self._num_workers,
            self._shared_seed, self._world_size, self._rank, os.getpid(), self._shm_prefix,
        )
        w = ctx.Process(target=_worker.worker_loop, args=(cfg, index_queue, writer, self._workers_done_event), daemon=True)
        self._index_queues.append(index_queue)
        self._result_conns.append(reader)
        try:
            w.start()
        except (pickle.PicklingError, AttributeError, TypeError) as e:
            raise pickle.PicklingError(
                f"DataLoader: cannot send the dataset, collate_fn or worker_init_fn to the worker processes: {e}. "
                f"Workers start with {ctx.get_start_method()!r}, so these must pickle: use module-level functions "
                "or functools.partial (lambdas and local functions pickle when `dill` is installed)"
            ) from e
        finally:
            writer.close()  # the worker now holds the only write end: its exit reads as EOF here
        self._workers.append(w)

    def _begin_epoch(self):
        self._pending = collections.deque()  # the worker of each task sent and not yet answered, in send order
        self._workers_status = [True] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _reset(self, loader):
        """Persistent workers: a new epoch on the same processes."""
        super()._reset(loader)
        for q in self._index_queues:
            q.put(_worker.ResumeIteration(self._shared_seed))
        # Each worker answers what it was already given, then acknowledges the resume; restoring
        # those leftovers frees their shared memory.
        for worker_id in range(self._num_workers):
            while not isinstance(data := self._recv(worker_id), _worker.ResumeIteration):
                self._shm_receiver.restore(data)
        self._begin_epoch()

    def _try_put_index(self):
        if len(self._pending) >= self._prefetch_factor * self._num_workers:
            return
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker_id = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_id]:
                break
        else:
            return  # every worker is done (iterable datasets)
        self._index_queues[worker_id].put(_worker.Fetch(index))
        self._pending.append(worker_id)

    def _recv(self, worker_id):
        """The next message from `worker_id`, checking that it lives and that `timeout` holds."""
        conn, worker = self._result_conns[worker_id], self._workers[worker_id]
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = _worker.MP_STATUS_CHECK_INTERVAL
            if deadline is not None:
                wait = min(wait, max(0.0, deadline - time.monotonic()))
            if conn.poll(wait):
                try:
                    return conn.recv()
                except EOFError:
                    self._worker_died(worker)
            if not worker.is_alive():  # its pipe may be held open by a process it started
                self._worker_died(worker)
            if deadline is not None and time.monotonic() >= deadline:
                self._shutdown_workers()
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")

    def _worker_died(self, worker):
        worker.join(timeout=_worker.MP_STATUS_CHECK_INTERVAL)  # for its exit code
        self._shutdown_workers()
        raise RuntimeError(f"DataLoader worker (pid(s) {worker.pid}) exited unexpectedly with exit code {worker.exitcode}")

    def _next_data(self):
        if self._shutdown:  # after an error or the end of the data: nothing more will come
            raise StopIteration
        while self._pending:
            worker_id = self._pending.popleft()
            if not self._workers_status[worker_id]:
                continue  # its iterable dataset ended: it answers no more tasks this epoch
            data = self._recv(worker_id)
            if isinstance(data, _worker.IterableDatasetStopIteration):
                self._workers_status[worker_id] = False
            self._try_put_index()
            if not self._workers_status[worker_id]:
                continue
            if isinstance(data, _worker.ExceptionWrapper):
                self._shutdown_workers()
                data.reraise()
            return self._shm_receiver.restore(data)
        if not self._persistent_workers:
            self._shutdown_workers()
        raise StopIteration

    def _shutdown_workers(self):
        """Stops every worker: a polite None first, termination if it doesn't exit in time."""
        if self._shutdown:
            return
        self._shutdown = True
        _LIVE_ITERATORS.discard(self)
        self._workers_done_event.set()
        for q in self._index_queues:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        for conn in self._result_conns:
            conn.close()  # a worker blocked writing a result gets EPIPE and exits
        for w in self._workers:
            w.join(timeout=_worker.MP_STATUS_CHECK_INTERVAL)
        for w in self._workers:
            if w.is_alive():
                w.terminate()
                w.join()
        for q in self._index_queues:
            q.close()
        if self._shm_prefix is not None:
            _shm.cleanup(self._shm_prefix)

    def __del__(self):
        # An early `break` or an exception drops the iterator: the workers must not outlive it.
        if not getattr(self, "_shutdown", True):
            self._shutdown_workers()


# Iterators whose workers run. At exit they are stopped while the interpreter is still whole:
# this hook runs before multiprocessing's own (atexit is last in, first out), which would kill
# the daemonic workers and leave their /dev/shm files behind.
_LIVE_ITERATORS = weakref.WeakSet()


@atexit.register
def _shutdown_live_iterators():
    for iterator in list(_LIVE_ITERATORS):
        iterator._shutdown_workers()
