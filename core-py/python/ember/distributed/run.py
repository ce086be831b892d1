"""`python -m ember.distributed.run --nproc-per-node N script.py [args]`: torchrun's interface
over MPI's launcher.

It starts N processes of the script on this machine through the `mpiexec` of the MPICH wheel
(one MPI job, so the processes find each other through MPI), each with torchrun's environment:
RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR and MASTER_PORT (MPI does
not need the last two; scripts that read them still work). `mpiexec -n N python script.py`
works too: init_process_group takes the ranks from MPI either way.

mpiexec runs with automatic clean-up off, so when a rank fails the others report it themselves
(ember.distributed's failure notices and timeouts) instead of being killed first; the launcher
exits with the first failing rank's exit code. Single node only: --nnodes above 1 and the
rendezvous and restart options of torchrun raise NotImplementedError."""
import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig


def _parser():
    p = argparse.ArgumentParser(prog="python -m ember.distributed.run",
                                description="Start N processes of a training script (torchrun's interface, on MPI).")
    p.add_argument("--nproc-per-node", "--nproc_per_node", default="1",
                   help="processes to start: a number, or 'cpu'/'auto' for one per CPU core")
    p.add_argument("--nnodes", default="1", help="number of nodes (only 1 is supported)")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0, help="this node's rank (only 0)")
    p.add_argument("--master-addr", "--master_addr", default="127.0.0.1", help="set as MASTER_ADDR")
    p.add_argument("--master-port", "--master_port", type=int, default=29500, help="set as MASTER_PORT")
    p.add_argument("--standalone", action="store_true", help="accepted: a single-node job is always standalone")
    p.add_argument("--max-restarts", "--max_restarts", type=int, default=0, help="restarts are not supported (0 only)")
    p.add_argument("--rdzv-backend", "--rdzv_backend", default=None, help="not supported: MPI does the rendezvous")
    p.add_argument("--rdzv-endpoint", "--rdzv_endpoint", default=None, help="not supported: MPI does the rendezvous")
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


def _check_supported(args):
    if args.nnodes not in ("1", "1:1"):
        raise NotImplementedError(f"ember.distributed.run runs on one node; --nnodes {args.nnodes} is not supported "
                                  "(use mpiexec with a host file for several nodes)")
    if args.node_rank != 0:
        raise NotImplementedError("ember.distributed.run runs on one node; --node-rank must be 0")
    if args.max_restarts:
        raise NotImplementedError("ember.distributed.run does not restart failed workers (--max-restarts must be 0)")
    if args.rdzv_backend or args.rdzv_endpoint:
        raise NotImplementedError("ember.distributed.run: MPI does the rendezvous; --rdzv-backend/--rdzv-endpoint "
                                  "are not supported")


def command(args):
    """The mpiexec command line: one MPMD segment per rank, each with its own environment."""
    n = _processes(args.nproc_per_node)
    if args.no_python:
        program = [args.training_script]
    elif args.module:
        program = [sys.executable, "-u", "-m", args.training_script]
    else:
        program = [sys.executable, "-u", args.training_script]
    program += list(args.training_script_args)
    shared = {"WORLD_SIZE": n, "LOCAL_WORLD_SIZE": n, "GROUP_RANK": 0, "ROLE_RANK": None,
              "MASTER_ADDR": args.master_addr, "MASTER_PORT": args.master_port}
    cmd = [mpiexec(), "-disable-auto-cleanup"]
    for name, value in shared.items():
        if value is not None:
            cmd += ["-genv", name, str(value)]
    if "OMP_NUM_THREADS" not in os.environ and n > 1:
        cmd += ["-genv", "OMP_NUM_THREADS", "1"]  # torchrun's default, for libraries that read it
    for rank in range(n):
        if rank:
            cmd.append(":")
        cmd += ["-n", "1", "-env", "RANK", str(rank), "-env", "LOCAL_RANK", str(rank), "-env", "ROLE_RANK", str(rank),
                *program]
    return cmd


def main(argv=None):
    args = _parser().parse_args(argv)
    _check_supported(args)
    completed = subprocess.run(command(args), check=False)
    return completed.returncode


if __name__ == "__main__":
    sys.exit(main())
