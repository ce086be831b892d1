"""`ember.distributed`: torch.distributed's process groups and collectives on MPI (mpi4py with
the MPICH wheel: `pip install 'ember[distributed]'`), for CPU processes.

Start the processes with `python -m ember.distributed.run --nproc-per-node N script.py` (torchrun's
interface) or `mpiexec -n N python script.py`, then call `init_process_group("mpi")` ("gloo" is
accepted as an alias: both run on MPI; torch's tcp://, file:// and store= rendezvous work too).
The stores (TCPStore, FileStore, HashStore, PrefixStore) are pure Python and need no MPI;
`ember.distributed.torchx:ddp` is a TorchX component for the launcher (the `torchx` extra). NCCL
needs Ember's CUDA backend, which does not exist yet. See the README's "Distributed training"
for what works and what is not implemented."""
from ember.distributed.distributed_c10d import *  # noqa: F403
from ember.distributed.distributed_c10d import __all__ as _c10d_all
from ember.distributed.distributed_c10d import _make_nccl_premul_sum  # noqa: F401  (torch.distributed has it)

__all__ = list(_c10d_all)
