"""`python -m ember.distributed.run` across nodes and restarts: several launchers on this machine
stand for several nodes (each runs its own mpiexec job, which init_process_group joins into one
MPI world), through torchrun's static and c10d rendezvous."""
import os
import socket
import subprocess
import sys

import pytest

pytest.importorskip("mpi4py")

SECONDS = 120
SCRIPT = """
import os, pathlib, sys
import ember, ember.distributed as dist
dist.init_process_group("gloo")
total = ember.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(total)
env = " ".join(os.environ[k] for k in ("RANK", "LOCAL_RANK", "GROUP_RANK", "WORLD_SIZE", "GROUP_WORLD_SIZE"))
pathlib.Path(sys.argv[1], f"rank{dist.get_rank()}").write_text(f"{dist.get_world_size()} {total.item():g} {env}")
dist.destroy_process_group()
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(tmp_path, *options, script=SCRIPT):
    path = tmp_path / "job.py"
    path.write_text(script)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    return subprocess.Popen([sys.executable, "-m", "ember.distributed.run", *options, str(path), str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def finish(*launchers):
    outputs = [p.communicate(timeout=SECONDS)[0] for p in launchers]
    return [p.returncode for p in launchers], "".join(outputs)


def reports(tmp_path, world):
    return [(tmp_path / f"rank{r}").read_text() for r in range(world)]


def test_two_nodes_meet_at_the_static_rendezvous(tmp_path):
    port = str(free_port())
    nodes = [launch(tmp_path, "--nnodes", "2", "--node-rank", str(n), "--master-port", port, "--nproc-per-node", "1")
             for n in (1, 0)]  # node 1 first: it waits for node 0's store
    codes, output = finish(*nodes)
    assert codes == [0, 0], output
    # world size, the sum of rank+1 over ranks, then RANK LOCAL_RANK GROUP_RANK WORLD_SIZE GROUP_WORLD_SIZE
    assert reports(tmp_path, 2) == ["2 3 0 0 0 2 2", "2 3 1 0 1 2 2"]


def test_two_nodes_of_two_processes_meet_at_the_c10d_rendezvous(tmp_path):
    endpoint = f"localhost:{free_port()}"
    nodes = [launch(tmp_path, "--nnodes", "2:2", "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint,
                    "--nproc-per-node", "2") for _ in range(2)]
    codes, output = finish(*nodes)
    assert codes == [0, 0], output
    got = reports(tmp_path, 4)
    assert [r.split()[:2] for r in got] == [["4", "10"]] * 4
    # ranks follow (node, local rank), whichever node arrived first
    assert [r.split()[2:] for r in got] == [[str(r), str(r % 2), str(r // 2), "4", "2"] for r in range(4)]


def test_a_node_that_never_comes_times_out_the_rendezvous(tmp_path):
    codes, output = finish(launch(tmp_path, "--nnodes", "2", "--master-port", str(free_port()),
                                  "--rdzv-conf", "join_timeout=1"))
    assert codes == [1] and "timed out" in output and "only nodes [0] of 2 joined" in output, output


def test_nodes_must_start_the_same_number_of_processes(tmp_path):
    endpoint = f"127.0.0.1:{free_port()}"
    nodes = [launch(tmp_path, "--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint,
                    "--nproc-per-node", str(n)) for n in (1, 2)]
    codes, output = finish(*nodes)
    assert codes == [1, 1] and output.count("ValueError: every node must start the same number of processes") == 2, output


def test_failed_processes_restart_up_to_max_restarts(tmp_path):
    flaky = SCRIPT.replace("dist.init_process_group", "assert os.environ['TORCHELASTIC_RESTART_COUNT'] == '1', "
                           "'first attempt fails'\ndist.init_process_group")
    codes, output = finish(launch(tmp_path, "--max-restarts", "2", "--nproc-per-node", "2", script=flaky))
    assert codes == [0] and "restarting them (1 of 2)" in output, output
    assert reports(tmp_path, 2)[0].startswith("2 3")
    codes, output = finish(launch(tmp_path, "--nproc-per-node", "1", script=flaky))
    assert codes != [0] and "first attempt fails" in output


def test_launcher_refuses_what_it_cannot_do():
    from ember.distributed import run
    with pytest.raises(NotImplementedError, match="fixed number of nodes"):
        run.main(["--nnodes", "1:2", "x.py"])
    with pytest.raises(NotImplementedError, match="restarts single-node jobs only"):
        run.main(["--nnodes", "2", "--max-restarts", "1", "x.py"])
    with pytest.raises(NotImplementedError, match="'etcd'"):
        run.main(["--nnodes", "2", "--rdzv-backend", "etcd", "--rdzv-endpoint", "h:1", "x.py"])
    with pytest.raises(ValueError, match="--node-rank must be in"):
        run.main(["--nnodes", "2", "--node-rank", "2", "x.py"])
    with pytest.raises(ValueError, match="needs --rdzv-endpoint"):
        run.main(["--nnodes", "2", "--rdzv-backend", "c10d", "x.py"])
    with pytest.raises(ValueError, match="--nnodes must be"):
        run.main(["--nnodes", "two", "x.py"])
    with pytest.raises(ValueError, match="nproc-per-node"):
        run.main(["--nproc-per-node", "0", "x.py"])
    cmd = run.command(run._parser().parse_args(["--nproc-per-node", "2", "train.py", "--lr", "1"]))
    assert cmd.count("RANK") == 2 and cmd[-2:] == ["--lr", "1"] and "-disable-auto-cleanup" in cmd
