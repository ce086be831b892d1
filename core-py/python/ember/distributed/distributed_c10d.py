"""Process groups and collectives with torch.distributed's names and semantics, on MPI.

Every collective first exchanges a small fingerprint of each rank's call (operation, dtype,
shape, root, reduction), so mismatched calls raise a RuntimeError on every rank instead of
corrupting memory or hanging; then it runs as a nonblocking MPI operation on the tensors' own
memory (see _work.py for deadlines and failure notices)."""
import datetime
import os
import pickle
import secrets
import socket
import warnings
from urllib.parse import urlparse

import numpy as np

import ember
from ember.distributed import _mpi
from ember.distributed._nodes import joined_world
from ember.distributed._mpi import ReduceOp, check_reduce_op, check_tensor, dtype_code, mpi_buffer, mpi_op, mpi_vector, view
from ember.distributed._store import FileStore, HashStore, PrefixStore, Store, TCPStore
from ember.distributed._work import (Channel, DistBackendError, DistError, DistNetworkError, DistStoreError, Last,
                                     QueueEmptyError, Work, health)
from ember.distributed.constants import default_pg_timeout
from ember.distributed.rendezvous import query_dict, register_rendezvous_handler, rendezvous

_FINGERPRINT = 16  # int64 words: operation, reduction, dtype, root, numel, ndim, up to 10 dims
# Fixed codes (the same on every rank whatever it ran first) for the fingerprints.
_OPERATIONS = {name: code for code, name in enumerate((
    "barrier", "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
    "reduce_scatter_tensor", "gather", "scatter", "all_to_all", "all_to_all_single", "broadcast_object_list",
    "all_gather_object", "gather_object"), start=1)}
_FINGERPRINTS = {}


class Backend(str):
    """A backend name: "mpi" (CPU processes), "gloo" (the same MPI engine, accepted so that
    torch scripts run unchanged) or "nccl" (needs Ember's CUDA backend, which does not exist yet)."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend name must be a string, but got: {name!r}")
        value = name.lower()
        if value not in (cls.GLOO, cls.NCCL, cls.MPI, cls.UNDEFINED):
            raise ValueError(f"Invalid backend: '{name}' (ember.distributed has 'mpi', 'gloo' and 'nccl')")
        return super().__new__(cls, value)


class ProcessGroup:
    """A set of ranks that run collectives together (the default group holds every rank)."""

    def __init__(self, comm, ranks, backend, timeout, name, store=None):
        self._channel = Channel(comm, timeout)
        self._store = store
        self._ranks = list(ranks)
        self._backend = backend
        self._timeout = timeout
        self.group_name = name

    def rank(self):
        return self._channel.data.Get_rank()

    def size(self):
        return len(self._ranks)

    def name(self):
        return self._backend

    def __repr__(self):
        return f"<ProcessGroup {self.group_name} ranks={self._ranks} backend={self._backend}>"


class GroupMember:
    """`GroupMember.WORLD` is the default group; `NON_GROUP_MEMBER` is what new_group returns on
    ranks outside the new group."""

    WORLD = None
    NON_GROUP_MEMBER = object()


group = GroupMember


class _State:
    default = None
    groups = []


# ---- process groups ----

def is_available():
    """True when mpi4py and an MPI library are installed."""
    return _mpi.MPI is not None


def is_mpi_available():
    return is_available()


def is_gloo_available():
    return is_available()


def is_nccl_available():
    return False


def is_initialized():
    """Whether the default process group is initialised."""
    return _State.default is not None


def _check_timeout(timeout):
    if timeout is None:
        return default_pg_timeout
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {type(timeout).__name__}")
    return timeout


def _env_int(name):
    value = os.environ.get(name)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"environment variable {name} must be an integer, but got {value!r}") from None


def _check_launch(world, world_size, rank):
    """MPI decides the ranks; explicit or environment values must agree with it."""
    size, me = world.Get_size(), world.Get_rank()
    hint = ("start the processes with `python -m ember.distributed.run --nproc-per-node N script.py` "
            "or `mpiexec -n N python script.py`")
    for what, given, actual in (("world_size", world_size, size), ("rank", rank, me),
                                ("WORLD_SIZE", _env_int("WORLD_SIZE"), size), ("RANK", _env_int("RANK"), me)):
        if given is not None and given != -1 and given != actual:
            raise ValueError(f"init_process_group: {what} is {given}, but MPI started this process as rank {me} "
                             f"of {size}; {hint}")


def _check_backend(backend):
    name = Backend(backend or Backend.MPI)
    if name == Backend.NCCL:
        raise NotImplementedError("init_process_group(backend='nccl') needs Ember's CUDA backend, which does not exist "
                                  "yet; use backend='mpi' (or 'gloo') for CPU processes")
    if name == Backend.UNDEFINED:
        raise ValueError("init_process_group: backend 'undefined' cannot be initialised")
    return name


def _check_store_arguments(store, world_size, rank):
    if not isinstance(store, Store):
        raise TypeError(f"init_process_group: store must be an ember.distributed.Store, but got {type(store).__name__}")
    if not world_size > 0:
        raise ValueError("world_size must be positive if using store")
    if not rank >= 0:
        raise ValueError("rank must be non-negative if using store")


def _node_arguments(url, rank, world_size):
    """The rank and world size that the arguments and the URL's query give (-1: not given)."""
    for what, value in (("rank", rank), ("world_size", world_size)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"init_process_group: {what} must be an int, but got {type(value).__name__}")
    query = query_dict(urlparse(url).query) if url is not None else {}
    if ("rank" in query and rank != -1) or ("world_size" in query and world_size != -1):
        raise ValueError(f"The url: {url} has node-specific arguments(rank, world_size) already.")
    try:
        return int(query.get("rank", rank)), int(query.get("world_size", world_size))
    except ValueError:
        raise ValueError(f"init_process_group: rank and world_size in {url} must be integers") from None


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Initialises the default process group over every process MPI started.

    `backend` is "mpi" (the default for CPU tensors) or "gloo", which runs on the same MPI engine
    so torch scripts port unchanged; "nccl" raises NotImplementedError until Ember has a CUDA
    backend. The processes come from MPI (`mpiexec`, or `python -m ember.distributed.run`), which
    has already numbered them, so every rank or world size given must match MPI's:

    - `init_method="env://"` (the default): RANK/WORLD_SIZE and `rank`/`world_size`, when given,
      are checked; MPI did the rendezvous, so no store is opened (MASTER_ADDR/PORT are not needed).
    - `init_method="tcp://host:port"` or `"file:///path"` (or a scheme registered with
      `register_rendezvous_handler`): torch's rendezvous, with `rank` and `world_size` required
      (as arguments or in the URL's query: "tcp://host:port?rank=0&world_size=2"); rank 0 serves a
      TCPStore, or every rank opens the FileStore.
    - `store=` (with `rank` and `world_size`, not with `init_method`): that store.

    With a store, every rank then checks that it reached the same store as the rest of its MPI
    job (a store another job uses, or a file:// path that is not shared, raises); collectives
    still run over MPI. `timeout` (default 30 minutes) bounds the rendezvous (with `store=`, the
    store's own timeout bounds its waits) and every operation: past it, or as soon as another
    rank fails, operations raise DistBackendError."""
    if _State.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None and init_method is not None:
        raise ValueError("Cannot specify both init_method and store.")
    if store is not None:
        _check_store_arguments(store, world_size, rank)
    name = _check_backend(backend)
    timeout = _check_timeout(timeout)
    url = None if store is not None else init_method or "env://"
    if url is not None and not isinstance(url, str):
        raise RuntimeError(f"`url` must be a string. {type(url)}: {url}")
    given_rank, given_size = _node_arguments(url, rank, world_size)
    MPI = _mpi.require_mpi()
    if not MPI.Is_initialized():
        MPI.Init_thread()
    world = joined_world(MPI, timeout)
    _check_launch(world, given_size, given_rank)
    health.start(world)
    _wait_for_everyone(world, timeout, "init_process_group")
    if store is None and urlparse(url).scheme != "env":
        store = _rendezvous_store(url, rank, world_size, timeout, world)
    if store is not None:
        store = PrefixStore("default_pg", store)
        _agree_through_store(store, world, timeout, url or "the given store")
        # Rank 0 may serve the store: no rank leaves before every rank has its last answer.
        _wait_for_everyone(world, timeout, "init_process_group")
    _State.default = ProcessGroup(world, range(world.Get_size()), name, timeout, group_name or "default_pg", store)
    GroupMember.WORLD = _State.default


def _rendezvous_store(url, rank, world_size, timeout, world):
    store, store_rank, store_size = next(rendezvous(url, rank, world_size, timeout=timeout))
    _check_launch(world, store_size, store_rank)  # a registered handler may number the ranks itself
    store.set_timeout(timeout)
    return store


def _job_token(world, timeout):
    """Rank 0's name for this MPI job, which every rank learns over MPI."""
    token = np.zeros(96, np.uint8)
    if world.Get_rank() == 0:
        text = f"the MPI job whose rank 0 is pid {os.getpid()} on {socket.gethostname()} ({secrets.token_hex(8)})"
        raw = text.encode()[:token.size]
        token[:len(raw)] = np.frombuffer(raw, np.uint8)
    _bounded(timeout, "init_process_group", lambda: world.Ibcast(token, root=0))
    return token.tobytes().rstrip(b"\0")


def _agree_through_store(store, world, timeout, where):
    """Every rank must have reached the store of the rest of its MPI job (not another job's, not a
    file that only some ranks see): the first rank claims the store for this job, every rank
    checks the claim, then waits until every rank has checked in."""
    token = _job_token(world, timeout)
    owner = store.compare_set("mpi_job", "", token)
    if owner != token:
        raise RuntimeError(f"init_process_group: the store of {where} is already used by {owner.decode(errors='replace')}; "
                           "use a fresh file or a free port for each job")
    me, size = world.Get_rank(), world.Get_size()
    store.set(f"joined/{me}", "1")
    try:
        store.wait([f"joined/{r}" for r in range(size)])
    except DistStoreError:
        joined = [r for r in range(size) if store.check([f"joined/{r}"])]
        raise DistStoreError(f"init_process_group: timed out after {store.timeout} waiting for every rank at {where}: "
                             f"this rank sees only ranks {joined} of {size}; every process of the MPI job must reach "
                             "the same store (the same host and port, or a file on a filesystem they all share)") from None


def _bounded(timeout, what, start):
    """Runs the nonblocking MPI operation that `start()` begins to its end, bounded by the
    timeout, so a missing or failed rank cannot make it hang."""
    channel = Channel.__new__(Channel)
    channel.starting, channel.timeout = [], timeout

    def steps():
        yield Last(start())
    Work(channel, what, steps()).wait()


def _wait_for_everyone(comm, timeout, what):
    _bounded(timeout, what, comm.Ibarrier)


def _make_nccl_premul_sum(factor):
    """ReduceOp.PREMUL_SUM with `factor`, a number or a one-element tensor (torch's private helper).
    As in torch, only NCCL runs it: Ember has no NCCL backend yet, so the CPU backends' collectives
    raise when given it."""
    if isinstance(factor, ember.Tensor):
        if factor.numel() != 1:
            raise ValueError(f"_make_nccl_premul_sum: a tensor factor must hold one element, but has {factor.numel()}")
    elif isinstance(factor, bool) or not isinstance(factor, (int, float)):
        raise TypeError(f"_make_nccl_premul_sum: factor must be a number or a one-element tensor, but got "
                        f"{type(factor).__name__}")
    return ReduceOp(ReduceOp.PREMUL_SUM, factor)


def _get_default_store():
    """The default group's store (torch's private helper): none when MPI did the rendezvous (env://)."""
    store = _default()._store
    if store is None:
        raise RuntimeError("the default process group has no store: with init_method='env://' MPI does the "
                           "rendezvous; initialise it with init_method='tcp://...' or 'file://...', or store=, for one")
    return store


def destroy_process_group(group=None):
    """Destroys `group`, or the default group and every group made from it."""
    if _State.default is None:
        raise ValueError("Default process group has not been initialized, please make sure to call init_process_group.")
    if group is None or group is _State.default:
        for pg in _State.groups + [_State.default]:
            pg._channel.free()
        _State.default, _State.groups = None, []
        GroupMember.WORLD = None
    elif group is not GroupMember.NON_GROUP_MEMBER:
        group._channel.free()
        _State.groups.remove(group)


def _default():
    if _State.default is None:
        raise ValueError("Default process group has not been initialized, please make sure to call init_process_group.")
    return _State.default


def _resolve(group):
    if group is None:
        return _default()
    _default()
    if group is not GroupMember.NON_GROUP_MEMBER and not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup, but got {type(group).__name__}")
    return group


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False, group_desc=None):
    """A group of `ranks` (every rank by default). Every rank of the default group must call it,
    members or not; ranks outside the group get GroupMember.NON_GROUP_MEMBER."""
    world = _default()
    size = world.size()
    members = sorted(range(size) if ranks is None else ranks)
    if len(set(members)) != len(members) or any(not isinstance(r, int) or r < 0 or r >= size for r in members):
        raise ValueError(f"new_group: ranks must be distinct integers in [0, {size}), but got {ranks}")
    if use_local_synchronization:
        raise NotImplementedError("new_group(use_local_synchronization=True) is not supported: every rank calls new_group")
    timeout = _check_timeout(timeout or world._timeout)
    # On `meta`, whose collectives all start in program order (`data` may still have requests of
    # asynchronous operations to start).
    comm = world._channel.meta
    _wait_for_everyone(comm, timeout, "new_group")
    me = comm.Get_rank()
    sub = comm.Split(0 if me in members else _mpi.MPI.UNDEFINED, me)
    if me not in members:
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(sub, members, Backend(backend or world._backend), timeout, group_desc or f"group_{len(_State.groups)}")
    sub.Free()
    _State.groups.append(pg)
    return pg


def get_rank(group=None):
    """This process's rank in `group` (the default group when None); -1 outside it."""
    pg = _resolve(group)
    return -1 if pg is GroupMember.NON_GROUP_MEMBER else pg.rank()


def get_world_size(group=None):
    """The number of ranks in `group`; -1 outside it."""
    pg = _resolve(group)
    return -1 if pg is GroupMember.NON_GROUP_MEMBER else pg.size()


def get_backend(group=None):
    pg = _resolve(group)
    if pg is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("Invalid process group specified")
    return pg._backend


def get_process_group_ranks(group):
    """The global ranks of `group`'s members, in group-rank order."""
    return list(_resolve(group)._ranks)


def get_global_rank(group, group_rank):
    ranks = _resolve(group)._ranks
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {ranks}")
    return ranks[group_rank]


def get_group_rank(group, global_rank):
    ranks = _resolve(group)._ranks
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {ranks}")
    return ranks.index(global_rank)


def _member(group, what):
    """The group, or None (with torch's warning) when this rank is outside it."""
    pg = _resolve(group)
    if pg is GroupMember.NON_GROUP_MEMBER:
        warnings.warn(f"Running {what} on global rank {get_rank()} which does not belong to the given group.", stacklevel=3)
        return None
    health.check()
    return pg


def _root(pg, global_rank, what):
    if not isinstance(global_rank, int) or global_rank not in pg._ranks:
        raise ValueError(f"{what}: rank {global_rank} is not a member of the group (ranks {pg._ranks})")
    return pg._ranks.index(global_rank)


# ---- running operations ----

def _fingerprint(op_name, tensor=None, reduce_op=None, root=-1, extra=()):
    """This rank's description of the call, compared across ranks before the collective runs."""
    shape = tuple(tensor.shape) if tensor is not None else None
    key = (op_name, reduce_op, None if tensor is None else tensor.dtype, root, shape, tuple(extra))
    record = _FINGERPRINTS.get(key)
    if record is None:
        record = np.zeros(_FINGERPRINT, np.int64)
        record[0] = _OPERATIONS[op_name]
        record[1] = -1 if reduce_op is None else reduce_op.value
        record[2] = -1
        record[3] = root
        if tensor is not None:
            record[2], record[4], record[5] = dtype_code(tensor), tensor.numel(), len(shape)
            record[6:6 + min(len(shape), 8)] = shape[:8]
        record[14:14 + len(extra)] = extra
        record.flags.writeable = False
        if len(_FINGERPRINTS) < 4096:  # the calls of a training loop repeat
            _FINGERPRINTS[key] = record
    return record


def _describe(record):
    parts = []
    if record[2] >= 0:
        shape = [int(d) for d in record[6:6 + min(int(record[5]), 8)]]
        parts.append(f"{_mpi.DTYPE_NAMES[int(record[2])]} tensor of shape {shape}")
    if record[1] >= 0:
        parts.append(f"op {ReduceOp.RedOpType(int(record[1])).name}")
    if record[3] >= 0:
        parts.append(f"root {int(record[3])}")
    names = {v: k for k, v in _OPERATIONS.items()}
    return names.get(int(record[0]), "another operation") + (" with " + ", ".join(parts) if parts else "")


def _check_fingerprints(pg, op_name, mine, everyone):
    """Raises on every rank when the ranks' calls differ."""
    if everyone.tobytes() == mine.tobytes() * len(everyone):
        return
    calls = "; ".join(f"rank {pg._ranks[r]}: {_describe(row)}" for r, row in enumerate(everyone))
    raise RuntimeError(f"{op_name}: the ranks called mismatched collectives ({calls}); every rank must call the same "
                       "collective with tensors of the same shape and dtype")


def _run(pg, op_name, steps, outputs=(), async_op=False, fingerprint=None):
    """Starts an operation (its fingerprint check first) and waits unless `async_op`."""
    if fingerprint is not None:
        steps = _checked(pg, op_name, fingerprint, steps)
    work = Work(pg._channel, op_name, steps, outputs)
    if async_op:
        return work
    work.wait()
    return None


def _checked(pg, op_name, mine, steps):
    everyone = np.empty((pg.size(), _FINGERPRINT), np.int64)
    yield pg._channel.meta.Iallgather(mine, everyone)
    _check_fingerprints(pg, op_name, mine, everyone)
    return (yield from steps)


def _divide(tensor, n):
    """In place, through the NumPy view (bfloat16, which NumPy lacks, through ember)."""
    if tensor.dtype == ember.bfloat16:
        with ember.no_grad():
            tensor.detach().div_(n)
    else:
        array = view(tensor)
        np.divide(array, n, out=array)


# ---- collectives ----

def barrier(group=None, async_op=False, device_ids=None):
    """Waits until every rank of the group reaches the barrier."""
    pg = _member(group, "barrier")
    if pg is None:
        return None

    def steps():
        yield Last(pg._channel.data.Ibarrier())
    return _run(pg, "barrier", steps(), async_op=async_op, fingerprint=_fingerprint("barrier"))


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces `tensor` across the group in place; every rank gets the result."""
    check_tensor(tensor, "all_reduce")
    op = check_reduce_op(op, tensor.dtype, "all_reduce")
    pg = _member(group, "all_reduce")
    if pg is None:
        return None
    buf = view(tensor)

    def steps():
        yield Last(pg._channel.data.Iallreduce(_mpi.MPI.IN_PLACE, mpi_buffer(buf, tensor.dtype), mpi_op(op, tensor.dtype)))
        if op == ReduceOp.AVG:
            _divide(tensor, pg.size())
    return _run(pg, "all_reduce", steps(), [tensor], async_op, _fingerprint("all_reduce", tensor, op))


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copies `tensor` from rank `src` (a global rank) to every rank of the group, in place."""
    check_tensor(tensor, "broadcast")
    pg = _member(group, "broadcast")
    if pg is None:
        return None
    root = _root_of(pg, src, group_src, "broadcast")
    buf = view(tensor)

    def steps():
        yield Last(pg._channel.data.Ibcast(mpi_buffer(buf, tensor.dtype), root=root))
    return _run(pg, "broadcast", steps(), [tensor], async_op, _fingerprint("broadcast", tensor, root=root))


def _root_of(pg, rank, group_rank, what):
    if group_rank is not None:
        if rank is not None:
            raise ValueError(f"{what}: give either a global rank or group_src/group_dst, not both")
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"{what}: group rank {group_rank} is out of range for a group of {pg.size()}")
        return group_rank
    return _root(pg, 0 if rank is None else rank, what)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduces `tensor` across the group into rank `dst`'s tensor (the others keep theirs)."""
    check_tensor(tensor, "reduce")
    op = check_reduce_op(op, tensor.dtype, "reduce")
    pg = _member(group, "reduce")
    if pg is None:
        return None
    root = _root_of(pg, dst, group_dst, "reduce")
    buf = view(tensor)
    at_root = pg.rank() == root

    def steps():
        send = _mpi.MPI.IN_PLACE if at_root else mpi_buffer(buf, tensor.dtype)
        recv = mpi_buffer(buf, tensor.dtype) if at_root else None
        yield Last(pg._channel.data.Ireduce(send, recv, mpi_op(op, tensor.dtype), root=root))
        if op == ReduceOp.AVG and at_root:
            _divide(tensor, pg.size())
    return _run(pg, "reduce", steps(), [tensor], async_op, _fingerprint("reduce", tensor, op, root))


def _check_list(tensors, like, n, what):
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{what}: expected a list of tensors, but got {type(tensors).__name__}")
    if len(tensors) != n:
        raise ValueError(f"{what}: expected a list of {n} tensors (one per rank), but got {len(tensors)}")
    for t in tensors:
        check_tensor(t, what)
        if t.dtype != like.dtype or tuple(t.shape) != tuple(like.shape):
            raise ValueError(f"{what}: every tensor must have the dtype and shape of the input ({like.dtype}, "
                             f"{list(like.shape)}), but got {t.dtype}, {list(t.shape)}")


def _scatter_rows(rows, tensors):
    for row, t in zip(rows, tensors):
        view(t)[...] = row


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Fills `tensor_list[r]` with rank r's `tensor`."""
    check_tensor(tensor, "all_gather")
    pg = _member(group, "all_gather")
    if pg is None:
        return None
    _check_list(tensor_list, tensor, pg.size(), "all_gather")
    buf = view(tensor)
    rows = np.empty((pg.size(), buf.size), buf.dtype)

    def steps():
        yield Last(pg._channel.data.Iallgather(mpi_buffer(buf, tensor.dtype), mpi_buffer(rows, tensor.dtype)))
        _scatter_rows(rows, tensor_list)
    return _run(pg, "all_gather", steps(), list(tensor_list), async_op, _fingerprint("all_gather", tensor))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Gathers every rank's `input_tensor` into `output_tensor`, concatenated along dim 0 (or
    stacked: output of shape [world_size, *input.shape])."""
    check_tensor(input_tensor, "all_gather_into_tensor")
    check_tensor(output_tensor, "all_gather_into_tensor")
    pg = _member(group, "all_gather_into_tensor")
    if pg is None:
        return None
    _check_multiple(output_tensor, input_tensor, pg.size(), "all_gather_into_tensor", "output_tensor")
    out, inp = view(output_tensor), view(input_tensor)

    def steps():
        yield Last(pg._channel.data.Iallgather(mpi_buffer(inp, input_tensor.dtype), mpi_buffer(out, output_tensor.dtype)))
    return _run(pg, "all_gather_into_tensor", steps(), [output_tensor], async_op,
                _fingerprint("all_gather_into_tensor", input_tensor))


def _check_multiple(big, small, n, what, name):
    if big.dtype != small.dtype:
        raise TypeError(f"{what}: the tensors must have the same dtype, but got {big.dtype} and {small.dtype}")
    if big.numel() != n * small.numel():
        raise ValueError(f"{what}: {name} must hold world_size ({n}) times the elements of the other tensor "
                         f"({small.numel()}), but has {big.numel()}")


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces `input_list[r]` across ranks into rank r's `output`."""
    check_tensor(output, "reduce_scatter")
    op = check_reduce_op(op, output.dtype, "reduce_scatter")
    pg = _member(group, "reduce_scatter")
    if pg is None:
        return None
    _check_list(input_list, output, pg.size(), "reduce_scatter")
    rows = np.concatenate([view(t) for t in input_list]) if pg.size() else None
    return _reduce_scatter(pg, "reduce_scatter", output, rows, op, async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces `input` (world_size chunks along dim 0) across ranks; rank r's `output` gets
    chunk r of the result."""
    check_tensor(output, "reduce_scatter_tensor")
    check_tensor(input, "reduce_scatter_tensor")
    op = check_reduce_op(op, output.dtype, "reduce_scatter_tensor")
    pg = _member(group, "reduce_scatter_tensor")
    if pg is None:
        return None
    _check_multiple(input, output, pg.size(), "reduce_scatter_tensor", "input")
    return _reduce_scatter(pg, "reduce_scatter_tensor", output, view(input), op, async_op)


def _reduce_scatter(pg, name, output, rows, op, async_op):
    out = view(output)

    def steps():
        yield Last(pg._channel.data.Ireduce_scatter_block(mpi_buffer(rows, output.dtype), mpi_buffer(out, output.dtype),
                                                          mpi_op(op, output.dtype)))
        if op == ReduceOp.AVG:
            _divide(output, pg.size())
    return _run(pg, name, steps(), [output], async_op, _fingerprint(name, output, op))


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Gathers every rank's `tensor` into `gather_list` on rank `dst`."""
    check_tensor(tensor, "gather")
    pg = _member(group, "gather")
    if pg is None:
        return None
    root = _root_of(pg, dst, group_dst, "gather")
    at_root = pg.rank() == root
    if at_root:
        _check_list(gather_list, tensor, pg.size(), "gather")
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    buf = view(tensor)
    rows = np.empty((pg.size(), buf.size), buf.dtype) if at_root else None

    def steps():
        recv = mpi_buffer(rows, tensor.dtype) if at_root else None
        yield Last(pg._channel.data.Igather(mpi_buffer(buf, tensor.dtype), recv, root=root))
        if at_root:
            _scatter_rows(rows, gather_list)
    return _run(pg, "gather", steps(), list(gather_list or []), async_op, _fingerprint("gather", tensor, root=root))


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Rank `src` sends `scatter_list[r]` to rank r, which receives it in `tensor`."""
    check_tensor(tensor, "scatter")
    pg = _member(group, "scatter")
    if pg is None:
        return None
    root = _root_of(pg, src, group_src, "scatter")
    at_root = pg.rank() == root
    if at_root:
        _check_list(scatter_list, tensor, pg.size(), "scatter")
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    buf = view(tensor)
    rows = np.concatenate([view(t) for t in scatter_list]) if at_root else None

    def steps():
        send = mpi_buffer(rows, tensor.dtype) if at_root else None
        yield Last(pg._channel.data.Iscatter(send, mpi_buffer(buf, tensor.dtype), root=root))
    return _run(pg, "scatter", steps(), [tensor], async_op, _fingerprint("scatter", tensor, root=root))


def _row_elements(tensor):
    return tensor.numel() // tensor.shape[0] if tensor.dim() and tensor.shape[0] else 0


def _splits(tensor, sizes, n, what, name):
    if tensor.dim() == 0:
        raise ValueError(f"{what}: {name} must have at least one dimension")
    if sizes is None:
        if tensor.shape[0] % n:
            raise ValueError(f"{what}: dim 0 of {name} ({tensor.shape[0]}) must divide by world_size ({n}) "
                             "when no split sizes are given")
        return [tensor.shape[0] // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n or any(s < 0 for s in sizes) or sum(sizes) != tensor.shape[0]:
        raise ValueError(f"{what}: {name} split sizes must be {n} non-negative numbers adding up to dim 0 "
                         f"({tensor.shape[0]}), but got {sizes}")
    return sizes


def _alltoallv(pg, name, send, send_counts, recv, recv_counts, dtype, finish=None):
    """Every rank first learns every rank's send and receive counts, so a mismatch raises on all."""
    n = pg.size()
    table = np.empty((n, 2, n), np.int64)
    yield pg._channel.data.Iallgather(np.array([send_counts, recv_counts], np.int64), table)
    if not (table[:, 0, :] == table[:, 1, :].T).all():
        raise RuntimeError(f"{name}: the split sizes of the ranks do not match: rank i sends rank j "
                           f"{table[:, 0, :].tolist()}[i][j] elements, but rank j expects {table[:, 1, :].T.tolist()}[i][j]")
    send_displ = np.concatenate([[0], np.cumsum(send_counts)[:-1]]).astype(int)
    recv_displ = np.concatenate([[0], np.cumsum(recv_counts)[:-1]]).astype(int)
    send_msg = mpi_vector(send, send_counts, send_displ, dtype)
    recv_msg = mpi_vector(recv, recv_counts, recv_displ, dtype)
    yield Last(pg._channel.data.Ialltoallv(send_msg, recv_msg))
    if finish is not None:
        finish()


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None, async_op=False):
    """Rank i sends chunk j of `input` (split along dim 0) to rank j, which stores it as chunk i
    of `output`; chunks are equal unless split sizes are given."""
    check_tensor(output, "all_to_all_single")
    check_tensor(input, "all_to_all_single")
    if output.dtype != input.dtype:
        raise TypeError(f"all_to_all_single: output and input must have the same dtype, got {output.dtype} and {input.dtype}")
    pg = _member(group, "all_to_all_single")
    if pg is None:
        return None
    n = pg.size()
    send_rows = _splits(input, input_split_sizes, n, "all_to_all_single", "input")
    recv_rows = _splits(output, output_split_sizes, n, "all_to_all_single", "output")
    if tuple(output.shape[1:]) != tuple(input.shape[1:]):
        raise ValueError(f"all_to_all_single: output and input must have the same shape past dim 0, but got "
                         f"{list(output.shape)} and {list(input.shape)}")
    row = max(_row_elements(input), _row_elements(output))
    steps = _alltoallv(pg, "all_to_all_single", view(input), [s * row for s in send_rows], view(output),
                       [s * row for s in recv_rows], input.dtype)
    return _run(pg, "all_to_all_single", steps, [output], async_op,
                _fingerprint("all_to_all_single", None, extra=[dtype_code(input), row]))


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Rank i sends `input_tensor_list[j]` to rank j, which receives it in `output_tensor_list[i]`."""
    pg = _member(group, "all_to_all")
    if pg is None:
        return None
    n = pg.size()
    for name, tensors in (("output_tensor_list", output_tensor_list), ("input_tensor_list", input_tensor_list)):
        if not isinstance(tensors, (list, tuple)) or len(tensors) != n:
            raise ValueError(f"all_to_all: {name} must be a list of {n} tensors (one per rank)")
        for t in tensors:
            check_tensor(t, "all_to_all")
    dtypes = {t.dtype for t in list(output_tensor_list) + list(input_tensor_list)}
    if len(dtypes) != 1:
        raise TypeError(f"all_to_all: every tensor must have the same dtype, but got {sorted(map(str, dtypes))}")
    dtype = dtypes.pop()
    send = np.concatenate([view(t) for t in input_tensor_list])
    recv = np.empty(sum(t.numel() for t in output_tensor_list), send.dtype)

    def finish():
        start = 0
        for t in output_tensor_list:
            view(t)[...] = recv[start:start + t.numel()]
            start += t.numel()
    steps = _alltoallv(pg, "all_to_all", send, [t.numel() for t in input_tensor_list], recv,
                       [t.numel() for t in output_tensor_list], dtype, finish)
    return _run(pg, "all_to_all", steps, list(output_tensor_list), async_op,
                _fingerprint("all_to_all", None, extra=[_mpi.DTYPES[dtype][0]]))


# ---- point to point ----

def _check_tag(tag):
    if not isinstance(tag, int) or tag < 0 or tag > _mpi.MPI.COMM_WORLD.Get_attr(_mpi.MPI.TAG_UB):
        raise ValueError(f"tag must be a non-negative integer no larger than MPI's TAG_UB, but got {tag!r}")


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Sends `tensor` to rank `dst` asynchronously; returns a Work."""
    check_tensor(tensor, "isend")
    _check_tag(tag)
    pg = _member(group, "isend")
    if pg is None:
        return None
    peer = _root_of_peer(pg, dst, group_dst, "send")
    buf = view(tensor)

    def steps():
        yield Last(pg._channel.data.Isend(mpi_buffer(buf, tensor.dtype), dest=peer, tag=tag))
    return Work(pg._channel, "send", steps(), [tensor])


def _root_of_peer(pg, rank, group_rank, what):
    peer = _root_of(pg, rank, group_rank, what)
    if peer == pg.rank():
        raise ValueError(f"Invalid destination rank: {what} to or from the calling rank itself")
    return peer


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receives into `tensor` from rank `src` (any rank when None) asynchronously; the Work's
    `source_rank()` tells which rank sent it."""
    check_tensor(tensor, "irecv")
    _check_tag(tag)
    pg = _member(group, "irecv")
    if pg is None:
        return None
    peer = _mpi.MPI.ANY_SOURCE if src is None and group_src is None else _root_of_peer(pg, src, group_src, "recv")
    buf = view(tensor)
    expected = buf.nbytes

    def steps():
        try:
            status = yield Last(pg._channel.data.Irecv(mpi_buffer(buf, tensor.dtype), source=peer, tag=tag))
        except RuntimeError as error:
            raise RuntimeError(f"recv: the message is larger than the receiving tensor ({expected} bytes); the sent "
                               f"and received tensors must match ({error})") from None
        got = status.Get_count(_mpi.MPI.BYTE)
        if got != expected:
            raise RuntimeError(f"recv: received {got} bytes from rank {pg._ranks[status.Get_source()]}, but the "
                               f"tensor holds {expected}; the sent and received tensors must match")
        return pg._ranks[status.Get_source()]
    return Work(pg._channel, "recv", steps(), [tensor])


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Sends `tensor` to rank `dst` and waits until it has gone."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receives into `tensor` from `src` (any rank when None); returns the sender's rank."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return work.source_rank()


class P2POp:
    """One send or receive for batch_isend_irecv: `P2POp(dist.isend, tensor, peer)`."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``ember.distributed.isend`` or "
                             "``ember.distributed.irecv``.")
        self.op, self.tensor, self.peer, self.group, self.tag, self.group_peer = op, tensor, peer, group, tag, group_peer


def batch_isend_irecv(p2p_op_list):
    """Starts every send and receive of the list; returns their Works."""
    if not isinstance(p2p_op_list, (list, tuple)) or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type ``ember.distributed.P2POp``.")
    return [p.op(p.tensor, p.peer, p.group, p.tag, p.group_peer) for p in p2p_op_list]


# ---- Python objects ----

def _pickle(obj):
    return np.frombuffer(pickle.dumps(obj), np.uint8)


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Replaces `object_list`'s items on every rank with rank `src`'s (pickled; only use it with
    trusted ranks, as torch)."""
    pg = _member(group, "broadcast_object_list")
    if pg is None:
        return
    if not isinstance(object_list, list):
        raise TypeError(f"broadcast_object_list: object_list must be a list, but got {type(object_list).__name__}")
    root = _root_of(pg, src, group_src, "broadcast_object_list")
    payload = _pickle(list(object_list)) if pg.rank() == root else None

    def steps():
        size = np.array([0 if payload is None else payload.size], np.int64)
        yield pg._channel.data.Ibcast(size, root=root)
        data = payload if payload is not None else np.empty(int(size[0]), np.uint8)
        yield Last(pg._channel.data.Ibcast(data, root=root))
        received = pickle.loads(data.tobytes())
        if len(received) != len(object_list):
            raise ValueError(f"broadcast_object_list: rank {src} sent {len(received)} objects, but this rank's list "
                             f"holds {len(object_list)}")
        object_list[:] = received
    _run(pg, "broadcast_object_list", steps(), fingerprint=_fingerprint("broadcast_object_list", root=root,
                                                                         extra=[len(object_list)]))


def _gather_objects(pg, obj, root=None):
    """Steps that gather every rank's pickled `obj` (to all ranks, or to `root`); returns the list."""
    payload = _pickle(obj)
    sizes = np.empty(pg.size(), np.int64)
    yield pg._channel.data.Iallgather(np.array([payload.size], np.int64), sizes)
    receiving = root is None or pg.rank() == root
    data = np.empty(int(sizes.sum()) if receiving else 0, np.uint8)
    displs = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int)
    if root is None:
        yield Last(pg._channel.data.Iallgatherv(payload, [data, (list(sizes), list(displs))]))
    else:
        recv = [data, (list(sizes), list(displs))] if receiving else None
        yield Last(pg._channel.data.Igatherv(payload, recv, root=root))
    if not receiving:
        return None
    return [pickle.loads(data[d:d + s].tobytes()) for d, s in zip(displs, sizes)]


def all_gather_object(object_list, obj, group=None):
    """Fills `object_list[r]` with rank r's `obj` (pickled; only with trusted ranks)."""
    pg = _member(group, "all_gather_object")
    if pg is None:
        return
    if not isinstance(object_list, list) or len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list must be a list of world_size ({pg.size()}) items")

    def steps():
        object_list[:] = yield from _gather_objects(pg, obj)
    _run(pg, "all_gather_object", steps(), fingerprint=_fingerprint("all_gather_object"))


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """Gathers every rank's `obj` into `object_gather_list` on rank `dst`."""
    pg = _member(group, "gather_object")
    if pg is None:
        return
    root = _root_of(pg, dst, group_dst, "gather_object")
    if pg.rank() == root and (not isinstance(object_gather_list, list) or len(object_gather_list) != pg.size()):
        raise ValueError(f"gather_object: object_gather_list must be a list of world_size ({pg.size()}) items on the "
                         "destination rank")

    def steps():
        gathered = yield from _gather_objects(pg, obj, root)
        if gathered is not None:
            object_gather_list[:] = gathered
    _run(pg, "gather_object", steps(), fingerprint=_fingerprint("gather_object", root=root))


__all__ = [
    "Backend", "DistBackendError", "DistError", "DistNetworkError", "DistStoreError", "FileStore", "GroupMember",
    "HashStore", "P2POp", "PrefixStore", "ProcessGroup", "QueueEmptyError", "ReduceOp", "Store", "TCPStore", "Work",
    "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce", "all_to_all", "all_to_all_single",
    "barrier", "batch_isend_irecv", "broadcast", "broadcast_object_list", "default_pg_timeout",
    "destroy_process_group", "gather", "gather_object", "get_backend", "get_global_rank", "get_group_rank",
    "get_process_group_ranks", "get_rank", "get_world_size", "group", "init_process_group", "irecv",
    "is_available", "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available", "isend",
    "new_group", "recv", "reduce", "reduce_scatter", "reduce_scatter_tensor", "register_rendezvous_handler",
    "rendezvous", "scatter", "send",
]
