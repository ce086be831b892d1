"""A TorchX component for Ember's launcher (`pip install 'ember[torchx]'`): TorchX's `dist.ddp`
interface, but the job runs `python -m ember.distributed.run` (torchrun's interface, over MPI)
instead of torchrun, so Ember training scripts launch on TorchX's schedulers:

    torchx run -s local_cwd ember.distributed.torchx:ddp -j 2x2 --script train.py -- --epochs 3

or from Python, `torchx.runner.get_runner().run(ddp(script="train.py", j="2x2"), "local_cwd")`.

`j` is `{nnodes}x{nproc_per_node}` or `{nproc_per_node}`; a fixed node count (elastic `1:2x4`
raises NotImplementedError). Several nodes meet as dist.ddp's do: at the c10d rendezvous on the
first replica's host (the scheduler's rank-0 host variable), port `rdzv_port`, or with
rdzv_backend="static" by replica id. The image must have Ember (with its `distributed` extra)
installed, and `python` (and, for several nodes, `bash`) on its PATH."""
import re
import shlex

import torchx
import torchx.specs as specs
from torchx.components.dist import get_role_name
from torchx.components.structured_arg import StructuredNameArgument

_J = re.compile(r"(?:(?P<nodes>\d+(?::\d+)?)x)?(?P<procs>\d+)")


def _nodes_and_processes(j: str) -> tuple[int, int]:
    match = _J.fullmatch(j)
    if match is None:
        raise ValueError(f"ddp: j must be {{nnodes}}x{{nproc_per_node}} or {{nproc_per_node}} (e.g. 2x2), but got {j!r}")
    low, _, high = (match["nodes"] or "1").partition(":")
    if high and high != low:
        raise NotImplementedError(f"ddp: ember.distributed.run starts a fixed number of nodes; j={j!r} is elastic")
    nodes, procs = int(low), int(match["procs"])
    if nodes < 1 or procs < 1:
        raise ValueError(f"ddp: j must ask for at least one node and one process, but got {j!r}")
    return nodes, procs


def ddp(
    *script_args: str,
    script: str | None = None,
    m: str | None = None,
    image: str = torchx.IMAGE,
    name: str = "/",
    h: str | None = None,
    cpu: int = 2,
    gpu: int = 0,
    memMB: int = 1024,
    j: str = "1x2",
    env: dict[str, str] | None = None,
    metadata: dict[str, str] | None = None,
    max_retries: int = 0,
    mounts: list[str] | None = None,
    rdzv_port: int = 29500,
    rdzv_backend: str = "c10d",
    rdzv_conf: str | None = None,
) -> specs.AppDef:
    """Runs an Ember data-parallel training script with ember.distributed.run on one or more
    nodes (TorchX's dist.ddp, on Ember's launcher).

    Args:
        script_args: arguments to the script or module
        script: the training script to run (a path within the image)
        m: the python module to run instead of a script (as `python -m`)
        image: the image (e.g. docker) to run in; it must have Ember installed
        name: job name as ``{experimentname}/{runname}``, ``{experimentname}/``, ``/{runname}`` or
            ``{runname}``; the run name defaults to the script's or module's
        h: a registered named resource (takes precedence over cpu, gpu and memMB)
        cpu: number of cpus for the job's node
        gpu: number of gpus for the job's node
        memMB: memory in MB for the job's node
        j: {nnodes}x{nproc_per_node}, or {nproc_per_node} for one node
        env: environment variables of the processes (e.g. ENV1=v1,ENV2=v2)
        metadata: metadata passed to the scheduler (e.g. KEY1=v1,KEY2=v2)
        max_retries: the number of scheduler retries allowed
        mounts: mounts into the job's container (ex. type=<bind/volume>,src=/host,dst=/job[,readonly])
        rdzv_port: the port on the first replica's host where several nodes meet
        rdzv_backend: how several nodes meet: c10d (node ranks in arrival order) or static (by replica id)
        rdzv_conf: the rendezvous' settings (ex. join_timeout=600)
    """
    if (script is None) == (m is None):
        raise ValueError("exactly one of --script and -m must be specified")
    nodes, procs = _nodes_and_processes(j)
    launcher = ["-m", "ember.distributed.run", "--nproc-per-node", str(procs)]
    program = ["-m", m] if m is not None else [script]
    entrypoint, args = "python", [*launcher, *program, *script_args]
    if nodes > 1:
        # The scheduler names the first replica's host in an environment variable, which only a
        # shell expands: the endpoint stays unquoted ($$ escapes TorchX's macro substitution).
        endpoint = f"$${{{specs.macros.rank0_env}:=localhost}}:{rdzv_port}"
        meeting = ["--nnodes", str(nodes), "--rdzv-backend", rdzv_backend, "--rdzv-id", specs.macros.app_id,
                   *(["--rdzv-conf", rdzv_conf] if rdzv_conf else []),
                   *(["--node-rank", specs.macros.replica_id] if rdzv_backend == "static" else [])]
        quoted = " ".join(shlex.quote(a) for a in ["python", *launcher, *meeting])
        entrypoint = "bash"
        args = ["-c", f"{quoted} --rdzv-endpoint {endpoint} " + " ".join(shlex.quote(a) for a in [*program, *script_args])]
    run_name = StructuredNameArgument.parse_from(name=name, m=m, script=script).run_name
    return specs.AppDef(
        name=run_name,
        roles=[
            specs.Role(
                name=get_role_name(script, m),
                image=image,
                entrypoint=entrypoint,
                args=args,
                num_replicas=nodes,
                resource=specs.resource(cpu=cpu, gpu=gpu, memMB=memMB, h=h),
                env=dict(env or {}),
                max_retries=max_retries,
                mounts=specs.parse_mounts(mounts) if mounts else [],
                port_map={"c10d": rdzv_port} if nodes > 1 else {},
            )
        ],
        metadata=dict(metadata or {}),
    )
