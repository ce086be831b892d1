"""A TorchX component for Ember's launcher (`pip install 'ember[torchx]'`): TorchX's `dist.ddp`
interface, but the job runs `python -m ember.distributed.run` (torchrun's interface, over MPI)
instead of torchrun, so Ember training scripts launch on TorchX's schedulers:

    torchx run -s local_cwd ember.distributed.torchx:ddp -j 1x2 --script train.py -- --epochs 3

or from Python, `torchx.runner.get_runner().run(ddp(script="train.py", j="1x2"), "local_cwd")`.

One node only, as the launcher: `j` is `{nproc_per_node}` or `1x{nproc_per_node}`; more nodes
(`2x4`, elastic `1:2x4`) raise NotImplementedError. torchrun's rendezvous options (rdzv_*) have no
counterpart: MPI starts and numbers the processes. The image must have Ember (with its
`distributed` extra) installed, and `python` on its PATH."""
import re

import torchx
import torchx.specs as specs
from torchx.components.dist import get_role_name
from torchx.components.structured_arg import StructuredNameArgument

_J = re.compile(r"(?:(?P<nodes>\d+(?::\d+)?)x)?(?P<procs>\d+)")


def _processes_per_node(j: str) -> int:
    match = _J.fullmatch(j)
    if match is None:
        raise ValueError(f"ddp: j must be {{nproc_per_node}} or 1x{{nproc_per_node}} (e.g. 1x2), but got {j!r}")
    if match["nodes"] not in (None, "1", "1:1"):
        raise NotImplementedError(f"ddp: ember.distributed.run runs on one node; j={j!r} asks for "
                                  f"{match['nodes']} nodes")
    procs = int(match["procs"])
    if procs < 1:
        raise ValueError(f"ddp: j must ask for at least one process, but got {j!r}")
    return procs


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
) -> specs.AppDef:
    """Runs an Ember data-parallel training script on one node with ember.distributed.run
    (TorchX's dist.ddp, on Ember's launcher).

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
        j: processes to start, as {nproc_per_node} or 1x{nproc_per_node} (one node only)
        env: environment variables of the processes (e.g. ENV1=v1,ENV2=v2)
        metadata: metadata passed to the scheduler (e.g. KEY1=v1,KEY2=v2)
        max_retries: the number of scheduler retries allowed
        mounts: mounts into the job's container (ex. type=<bind/volume>,src=/host,dst=/job[,readonly])
    """
    if (script is None) == (m is None):
        raise ValueError("exactly one of --script and -m must be specified")
    launcher = ["-m", "ember.distributed.run", "--nproc-per-node", str(_processes_per_node(j))]
    program = ["-m", m] if m is not None else [script]
    run_name = StructuredNameArgument.parse_from(name=name, m=m, script=script).run_name
    return specs.AppDef(
        name=run_name,
        roles=[
            specs.Role(
                name=get_role_name(script, m),
                image=image,
                entrypoint="python",
                args=[*launcher, *program, *script_args],
                num_replicas=1,
                resource=specs.resource(cpu=cpu, gpu=gpu, memMB=memMB, h=h),
                env=dict(env or {}),
                max_retries=max_retries,
                mounts=specs.parse_mounts(mounts) if mounts else [],
            )
        ],
        metadata=dict(metadata or {}),
    )
