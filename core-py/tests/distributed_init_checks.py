"""init_process_group's rendezvous, DDP's mixed precision and FSDP's no_sync, in a real MPI job
(started by test_distributed_store.py):
`mpiexec -n 2 python distributed_init_checks.py OUT_DIR TCP_PORT TCP_PORT2 STALE_FILE`.

Each check initialises the default group one way (tcp://, file://, store=) or expects a clear
error, on every rank alike, then destroys the group; every rank writes its outcomes to
OUT_DIR/rank{r}.json."""
import copy
import datetime
import json
import os
import sys
import traceback

import numpy as np

import ember
import ember.distributed as dist
from ember.distributed.distributed_c10d import _get_default_store

SECONDS = datetime.timedelta(seconds=20)
RANK, SIZE = int(os.environ.get("PMI_RANK", -1)), int(os.environ.get("PMI_SIZE", -1))  # MPICH's numbering


def collectives_work():
    t = ember.ones(3) * (dist.get_rank() + 1)
    dist.all_reduce(t)
    assert t.tolist() == [3.0] * 3, t.tolist()
    assert dist.get_world_size() == 2


def store_is_shared():
    """The group's store: what one rank sets, the other reads."""
    store = _get_default_store()
    store.set(f"hello/{dist.get_rank()}", str(dist.get_rank()))
    assert store.get(f"hello/{1 - dist.get_rank()}") == str(1 - dist.get_rank()).encode()
    dist.barrier()


def expect(error_type, words, **init_args):
    try:
        dist.init_process_group("gloo", timeout=SECONDS, **init_args)
    except error_type as error:
        for w in words:
            assert w in str(error), f"{w!r} not in {error}"
        assert not dist.is_initialized()
        return
    dist.destroy_process_group()
    raise AssertionError(f"expected {error_type.__name__}")


def initialised(**init_args):
    dist.init_process_group("gloo", timeout=SECONDS, **init_args)
    try:
        collectives_work()
        store_is_shared()
    finally:
        dist.destroy_process_group()


def main():
    out_dir, port, port2, stale = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    checks = {
        "tcp_with_rank_arguments": lambda: initialised(init_method=f"tcp://127.0.0.1:{port}", rank=RANK, world_size=SIZE),
        "tcp_with_rank_in_the_url": lambda: initialised(
            init_method=f"tcp://localhost:{port2}?rank={RANK}&world_size={SIZE}"),
        "file": lambda: initialised(init_method=f"file://{out_dir}/rendezvous", rank=RANK, world_size=SIZE),
        "store_argument": lambda: initialised(store=dist.FileStore(f"{out_dir}/given", SIZE), rank=RANK, world_size=SIZE),
        "env_has_no_store": env_has_no_store,
        "rank_parameter_missing": lambda: expect(ValueError, ["tcp:// rendezvous: rank parameter missing"],
                                                 init_method=f"tcp://127.0.0.1:{port}"),
        "ranks_must_match_mpi": lambda: expect(ValueError, ["rank is", "MPI started this process as rank"],
                                               init_method=f"tcp://127.0.0.1:{port}", rank=1 - RANK, world_size=SIZE),
        "world_size_must_match_mpi": lambda: expect(ValueError, ["world_size is 3"],
                                                    init_method=f"file://{out_dir}/x?rank={RANK}&world_size=3"),
        "unshared_store_times_out": unshared_store_times_out,
        "another_jobs_store_is_refused": lambda: expect(RuntimeError, ["already used by another job", "fresh file"],
                                                        init_method=f"file://{stale}", rank=RANK, world_size=SIZE),
        "ddp_mixed_precision": ddp_mixed_precision,
        "fsdp_no_sync_accumulates_then_reduces": fsdp_no_sync_accumulates_then_reduces,
    }
    outcomes = {}
    for name, check in checks.items():
        try:
            check()
            outcomes[name] = "ok"
        except Exception:
            outcomes[name] = traceback.format_exc()
    with open(os.path.join(out_dir, f"rank{RANK}.json"), "w") as f:
        json.dump(outcomes, f)


def env_has_no_store():
    dist.init_process_group("gloo", timeout=SECONDS)
    try:
        _get_default_store()
        raise AssertionError("env:// opened a store")
    except RuntimeError as error:
        assert "no store" in str(error), error
    finally:
        dist.destroy_process_group()


def unshared_store_times_out():
    """Each rank has a store of its own (as with a file:// path that is not on a shared
    filesystem): every rank sees only itself and raises once the store's timeout is over."""
    store = dist.HashStore()
    store.set_timeout(datetime.timedelta(seconds=1))
    expect(dist.DistStoreError, [f"this rank sees only ranks [{RANK}] of 2", "the same store"],
           store=store, rank=RANK, world_size=SIZE)


class Scale(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", ember.full((1,), 0.5, dtype=ember.float64))

    def forward(self, x):
        return x * self.scale


def _model64():
    ember.manual_seed(0)
    nn = ember.nn
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), Scale(), nn.Linear(16, 3)).double()


def _reference(x, y, steps):
    """Full precision (float64) parameters trained on the whole batch with float32 gradients:
    what DDP with param_dtype=float32 computes, on one process."""
    model = _model64()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        low = copy.deepcopy(model).float()
        ((low(x.float()) - y.float()) ** 2).mean().backward()
        for p, q in zip(model.parameters(), low.parameters()):
            p.grad = q.grad.double()
        opt.step()
    return [p.detach().numpy().copy() for p in model.parameters()]


def _train_ddp(ddp, x, y, steps):
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1)
    half = x.shape[0] // SIZE
    xs, ys = x[RANK * half:(RANK + 1) * half], y[RANK * half:(RANK + 1) * half]
    for _ in range(steps):
        opt.zero_grad()
        out = ddp(xs)
        assert out.dtype == ember.float32, out.dtype
        ((out - ys) ** 2).mean().backward()
        assert all(p.dtype == ember.float64 and p.grad.dtype == ember.float64 for p in ddp.parameters())
        opt.step()
    return [p.detach().numpy().copy() for p in ddp.parameters()]


def _close(got, want, tol):
    for g, w in zip(got, want):
        assert np.allclose(g, w, rtol=tol, atol=tol), f"max error {np.abs(g - w).max()}"


def ddp_mixed_precision():
    from ember.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
    from ember.nn.parallel.distributed import DistributedDataParallel as DDP, _MixedPrecision
    rng = np.random.default_rng(3)
    x = ember.from_numpy(rng.standard_normal((16, 6)))
    y = ember.from_numpy(rng.standard_normal((16, 3)))
    want = _reference(x, y, 3)
    dist.init_process_group("gloo", timeout=SECONDS)
    try:
        ddp = DDP(_model64(), mixed_precision=_MixedPrecision(param_dtype=ember.float32, buffer_dtype=ember.float32))
        assert ddp.module[2].scale.dtype == ember.float32  # buffers are cast once
        _close(_train_ddp(ddp, x, y, 3), want, 1e-5)
        assert all(p.dtype == ember.float64 for p in ddp.module.state_dict().values() if p.dim() > 1)

        seen = set()

        def recording_hook(state, bucket):
            seen.add(bucket.buffer().dtype)
            return allreduce_hook(state, bucket)
        ddp = DDP(_model64(), mixed_precision=_MixedPrecision(ember.float32, ember.bfloat16, ember.float32))
        ddp.register_comm_hook(None, recording_hook)
        _close(_train_ddp(ddp, x, y, 3), want, 2e-2)
        assert seen == {ember.bfloat16}, seen
        for bad, error in ((_MixedPrecision(param_dtype=ember.int32), ValueError), (object(), TypeError)):
            try:
                DDP(_model64(), mixed_precision=bad)
            except error:
                continue
            raise AssertionError(f"mixed_precision={bad!r} must raise {error.__name__}")
    finally:
        dist.destroy_process_group()


def _mlp32():
    ember.manual_seed(0)
    nn = ember.nn
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))


def fsdp_no_sync_accumulates_then_reduces():
    """A no_sync backward on the first half of each rank's rows, then a synchronised one on the
    second half: the shards get the rank average of the two half-batch gradients' sum, which is
    twice the whole batch's mean gradient."""
    from ember.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy
    from ember.distributed.fsdp.wrap import ModuleWrapPolicy
    rng = np.random.default_rng(4)
    x = ember.from_numpy(rng.standard_normal((16, 6)).astype(np.float32))
    y = ember.from_numpy(rng.standard_normal((16, 3)).astype(np.float32))
    ref = _mlp32()
    ((ref(x) - y) ** 2).mean().backward()
    ember.optim.SGD(ref.parameters(), lr=0.2).step()  # lr 0.1 on twice the gradient
    want = ref.state_dict()
    rows = x.shape[0] // SIZE
    xs, ys = x[RANK * rows:(RANK + 1) * rows], y[RANK * rows:(RANK + 1) * rows]
    dist.init_process_group("gloo", timeout=SECONDS)
    try:
        for strategy in (ShardingStrategy.FULL_SHARD, ShardingStrategy.SHARD_GRAD_OP, ShardingStrategy.NO_SHARD):
            model = FSDP(_mlp32(), sharding_strategy=strategy, auto_wrap_policy=ModuleWrapPolicy([ember.nn.Linear]))
            with model.no_sync():
                ((model(xs[:rows // 2]) - ys[:rows // 2]) ** 2).mean().backward()
            assert all(p.grad is None for p in model.parameters()), "no_sync must not reduce"
            ((model(xs[rows // 2:]) - ys[rows // 2:]) ** 2).mean().backward()
            ember.optim.SGD(model.parameters(), lr=0.1).step()
            got = model.state_dict()
            for k in want:
                _close([got[k].numpy()], [want[k].numpy()], 1e-5)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
