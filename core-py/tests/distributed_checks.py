"""Checks that run inside an MPI job (started by test_distributed*.py through the launcher):
`python distributed_checks.py SUITE OUT_DIR`. Every rank runs every check of the suite, records
"ok" or the error, and rank 0 writes every rank's outcomes to OUT_DIR/results.json; pytest turns
each check into one test. Failure suites (a rank raising, a rank dying) instead write one file
per surviving rank."""
import datetime
import json
import os
import signal
import sys
import time
import traceback
import warnings

import numpy as np

import ember

CHECKS = {}   # suite -> {name: function}


def check(*suites):
    def register(fn):
        for suite in suites:
            CHECKS.setdefault(suite, {})[fn.__name__] = fn
        return fn
    return register


def rank_world():
    import ember.distributed as dist
    return dist.get_rank(), dist.get_world_size()


def close(got, want, tol=1e-6):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.allclose(got, want, rtol=tol, atol=tol), f"max error {np.abs(got - want).max()}"


def expect(error_type, fn, *words):
    try:
        fn()
    except error_type as error:
        for w in words:
            assert w in str(error), f"{w!r} not in {error}"
        return error
    raise AssertionError(f"expected {error_type.__name__}")


def rank_data(rank, shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed * 100 + rank).standard_normal(shape).astype(dtype)


# ---- collectives against NumPy ----

@check("collectives")
def all_reduce_ops_and_dtypes():
    import ember.distributed as dist
    r, n = rank_world()
    ops = {dist.ReduceOp.SUM: np.sum, dist.ReduceOp.AVG: np.mean, dist.ReduceOp.MIN: np.min,
           dist.ReduceOp.MAX: np.max, dist.ReduceOp.PRODUCT: np.prod}
    for dtype, tol in ((ember.float32, 1e-5), (ember.float64, 1e-12), (ember.float16, 2e-2), (ember.bfloat16, 5e-2)):
        for op, ref in ops.items():
            data = [rank_data(k, (3, 5)).astype(np.float64) for k in range(n)]
            t = ember.from_numpy(data[r]).to(dtype)
            rounded = [ember.from_numpy(d).to(dtype).double().numpy().copy() for d in data]
            dist.all_reduce(t, op)
            close(t.double().numpy(), ref(np.stack(rounded), axis=0), tol)
    ints = [np.arange(6, dtype=np.int64) * (k + 2) for k in range(n)]
    for op, ref in ((dist.ReduceOp.SUM, np.sum), (dist.ReduceOp.MAX, np.max), (dist.ReduceOp.BXOR, np.bitwise_xor.reduce)):
        t = ember.from_numpy(ints[r].copy())
        dist.all_reduce(t, op)
        assert t.numpy().tolist() == ref(np.stack(ints), axis=0).tolist()
    flags = ember.tensor([r == 0, False, True])
    dist.all_reduce(flags)
    assert flags.tolist() == [True, False, True]
    empty = ember.zeros(0)
    dist.all_reduce(empty)


@check("collectives")
def all_reduce_writes_through_views_and_parameters():
    import ember.distributed as dist
    r, n = rank_world()
    base = ember.zeros(4, 6)
    row = base[1]                       # a contiguous view: the result lands in base
    row.fill_(float(r + 1))
    dist.all_reduce(row)
    assert base[1].tolist() == [n * (n + 1) / 2] * 6 and base[0].tolist() == [0.0] * 6
    p = ember.nn.Parameter(ember.full((3,), float(r)))
    dist.all_reduce(p)
    assert p.requires_grad and p.tolist() == [sum(range(n))] * 3
    expect(ValueError, lambda: dist.all_reduce(base.t()), "contiguous")
    expect(TypeError, lambda: dist.all_reduce(base, op="sum"), "ReduceOp")
    expect(ValueError, lambda: dist.all_reduce(ember.ones(2, dtype=ember.int64), dist.ReduceOp.AVG), "AVG")
    expect(TypeError, lambda: dist.all_reduce(np.ones(3)), "ember.Tensor")
    from mpi4py import MPI
    from ember.distributed import distributed_c10d
    expect(ValueError, lambda: distributed_c10d._check_launch(MPI.COMM_WORLD, n + 1, -1), "world_size", "mpiexec")


@check("collectives")
def broadcast_reduce_from_every_root():
    import ember.distributed as dist
    r, n = rank_world()
    for root in range(n):
        t = ember.from_numpy(rank_data(r, (7,)))
        dist.broadcast(t, src=root)
        close(t.numpy(), rank_data(root, (7,)))
        t = ember.from_numpy(rank_data(r, (2, 3)))
        dist.reduce(t, dst=root, op=dist.ReduceOp.MAX)
        want = np.max([rank_data(k, (2, 3)) for k in range(n)], axis=0) if r == root else rank_data(r, (2, 3))
        close(t.numpy(), want)
    expect(ValueError, lambda: dist.broadcast(ember.ones(1), src=n), "not a member")


@check("collectives")
def gathers_and_scatters():
    import ember.distributed as dist
    r, n = rank_world()
    mine = ember.from_numpy(rank_data(r, (2, 3)))
    everyone = [rank_data(k, (2, 3)) for k in range(n)]
    out = [ember.zeros(2, 3) for _ in range(n)]
    dist.all_gather(out, mine)
    for o, w in zip(out, everyone):
        close(o.numpy(), w)
    flat = ember.zeros(2 * n, 3)
    dist.all_gather_into_tensor(flat, mine)
    close(flat.numpy(), np.concatenate(everyone))
    stacked = ember.zeros(n, 2, 3)
    dist.all_gather_into_tensor(stacked, mine)
    close(stacked.numpy(), np.stack(everyone))
    expect(ValueError, lambda: dist.all_gather_into_tensor(ember.zeros(2 * n + 1, 3), mine), "world_size")
    for root in range(n):
        gathered = [ember.zeros(2, 3) for _ in range(n)] if r == root else None
        dist.gather(mine, gathered, dst=root)
        if r == root:
            for o, w in zip(gathered, everyone):
                close(o.numpy(), w)
        chunk = ember.zeros(4)
        parts = [ember.full((4,), float(10 * root + k)) for k in range(n)] if r == root else None
        dist.scatter(chunk, parts, src=root)
        assert chunk.tolist() == [float(10 * root + r)] * 4
    expect(ValueError, lambda: dist.gather(mine, [ember.zeros(2, 3)] * n, dst=(r + 1) % n), "non-destination")


@check("collectives")
def reduce_scatters():
    import ember.distributed as dist
    r, n = rank_world()
    inputs = [[rank_data(k, (5,), seed=j) for j in range(n)] for k in range(n)]
    out = ember.zeros(5)
    dist.reduce_scatter(out, [ember.from_numpy(a) for a in inputs[r]])
    close(out.numpy(), sum(inputs[k][r] for k in range(n)), 1e-5)
    big = ember.from_numpy(np.concatenate(inputs[r]))
    dist.reduce_scatter_tensor(out, big, op=dist.ReduceOp.AVG)
    close(out.numpy(), sum(inputs[k][r] for k in range(n)) / n, 1e-5)
    close(big.numpy(), np.concatenate(inputs[r]))  # the input is left alone


@check("collectives")
def all_to_all_even_and_uneven():
    import ember.distributed as dist
    r, n = rank_world()
    send = ember.arange(2 * n).float() + 100 * r
    recv = ember.zeros(2 * n)
    dist.all_to_all_single(recv, send)
    assert recv.tolist() == [float(100 * k + 2 * r + j) for k in range(n) for j in range(2)]
    # rank i sends i + j + 1 rows of width 3 to rank j
    in_splits = [r + j + 1 for j in range(n)]
    out_splits = [k + r + 1 for k in range(n)]
    src = ember.from_numpy(np.concatenate([np.full((s, 3), 10 * r + j, np.float32) for j, s in enumerate(in_splits)]))
    dst = ember.zeros(sum(out_splits), 3)
    dist.all_to_all_single(dst, src, out_splits, in_splits)
    want = np.concatenate([np.full((s, 3), 10 * k + r, np.float32) for k, s in enumerate(out_splits)])
    close(dst.numpy(), want)
    outs = [ember.zeros(k + 1) for k in range(n)]
    dist.all_to_all(outs, [ember.full((r + 1,), float(r * n + j)) for j in range(n)])
    for k, o in enumerate(outs):
        assert o.tolist() == [float(k * n + r)] * (k + 1)


@check("collectives")
def point_to_point():
    import ember.distributed as dist
    r, n = rank_world()
    right, left = (r + 1) % n, (r - 1) % n
    got = ember.zeros(4)
    if r % 2 == 0:
        dist.send(ember.full((4,), float(r)), right)
        dist.recv(got, left)
    else:
        dist.recv(got, left)
        dist.send(ember.full((4,), float(r)), right)
    assert got.tolist() == [float(left)] * 4
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, ember.full((3,), float(r)), right, tag=5),
                                    dist.P2POp(dist.irecv, got[:3], left, tag=5)])
    for w in works:
        w.wait()
    assert got[:3].tolist() == [float(left)] * 3
    if r == 0:
        senders = set()
        for _ in range(n - 1):
            buf = ember.zeros(2, dtype=ember.int64)
            senders.add(dist.recv(buf))
            assert buf.tolist() == [7, 7]
        assert senders == set(range(1, n))
    else:
        dist.send(ember.full((2,), 7, dtype=ember.int64), 0)
    expect(ValueError, lambda: dist.send(ember.ones(1), r), "itself")


@check("collectives")
def objects():
    import ember.distributed as dist
    r, n = rank_world()
    objs = [None] * n
    dist.all_gather_object(objs, {"rank": r, "data": list(range(r))})
    assert objs == [{"rank": k, "data": list(range(k))} for k in range(n)]
    items = ["x", 1, {"r": r}] if r == n - 1 else [None, None, None]
    dist.broadcast_object_list(items, src=n - 1)
    assert items == ["x", 1, {"r": n - 1}]
    gathered = [None] * n if r == 0 else None
    dist.gather_object(("t", r), gathered, dst=0)
    if r == 0:
        assert gathered == [("t", k) for k in range(n)]


@check("collectives")
def async_work_and_futures():
    import ember.distributed as dist
    r, n = rank_world()
    t = ember.full((1000,), float(r))
    work = dist.all_reduce(t, async_op=True)
    second = dist.all_reduce(ember.ones(3), async_op=True)
    fut = work.get_future().then(lambda f: f.value()[0] * 2)
    assert work.wait() is True and work.is_completed()
    assert fut.wait().tolist()[:2] == [2.0 * sum(range(n))] * 2
    second.wait()
    assert work.result()[0] is t
    dist.barrier()
    dist.barrier(async_op=True).wait()


@check("collectives")
def subgroups():
    import ember.distributed as dist
    r, n = rank_world()
    members = [0, n - 1]
    g = dist.new_group(members)
    if r in members:
        assert dist.get_world_size(g) == 2 and dist.get_rank(g) == members.index(r)
        t = ember.full((2,), float(r))
        dist.all_reduce(t, group=g)
        assert t.tolist() == [float(n - 1)] * 2
        t = ember.full((1,), float(r))
        dist.broadcast(t, src=n - 1, group=g)
        assert t.tolist() == [float(n - 1)]
        assert dist.get_process_group_ranks(g) == members
    else:
        assert g is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(g) == -1
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert dist.all_reduce(ember.ones(1), group=g) is None
        assert any("does not belong" in str(w.message) for w in caught)
    expect(ValueError, lambda: dist.new_group([0, 0]), "distinct")
    dist.destroy_process_group(g) if g is not dist.GroupMember.NON_GROUP_MEMBER else None


@check("collectives")
def mismatched_collectives_raise_on_every_rank():
    import ember.distributed as dist
    r, n = rank_world()
    expect(RuntimeError, lambda: dist.all_reduce(ember.zeros(3 + r)), "mismatched", "shape [3]", "shape [4]")
    expect(RuntimeError, lambda: dist.all_reduce(ember.zeros(3, dtype=ember.float64 if r else ember.float32)),
           "mismatched", "float64")
    expect(RuntimeError, lambda: dist.all_reduce(ember.zeros(3), dist.ReduceOp.MAX if r else dist.ReduceOp.SUM),
           "mismatched", "op MAX")
    expect(RuntimeError, lambda: dist.broadcast(ember.zeros(2), src=0 if r else 1), "mismatched", "root")
    if r == 0:
        expect(RuntimeError, lambda: dist.all_reduce(ember.zeros(2)), "mismatched", "broadcast")
    else:
        expect(RuntimeError, lambda: dist.broadcast(ember.zeros(2), src=0), "mismatched", "all_reduce")
    splits = [1] * n
    if r == 0:
        splits = [2] + [1] * (n - 2) + [0] if n > 2 else [2, 0]
    expect(RuntimeError, lambda: dist.all_to_all_single(ember.zeros(sum(splits)), ember.zeros(n), splits), "split sizes")
    if r in (0, 1):
        if r == 0:
            dist.send(ember.ones(5), 1)
        else:
            expect(RuntimeError, lambda: dist.recv(ember.zeros(3), 0), "larger")
    t = ember.full((2,), 1.0)  # the group still works after a mismatch
    dist.all_reduce(t)
    assert t.tolist() == [float(n)] * 2


# ---- emberdata on the process group ----

@check("collectives")
def emberdata_ranks_come_from_the_process_group():
    import ember.distributed as dist
    from emberdata import DistributedSampler
    from emberdata.dataloader2 import DataLoader2, DistributedReadingService
    from emberdata.datapipes.iter import IterableWrapper
    r, n = rank_world()
    saved = {k: os.environ.pop(k, None) for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    try:
        sampler = DistributedSampler(list(range(10)), shuffle=False)
        assert (sampler.num_replicas, sampler.rank) == (n, r)
        padded = list(range(10)) + list(range((-10) % n))  # padded by repeating from the start, as torch
        assert list(sampler) == padded[r::n]
        # rank r holds 5 + r items: every rank stops when the shortest shard runs out
        pipe = IterableWrapper(list(range(5 * n + n * (n - 1) // 2))).shuffle().sharding_filter()
        loader = DataLoader2(pipe, reading_service=DistributedReadingService())
        mine = list(loader)
        everyone = [None] * n
        dist.all_gather_object(everyone, mine)
        assert len({len(e) for e in everyone}) == 1
        flat = [v for e in everyone for v in e]
        assert len(flat) == len(set(flat)), "ranks must get disjoint shards"
        loader.shutdown()
    finally:
        for k, v in saved.items():
            if v is not None:
                os.environ[k] = v



# ---- DistributedDataParallel ----

def _mlp(seed=0, hidden=16):
    ember.manual_seed(seed)
    nn = ember.nn
    return nn.Sequential(nn.Linear(6, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 3))


def _data(rows=24, seed=5):
    rng = np.random.default_rng(seed)
    return (ember.from_numpy(rng.standard_normal((rows, 6)).astype(np.float32)),
            ember.from_numpy(rng.standard_normal((rows, 3)).astype(np.float32)))


def _shard(t):
    r, n = rank_world()
    per = t.shape[0] // n
    return t[r * per:(r + 1) * per]


def _train(model, x, y, steps, opt=None, lr=0.05):
    opt = opt or ember.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return [p.detach().numpy().copy() for p in model.parameters()], losses


def _same_params(got, want, tol=1e-5):
    for g, w in zip(got, want):
        close(g, w, tol)


@check("training")
def ddp_matches_single_process_training():
    from ember.nn.parallel import DistributedDataParallel as DDP
    r, n = rank_world()
    x, y = _data(8 * n)
    want, _ = _train(_mlp(), x, y, 6)
    for kwargs in ({}, {"bucket_cap_mb": 0.0005}, {"gradient_as_bucket_view": True, "bucket_cap_mb": 0.0005}):
        ddp = DDP(_mlp(seed=r), **kwargs)  # different initial weights: rank 0's are broadcast
        got, _ = _train(ddp, _shard(x), _shard(y), 6)
        _same_params(got, want)
    assert len(DDP(_mlp(), bucket_cap_mb=0.0005)._buckets) > 2


@check("training")
def ddp_no_sync_accumulates_locally():
    import ember.distributed as dist
    from ember.nn.parallel import DistributedDataParallel as DDP
    r, n = rank_world()
    x, y = _data(8 * n)
    ref = _mlp()
    ((ref(x) - y) ** 2).mean().backward()
    ddp = DDP(_mlp())
    xs, ys = _shard(x), _shard(y)
    with ddp.no_sync():
        ((ddp(xs[:4]) - ys[:4]) ** 2).mean().backward()
    local = [p.grad.numpy().copy() for p in ddp.parameters()]
    others = [None] * n
    dist.all_gather_object(others, local[0].tolist())
    assert any(o != others[0] for o in others), "no_sync must not average"
    ((ddp(xs[4:]) - ys[4:]) ** 2).mean().backward()
    for p, q in zip(ddp.parameters(), ref.parameters()):
        close(p.grad.numpy() / 2, q.grad.numpy(), 1e-5)  # two half-batch means accumulated


@check("training")
def ddp_unused_parameters():
    from ember.nn.parallel import DistributedDataParallel as DDP
    r, n = rank_world()

    class Branchy(ember.nn.Module):
        def __init__(self):
            super().__init__()
            ember.manual_seed(0)
            self.a, self.b, self.never = ember.nn.Linear(4, 2), ember.nn.Linear(4, 2), ember.nn.Linear(4, 2)

        def forward(self, x, use_b):
            return self.a(x) + (self.b(x) if use_b else 0)

    x = ember.ones(2, 4)
    model = DDP(Branchy(), find_unused_parameters=True)
    model(x, use_b=(r == 0)).sum().backward()
    assert model.module.never.weight.grad is None  # no rank used it
    ref = Branchy()
    ref(x, True).sum().backward()
    close(model.module.b.weight.grad.numpy(), ref.b.weight.grad.numpy() / n)
    close(model.module.a.weight.grad.numpy(), ref.a.weight.grad.numpy())
    strict = DDP(Branchy())
    expect(RuntimeError, lambda: strict(x, use_b=True).sum().backward(), "find_unused_parameters", "never.weight")


@check("training")
def ddp_broadcast_buffers_and_model_check():
    from ember.nn.parallel import DistributedDataParallel as DDP
    r, n = rank_world()
    ember.manual_seed(0)
    model = DDP(ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4)))
    model(ember.from_numpy(rank_data(r, (5, 3))))  # batch statistics differ per rank
    # the next forward starts by copying rank 0's buffers to every rank (eval mode leaves them there)
    with ember.no_grad():
        model.module[1].running_mean.fill_(float(r))
    model.eval()
    model(ember.ones(1, 3))
    assert model.module[1].running_mean.tolist() == [0.0] * 4
    expect(RuntimeError, lambda: DDP(ember.nn.Linear(3, 2 + r)), "same model")


@check("training")
def ddp_comm_hooks_match_plain_averaging():
    from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
    from ember.nn.parallel import DistributedDataParallel as DDP
    r, n = rank_world()
    x, y = _data(8 * n)
    want, _ = _train(_mlp(), x, y, 4)
    for hook, tol in ((default_hooks.allreduce_hook, 1e-5), (default_hooks.fp16_compress_hook, 3e-3),
                      (default_hooks.bf16_compress_hook, 2e-2)):
        ddp = DDP(_mlp(), bucket_cap_mb=0.0005)
        ddp.register_comm_hook(None, hook)
        expect(RuntimeError, lambda: ddp.register_comm_hook(None, hook), "only be called once")
        got, _ = _train(ddp, _shard(x), _shard(y), 4)
        _same_params(got, want, tol)


@check("training")
def ddp_powersgd_converges():
    import ember.distributed as dist
    from ember.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powerSGD
    from ember.nn.parallel import DistributedDataParallel as DDP
    r, n = rank_world()
    x, y = _data(8 * n)
    _, ref_losses = _train(_mlp(hidden=32), x, y, 60)
    ddp = DDP(_mlp(hidden=32))
    state = powerSGD.PowerSGDState(None, matrix_approximation_rank=2, start_powerSGD_iter=2)
    ddp.register_comm_hook(state, powerSGD.powerSGD_hook)
    got, _ = _train(ddp, _shard(x), _shard(y), 60)
    final = float(((ddp.module(x) - y) ** 2).mean())
    assert final < 0.5 * ref_losses[0], (final, ref_losses[0])
    assert final < ref_losses[-1] * 1.5 + 0.05, (final, ref_losses[-1])
    assert state.compression_stats()[0] > 1 and state.iter == 60
    everyone = [None] * n
    dist.all_gather_object(everyone, [g.tolist() for g in got])
    assert all(e == everyone[0] for e in everyone), "replicas diverged"


# ---- ZeroRedundancyOptimizer ----

@check("training")
def zero_matches_plain_adam_and_consolidates():
    import ember.distributed as dist
    from ember.distributed.optim import ZeroRedundancyOptimizer
    from ember.nn.parallel import DistributedDataParallel as DDP
    r, n = rank_world()
    x, y = _data(8 * n)
    ref = _mlp()
    ref_opt = ember.optim.Adam(ref.parameters(), lr=0.01)
    want, _ = _train(ref, x, y, 5, ref_opt)
    ddp = DDP(_mlp())
    zero = ZeroRedundancyOptimizer(ddp.parameters(), ember.optim.Adam, lr=0.01)
    got, _ = _train(ddp, _shard(x), _shard(y), 5, zero)
    _same_params(got, want)
    owned = sum(len(g["params"]) for g in zero.optim.param_groups) if zero.optim else 0
    assert owned < len(list(ddp.parameters()))
    expect(RuntimeError, zero.state_dict, "consolidated")
    zero.consolidate_state_dict(to=0)
    if r == 0:
        full, plain = zero.state_dict(), ref_opt.state_dict()
        assert sorted(full["state"]) == sorted(plain["state"])
        for k in plain["state"]:
            close(full["state"][k]["exp_avg_sq"].numpy(), plain["state"][k]["exp_avg_sq"].numpy())
    else:
        full = None
    holder = [full]
    dist.broadcast_object_list(holder, src=0)
    fresh = ZeroRedundancyOptimizer(ddp.parameters(), ember.optim.Adam, lr=0.5)
    fresh.load_state_dict(holder[0])
    assert fresh.param_groups[0]["lr"] == 0.01
    if fresh.optim is not None:
        p = fresh.optim.param_groups[0]["params"][0]
        i = [id(q) for q in ddp.parameters()].index(id(p))
        close(fresh.optim.state[p]["exp_avg"].numpy(), holder[0]["state"][i]["exp_avg"].numpy())


# ---- FullyShardedDataParallel ----

def _fsdp_model(seed=0, dropout=0.0):
    ember.manual_seed(seed)
    nn = ember.nn
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Sequential(nn.Linear(16, 16), nn.Dropout(dropout), nn.Tanh()),
                         nn.Linear(16, 3))


def _fsdp_train(model, x, y, steps, opt=None):
    opt = opt or ember.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(steps):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
    return opt


@check("training")
def fsdp_matches_single_process_training():
    import functools
    from ember.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy
    from ember.distributed.fsdp.wrap import ModuleWrapPolicy, size_based_auto_wrap_policy
    r, n = rank_world()
    x, y = _data(8 * n)
    ref = _fsdp_model()
    _fsdp_train(ref, x, y, 4)
    want = ref.state_dict()
    total = sum(p.numel() for p in _fsdp_model().parameters())
    for strategy in ShardingStrategy.FULL_SHARD, ShardingStrategy.SHARD_GRAD_OP, ShardingStrategy.NO_SHARD:
        for policy, units in ((None, 1), (functools.partial(size_based_auto_wrap_policy, min_num_params=200), 2),
                              (ModuleWrapPolicy([ember.nn.Linear]), 4)):
            model = FSDP(_fsdp_model(seed=r), sharding_strategy=strategy, auto_wrap_policy=policy,
                         sync_module_states=True)
            flat = list(model.parameters())
            assert len(flat) == units, (strategy, len(flat))
            if strategy != ShardingStrategy.NO_SHARD and policy is None:
                assert flat[0].numel() == -(-total // n)
            _fsdp_train(model, _shard(x), _shard(y), 4)
            got = model.state_dict()
            assert list(got) == list(want) or sorted(got) == sorted(want), (list(got), list(want))
            for k in want:
                close(got[k].numpy(), want[k].numpy(), 1e-5)


@check("training")
def fsdp_clip_grad_norm_matches_the_unsharded_model():
    from ember.distributed.fsdp import FullyShardedDataParallel as FSDP
    from ember.distributed.fsdp.wrap import ModuleWrapPolicy
    r, n = rank_world()
    x, y = _data(8 * n)
    ref = _fsdp_model()
    ((ref(x) - y) ** 2).mean().backward()
    want = ember.nn.utils.clip_grad_norm_(ref.parameters(), 0.1)
    model = FSDP(_fsdp_model(), auto_wrap_policy=ModuleWrapPolicy([ember.nn.Linear]))
    ((model(_shard(x)) - _shard(y)) ** 2).mean().backward()
    got = model.clip_grad_norm_(0.1)
    close(got.item(), want.item(), 1e-5)
    ember.optim.SGD(model.parameters(), lr=1.0).step()
    ember.optim.SGD(ref.parameters(), lr=1.0).step()
    for k, v in ref.state_dict().items():
        close(model.state_dict()[k].numpy(), v.numpy(), 1e-5)


@check("training")
def fsdp_full_shard_recomputes_with_the_same_random_state():
    from ember.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy
    r, n = rank_world()
    x, y = _data(8 * n)
    results = []
    for strategy in ShardingStrategy.FULL_SHARD, ShardingStrategy.SHARD_GRAD_OP:
        model = FSDP(_fsdp_model(dropout=0.5), sharding_strategy=strategy)
        ember.manual_seed(100 + r)
        _fsdp_train(model, _shard(x), _shard(y), 3)
        results.append(model.state_dict())
    for k in results[0]:
        close(results[0][k].numpy(), results[1][k].numpy(), 1e-6)


@check("training")
def fsdp_mixed_precision():
    from ember.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision
    r, n = rank_world()
    x, y = _data(8 * n)
    ref = _fsdp_model()
    _fsdp_train(ref, x, y, 3)
    model = FSDP(_fsdp_model(), mixed_precision=MixedPrecision(param_dtype=ember.bfloat16, reduce_dtype=ember.float32))
    _fsdp_train(model, _shard(x), _shard(y), 3)
    assert all(p.dtype == ember.float32 for p in model.parameters())
    got, want = model.state_dict(), ref.state_dict()
    for k in want:
        close(got[k].numpy(), want[k].numpy(), 0.05)


@check("training")
def fsdp_state_dicts_and_sharded_resume():
    import tempfile
    from ember.distributed.fsdp import (FullStateDictConfig, FullyShardedDataParallel as FSDP, StateDictType)
    from ember.distributed.fsdp.wrap import ModuleWrapPolicy
    r, n = rank_world()
    x, y = _data(8 * n)
    policy = ModuleWrapPolicy([ember.nn.Linear])
    straight = FSDP(_fsdp_model(), auto_wrap_policy=policy)
    _fsdp_train(straight, _shard(x), _shard(y), 5)
    first = FSDP(_fsdp_model(), auto_wrap_policy=policy)
    opt = _fsdp_train(first, _shard(x), _shard(y), 3)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, f"rank{r}.pt")
        with FSDP.state_dict_type(first, StateDictType.SHARDED_STATE_DICT):
            ember.save({"model": first.state_dict(), "optim": opt.state_dict()}, path)
        checkpoint = ember.load(path)
    assert all("_flat_param" in k for k in checkpoint["model"])
    resumed = FSDP(_fsdp_model(seed=7), auto_wrap_policy=policy)
    with FSDP.state_dict_type(resumed, StateDictType.SHARDED_STATE_DICT):
        resumed.load_state_dict(checkpoint["model"])
    opt = ember.optim.Adam(resumed.parameters(), lr=0.01)
    opt.load_state_dict(checkpoint["optim"])
    _fsdp_train(resumed, _shard(x), _shard(y), 2, opt)
    want, got = straight.state_dict(), resumed.state_dict()
    for k in want:
        close(got[k].numpy(), want[k].numpy(), 1e-6)
    # a full state dict loads into the plain module, and back into a fresh FSDP model
    plain = _fsdp_model(seed=3)
    plain.load_state_dict(want)
    again = FSDP(_fsdp_model(seed=9), auto_wrap_policy=policy)
    again.load_state_dict(want)
    for k, v in again.state_dict().items():
        close(v.numpy(), want[k].numpy(), 0)
    with FSDP.state_dict_type(again, StateDictType.FULL_STATE_DICT, FullStateDictConfig(rank0_only=True)):
        assert (len(again.state_dict()) > 0) == (r == 0)
    expect(RuntimeError, lambda: again.load_state_dict({"bogus": ember.zeros(1)}), "unexpected keys")


# ---- pipeline parallelism ----

@check("training")
def pipeline_schedules_match_unsplit_training():
    from ember.distributed.pipelining import Schedule1F1B, ScheduleGPipe, SplitPoint, pipeline
    r, n = rank_world()
    x, y = _data(16)

    def model():
        ember.manual_seed(0)
        layers = [ember.nn.Linear(6, 8), ember.nn.Tanh()]
        for _ in range(n - 1):
            layers += [ember.nn.Linear(8, 8), ember.nn.Tanh()]
        return ember.nn.Sequential(*layers, ember.nn.Linear(8, 3))

    def mse(out, target):
        return ((out - target) ** 2).mean()
    ref = model()
    want, _ = _train(ref, x, y, 3, ember.optim.SGD(ref.parameters(), lr=0.1))
    split = {str(2 * k): SplitPoint.BEGINNING for k in range(1, n)}
    per_stage = [len(list(pipeline(model(), split_spec=split).get_stage_module(k).parameters())) for k in range(n)]
    first = sum(per_stage[:r])
    for schedule_class in ScheduleGPipe, Schedule1F1B:
        pipe = pipeline(model(), (x[:4],), split_spec=split)
        assert pipe.num_stages == n
        stage = pipe.build_stage(r)
        schedule = schedule_class(stage, n_microbatches=4, loss_fn=mse)
        opt = ember.optim.SGD(stage.submod.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            losses = []
            out = schedule.step(x, target=y, losses=losses) if r == 0 else schedule.step(target=y, losses=losses)
            assert (out is not None) == (r == n - 1) and len(losses) == (4 if r == n - 1 else 0)
            opt.step()
        got = [p.detach().numpy() for p in stage.submod.parameters()]
        _same_params(got, want[first:first + per_stage[r]])
    with ember.no_grad():
        out = schedule.step(x) if r == 0 else schedule.step()
    if r == n - 1:
        with ember.no_grad():
            close(out.numpy(), ref(x).numpy(), 1e-5)
    expect(NotImplementedError, lambda: pipeline(ember.nn.Linear(2, 2)), "Sequential")



# ---- failures (each its own job) ----

def _timeout_group(seconds):
    import ember.distributed as dist
    dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=seconds))


def _report(out_dir, rank, outcome):
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(outcome, f)


def failure_run(kind, out_dir):
    """Rank 1 raises, hangs or is killed; the others must get a clear DistBackendError."""
    import ember.distributed as dist
    _timeout_group(60 if kind == "raise" else 2)
    r = dist.get_rank()
    dist.barrier()
    if r == 1:
        if kind == "raise":
            raise ValueError("rank one gave up")
        if kind == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(4)  # "hang": join the collective long after the others gave up
    try:
        dist.all_reduce(ember.ones(4))
        outcome = "no error"
    except dist.DistBackendError as error:
        outcome = str(error)
    _report(out_dir, r, outcome)
    try:  # the group stays unusable
        dist.barrier()
    except dist.DistBackendError as error:
        _report(out_dir, r, outcome + " | then: " + str(error))


def main():
    suite, out_dir = sys.argv[1], sys.argv[2]
    if suite in ("raise", "hang", "kill"):
        return failure_run(suite, out_dir)
    import ember.distributed as dist
    expect(NotImplementedError, lambda: dist.init_process_group("nccl"), "CUDA")
    dist.init_process_group("gloo" if suite == "training" else "mpi", timeout=datetime.timedelta(seconds=30))
    expect(ValueError, lambda: dist.init_process_group("mpi"), "twice")
    r, n = rank_world()
    outcomes = {}
    for name, fn in CHECKS[suite].items():
        try:
            fn()
            outcomes[name] = "ok"
        except Exception:
            outcomes[name] = traceback.format_exc()
            print(f"rank {r}: {name} failed:\n{outcomes[name]}", file=sys.stderr, flush=True)
    everyone = [None] * n
    dist.all_gather_object(everyone, outcomes)
    if r == 0:
        with open(os.path.join(out_dir, "results.json"), "w") as f:
            json.dump(everyone, f)
    dist.destroy_process_group()
    assert not dist.is_initialized()


if __name__ == "__main__":
    main()
