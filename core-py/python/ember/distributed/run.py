"""`python -m ember.distributed.run --nproc-per-node N script.py [args]`: torchrun's interface
over MPI's launcher.

It starts N processes of the script on this machine through the `mpiexec` of the MPICH wheel
(one MPI job, so the processes find each other through MPI), each with torchrun's environment:
RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE, MASTER_ADDR and
MASTER_PORT. `mpiexec -n N python script.py` works too: init_process_group takes the ranks from
MPI either way.

Several nodes (`--nnodes M`, the same command on each): the launchers meet at a TCPStore,
torchrun's "static" rendezvous (the store on MASTER_ADDR:MASTER_PORT, served by --node-rank 0) or
"c10d" (the store on --rdzv-endpoint, served by the launcher on that host; node ranks in arrival
order). Each node then runs its own mpiexec job and init_process_group joins the jobs into one
MPI world (see _nodes.py). The node count is fixed (no elastic MIN:MAX).

mpiexec runs with automatic clean-up off, so when a rank fails the others report it themselves
(ember.distributed's failure notices and timeouts) instead of being killed first; the launcher
exits with the first failing rank's exit code. With `--max-restarts K` a single-node job whose
processes fail starts again, up to K times, with TORCHELASTIC_RESTART_COUNT counting the restarts."""
import argparse
import contextlib
import datetime
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import sysconfig


def _parser():
    p = argparse.ArgumentParser(prog="python -m ember.distributed.run",
                                description="Start N processes of a training script (torchrun's interface, on MPI).")
    p.add_argument("--nproc-per-node", "--nproc_per_node", default="1",
                   help="processes to start: a number, or 'cpu'/'auto' for one per CPU core")
    p.add_argument("--nnodes", default="1", help="number of nodes, N or N:N (not elastic)")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0, help="this node's rank (static rendezvous)")
    p.add_argument("--master-addr", "--master_addr", default="127.0.0.1",
                   help="the static rendezvous' host (node 0's address), set as MASTER_ADDR")
    p.add_argument("--master-port", "--master_port", type=int, default=29500,
                   help="the static rendezvous' port, set as MASTER_PORT")
    p.add_argument("--standalone", action="store_true", help="accepted: a single-node job is always standalone")
    p.add_argument("--max-restarts", "--max_restarts", type=int, default=0,
                   help="times a failed single-node job starts again")
    p.add_argument("--rdzv-backend", "--rdzv_backend", default=None, help="'static' (the default) or 'c10d'")
    p.add_argument("--rdzv-endpoint", "--rdzv_endpoint", default=None, help="host[:port] of the c10d rendezvous")
    p.add_argument("--rdzv-id", "--rdzv_id", default="none", help="the job's id, set as TORCHELASTIC_RUN_ID")
    p.add_argument("--rdzv-conf", "--rdzv_conf", default="", help="KEY=VALUE,...: join_timeout (s, default 600)")
    p.add_argument("-m", "--module", action="store_true", help="run the script as a module, as `python -m`")
    p.add_argument("--no-python", "--no_python", action="store_true", help="run the script as an executable")
    p.add_argument("training_script", help="the script (or module, or executable) to run")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def mpiexec():
    """The MPICH wheel's mpiexec (installed next to this Python), else one on PATH."""
    for folder in (pathlib.Path(sys.executable).parent, pathlib.Path(sysconfig.get_path("scripts"))):
        candidate = folder / "mpiexec"
        if candidate.exists():
            return str(candidate)
    found = shutil.which("mpiexec")
    if found is None:
        raise RuntimeError("ember.distributed.run needs mpiexec: pip install 'ember[distributed]' (the MPICH wheel)")
    return found


def _processes(value):
    if value in ("cpu", "auto"):
        return os.cpu_count() or 1
    try:
        n = int(value)
    except ValueError:
        raise ValueError(f"--nproc-per-node must be a number, 'cpu' or 'auto', but got {value!r}") from None
    if n < 1:
        raise ValueError(f"--nproc-per-node must be at least 1, but got {n}")
    return n


def _nodes(value):
    low, _, high = str(value).partition(":")
    try:
        least, most = int(low), int(high or low)
    except ValueError:
        raise ValueError(f"--nnodes must be N or MIN:MAX, but got {value!r}") from None
    if not 1 <= least <= most:
        raise ValueError(f"--nnodes must be at least 1 (and MIN <= MAX), but got {value!r}")
    if least != most:
        raise NotImplementedError(f"ember.distributed.run starts a fixed number of nodes; elastic --nnodes {value} "
                                  "is not supported")
    return least


def _join_timeout(conf):
    settings = dict(item.split("=", 1) for item in conf.split(",") if "=" in item)
    try:
        return datetime.timedelta(seconds=float(settings.get("join_timeout", 600)))
    except ValueError:
        raise ValueError(f"--rdzv-conf join_timeout must be a number of seconds, but got {conf!r}") from None


def _endpoint(text, default_port):
    host, _, port = text.rpartition(":") if ":" in text else (text, "", "")
    try:
        return host, int(port) if port else default_port
    except ValueError:
        raise ValueError(f"--rdzv-endpoint must be host[:port], but got {text!r}") from None


def _is_this_machine(host):
    names = {"localhost", "127.0.0.1", "::1", socket.gethostname(), socket.getfqdn()}
    try:
        names.update(socket.gethostbyname_ex(socket.gethostname())[2])
        return host in names or socket.gethostbyname(host) in names
    except OSError:
        return host in names


class Rendezvous:
    """This node's place in the job: its rank among the nodes and the store where they met
    (None for one node), which the node's processes reach at `endpoint`."""

    def __init__(self, nodes, node_rank, store, endpoint):
        self.nodes, self.node_rank, self.store, self.endpoint = nodes, node_rank, store, endpoint


def rendezvous(args, processes):
    """Meets the other nodes' launchers (torchrun's static or c10d rendezvous) and checks that
    every node starts the same number of processes."""
    from ember.distributed import DistError, TCPStore

    nodes = _nodes(args.nnodes)
    if nodes == 1:  # nothing to meet: the rendezvous options do not matter, as for torchrun --standalone
        return Rendezvous(1, 0, None, (args.master_addr, args.master_port))
    timeout = _join_timeout(args.rdzv_conf)
    backend = args.rdzv_backend or "static"
    if backend == "static":
        if not 0 <= args.node_rank < nodes:
            raise ValueError(f"--node-rank must be in [0, {nodes}), but got {args.node_rank}")
        host, port = (_endpoint(args.rdzv_endpoint, args.master_port) if args.rdzv_endpoint
                      else (args.master_addr, args.master_port))
        store = TCPStore(host, port, is_master=args.node_rank == 0, timeout=timeout)
        node_rank = args.node_rank
    elif backend == "c10d":
        if not args.rdzv_endpoint:
            raise ValueError("--rdzv-backend c10d needs --rdzv-endpoint host[:port]")
        host, port = _endpoint(args.rdzv_endpoint, 29400)
        store = None
        if _is_this_machine(host):
            # A taken port means another launcher on this machine serves the rendezvous.
            with contextlib.suppress(DistError):
                store = TCPStore(host, port, is_master=True, timeout=timeout)
        store = store or TCPStore(host, port, timeout=timeout)
        node_rank = store.add("ember/rdzv/arrivals", 1) - 1
        if node_rank >= nodes:
            raise RuntimeError(f"the rendezvous at {host}:{port} already has its {nodes} nodes")
    else:
        raise NotImplementedError(f"ember.distributed.run supports the 'static' and 'c10d' rendezvous, "
                                  f"not --rdzv-backend {backend!r}")
    _meet(store, nodes, node_rank, processes, f"{host}:{port}", timeout)
    return Rendezvous(nodes, node_rank, store, (host, port))


def _meet(store, nodes, node_rank, processes, where, timeout):
    from ember.distributed import DistNetworkError, DistStoreError

    store.set(f"ember/rdzv/node/{node_rank}", str(processes))
    keys = [f"ember/rdzv/node/{rank}" for rank in range(nodes)]
    try:
        store.wait(keys, timeout)
    except DistStoreError:
        arrived = [rank for rank, key in enumerate(keys) if store.check([key])]
        raise RuntimeError(f"the rendezvous at {where} timed out after {timeout}: only nodes {arrived} of {nodes} "
                           "joined") from None
    counts = [int(store.get(key)) for key in keys]
    # No node leaves before every node has read the counts (the node serving the store may raise
    # below); once they all have, that node may close the store before our last answer arrives.
    with contextlib.suppress(DistNetworkError):
        store.set(f"ember/rdzv/read/{node_rank}", "1")
        store.wait([f"ember/rdzv/read/{rank}" for rank in range(nodes)], timeout)
    if len(set(counts)) > 1:
        raise ValueError(f"every node must start the same number of processes, but --nproc-per-node was {counts} "
                         "on nodes 0.." + str(nodes - 1))


def command(args, meeting=None, restart=0):
    """This node's mpiexec command line: one MPMD segment per rank, each with its own environment."""
    n = _processes(args.nproc_per_node)
    meeting = meeting or Rendezvous(1, 0, None, (args.master_addr, args.master_port))
    first = meeting.node_rank * n
    if args.no_python:
        program = [args.training_script]
    elif args.module:
        program = [sys.executable, "-u", "-m", args.training_script]
    else:
        program = [sys.executable, "-u", args.training_script]
    program += list(args.training_script_args)
    shared = {"WORLD_SIZE": n * meeting.nodes, "ROLE_WORLD_SIZE": n * meeting.nodes, "LOCAL_WORLD_SIZE": n,
              "GROUP_RANK": meeting.node_rank, "GROUP_WORLD_SIZE": meeting.nodes, "ROLE_NAME": "default",
              "MASTER_ADDR": meeting.endpoint[0], "MASTER_PORT": meeting.endpoint[1],
              "TORCHELASTIC_RUN_ID": args.rdzv_id, "TORCHELASTIC_RESTART_COUNT": restart,
              "TORCHELASTIC_MAX_RESTARTS": args.max_restarts,
              # the processes of several nodes meet at the launchers' store (see _nodes.py)
              "TORCHELASTIC_USE_AGENT_STORE": "True" if meeting.store is not None else "False"}
    cmd = [mpiexec(), "-disable-auto-cleanup"]
    for name, value in shared.items():
        if value is not None:
            cmd += ["-genv", name, str(value)]
    if "OMP_NUM_THREADS" not in os.environ and n > 1:
        cmd += ["-genv", "OMP_NUM_THREADS", "1"]  # torchrun's default, for libraries that read it
    for rank in range(n):
        if rank:
            cmd.append(":")
        cmd += ["-n", "1", "-env", "RANK", str(first + rank), "-env", "LOCAL_RANK", str(rank),
                "-env", "ROLE_RANK", str(first + rank), *program]
    return cmd


def main(argv=None):
    args = _parser().parse_args(argv)
    if args.max_restarts < 0:
        raise ValueError(f"--max-restarts must be at least 0, but got {args.max_restarts}")
    if args.max_restarts and _nodes(args.nnodes) > 1:
        raise NotImplementedError("ember.distributed.run restarts single-node jobs only (--max-restarts with "
                                  "--nnodes above 1 would need a new rendezvous round on every node)")
    meeting = rendezvous(args, _processes(args.nproc_per_node))
    for restart in range(args.max_restarts + 1):
        code = subprocess.run(command(args, meeting, restart), check=False).returncode
        if code == 0:
            break
        if restart < args.max_restarts:
            print(f"ember.distributed.run: the processes failed (exit code {code}); restarting them "
                  f"({restart + 1} of {args.max_restarts})", file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
