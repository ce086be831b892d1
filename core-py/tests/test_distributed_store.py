"""ember.distributed's stores, rendezvous and ReduceOp instances in this process (no MPI), and
init_process_group's tcp://, file:// and store= rendezvous in a 2-process MPI job
(distributed_init_checks.py)."""
import datetime
import json
import os
import pathlib
import socket
import subprocess
import sys
import threading
import time

import pytest

import ember
import ember.distributed as dist

HERE = pathlib.Path(__file__).resolve().parent
SHORT = datetime.timedelta(milliseconds=200)


def free_ports(n):
    """`n` distinct ports free right now (held open together, so none comes back twice)."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def free_port():
    return free_ports(1)[0]


@pytest.fixture
def tcp_pair():
    master = dist.TCPStore("127.0.0.1", 0, is_master=True, timeout=datetime.timedelta(seconds=5))
    client = dist.TCPStore("127.0.0.1", master.port, timeout=datetime.timedelta(seconds=5))
    return master, client


@pytest.fixture
def file_pair(tmp_path):
    path = str(tmp_path / "store")
    return dist.FileStore(path, 2), dist.FileStore(path, 2)


@pytest.fixture(params=["hash", "tcp", "file", "prefix"])
def pair(request, tmp_path):
    """Two handles on one store: what one sets, the other sees."""
    if request.param == "hash":
        store = dist.HashStore()
        return store, store
    if request.param == "tcp":
        return request.getfixturevalue("tcp_pair")
    if request.param == "file":
        return request.getfixturevalue("file_pair")
    base = dist.HashStore()
    return dist.PrefixStore("job", base), dist.PrefixStore("job", base)


def test_every_store_has_torchs_semantics(pair):
    a, b = pair
    a.set("k", "v")
    assert b.get("k") == b"v"
    b.set("k", b"\x00\xff")  # values are bytes, set overwrites
    assert a.get("k") == b"\x00\xff"
    assert a.add("n", 3) == 3 and b.add("n", -5) == -2 and a.get("n") == b"-2"
    with pytest.raises(ValueError, match="not an integer"):
        a.add("k", 1)
    # compare_set: swaps on a match and answers the value afterwards; an unset key is set only
    # when the expected value is empty, else it stays unset and the expected value comes back.
    assert a.compare_set("k", b"\x00\xff", "w") == b"w"
    assert b.compare_set("k", "nope", "x") == b"w"
    assert a.compare_set("fresh", "", "1") == b"1"
    assert a.compare_set("absent", "e", "d") == b"e" and not b.check(["absent"])
    b.append("log", "a")
    a.append("log", "b")
    assert b.get("log") == b"ab"
    assert a.check(["k", "n"]) and not a.check(["k", "missing"])
    a.multi_set(["m1", "m2"], ["1", b"2"])
    assert b.multi_get(["m1", "m2"]) == [b"1", b"2"]
    assert a.delete_key("k") and not b.delete_key("k") and not a.check(["k"])


@pytest.fixture(params=["hash", "tcp", "prefix_tcp"])
def queues(request):
    """Two handles on a store with queues: HashStore, TCPStore (master and client), PrefixStore."""
    if request.param == "hash":
        store = dist.HashStore()
        return store, store
    master, client = request.getfixturevalue("tcp_pair")
    if request.param == "tcp":
        return master, client
    return dist.PrefixStore("job", master), dist.PrefixStore("job", client)


def test_queues_are_fifo_and_apart_from_keys(queues):
    a, b = queues
    assert not a.check(["q"]) and a.queue_len("q") == 0
    a.queue_push("q", "1")
    b.queue_push("q", b"\x00")
    assert a.check(["q"]) and b.queue_len("q") == 2  # check and wait see a queue that holds values
    b.wait(["q"])
    assert a.num_keys() == b.num_keys() and "q" not in a.list_keys()  # a queue is not a key
    assert b.queue_pop("q") == b"1" and a.queue_pop("q", block=False) == b"\x00"
    assert not a.check(["q"]) and a.queue_len("q") == 0
    with pytest.raises(dist.QueueEmptyError, match="queue is empty"):
        b.queue_pop("q", block=False)
    a.set("q", "a key")  # the same name as a key leaves the queue empty
    with pytest.raises(dist.QueueEmptyError):
        a.queue_pop("q", block=False)
    assert isinstance(dist.QueueEmptyError("x"), dist.DistStoreError)


def test_queue_pop_blocks_until_a_push_or_the_timeout(queues):
    a, b = queues
    threading.Timer(0.1, lambda: b.queue_push("late", "v")).start()
    assert a.queue_pop("late") == b"v"
    a.set_timeout(SHORT)
    with pytest.raises(dist.DistStoreError, match="wait timeout after 200ms, keys: .*never"):
        a.queue_pop("never")
    with pytest.raises(TypeError, match="block must be a bool"):
        a.queue_pop("never", 0)


def test_each_value_goes_to_one_popper(tcp_pair):
    master, client = tcp_pair
    popped = []
    # A store's requests share its one connection, so a thread that blocks uses a clone (as torch).
    poppers = [threading.Thread(target=lambda s=s.clone(): popped.append(s.queue_pop("jobs")))
               for s in (master, client)]
    for thread in poppers:
        thread.start()
    master.queue_push("jobs", "first")
    client.queue_push("jobs", "second")
    for thread in poppers:
        thread.join(timeout=10)
    assert sorted(popped) == [b"first", b"second"] and master.queue_len("jobs") == 0


def test_clone_list_keys_and_barrier(pair):
    a, b = pair
    clone = a.clone()
    assert isinstance(clone, dist.Store)
    clone.set("k", "v")
    assert b.get("k") == b"v" and clone.timeout == a.timeout
    threads = [threading.Thread(target=store.barrier, args=("gate", 3)) for store in (a, b)]
    for thread in threads:
        thread.start()
    clone.barrier("gate", 3, datetime.timedelta(seconds=5))  # the third arrival releases all
    for thread in threads:
        thread.join(timeout=10)
    assert not any(thread.is_alive() for thread in threads)
    with pytest.raises(dist.DistStoreError, match="wait timeout after 50ms, keys: .*alone/last_member"):
        a.barrier("alone", 2, datetime.timedelta(milliseconds=50))
    if not isinstance(a, dist.FileStore):  # as torch's, FileStore has no list_keys (tested below)
        assert sorted(a.list_keys()) == ["alone/num_members", "gate/last_member", "gate/num_members", "k"]


def test_which_stores_have_what_as_torch(tmp_path):
    files = dist.FileStore(str(tmp_path / "store"))
    for store in (files, dist.PrefixStore("p", files)):
        with pytest.raises(NotImplementedError, match="queue support is not implemented"):
            store.queue_push("q", "v")
        with pytest.raises(NotImplementedError, match="queue support is not implemented"):
            store.queue_pop("q")
        with pytest.raises(NotImplementedError, match="listKeys support is not implemented"):
            store.list_keys()
        assert not store.has_extended_api()
    assert dist.HashStore().has_extended_api() and dist.PrefixStore("p", dist.HashStore()).has_extended_api()
    nested = dist.PrefixStore("a", dist.PrefixStore("b", files))
    assert nested._underlying_non_prefix_store is files

    class Bare(dist.Store):
        """A store without extended operations, as a torch user's Python store."""
    assert not Bare().has_extended_api()
    with pytest.raises(NotImplementedError, match="Bare must implement clone"):
        Bare().clone()


def test_tcp_store_use_libuv_picks_torchs_server_behaviour(monkeypatch):
    master = dist.TCPStore("127.0.0.1", 0, is_master=True, timeout=datetime.timedelta(seconds=5))
    assert master.libuvBackend and master.has_extended_api()
    legacy = dist.TCPStore("127.0.0.1", master.port, timeout=datetime.timedelta(seconds=5), use_libuv=False)
    assert not legacy.libuvBackend and not legacy.clone().libuvBackend
    for operation, args in (("queue_push", ("q", "v")), ("queue_pop", ("q",)), ("queue_len", ("q",))):
        with pytest.raises(NotImplementedError, match="queues not implemented on legacy TCPStore backend"):
            getattr(legacy, operation)(*args)
    legacy.set("k", "v")  # the rest is the same server
    assert master.get("k") == b"v" and legacy.list_keys() == ["k"]
    with pytest.raises(TypeError, match="use_libuv must be a bool"):
        dist.TCPStore("127.0.0.1", master.port, use_libuv="0")
    with pytest.raises(ValueError, match="TCPStore world size cannot be 0"):
        dist.TCPStore("127.0.0.1", master.port, world_size=0)
    port = free_port()
    store, _, _ = next(dist.rendezvous(f"tcp://127.0.0.1:{port}?rank=0&world_size=1&use_libuv=0",
                                       timeout=datetime.timedelta(seconds=5)))
    assert not store.libuvBackend
    monkeypatch.setenv("USE_LIBUV", "0")
    store, _, _ = next(dist.rendezvous(f"tcp://127.0.0.1:{free_port()}?rank=0&world_size=1",
                                       timeout=datetime.timedelta(seconds=5)))
    assert not store.libuvBackend


def test_get_and_wait_block_until_set_or_timeout(pair):
    a, b = pair
    threading.Timer(0.1, lambda: b.set("late", "1")).start()
    a.wait(["late"], datetime.timedelta(seconds=5))
    threading.Timer(0.1, lambda: b.set("later", "2")).start()
    assert a.get("later") == b"2"
    a.set_timeout(SHORT)
    assert a.timeout == SHORT
    with pytest.raises(dist.DistStoreError, match="wait timeout after 200ms, keys: .*missing"):
        a.get("missing")
    with pytest.raises(dist.DistStoreError, match="wait timeout after 50ms"):
        b.wait(["late", "missing"], datetime.timedelta(milliseconds=50))
    assert isinstance(dist.DistStoreError("x"), dist.DistError) and isinstance(dist.DistError("x"), RuntimeError)


def test_bad_keys_values_and_timeouts_raise(pair):
    a, _ = pair
    with pytest.raises(TypeError, match="key must be a str"):
        a.set(1, "v")
    with pytest.raises(TypeError, match="value must be a str or bytes"):
        a.set("k", 1)
    with pytest.raises(TypeError, match="amount must be an int"):
        a.add("k", 1.5)
    with pytest.raises(TypeError, match="keys must be a list"):
        a.wait("k")
    with pytest.raises(TypeError, match="timedelta"):
        a.set_timeout(5)
    assert not a.check(["k"])


def test_num_keys_counts_like_torch(tcp_pair, file_pair):
    hashed = dist.HashStore()
    hashed.set("a", "1")
    assert hashed.num_keys() == 1
    files, _ = file_pair
    files.set("a", "1")
    files.add("b", 1)
    assert files.num_keys() == 2  # its bookkeeping (users of the file) is not counted
    master = dist.TCPStore("127.0.0.1", 0, world_size=1, is_master=True, timeout=datetime.timedelta(seconds=5))
    master.set("first_key", "first_value")
    assert master.num_keys() == 2  # as torch's docs say: "init/" counts the stores that joined
    assert dist.PrefixStore("p", master).num_keys() == 2


def test_tcp_store_master_waits_for_world_size_and_port_rules():
    port = free_port()
    joined = []

    def second():
        time.sleep(0.1)
        joined.append(dist.TCPStore("127.0.0.1", port, world_size=2, timeout=datetime.timedelta(seconds=5)))
    thread = threading.Thread(target=second)
    thread.start()
    master = dist.TCPStore("127.0.0.1", port, world_size=2, is_master=True, timeout=datetime.timedelta(seconds=5))
    thread.join()
    assert joined and master.port == port and master.host == "127.0.0.1"
    assert master.add("init/", 0) == 0 and master.get("init/") == b"0"  # user keys never meet the counter
    with pytest.raises(dist.DistNetworkError, match="failed to listen"):
        dist.TCPStore("127.0.0.1", port, is_master=True, timeout=SHORT)
    with pytest.raises(dist.DistStoreError, match="waiting for clients. 1/2 clients joined"):
        dist.TCPStore("127.0.0.1", 0, world_size=2, is_master=True, timeout=SHORT)
    with pytest.raises(ValueError, match="port must have value from 0 to 65535"):
        dist.TCPStore("127.0.0.1", 70000)
    with pytest.raises(ValueError, match="master's port"):
        dist.TCPStore("127.0.0.1", 0)


def test_tcp_store_clients_fail_clearly_without_a_master():
    port = free_port()
    refused = rf"timed out after 200ms while trying to connect to \(127.0.0.1, {port}\)"
    with pytest.raises(dist.DistNetworkError, match=refused):
        dist.TCPStore("127.0.0.1", port, timeout=SHORT)
    master = dist.TCPStore("127.0.0.1", port, is_master=True, timeout=datetime.timedelta(seconds=5))
    client = dist.TCPStore("127.0.0.1", port, timeout=datetime.timedelta(seconds=5))
    del master  # the master's store owns the server
    with pytest.raises(dist.DistNetworkError, match="lost the connection"):
        client.set("k", "v")


def test_tcp_store_multi_tenant_shares_the_port():
    first = dist.TCPStore("127.0.0.1", 0, is_master=True, multi_tenant=True, timeout=datetime.timedelta(seconds=5))
    second = dist.TCPStore("127.0.0.1", first.port, is_master=True, multi_tenant=True,
                           timeout=datetime.timedelta(seconds=5))
    first.set("k", "shared")
    assert second.get("k") == b"shared"
    del first  # the server lives while any of its tenants does
    assert second.get("k") == b"shared"


def test_file_store_is_removed_by_its_last_user_and_kept_without_world_size(tmp_path):
    path = str(tmp_path / "store")
    a, b = dist.FileStore(path, 2), dist.FileStore(path, 2)
    a.set("k", "v")
    del a
    assert os.path.exists(path) and b.get("k") == b"v"
    del b
    assert not os.path.exists(path)
    kept = str(tmp_path / "kept")
    c = dist.FileStore(kept)
    c.set("k", "v")
    del c
    assert dist.FileStore(kept).get("k") == b"v"  # a new FileStore of the file sees the old keys
    with pytest.raises(ValueError, match="world_size"):
        dist.FileStore(path, 0)
    with pytest.raises(FileNotFoundError):
        dist.FileStore(str(tmp_path / "no" / "such" / "dir"))


def test_file_store_is_shared_between_processes(tmp_path):
    path = str(tmp_path / "store")
    store = dist.FileStore(path)
    child = ("import sys, ember.distributed as d; s = d.FileStore(sys.argv[1]); "
             "s.set('from_child', str(s.add('count', 1))); s.wait(['from_parent'])")
    proc = subprocess.Popen([sys.executable, "-c", child, path])
    assert store.get("from_child") == b"1"
    store.set("from_parent", "1")
    assert proc.wait(timeout=60) == 0


def test_prefix_store_puts_keys_under_its_prefix():
    base = dist.HashStore()
    prefixed = dist.PrefixStore("group", base)
    prefixed.set("k", "v")
    assert base.get("group/k") == b"v" and prefixed.underlying_store is base
    nested = dist.PrefixStore("inner", prefixed)
    nested.add("n", 2)
    assert base.get("group/inner/n") == b"2"
    prefixed.set_timeout(SHORT)
    assert base.timeout == SHORT
    with pytest.raises(TypeError, match="must be a Store"):
        dist.PrefixStore("p", {})


def test_a_python_store_needs_the_operations():
    class Partial(dist.Store):
        """A store that implements none of the operations."""
    with pytest.raises(NotImplementedError, match="Partial must implement set"):
        Partial().set("k", "v")


def test_rendezvous_follows_torchs_rules(tmp_path, monkeypatch):
    with pytest.raises(RuntimeError, match="No rendezvous handler for nope://"):
        dist.rendezvous("nope://x")
    with pytest.raises(RuntimeError, match="`url` must be a string"):
        dist.rendezvous(3)
    with pytest.raises(RuntimeError, match="`rank` must be an integer"):
        dist.rendezvous("tcp://h:1", rank="0")
    with pytest.raises(ValueError, match="has node-specific arguments"):
        dist.rendezvous("tcp://h:1?rank=0", rank=0)
    with pytest.raises(ValueError, match="tcp:// rendezvous: port number missing"):
        next(dist.rendezvous("tcp://127.0.0.1", 0, 1))
    with pytest.raises(ValueError, match="rank parameter missing"):
        next(dist.rendezvous("tcp://127.0.0.1:1"))
    with pytest.raises(ValueError, match="world size parameter missing"):
        next(dist.rendezvous(f"file://{tmp_path}/f", rank=0))
    with pytest.raises(ValueError, match="file:// rendezvous: path missing"):
        next(dist.rendezvous("file://", 0, 1))

    store, rank, world_size = next(dist.rendezvous(f"file://{tmp_path}/f?rank=0&world_size=1"))
    assert isinstance(store, dist.FileStore) and (rank, world_size) == (0, 1)
    store, rank, world_size = next(dist.rendezvous(f"tcp://127.0.0.1:{free_port()}", 0, 1,
                                                   timeout=datetime.timedelta(seconds=5)))
    assert isinstance(store, dist.TCPStore) and (rank, world_size) == (0, 1) and store.num_keys() == 1

    monkeypatch.delenv("MASTER_ADDR", raising=False)
    with pytest.raises(ValueError, match="environment variable MASTER_ADDR expected, but not set"):
        next(dist.rendezvous("env://", 0, 1))
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(free_port()))
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    store, rank, world_size = next(dist.rendezvous("env://", timeout=datetime.timedelta(seconds=5)))
    assert isinstance(store, dist.TCPStore) and (rank, world_size) == (0, 1)


def test_register_rendezvous_handler():
    def handler(url, **kwargs):
        yield dist.HashStore(), 0, 1
    dist.register_rendezvous_handler("emberdemo", handler)
    store, rank, world_size = next(dist.rendezvous("emberdemo://anything"))
    assert isinstance(store, dist.HashStore) and (rank, world_size) == (0, 1)
    with pytest.raises(RuntimeError, match="Rendezvous handler for tcp:// already registered"):
        dist.register_rendezvous_handler("tcp", handler)


def test_init_process_group_checks_its_store_arguments_first():
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="Cannot specify both init_method and store."):
        dist.init_process_group("gloo", init_method="tcp://h:1", store=dist.HashStore(), rank=0, world_size=1)
    with pytest.raises(ValueError, match="world_size must be positive if using store"):
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0)
    with pytest.raises(ValueError, match="rank must be non-negative if using store"):
        dist.init_process_group("gloo", store=dist.HashStore(), world_size=1)
    with pytest.raises(TypeError, match="store must be an ember.distributed.Store"):
        dist.init_process_group("gloo", store={}, rank=0, world_size=1)
    assert not dist.is_initialized()


def test_reduce_op_instances_and_premul_sum():
    assert dist.ReduceOp(dist.ReduceOp.MAX) == dist.ReduceOp.MAX and dist.ReduceOp() == dist.ReduceOp.SUM
    premul = dist._make_nccl_premul_sum(0.5)
    assert premul == dist.ReduceOp.PREMUL_SUM and premul.factor == 0.5
    assert dist._make_nccl_premul_sum(ember.tensor([2.0])) == dist.ReduceOp.PREMUL_SUM
    with pytest.raises(ValueError, match="one element"):
        dist._make_nccl_premul_sum(ember.ones(2))
    with pytest.raises(TypeError, match="factor must be a number"):
        dist._make_nccl_premul_sum("2")
    # As torch's Gloo and MPI backends: only NCCL runs PREMUL_SUM (checked before any communication).
    for op in (premul, dist.ReduceOp.PREMUL_SUM):
        with pytest.raises(RuntimeError, match="Cannot use ReduceOp.PREMUL_SUM with MPI or Gloo"):
            dist.all_reduce(ember.ones(2), op)
    with pytest.raises(RuntimeError, match="Cannot use ReduceOp.PREMUL_SUM"):
        dist.reduce_scatter_tensor(ember.ones(1), ember.ones(2), premul)
    with pytest.raises(TypeError, match="RedOpType"):
        dist.ReduceOp("SUM")


def test_init_process_group_rendezvous_on_two_mpi_processes(tmp_path):
    pytest.importorskip("mpi4py")
    from ember.distributed.run import mpiexec
    stale = str(tmp_path / "stale")
    other_job = dist.FileStore(stale)  # another job, still using the file
    other_job.compare_set("default_pg/mpi_job", "", "another job")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    done = subprocess.run([mpiexec(), "-n", "2", sys.executable, str(HERE / "distributed_init_checks.py"),
                           str(tmp_path), *map(str, free_ports(2)), stale],
                          capture_output=True, text=True, timeout=150, env=env)
    del other_job
    reports = [tmp_path / f"rank{r}.json" for r in range(2)]
    results = [json.loads(p.read_text()) if p.exists() else {"report": "missing"} for p in reports]
    assert done.returncode == 0, f"{done.stdout}{done.stderr}\n{results}"
    for rank, outcomes in enumerate(results):
        failures = {name: text for name, text in outcomes.items() if text != "ok"}
        assert not failures, f"rank {rank}:\n" + "\n".join(f"{n}: {t}" for n, t in failures.items())
    assert len(results[0]) >= 8


TORCHX_SCRIPT = """
import pathlib, sys
import ember, ember.distributed as dist
dist.init_process_group("gloo")
total = ember.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(total)
pathlib.Path(sys.argv[1], f"rank{dist.get_rank()}").write_text(f"{dist.get_world_size()} {total.item():g}")
dist.destroy_process_group()
"""


def test_torchx_component_builds_ember_launcher_apps():
    pytest.importorskip("torchx")
    from torchx.specs import finder

    from ember.distributed.torchx import ddp
    app = ddp("--epochs", "3", script="train.py", j="1x4", env={"A": "1"}, name="exp/run")
    (role,) = app.roles
    assert app.name == "run" and role.name == "train" and role.entrypoint == "python"
    assert role.args == ["-m", "ember.distributed.run", "--nproc-per-node", "4", "train.py", "--epochs", "3"]
    assert role.num_replicas == 1 and role.env == {"A": "1"}
    assert ddp(m="pkg.train", j="2").roles[0].args[-3:] == ["2", "-m", "pkg.train"]
    (nodes,) = ddp("--lr", "1 2", script="train.py", j="2x4", rdzv_port=29501).roles
    assert nodes.entrypoint == "bash" and nodes.num_replicas == 2 and nodes.port_map == {"c10d": 29501}
    assert nodes.args[1] == ("python -m ember.distributed.run --nproc-per-node 4 --nnodes 2 --rdzv-backend c10d "
                             "--rdzv-id '${app_id}' --rdzv-endpoint $${${rank0_env}:=localhost}:29501 train.py --lr '1 2'")
    static = ddp(script="train.py", j="3x1", rdzv_backend="static").roles[0].args[1]
    assert "--rdzv-backend static" in static and "--node-rank '${replica_id}'" in static
    with pytest.raises(NotImplementedError, match="fixed number of nodes; j='1:2x4'"):
        ddp(script="train.py", j="1:2x4")
    with pytest.raises(ValueError, match="exactly one of --script and -m"):
        ddp()
    with pytest.raises(ValueError, match="j must be"):
        ddp(script="train.py", j="four")
    # TorchX finds it by module path and its linter accepts it (annotations, docstring).
    component = finder.get_component("ember.distributed.torchx:ddp")
    assert not component.validation_errors


def test_torchx_runs_the_component_on_its_local_scheduler(tmp_path, monkeypatch):
    pytest.importorskip("torchx")
    pytest.importorskip("mpi4py")
    from torchx.runner import get_runner
    from torchx.specs import AppState

    from ember.distributed.torchx import ddp
    script = tmp_path / "train.py"
    script.write_text(TORCHX_SCRIPT)
    # The component runs `python`: this interpreter (with Ember) must be the one on PATH.
    monkeypatch.setenv("PATH", f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}")
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    with get_runner() as runner:
        # one node of two processes, then two nodes (replicas) of one process each
        for j, port in (("2", 29500), ("2x1", free_ports(1)[0])):
            handle = runner.run(ddp(str(tmp_path), script=str(script), j=j, rdzv_port=port), scheduler="local_cwd",
                                cfg={"log_dir": str(tmp_path / "logs" / j)})
            status = runner.wait(handle, wait_interval=0.1)
            logs = ("".join(runner.log_lines(handle, "train", 0, streams=None)) if status.state != AppState.SUCCEEDED
                    else "")
            assert status.state == AppState.SUCCEEDED, logs
            assert [(tmp_path / f"rank{r}").read_text() for r in range(2)] == ["2 3", "2 3"]
            for r in range(2):
                (tmp_path / f"rank{r}").unlink()
