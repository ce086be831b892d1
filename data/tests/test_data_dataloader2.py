import ast
import multiprocessing
import os
import subprocess
import sys
from datetime import timedelta

import pytest

import ember
import ember.distributed as dist
import emberdata.dataloader2
from emberdata.dataloader2 import (
    DataLoader2,
    DistributedReadingService,
    FileStore,
    MultiProcessingReadingService,
    ReadingServiceInterface,
    TCPStore,
    graph,
)
from emberdata.dataloader2 import store as store_module
from emberdata.dataloader2.store import STORE_FILE
from emberdata.datapipes.graph_settings import apply_sharding
from emberdata.datapipes.iter import IterableWrapper
from emberdata.datapipes.map import SequenceWrapper

import emberdata_test_helpers as helpers
from emberdata_test_fixtures import no_leaked_workers  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("no_leaked_workers")
EVENS = [2 * i for i in range(40)]


def mp_service(n):
    return MultiProcessingReadingService(num_workers=n) if n else None


@pytest.mark.parametrize("num_workers", [0, 1, 3])
def test_each_sample_once_new_order_each_epoch_reproducible(num_workers):
    def run():
        ember.manual_seed(5)
        with DataLoader2(helpers.shuffled_pipeline(40), reading_service=mp_service(num_workers)) as dl:
            return [list(dl) for _ in range(3)]

    a = run()
    assert all(sorted(e) == EVENS for e in a)
    assert a[0] != a[1] != a[2]
    assert run() == a


def test_round_robin_in_order_delivery():
    # Without shuffling, 3 workers hold shards 0, 1, 2 and deliver one sample each in turn.
    pipe = IterableWrapper(range(9)).sharding_filter()
    with DataLoader2(pipe, reading_service=MultiProcessingReadingService(num_workers=3)) as dl:
        assert list(dl) == list(range(9))


@pytest.mark.parametrize("num_workers", [0, 3])
def test_resume_mid_epoch_exactly(num_workers):
    ember.manual_seed(9)
    dl = DataLoader2(helpers.shuffled_pipeline(40), reading_service=mp_service(num_workers))
    list(dl)  # epoch 1
    it = iter(dl)
    head = [next(it) for _ in range(13)]
    state = dl.state_dict()
    rest = list(it)
    following = list(dl)
    dl.shutdown()
    assert state["num_yielded"] == 13 and state["epoch"] == 2

    ember.manual_seed(12345)  # the resumed run must not depend on the generator's state
    resumed = DataLoader2(helpers.shuffled_pipeline(40), reading_service=mp_service(num_workers))
    resumed.load_state_dict(state)
    assert list(resumed) == rest
    assert list(resumed) == following  # and later epochs line up too
    resumed.shutdown()
    assert sorted(head + rest) == EVENS


class CountingService(ReadingServiceInterface):
    """A reading service written against TorchData 0.4's interface (no seed anywhere)."""

    def __init__(self):
        self.calls = []

    def initialize(self, datapipe):
        self.calls.append("initialize")
        return datapipe.map(helpers.double)

    def initialize_iteration(self):
        self.calls.append("initialize_iteration")

    def finalize_iteration(self):
        self.calls.append("finalize_iteration")

    def finalize(self):
        self.calls.append("finalize")


def test_a_torchdata_04_reading_service_runs_and_its_graph_is_seeded():
    ember.manual_seed(2)
    service = CountingService()
    with DataLoader2(IterableWrapper(range(10)).shuffle(), reading_service=service) as dl:
        epochs = [list(dl), list(dl)]
    assert sorted(epochs[0]) == sorted(epochs[1]) == [2 * i for i in range(10)] and epochs[0] != epochs[1]
    assert service.calls == ["initialize"] + ["initialize_iteration", "finalize_iteration"] * 2 + ["finalize"]


def test_load_state_dict_rejects_bad_state():
    dl = DataLoader2(IterableWrapper(range(3)))
    with pytest.raises(ValueError, match="expected a dict with keys"):
        dl.load_state_dict({"epoch": 1})
    with pytest.raises(ValueError, match="epoch >= 1"):
        dl.load_state_dict({"base_seed": 1, "epoch": 0, "num_yielded": 2})


def test_adapters_map_datapipes_and_shutdown():
    dl = DataLoader2(SequenceWrapper([1, 2, 3]), datapipe_adapter_fn=[lambda dp: dp.map(helpers.double)])
    assert list(dl) == [2, 4, 6]
    dl.shutdown()
    with pytest.raises(RuntimeError, match="shut down"):
        iter(dl)
    with pytest.raises(TypeError, match="IterDataPipe or MapDataPipe"):
        DataLoader2([1, 2])
    with pytest.raises(TypeError, match="ReadingServiceInterface"):
        DataLoader2(IterableWrapper([1]), reading_service=object())
    with pytest.raises(ValueError, match="num_workers"):
        MultiProcessingReadingService(num_workers=-1)


def test_worker_error_propagates_and_workers_stop():
    pipe = IterableWrapper(range(10)).sharding_filter().map(helpers.raise_on_seven)
    dl = DataLoader2(pipe, reading_service=MultiProcessingReadingService(num_workers=2))
    with pytest.raises(KeyError, match="seven"):
        list(dl)
    dl.shutdown()


def test_early_break_stops_the_service_workers():
    import gc

    dl = DataLoader2(helpers.shuffled_pipeline(40), reading_service=MultiProcessingReadingService(num_workers=2))
    it = iter(dl)
    next(it)
    assert len(multiprocessing.active_children()) >= 2
    del it
    gc.collect()
    assert not multiprocessing.active_children()
    dl.shutdown()


def test_datachunk_helpers():
    from emberdata.datapipes import DataChunk

    chunk = DataChunk([1, 2])
    assert chunk.as_str("  ") == "  [1, 2]" and list(chunk.raw_iterator()) == [1, 2]


def test_persistent_workers_service():
    service = MultiProcessingReadingService(num_workers=2, persistent_workers=True)
    with DataLoader2(helpers.shuffled_pipeline(20), reading_service=service) as dl:
        e0, e1 = list(dl), list(dl)
    assert sorted(e0) == sorted(e1) == [2 * i for i in range(20)] and e0 != e1


def test_graph_traverse_and_edit():
    src = IterableWrapper(range(4))
    mapped = src.map(helpers.double)
    g = graph.traverse(mapped)
    assert list(g) == [mapped] and list(g[mapped]) == [src]
    assert graph.find_dps(g, IterableWrapper) == [src]
    a, b = src.fork(2)
    zipped = a.zip(b)
    assert src in graph.list_dps(graph.traverse(zipped))
    replaced = IterableWrapper([7])
    graph.replace_dp(g, src, replaced)
    assert list(mapped) == [14]
    filtered = IterableWrapper(range(3)).filter(helpers.is_even)
    top = filtered.map(helpers.double)
    graph.remove_dp(graph.traverse(top), filtered)
    assert list(top) == [0, 2, 4]
    with pytest.raises(TypeError, match="traverse"):
        graph.traverse([1])


def test_stores_are_ember_distributeds():
    assert TCPStore is dist.TCPStore and FileStore is dist.FileStore
    with pytest.raises(AttributeError, match="has no attribute 'HashStore'"):
        emberdata.dataloader2.HashStore  # noqa: B018


def test_importing_emberdata_leaves_ember_distributed_alone():
    # The stores come from ember.distributed, which emberdata imports only when a service needs one.
    check = "import sys, emberdata.dataloader2; assert 'ember.distributed' not in sys.modules"
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def fresh_stores(monkeypatch):
    """No store cached by an earlier test; the ones this test makes go away after it."""
    monkeypatch.setattr(store_module, "_STORES", {})
    for name in ("EMBERDATA_STORE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)


def test_distributed_reading_service_needs_env(monkeypatch, tmp_path, fresh_stores):
    monkeypatch.delenv("RANK", raising=False)
    with pytest.raises(RuntimeError, match="RANK is not set"):
        DistributedReadingService()
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    with pytest.raises(RuntimeError, match="set MASTER_ADDR and MASTER_PORT .* or EMBERDATA_STORE"):
        DistributedReadingService()
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "http")
    with pytest.raises(ValueError, match="MASTER_PORT must be a port number, got 'http'"):
        DistributedReadingService()
    with pytest.raises(TypeError, match="timeout must be a number of seconds or a timedelta, got str"):
        DistributedReadingService(timeout="60")
    with pytest.raises(ValueError, match="timeout must be >= 0, got -1"):
        DistributedReadingService(timeout=-1)
    folder = tmp_path / "job"  # made when missing
    monkeypatch.setenv("EMBERDATA_STORE", f"file://{folder}")
    with DataLoader2(IterableWrapper(range(5)).sharding_filter(), reading_service=DistributedReadingService()) as dl:
        assert list(dl) == list(range(5))
    assert (folder / STORE_FILE).exists()  # this rank's FileStore lives as long as the process


@pytest.fixture
def tcp_master():
    """A master TCPStore on a free port of 127.0.0.1 that nobody else needs to join."""
    return TCPStore("127.0.0.1", 0, is_master=True, timeout=timedelta(seconds=5))


@pytest.mark.parametrize("store", ["file", "tcp"])
def test_distributed_reading_service_times_out_naming_the_seed_key(store, monkeypatch, tmp_path, fresh_stores,
                                                                   tcp_master):
    # Rank 0 never starts an epoch: rank 1 gives up on the seed key.
    if store == "file":
        monkeypatch.setenv("EMBERDATA_STORE", str(tmp_path))
    else:
        monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
        monkeypatch.setenv("MASTER_PORT", str(tcp_master.port))
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    service = DistributedReadingService(timeout=0.2)
    dl = DataLoader2(IterableWrapper(range(4)).sharding_filter(), reading_service=service)
    with pytest.raises(dist.DistStoreError, match=r"wait timeout after 200ms, keys: /drs\d+/seed/1$"):
        list(dl)
    dl.shutdown()  # rank 1 only records that it is done: nothing to wait for


def test_rank0_alone_times_out_waiting_for_its_peer(monkeypatch, fresh_stores):
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(helpers.free_port()))
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(dist.DistStoreError, match="waiting for clients. 1/2 clients joined"):
        DistributedReadingService(timeout=0.3)
    monkeypatch.setenv("RANK", "1")  # and a rank whose rank 0 never comes
    with pytest.raises(dist.DistNetworkError, match=r"timed out after 300ms while trying to connect to \(127.0.0.1"):
        DistributedReadingService(timeout=0.3)


_RANK_PROGRAM = """
import emberdata_test_helpers as helpers
from emberdata.dataloader2 import DataLoader2, DistributedReadingService
with DataLoader2(helpers.shuffled_pipeline(8), reading_service=DistributedReadingService(timeout=60)) as dl:
    print(sorted(dl))
"""


def test_file_store_is_removed_when_the_last_rank_ends(tmp_path):
    # Ranks as a launcher starts them (programs of their own, not multiprocessing children, whose
    # exit skips the store's finalizer): the one that ends last removes the file, not the folder.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([helpers.HERE, os.environ.get("PYTHONPATH", "")]),
               EMBERDATA_STORE=str(tmp_path), WORLD_SIZE="2")
    ranks = [subprocess.Popen([sys.executable, "-c", _RANK_PROGRAM], env=dict(env, RANK=str(r)), text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for r in range(2)]
    outputs = [rank.communicate(timeout=120) for rank in ranks]
    assert [rank.returncode for rank in ranks] == [0, 0], outputs
    shards = [ast.literal_eval(out) for out, _ in outputs]
    assert sorted(shards[0] + shards[1]) == EVENS[:8]
    assert tmp_path.exists() and not list(tmp_path.iterdir())


def _store_env(kind, tmp_path):
    if kind == "file":
        return {"EMBERDATA_STORE": str(tmp_path)}
    return {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(helpers.free_port())}


@pytest.mark.parametrize(("store", "n"), [("file", 41), ("tcp", 40), ("tcp", 41)])
def test_two_ranks_share_rank0_seed_and_stop_together(store, n, tmp_path, monkeypatch):
    monkeypatch.delenv("EMBERDATA_STORE", raising=False)  # the ranks inherit the environment
    ctx = multiprocessing.get_context("forkserver")
    out = ctx.Queue()
    env = _store_env(store, tmp_path)
    # n = 41: rank 0 holds 21 samples and rank 1 holds 20: fullsync stops both after 20.
    procs = [ctx.Process(target=helpers.run_rank, args=(r, 2, env, n, 2, out)) for r in range(2)]
    for p in procs:
        p.start()
    results = dict(helpers.collect(out, procs, 3))
    for p in procs:
        p.join(timeout=30)
    assert all(p.exitcode == 0 for p in procs)
    for epoch in range(2):
        r0, r1 = results[0][epoch], results[1][epoch]
        assert len(r0) == len(r1) == 20 and not set(r0) & set(r1)
        assert set(r0) | set(r1) <= {2 * i for i in range(n)}
        if n == 40:
            assert sorted(r0 + r1) == EVENS  # each sample exactly once across the ranks
    assert results[0][0] != results[0][1]
    # Rank 1 used rank 0's seeds: replaying rank 0's base seed locally as rank 1 gives the same epochs.
    single = []
    for rank in range(2):
        pipe = helpers.shuffled_pipeline(n)
        dl = DataLoader2(pipe)
        dl.load_state_dict({"base_seed": results["seed"], "epoch": 0, "num_yielded": 0})
        apply_sharding(pipe, 2, rank)
        single.append(list(dl)[:20])
    assert single == [results[0][0], results[1][0]]
