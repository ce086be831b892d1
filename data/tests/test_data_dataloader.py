import errno
import gc
import multiprocessing
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import ember
import emberdata
from emberdata import DataLoader, IterableDataset, RandomSampler, _shm, default_collate, default_convert
from emberdata.datapipes.iter import IterableWrapper

import emberdata_test_helpers as helpers
from emberdata_test_fixtures import no_leaked_workers  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("no_leaked_workers")


def flatten(batches):
    return [v for b in batches for v in b.tolist()]


@pytest.mark.parametrize("num_workers", [0, 1, 3])
def test_map_dataset_batches_in_order(num_workers):
    dl = DataLoader(helpers.SquaresDataset(10), batch_size=4, num_workers=num_workers)
    batches = list(dl)
    assert len(dl) == 3 and len(batches) == 3
    assert tuple(batches[0]["x"].shape) == (4, 3) and batches[0]["x"].dtype == ember.float32
    assert flatten(b["y"] for b in batches) == [i * i for i in range(10)]


@pytest.mark.parametrize("num_workers", [0, 3])
def test_shuffle_reproducible_and_different_each_epoch(num_workers):
    def run():
        ember.manual_seed(7)
        dl = DataLoader(helpers.SquaresDataset(20), batch_size=5, shuffle=True, num_workers=num_workers)
        return [flatten(b["y"] for b in dl) for _ in range(2)]

    first, second = run(), run()
    assert first == second
    assert first[0] != first[1] and sorted(first[0]) == sorted(i * i for i in range(20))


def test_no_batching_and_drop_last():
    assert [x for x in DataLoader([1, 2, 3], batch_size=None)] == [1, 2, 3]
    dl = DataLoader(list(range(10)), batch_size=4, drop_last=True)
    assert len(dl) == 2 and [b.tolist() for b in dl] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    arrays = list(DataLoader([np.arange(2)], batch_size=None))
    assert isinstance(arrays[0], ember.Tensor)


def test_bad_arguments():
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        DataLoader(list(range(3)), sampler=RandomSampler(range(3)), shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(list(range(3)), batch_sampler=[[0]], batch_size=2)
    with pytest.raises(ValueError, match="num_workers option should be a non-negative integer"):
        DataLoader(list(range(3)), num_workers=-1)
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified in multiprocessing"):
        DataLoader(list(range(3)), prefetch_factor=4)
    with pytest.raises(ValueError, match="persistent_workers"):
        DataLoader(list(range(3)), persistent_workers=True)
    with pytest.raises(ValueError, match="timeout option should be non-negative"):
        DataLoader(list(range(3)), timeout=-1)
    with pytest.raises(TypeError, match="timeout option should be a number of seconds, got str"):
        DataLoader(list(range(3)), timeout="5")
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(helpers.CountingIterable(3), shuffle=True)
    with pytest.raises(ValueError, match="mutually exclusive with drop_last"):
        DataLoader(list(range(3)), batch_size=None, drop_last=True)
    with pytest.warns(UserWarning, match="pin_memory"):
        DataLoader(list(range(3)), pin_memory=True)


def test_batch_sampler_and_custom_collate():
    dl = DataLoader(list(range(6)), batch_sampler=[[0, 5], [1]], collate_fn=list)
    assert list(dl) == [[0, 5], [1]]


@pytest.mark.parametrize("num_workers", [0, 1, 3])
def test_iterable_dataset_sharded_with_worker_info(num_workers):
    dl = DataLoader(helpers.CountingIterable(11), batch_size=2, num_workers=num_workers)
    assert sorted(flatten(dl)) == list(range(11))


def test_iterable_dataset_without_sharding_is_duplicated_per_worker():
    class Plain(IterableDataset):
        def __iter__(self):
            return iter(range(3))

    assert sorted(DataLoader(Plain(), batch_size=None, num_workers=0)) == [0, 1, 2]


@pytest.mark.parametrize("num_workers", [0, 1, 3])
def test_datapipe_each_sample_once_and_same_order_per_seed(num_workers):
    def run(seed):
        ember.manual_seed(seed)
        dl = DataLoader(helpers.shuffled_pipeline(40), batch_size=None, num_workers=num_workers)
        return [list(dl) for _ in range(2)]

    a = run(1)
    assert all(sorted(epoch) == [2 * i for i in range(40)] for epoch in a)
    assert a[0] != a[1]  # a new order each epoch
    assert run(1) == a  # reproducible under ember.manual_seed
    assert run(2) != a


def test_datapipe_shuffle_flag_turns_shuffling_off():
    dl = DataLoader(helpers.shuffled_pipeline(10), batch_size=None, shuffle=False)
    assert list(dl) == [2 * i for i in range(10)]


@pytest.mark.parametrize("num_workers", [0, 3])
def test_two_simulated_ranks_partition_the_epoch(monkeypatch, num_workers):
    epochs = {}
    for rank in (0, 1):
        monkeypatch.setenv("WORLD_SIZE", "2")
        monkeypatch.setenv("RANK", str(rank))
        ember.manual_seed(11)  # every rank seeds alike, so the shuffle before sharding matches
        dl = DataLoader(helpers.shuffled_pipeline(30), batch_size=None, num_workers=num_workers)
        epochs[rank] = [list(dl) for _ in range(2)]
    for epoch in range(2):
        r0, r1 = epochs[0][epoch], epochs[1][epoch]
        assert not set(r0) & set(r1) and sorted(r0 + r1) == [2 * i for i in range(30)]
    assert set(epochs[0][0]) != set(epochs[0][1])


@pytest.mark.parametrize("num_workers", [0, 3])
def test_worker_seeds_and_info(num_workers):
    ember.manual_seed(0)
    rows = list(DataLoader(helpers.WorkerInfoDataset(), batch_size=None, num_workers=max(num_workers, 1), collate_fn=tuple))
    ids = {r[0] for r in rows}
    assert ids == set(range(max(num_workers, 1)))
    base = {r[1] - r[0] for r in rows}
    assert len(base) == 1  # every worker's seed is base_seed + worker_id
    assert len({r[2] for r in rows}) == max(num_workers, 1)
    ember.manual_seed(0)
    again = list(DataLoader(helpers.WorkerInfoDataset(), batch_size=None, num_workers=max(num_workers, 1), collate_fn=tuple))
    assert [r[1] for r in again] == [r[1] for r in rows]
    assert [r[3:] for r in again] == [r[3:] for r in rows]  # numpy and ember draws seeded too


def test_get_worker_info_is_none_in_main_process():
    from emberdata import get_worker_info

    assert get_worker_info() is None


def test_worker_init_fn_runs_in_each_worker():
    dl = DataLoader(list(range(6)), batch_size=None, num_workers=3, worker_init_fn=helpers.set_env_marker,
                    collate_fn=helpers.read_env_marker)
    assert list(dl) == [0, 1, 2, 0, 1, 2]


@pytest.mark.parametrize("num_workers", [0, 1, 3])
def test_errors_carry_the_worker_traceback(num_workers):
    dl = DataLoader(helpers.FailingDataset(), batch_size=2, num_workers=num_workers)
    with pytest.raises(ValueError, match="bad sample 5") as info:
        list(dl)
    if num_workers:
        assert "Caught ValueError in DataLoader worker process" in str(info.value)
        assert "emberdata_test_helpers.py" in str(info.value)  # the worker's own traceback


def test_key_error_message_stays_readable():
    dl = DataLoader(IterableWrapper(range(10)).map(helpers.raise_on_seven), batch_size=None, num_workers=1)
    with pytest.raises(KeyError, match="Caught KeyError"):
        list(dl)


def test_lambdas_without_dill_fail_clearly_naming_them(monkeypatch):
    from emberdata.datapipes import _base

    monkeypatch.setattr(_base, "DILL_AVAILABLE", False)
    # Forked workers (the default) inherit everything; the other start methods pickle.
    dl = DataLoader(IterableWrapper(range(3)).map(lambda x: x), batch_size=None, num_workers=1, multiprocessing_context="forkserver")
    with pytest.raises(pickle.PicklingError, match=r"Mapper.fn: cannot pickle .*<lambda> \(.*test_data_dataloader.py:\d+\); install `dill`"):
        list(dl)
    dl = DataLoader(helpers.SquaresDataset(4), batch_size=2, num_workers=1, collate_fn=lambda batch: batch, multiprocessing_context="spawn")
    with pytest.raises(pickle.PicklingError, match="cannot send the dataset, collate_fn or worker_init_fn .* 'spawn'"):
        list(dl)


def test_forked_workers_take_lambdas_and_local_classes_without_pickling():
    class Local(emberdata.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return ember.full((2,), float(i))

    if multiprocessing.get_start_method() != "fork":
        pytest.skip("Python's default start method here is not fork")
    dl = DataLoader(Local(), batch_size=2, num_workers=2, collate_fn=lambda batch: ember.stack(batch).sum(1))
    assert [b.tolist() for b in dl] == [[0.0, 2.0], [4.0, 6.0]]


def test_lambdas_travel_to_workers_through_dill():
    pytest.importorskip("dill")
    offset = 10
    pipe = IterableWrapper(range(4)).sharding_filter().map(lambda x: x + offset)
    dl = DataLoader(pipe, batch_size=2, num_workers=2, collate_fn=lambda batch: sorted(batch))
    assert sorted(v for b in dl for v in b) == [10, 11, 12, 13]


def test_timeout_raises():
    dl = DataLoader(helpers.SlowDataset(), batch_size=None, num_workers=1, timeout=0.3)
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.3 seconds"):
        next(iter(dl))


def test_early_break_stops_workers():
    dl = DataLoader(helpers.PidDataset(), batch_size=2, num_workers=3)
    it = iter(dl)
    next(it)
    workers = list(it._workers)
    assert all(w.is_alive() for w in workers)
    del it
    gc.collect()
    assert not any(w.is_alive() for w in workers)


def test_exception_in_loop_body_leaves_no_workers():
    dl = DataLoader(helpers.PidDataset(), batch_size=2, num_workers=2)
    with pytest.raises(ZeroDivisionError):
        for _ in dl:
            1 / 0
    gc.collect()


def test_persistent_workers_reuse_processes():
    dl = DataLoader(helpers.PidDataset(), batch_size=10, num_workers=2, persistent_workers=True)
    first = set(flatten(dl))
    it = iter(dl)
    next(it)  # a partial epoch, then a fresh one on the same processes
    second = set(flatten(dl))
    assert first == second and len(first) == 2
    dl._iterator._shutdown_workers()


def test_persistent_workers_datapipe_new_order_each_epoch():
    ember.manual_seed(3)
    dl = DataLoader(helpers.shuffled_pipeline(30), batch_size=None, num_workers=2, persistent_workers=True)
    e0, e1 = list(dl), list(dl)
    assert sorted(e0) == sorted(e1) == [2 * i for i in range(30)] and e0 != e1
    dl._iterator._shutdown_workers()


def test_default_convert_without_batching():
    out = default_convert([np.zeros(2)])
    assert isinstance(out[0], ember.Tensor)


@pytest.mark.parametrize("num_workers", [0, 1])
def test_map_datapipe_with_random_sampler(num_workers):
    from emberdata.datapipes.map import SequenceWrapper

    ember.manual_seed(4)
    dl = DataLoader(SequenceWrapper(list(range(9))).map(helpers.double), batch_size=4, shuffle=True, num_workers=num_workers)
    values = flatten(dl)
    assert sorted(values) == [2 * i for i in range(9)] and values != sorted(values)


class BigArrays(helpers.BigDataset):
    def __getitem__(self, i):
        return {"big": super().__getitem__(i), "bf": ember.full((2,), float(i)).to(ember.bfloat16)}


@pytest.mark.parametrize("stop_early", [False, True])
def test_big_batches_cross_shared_memory_and_leave_no_files(stop_early):
    import glob

    dl = DataLoader(BigArrays(8), batch_size=2, num_workers=2)
    it = iter(dl)
    prefix = it._shm_prefix
    first = next(it)
    assert first["big"][1, 0, 0].item() == 1.0 and tuple(first["big"].shape) == (2, 64, 1024)
    assert first["bf"].dtype == ember.bfloat16
    rest = [] if stop_early else list(it)
    assert [b["big"][0, 0, 0].item() for b in rest] == ([] if stop_early else [2.0, 4.0, 6.0])
    del it
    gc.collect()
    assert not glob.glob(f"/dev/shm/{prefix}-*")


def _shm_files(prefix):
    import glob

    return glob.glob(f"/dev/shm/{prefix}-*")


def test_shared_memory_slots_are_reused_and_never_overwrite_a_kept_batch():
    dl = DataLoader(BigArrays(24), batch_size=2, num_workers=2, persistent_workers=True)
    kept = list(dl)  # every batch of epoch 1 stays alive while epoch 2 runs
    prefix = dl._iterator._shm_prefix
    for _ in range(3):
        assert [b["big"][0, 0, 0].item() for b in dl] == [float(i) for i in range(0, 24, 2)]
    assert [b["big"][1, 5, 7].item() for b in kept] == [float(i) for i in range(1, 24, 2)]
    del kept
    gc.collect()
    for _ in range(3):
        list(dl)
    # Per worker: the batches in flight, the one in our hands and one being built, plus a few
    # spares; the slots that held the kept epoch were retired: not one file per batch.
    in_use = dl.prefetch_factor + 2
    assert len(_shm_files(prefix)) <= 2 * (in_use + _shm.SPARE_SLOTS)
    dl._iterator._shutdown_workers()
    assert not _shm_files(prefix)


def test_slot_goes_back_to_the_worker_when_the_tensor_dies(tmp_path):
    _shm.collate_into_shared_memory(f"emberdata-test-{os.getpid()}")
    try:
        receiver = _shm.Receiver()
        batch = default_collate([np.ones((256, 64), np.float32), np.zeros((256, 64), np.float32)])
        shared = _shm.export({"x": batch})["x"]
        assert isinstance(shared, _shm.SharedTensor)
        del batch
        tensor = receiver.restore(shared)
        view = tensor[1]
        slot_state = receiver.mappings[shared.path]
        assert tensor[0, 0, 0].item() == 1.0 and slot_state[0] == _shm.BUSY
        del tensor
        gc.collect()
        assert slot_state[0] == _shm.BUSY  # a view still uses the memory
        del view
        gc.collect()
        assert slot_state[0] == _shm.FREE
        again = _shm.export(default_collate([np.ones((256, 64), np.float32)] * 2))
        assert again.path == shared.path  # the same file, reused
    finally:
        _shm.cleanup(f"emberdata-test-{os.getpid()}")
        _shm.collate_into_shared_memory(None)


def test_full_shared_memory_falls_back_to_the_pipe_with_a_warning(monkeypatch):
    def no_space(fd, offset, size):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", no_space)
    _shm.collate_into_shared_memory(f"emberdata-test-{os.getpid()}")
    try:
        with pytest.warns(RuntimeWarning, match=r"No space left on device.*--shm-size"):
            batch = default_collate([np.ones((256, 64), np.float32)] * 2)
        assert _shm.export(batch) is batch  # sent by pickle instead
        assert not _shm_files(f"emberdata-test-{os.getpid()}")
    finally:
        _shm.collate_into_shared_memory(None)


def test_unpicklable_result_is_reported_not_waited_for():
    dl = DataLoader(IterableWrapper(range(3)).map(helpers.make_generator), batch_size=None, num_workers=1)
    with pytest.raises(TypeError, match="while pickling its result"):
        list(dl)


def test_exit_with_live_workers_is_clean(tmp_path):
    script = tmp_path / "exit_with_workers.py"
    script.write_text(
        "import numpy as np\n"
        "import emberdata_test_helpers as helpers\n"
        "from emberdata import DataLoader\n"
        "if __name__ == '__main__':\n"
        "    dl = DataLoader(helpers.BigDataset(16), batch_size=2, num_workers=2, persistent_workers=True)\n"
        "    it = iter(dl)\n"
        "    next(it)\n"
        "    print(it._shm_prefix)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([helpers.HERE, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not _shm_files(done.stdout.strip())


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:  # a zombie has exited: only its parent has not reaped it
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # reaped between the two looks
        return False


def test_workers_of_a_killed_main_process_exit(tmp_path):
    import signal
    import time

    script = tmp_path / "killed_main.py"
    script.write_text(
        "import sys, time\n"
        "import emberdata_test_helpers as helpers\n"
        "from emberdata import DataLoader\n"
        "if __name__ == '__main__':\n"
        "    it = iter(DataLoader(helpers.BigDataset(64), batch_size=2, num_workers=2))\n"
        "    next(it)\n"
        "    print(*[w.pid for w in it._workers], it._shm_prefix, flush=True)\n"
        "    time.sleep(60)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([helpers.HERE, os.environ.get("PYTHONPATH", "")]))
    main = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env)
    *pids, prefix = main.stdout.readline().split()
    os.kill(main.pid, signal.SIGKILL)
    main.wait()
    deadline = time.monotonic() + 15
    while any(_alive(int(p)) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(int(p)) for p in pids), "workers outlived their main process"
    assert not _shm_files(prefix)  # the workers removed their shared-memory files on their way out


def test_spawn_start_method_works():
    dl = DataLoader(helpers.SquaresDataset(4), batch_size=2, num_workers=1, multiprocessing_context="spawn")
    assert flatten(b["y"] for b in dl) == [0, 1, 4, 9]


def test_a_worker_that_dies_is_reported():
    dl = DataLoader(helpers.DyingDataset(), batch_size=None, num_workers=1)
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"):
        list(dl)


def test_a_script_without_a_main_guard_runs_forked_workers(tmp_path):
    # As a PyTorch tutorial script: the dataset is defined in the script, nothing is guarded, and
    # the parent has run parallel kernels (so its thread pools are live) before the workers fork.
    script = tmp_path / "unguarded.py"
    script.write_text(
        "import ember\n"
        "from emberdata import DataLoader, Dataset\n"
        "\n"
        "class Blocks(Dataset):\n"
        "    def __len__(self):\n"
        "        return 8\n"
        "    def __getitem__(self, i):\n"
        "        m = ember.full((256, 256), float(i))\n"
        "        return (m @ m).sum() + ember.arange(1 << 20, dtype=ember.float32).sum() * 0\n"
        "\n"
        "warm = ember.ones(512, 512) @ ember.ones(512, 512) + ember.ones(1 << 21).sum()\n"
        "loader = DataLoader(Blocks(), batch_size=4, num_workers=2)\n"
        "print([round(v) for batch in loader for v in batch.tolist()])\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([helpers.HERE, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == str([256 * 256 * 256 * i * i for i in range(8)])
