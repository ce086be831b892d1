"""Reading services: how DataLoader2 runs a DataPipe graph (worker processes, ranks)."""
import datetime
import itertools
import os

import ember

from emberdata._dist import process_group
from emberdata.datapipes._base import IterDataPipe
from emberdata.datapipes.graph_settings import apply_sharding, apply_shuffle_seed

DEFAULT_TIMEOUT_S = 1800.0  # TorchData's default_timeout_in_s


class ReadingServiceInterface:
    """TorchData 0.4's interface: `initialize` adapts the graph once, `initialize_iteration` and
    `finalize_iteration` frame each epoch, `finalize` releases everything.

    DataLoader2 seeds the random DataPipes of the adapted graph with each epoch's seed before
    `initialize_iteration`; a service whose graph lives elsewhere (workers, ranks) takes the seed
    itself by implementing `initialize_epoch(seed)`, an Ember addition.
    """

    def initialize(self, datapipe):
        raise NotImplementedError(f"{type(self).__name__} must implement initialize")

    def finalize(self):
        pass

    def initialize_iteration(self):
        pass

    def finalize_iteration(self):
        pass


def _identity(x):
    return x


class _LoaderDataPipe(IterDataPipe):
    """Iterates the reading service's DataLoader (what `initialize` hands back to DataLoader2)."""

    def __init__(self, loader):
        self.loader = loader

    def __iter__(self):
        yield from self.loader


class MultiProcessingReadingService(ReadingServiceInterface):
    """Runs the graph in `num_workers` processes, each shuffling with the epoch's shared seed and
    keeping its shard; samples are delivered round-robin across workers, in a fixed order.
    Each worker prefetches up to `prefetch_factor` samples (the bound on buffered samples)."""

    def __init__(self, num_workers=0, pin_memory=False, timeout=0, worker_init_fn=None, prefetch_factor=2,
                 persistent_workers=False, multiprocessing_context=None):
        from emberdata.dataloader import DataLoader

        self.num_workers = num_workers
        self._loader_args = dict(
            batch_size=None, num_workers=num_workers, collate_fn=_identity, pin_memory=pin_memory, timeout=timeout,
            worker_init_fn=worker_init_fn, multiprocessing_context=multiprocessing_context,
            prefetch_factor=prefetch_factor, persistent_workers=persistent_workers,
        )
        DataLoader(_EmptyDataPipe(), **self._loader_args)  # validates the arguments now, not at the first epoch
        self._loader = None

    def initialize(self, datapipe):
        from emberdata.dataloader import DataLoader

        self._loader = DataLoader(datapipe, **self._loader_args)
        self._loader._sharding = (1, 0)
        return _LoaderDataPipe(self._loader)

    def initialize_epoch(self, seed):
        """Every worker shuffles with `seed` this epoch, then keeps its shard."""
        self._loader._shared_seed = seed

    def finalize(self):
        iterator = self._loader._iterator if self._loader is not None else None
        if iterator is not None:
            iterator._shutdown_workers()


class _EmptyDataPipe(IterDataPipe):
    def __iter__(self):
        return iter(())


def _env_rank():
    try:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    except KeyError as e:
        raise RuntimeError(f"DistributedReadingService: {e.args[0]} is not set; set RANK and WORLD_SIZE for every rank") from None
    if not 0 <= rank < world:
        raise ValueError(f"DistributedReadingService: RANK must be in [0, WORLD_SIZE={world}), got {rank}")
    return rank, world


def _as_timedelta(timeout):
    if isinstance(timeout, datetime.timedelta):
        seconds = timeout.total_seconds()
    elif isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"DistributedReadingService: timeout must be a number of seconds or a timedelta, "
                        f"got {type(timeout).__name__}")
    else:
        seconds = timeout
    if seconds < 0:
        raise ValueError(f"DistributedReadingService: timeout must be >= 0, got {timeout}")
    return datetime.timedelta(seconds=seconds)


class DistributedReadingService(ReadingServiceInterface):
    """Shards the graph across ranks in this process.

    Every epoch rank 0's shuffle seed is shared, so all ranks shuffle alike before sharding, and a
    fullsync step makes all ranks stop together when the first one runs out (so no rank waits
    forever in a collective). When the training script has initialised the process group
    (ember.distributed), ranks come from it and the seed and votes travel through its collectives
    (bounded by the group's timeout). Otherwise RANK and WORLD_SIZE come from the environment and
    they travel through ember.distributed's stores: a TCPStore that rank 0 serves at
    MASTER_ADDR:MASTER_PORT, or a FileStore in the folder EMBERDATA_STORE when that is set (see
    `emberdata.dataloader2.store`); `timeout` (seconds, or a timedelta) bounds every wait on it,
    after which ember.distributed.DistStoreError names the keys still missing.
    """

    _instances = itertools.count()

    def __init__(self, timeout=DEFAULT_TIMEOUT_S):
        self.timeout = timeout
        self._wait_timeout = _as_timedelta(timeout)
        self._dist = process_group()
        if self._dist is not None:
            self.rank, self.world_size = self._dist.get_rank(), self._dist.get_world_size()
            self._store = None
        else:
            # Imported here: the stores import ember.distributed (~0.1 s), which most users of emberdata never need.
            from emberdata.dataloader2.store import store_from_env

            self.rank, self.world_size = _env_rank()
            self._store = store_from_env(self.rank, self.world_size, self._wait_timeout)
        # Ranks build their services in the same order, so the nth one of each rank shares keys.
        self._prefix = f"drs{next(self._instances)}"
        self._epoch = 0
        self._datapipe = None

    def initialize(self, datapipe):
        self._datapipe = datapipe
        return _FullSync(datapipe, self)

    def initialize_epoch(self, seed):
        """Every rank shuffles with rank 0's `seed` this epoch, then keeps its shard."""
        self._epoch += 1
        key = f"{self._prefix}/seed/{self._epoch}"
        if self._dist is not None:
            shared = [seed]
            self._dist.broadcast_object_list(shared, src=0)
            seed = shared[0]
        elif self.rank == 0:
            self._store.set(key, str(seed))
        else:
            self._store.wait([key], self._wait_timeout)
            seed = int(self._store.get(key))
        apply_shuffle_seed(self._datapipe, seed)
        apply_sharding(self._datapipe, self.world_size, self.rank)

    def vote(self, step, has_data):
        """Publishes this rank's vote for `step`; True when every rank has a sample for it."""
        if self._dist is not None:
            vote = ember.tensor([1 if has_data else 0], dtype=ember.uint8)
            self._dist.all_reduce(vote, self._dist.ReduceOp.MIN)
            return bool(vote.item())
        # A rank out of data counts itself in `out` before it votes, so once every rank has voted,
        # `out` is set if any of them is out: a few requests per step, however many ranks.
        base = f"{self._prefix}/sync/{self._epoch}/{step}"
        if not has_data:
            self._store.add(f"{base}/out", 1)
        self._store.set(f"{base}/{self.rank}", b"1")
        self._store.wait([f"{base}/{r}" for r in range(self.world_size)], self._wait_timeout)
        if step >= 2:
            # Every rank has seen step-2's votes before voting on step-1, so they can go.
            self._store.delete_key(f"{self._prefix}/sync/{self._epoch}/{step - 2}/{self.rank}")
        return not self._store.check([f"{base}/out"])

    def finalize(self):
        if self._dist is not None:
            return
        # Rank 0 may serve the TCPStore: it must not exit before every rank has seen the last votes.
        done = f"{self._prefix}/finalized"
        self._store.set(f"{done}/{self.rank}", b"1")
        if self.rank == 0:
            self._store.wait([f"{done}/{r}" for r in range(1, self.world_size)], self._wait_timeout)


class _FullSync(IterDataPipe):
    """Yields a sample only when every rank has one for the same step (TorchData's `fullsync`)."""

    def __init__(self, datapipe, service):
        self.datapipe = datapipe
        self.service = service

    def __iter__(self):
        it = iter(self.datapipe)
        for step in itertools.count():
            try:
                sample, has_data = next(it), True
            except StopIteration:
                sample, has_data = None, False
            if not self.service.vote(step, has_data):
                return
            yield sample
