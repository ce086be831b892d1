"""Random draws, indexing and lerp on a GPU, against the CPU backend on the same inputs: a seed
draws the same numbers on both devices (uniform and integer draws bit for bit, normal ones to
float64 rounding), and every indexing op gives the CPU's values and errors. Skipped where
`ember.cuda.is_available()` is False (CI has no GPU)."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F

pytestmark = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU and its driver")

FLOATS = [ember.float32, ember.float64, ember.float16, ember.bfloat16]
INTS = [ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64]


def host(t):
    """`t`'s values as a NumPy array (bfloat16 widened to float32, which holds it exactly)."""
    t = t.detach().cpu()
    return (t.float() if t.dtype == ember.bfloat16 else t).numpy()


def exact(gpu, cpu):
    """`gpu` is a CUDA tensor equal to `cpu` element for element (NaN where NaN)."""
    assert gpu.device.type == "cuda", gpu.device
    assert gpu.dtype == cpu.dtype and tuple(gpu.shape) == tuple(cpu.shape)
    np.testing.assert_array_equal(host(gpu), host(cpu))


def close(gpu, cpu, tol=1e-5):
    assert gpu.device.type == "cuda" and gpu.dtype == cpu.dtype and tuple(gpu.shape) == tuple(cpu.shape)
    np.testing.assert_allclose(host(gpu).astype(np.float64), host(cpu).astype(np.float64), rtol=tol, atol=tol, equal_nan=True)


def seeded(draw, seed=1234):
    """`draw(device)` on the CPU and on CUDA, each right after `manual_seed(seed)`."""
    ember.manual_seed(seed)
    cpu = draw("cpu")
    ember.manual_seed(seed)
    gpu = draw("cuda")
    return gpu, cpu


def sample(shape, dtype=ember.float32, seed=0):
    """Integer-valued floats (or small integers): sums and products of a few stay exact."""
    g = ember.Generator().manual_seed(seed)
    return ember.randint(-4, 5, shape, generator=g).to(dtype)


# ---- random ----

@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("n", [1, 1000, 1001])
def test_rand_is_the_cpu_stream_bit_for_bit(dtype, n):
    gpu, cpu = seeded(lambda d: ember.rand(n, dtype=dtype, device=d))
    exact(gpu, cpu)
    # The stream advanced as far on both: the next draws agree too.
    gpu, cpu = seeded(lambda d: (ember.rand(n, device=d), ember.rand(3, 5, device=d))[1])
    exact(gpu, cpu)


@pytest.mark.parametrize("low, high, dtype", [(0, 10, ember.int64), (-5, 7, ember.int32), (-2**62, 2**62, ember.int64), (0, 2, ember.uint8)])
def test_randint_is_the_cpu_stream_bit_for_bit(low, high, dtype):
    gpu, cpu = seeded(lambda d: ember.randint(low, high, (37, 29), dtype=dtype, device=d))
    exact(gpu, cpu)


def test_randn_and_normal_equal_the_cpu_to_rounding():
    gpu, cpu = seeded(lambda d: ember.randn(4099, dtype=ember.float64, device=d))
    close(gpu, cpu, 1e-13)
    gpu, cpu = seeded(lambda d: ember.randn(64, 33, device=d))
    close(gpu, cpu, 1e-6)
    gpu, cpu = seeded(lambda d: ember.normal(2.0, 3.0, (1000,), device=d))
    close(gpu, cpu, 1e-5)
    assert abs(float(gpu.cpu().mean()) - 2.0) < 0.5


def test_nn_init_draws_on_the_tensors_device():
    def init(d):
        w = ember.empty(20, 30, device=d)
        ember.nn.init.uniform_(w, -2.0, 3.0)
        v = ember.empty(50, device=d, dtype=ember.float64)
        ember.nn.init.normal_(v, 1.0, 0.5)
        return w, v

    (gw, gv), (cw, cv) = seeded(init)
    exact(gw, cw)
    close(gv, cv, 1e-13)


def test_bernoulli_and_dropout_masks_match_the_cpu():
    p = ember.rand(500)
    gpu, cpu = seeded(lambda d: ember.bernoulli(p.to(d)))
    exact(gpu, cpu)
    gpu, cpu = seeded(lambda d: ember.bernoulli(ember.zeros(300, device=d), 0.25))
    exact(gpu, cpu)
    x = ember.randn(8, 16, 5)
    gpu, cpu = seeded(lambda d: F.dropout(x.to(d), 0.3))
    exact(gpu, cpu)
    gpu, cpu = seeded(lambda d: F.dropout2d(x.unsqueeze(-1).to(d), 0.5))
    exact(gpu, cpu)
    layer = ember.nn.Dropout(0.2)
    gpu, cpu = seeded(lambda d: layer(x.to(d)))
    exact(gpu, cpu)
    with pytest.raises(RuntimeError, match="p_in >= 0"):
        ember.bernoulli(ember.full((3,), 1.5, device="cuda"))


# ---- advanced indexing ----

@pytest.mark.parametrize("dtype", FLOATS + INTS + [ember.bool])
def test_getitem_with_index_tensors(dtype):
    x = sample((5, 6, 7), dtype)
    g = x.cuda()
    i = ember.tensor([4, 0, -1, 2, 2])
    j = ember.tensor([[1, 4], [0, -5]])
    for key in [i, (slice(None), j), (i, slice(None), i), (j, 3, j), (Ellipsis, i.to(ember.int32)), ([0, 3], [1, 2])]:
        exact(g[key], x[key])
    # Non-contiguous on the device.
    exact(g.permute(2, 0, 1)[i[:3]], x.permute(2, 0, 1)[i[:3]])
    exact(g.transpose(0, 2)[:, j], x.transpose(0, 2)[:, j])


def test_getitem_with_masks():
    x = ember.randn(6, 9)
    g = x.cuda()
    exact(g[g > 0], x[x > 0])
    rows = ember.tensor([True, False, True, True, False, False])
    exact(g[rows.cuda()], x[rows])
    exact(g[rows], x[rows])  # a CPU mask indexes a CUDA tensor, as in PyTorch
    exact(g[:, g[0] > 0], x[:, x[0] > 0])


def test_empty_index_tensors():
    x = ember.randn(4, 5)
    g = x.cuda()
    empty = ember.tensor([], dtype=ember.int64)
    exact(g[empty], x[empty])
    exact(g[:, empty], x[:, empty])
    g[empty] = 1.0
    exact(g, x)
    exact(g.gather(1, ember.zeros(4, 0, dtype=ember.int64, device="cuda")), x.gather(1, ember.zeros(4, 0, dtype=ember.int64)))
    exact(g[g > 100], x[x > 100])
    exact(ember.zeros(3, 0, device="cuda")[ember.tensor([0, 2])], ember.zeros(3, 0)[ember.tensor([0, 2])])


@pytest.mark.parametrize("dtype", FLOATS + INTS + [ember.bool])
def test_setitem_and_index_put(dtype):
    x = sample((6, 5), dtype)
    values = sample((3, 5), dtype, seed=1)
    for key, v in [(ember.tensor([0, 4, -1]), values), ((slice(None), ember.tensor([1, 3])), sample((6, 2), dtype, seed=4)), ((ember.tensor([1, 2]), ember.tensor([0, 4])), values[0, :2])]:
        c, g = x.clone(), x.cuda()
        c[key] = v
        g[key] = v.cuda()
        exact(g, c)
    c, g = x.clone(), x.cuda()
    c[ember.tensor([2, 3])] = 1
    g[ember.tensor([2, 3])] = 1
    exact(g, c)


@pytest.mark.parametrize("dtype", FLOATS + INTS + [ember.bool])
def test_index_put_accumulates_duplicates(dtype):
    x = sample((7, 3), dtype)
    idx = ember.tensor([1, 1, 5, 1, 0, 5, -1])
    values = sample((7, 3), dtype, seed=2)
    c, g = x.clone(), x.cuda()
    c.index_put_((idx,), values, accumulate=True)
    g.index_put_((idx.cuda(),), values.cuda(), accumulate=True)
    exact(g, c)
    # Two index tensors, broadcast values, a transposed destination.
    c, g = x.t().contiguous().t(), x.t().contiguous().cuda().t()
    rows, cols = ember.tensor([0, 0, 6, 0]), ember.tensor([2, 2, 1, 2])
    c.index_put_((rows, cols), ember.tensor(1).to(dtype), accumulate=True)
    g.index_put_((rows.cuda(), cols.cuda()), ember.tensor(1).to(dtype).cuda(), accumulate=True)
    exact(g, c)


def test_index_add_copy_fill_select_and_take():
    x = ember.randn(5, 4, 3, dtype=ember.float64)
    idx = ember.tensor([3, 0, 3, 1])
    src = ember.randn(3, 4, 5, dtype=ember.float64)
    got = x.cuda().index_add_(1, idx.cuda(), src.cuda().permute(2, 1, 0))  # (5, 4, 3), non-contiguous
    close(got, x.clone().index_add_(1, idx, src.permute(2, 1, 0)), 1e-12)
    distinct = ember.tensor([3, 0, 1])
    exact(x.cuda().index_copy_(0, distinct.cuda(), x[:3].cuda()), x.clone().index_copy_(0, distinct, x[:3]))
    exact(x.cuda().index_fill_(2, ember.tensor([0, 2]).cuda(), -1.0), x.clone().index_fill_(2, ember.tensor([0, 2]), -1.0))
    for dim in range(3):
        exact(x.cuda().index_select(dim, ember.tensor([2, 0, 2]).cuda()), x.index_select(dim, ember.tensor([2, 0, 2])))
    exact(x.cuda().index_select(1, ember.tensor([1, 3], dtype=ember.int32).cuda()), x.index_select(1, ember.tensor([1, 3], dtype=ember.int32)))
    exact(x.cuda().take(ember.tensor([[0, -1], [17, 3]]).cuda()), x.take(ember.tensor([[0, -1], [17, 3]])))


def test_indexing_gradients():
    base, values, src = ember.randn(5, 4), ember.randn(2, 4), ember.randn(5, 2)
    idx = ember.tensor([3, 1])
    cols = ember.tensor([[0, 3], [1, 1], [2, 0], [3, 3], [0, 0]])
    results = []
    for d in ("cpu", "cuda"):
        x, v, s = (t.detach().to(d).requires_grad_() for t in (base, values, src))
        y = x * 1.0
        y[idx.to(d)] = v  # put: x's gradient masked where overwritten
        w = (x * 1.0).scatter(1, ember.tensor([[1], [0], [2], [3], [1]]).to(d), s[:, :1])
        parts = [y[ember.tensor([0, 3, 3]).to(d)], y.gather(1, cols.to(d)), w * w]
        out = ember.cat([p.reshape(-1) for p in parts])
        out.backward(ember.ones_like(out))  # no reduction: the test needs only indexing kernels
        results.append((x.grad, v.grad, s.grad))
    for gpu, cpu in zip(results[1], results[0]):
        close(gpu, cpu, 1e-5)


# ---- gather / scatter ----

def index_for(shape, dim, size, seed=0):
    g = ember.Generator().manual_seed(seed)
    return ember.randint(0, size, shape, generator=g)


@pytest.mark.parametrize("shape, dim", [((6,), 0), ((4, 5), 0), ((4, 5), 1), ((3, 4, 5), 0), ((3, 4, 5), 1), ((3, 4, 5), 2)])
def test_gather(shape, dim):
    x = ember.randn(*shape)
    index_shape = tuple(max(1, s - 1) for s in shape)
    idx = index_for(index_shape, dim, shape[dim])
    exact(x.cuda().gather(dim, idx.cuda()), x.gather(dim, idx))
    # Non-contiguous input and index.
    xt = x.transpose(0, -1)
    it = index_for(tuple(max(1, s - 1) for s in reversed(xt.shape)), dim, xt.shape[dim], seed=1)
    exact(x.cuda().transpose(0, -1).gather(dim, it.cuda().transpose(0, -1)), xt.gather(dim, it.transpose(0, -1)))
    exact(ember.gather(x.cuda(), -1, idx.cuda()[..., :1]), ember.gather(x, -1, idx[..., :1]))


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.bfloat16, ember.int64, ember.int32, ember.int16, ember.uint8])
@pytest.mark.parametrize("shape, dim", [((8,), 0), ((4, 6), 1), ((5, 3, 4), 0), ((5, 3, 4), 2)])
def test_scatter_add_and_assign(dtype, shape, dim):
    x = sample(shape, dtype)
    index_shape = tuple(max(1, s - 1) for s in shape)
    idx = index_for(index_shape, dim, max(1, shape[dim] // 2))  # many duplicates
    src = sample(index_shape, dtype, seed=3)
    exact(x.cuda().scatter_add_(dim, idx.cuda(), src.cuda()), x.clone().scatter_add_(dim, idx, src))
    # Assignment with distinct targets along dim (duplicates would leave the winner unspecified).
    unique = ember.arange(index_shape[dim]).reshape([-1 if d == dim else 1 for d in range(len(shape))]).expand(*index_shape).contiguous()
    exact(x.cuda().scatter_(dim, unique.cuda(), src.cuda()), x.clone().scatter_(dim, unique, src))
    exact(x.cuda().scatter_(dim, unique.cuda(), 7), x.clone().scatter_(dim, unique, 7))


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.bfloat16, ember.int64, ember.int32, ember.int8])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(dtype, reduce, include_self):
    x = sample((4, 6, 5), dtype)
    idx = index_for((5, 3, 4), 1, 4, seed=7)
    src = sample((5, 3, 4), dtype, seed=8).clamp(-2, 2)
    c, g = x.transpose(0, 2).clone(), x.cuda().transpose(0, 2)  # (5, 6, 4), non-contiguous
    c.scatter_reduce_(1, idx, src, reduce, include_self=include_self)
    g.scatter_reduce_(1, idx.cuda(), src.cuda(), reduce, include_self=include_self)
    if dtype.is_floating_point and reduce == "mean":
        close(g, c, 1e-2 if dtype == ember.bfloat16 else 1e-6)
    else:
        exact(g, c)


def test_scatter_amax_propagates_nan():
    x = ember.zeros(3)
    src = ember.tensor([1.0, float("nan"), 2.0, -1.0])
    idx = ember.tensor([0, 1, 1, 2])
    exact(x.cuda().scatter_reduce_(0, idx.cuda(), src.cuda(), "amax"), x.clone().scatter_reduce_(0, idx, src, "amax"))


# ---- embedding and the losses that pick a class ----

def test_embedding_forward_and_backward_with_repeated_indices():
    weight = ember.randn(10, 4)
    idx = ember.tensor([[1, 3, 1], [9, 1, 0]])
    g_out = ember.randn(2, 3, 4)
    for padding_idx in (None, 1):
        grads = []
        for d in ("cpu", "cuda"):
            w = weight.detach().to(d).requires_grad_()
            y = F.embedding(idx.to(d), w, padding_idx=padding_idx)
            y.backward(g_out.to(d))
            grads.append((y, w.grad))
        (gy, gw), (cy, cw) = grads[1], grads[0]
        exact(gy.detach(), cy.detach())
        close(gw, cw, 1e-5)
    for norm_type in (2.0, 1.0, float("inf")):
        w = {d: weight.clone().to(d) for d in ("cpu", "cuda")}
        outs = {d: F.embedding(idx.to(d), w[d], max_norm=1.0, norm_type=norm_type) for d in w}
        close(outs["cuda"], outs["cpu"], 1e-6)
        close(w["cuda"], w["cpu"], 1e-6)  # the looked-up rows renormalised in place
    layer = ember.nn.Embedding(10, 4).to("cuda")
    assert layer(idx.cuda()).device.type == "cuda"


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 4])
def test_embedding_bag(mode, padding_idx):
    weight = ember.randn(10, 3, dtype=ember.float64)
    idx = ember.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    offsets = ember.tensor([0, 4, 4, 6])  # an empty bag in the middle
    psw = ember.rand(8, dtype=ember.float64) if mode == "sum" else None

    def bag(d):
        return F.embedding_bag(idx.to(d), weight.to(d), offsets.to(d), mode=mode, padding_idx=padding_idx,
                               per_sample_weights=None if psw is None else psw.to(d))

    close(bag("cuda"), bag("cpu"), 1e-12)
    two_d = ember.tensor([[0, 9], [9, 9]])
    exact(F.embedding_bag(two_d.cuda(), weight.t().cuda().t(), mode=mode), F.embedding_bag(two_d, weight, mode=mode))


@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_forward_and_backward(weighted):
    logits = ember.randn(6, 5)
    target = ember.tensor([0, 4, 2, -100, 1, 4])
    weight = ember.rand(5) + 0.5 if weighted else None
    results = []
    for d in ("cpu", "cuda"):
        x = logits.detach().to(d).requires_grad_()
        loss = F.cross_entropy(x, target.to(d), weight=None if weight is None else weight.to(d), ignore_index=-100)
        loss.backward()
        results.append((loss, x.grad))
    (gl, gg), (cl, cg) = results[1], results[0]
    close(gl.detach(), cl.detach(), 1e-5)
    close(gg, cg, 1e-5)
    per_sample = F.nll_loss(F.log_softmax(logits.cuda(), 1), ember.tensor([0, 4, 2, 3, 1, 4]).cuda(), reduction="none")
    close(per_sample, F.nll_loss(F.log_softmax(logits, 1), ember.tensor([0, 4, 2, 3, 1, 4]), reduction="none"), 1e-5)


# ---- masks, triangles, lerp, joins ----

def test_masked_fill():
    x = ember.randn(4, 5)
    mask = ember.tensor([True, False, True, False, False])
    exact(x.cuda().masked_fill(mask.cuda(), -2.5), x.masked_fill(mask, -2.5))
    c, g = x.clone(), x.cuda()
    c.masked_fill_(x > 0, 0.0)
    g.masked_fill_(g > 0, 0.0)
    exact(g, c)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float16, ember.int64, ember.bool, ember.complex64])
def test_triu_and_tril(dtype):
    x = ember.randn(3, 5, 4).to(dtype) if dtype != ember.bool else ember.randn(3, 5, 4) > 0
    for diagonal in (-2, 0, 1, 7):
        exact(x.cuda().triu(diagonal), x.triu(diagonal))
        exact(x.cuda().tril(diagonal), x.tril(diagonal))
        exact(x.cuda().transpose(1, 2).tril(diagonal), x.transpose(1, 2).tril(diagonal))
    g = x.cuda()
    g.triu_(1)
    exact(g, x.triu(1))


@pytest.mark.parametrize("dtype", FLOATS)
def test_lerp(dtype):
    start, end = ember.randn(6, 7).to(dtype), ember.randn(7).to(dtype)
    weight = ember.rand(6, 1).to(dtype) * 1.5 - 0.25
    for w in (weight, 0.0, 1.0, 0.3):
        wg = w.cuda() if isinstance(w, ember.Tensor) else w
        got, want = ember.lerp(start.cuda(), end.cuda(), wg), ember.lerp(start, end, w)
        if dtype in (ember.float32, ember.float64):
            exact(got, want)
        else:
            close(got, want, 1e-2)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float16, ember.int32, ember.uint8, ember.bool])
def test_nonzero_and_masked_select(dtype):
    x = (ember.randn(300, 401) > 0.7).to(dtype) * 3 if dtype != ember.bool else ember.randn(300, 401) > 0.7
    g = x.cuda()
    exact(g.nonzero(), x.nonzero())
    exact(g.t().nonzero(), x.t().nonzero())  # non-contiguous, and more than one chunk
    for a, b in zip(ember.nonzero(g, as_tuple=True), ember.nonzero(x, as_tuple=True)):
        exact(a, b)
    exact(ember.tensor(5, device="cuda").to(dtype).nonzero(), ember.tensor(5).to(dtype).nonzero())
    values = ember.randn(300, 401)
    exact(values.cuda().masked_select(g != 0), values.masked_select(x != 0))
    exact(values.cuda().masked_select(g[0] != 0), values.masked_select(x[0] != 0))  # broadcast mask
    nan = ember.tensor([0.0, float("nan"), -0.0, 1.0])
    exact(nan.cuda().nonzero(), nan.nonzero())


def test_cat_and_stack():
    a, b = ember.randn(3, 4), ember.randn(2, 4)
    exact(ember.cat([a.cuda(), b.cuda()]), ember.cat([a, b]))
    exact(ember.stack([a.cuda(), a.t().t().cuda()], 1), ember.stack([a, a], 1))


# ---- errors ----

def same_error(run):
    """`run(device)` fails the same way (type and message) on CUDA as on the CPU."""
    with pytest.raises(Exception) as cpu:
        run("cpu")
    with pytest.raises(Exception) as gpu:
        run("cuda")
    assert type(gpu.value) is type(cpu.value)
    assert str(gpu.value) == str(cpu.value)
    return gpu.value


def test_out_of_bounds_indices_raise_the_cpus_error_and_change_nothing():
    x = ember.arange(20.0).reshape(4, 5)
    err = same_error(lambda d: x.to(d)[ember.tensor([0, 7], device=d)])
    assert isinstance(err, IndexError) and "index 7 is out of bounds for dimension 0 with size 4" in str(err)
    same_error(lambda d: x.to(d)[ember.tensor([0, -5], device=d)])
    same_error(lambda d: x.to(d)[:, ember.tensor([[1], [5]], device=d)])
    same_error(lambda d: x.to(d)[ember.tensor([1, 2], device=d), ember.tensor([0, 9], device=d)])
    same_error(lambda d: x.to(d).index_select(0, ember.tensor([-1], device=d)))
    same_error(lambda d: x.to(d).gather(1, ember.tensor([[0, 5]], device=d)))
    g = x.cuda()
    for bad in (
        lambda: g.index_put_((ember.tensor([1, 4], device="cuda"),), ember.tensor(1.0, device="cuda"), accumulate=True),
        lambda: g.scatter_add_(0, ember.tensor([[0, 4]], device="cuda"), ember.ones(1, 2, device="cuda")),
        lambda: g.scatter_(1, ember.tensor([[-1]], device="cuda"), 3.0),
        lambda: g.index_add_(0, ember.tensor([0, 6], device="cuda"), ember.ones(2, 5, device="cuda")),
    ):
        with pytest.raises((IndexError, RuntimeError), match="out of bounds"):
            bad()
        exact(g, x)
    err = same_error(lambda d: F.embedding(ember.tensor([0, 10], device=d), ember.zeros(10, 3, device=d)))
    assert "index out of range" in str(err)
