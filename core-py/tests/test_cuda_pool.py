"""Pooling on the CUDA backend: max (values and indices), average and adaptive pools, forward
and backward, equal to the CPU backend's on the same inputs (and to PyTorch's CUDA kernels where
PyTorch is installed). Skipped where `ember.cuda.is_available()` is False."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F

pytestmark = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU and its driver")

FLOATS = [ember.float32, ember.float64, ember.float16, ember.bfloat16]
# Means and gradients: the GPU sums in the CPU's order and precision, but may fuse or reorder
# (atomic adds of overlapping windows' gradients), so allow a rounding of the dtype.
TOLERANCE = {ember.float32: 1e-6, ember.float64: 1e-13, ember.float16: 1e-3, ember.bfloat16: 1e-2}


def inputs(shape, dtype=ember.float32, seed=0, special=False):
    """A CPU tensor and its CUDA copy; `special` puts ties, ±inf and NaN in."""
    g = ember.Generator().manual_seed(seed)
    x = ember.randn(*shape, generator=g, dtype=ember.float64) * 3
    if special:
        x = x.round()
        flat = x.view(-1)
        flat[1], flat[5], flat[7] = float("inf"), float("-inf"), float("nan")
        flat[-3] = float("nan")
    x = x.to(dtype)
    return x, x.cuda()


def exact(gpu, cpu):
    assert gpu.device.type == "cuda" and gpu.shape == cpu.shape and gpu.dtype == cpu.dtype
    np.testing.assert_array_equal(gpu.cpu().double().numpy(), cpu.double().numpy())


def close(gpu, cpu, tol=None):
    assert gpu.device.type == "cuda" and gpu.shape == cpu.shape and gpu.dtype == cpu.dtype
    tol = tol or TOLERANCE[cpu.dtype]
    np.testing.assert_allclose(gpu.cpu().double().numpy(), cpu.double().numpy(), rtol=tol, atol=tol, equal_nan=True)


MAX_CASES = [
    # (dims, input shape, kernel_size, stride, padding, dilation, ceil_mode)
    (1, (2, 3, 17), 3, 2, 1, 1, False),
    (1, (3, 20), 4, None, 0, 2, True),
    (2, (2, 3, 8, 8), 2, None, 0, 1, False),
    (2, (2, 4, 11, 9), 3, 2, 1, 1, False),
    (2, (1, 2, 13, 10), (3, 2), (2, 1), (1, 0), (2, 3), True),
    (2, (5, 7, 6), 3, 3, 1, 1, True),
    (3, (2, 2, 5, 6, 7), 2, None, 0, 1, False),
    (3, (1, 3, 7, 5, 9), (3, 2, 3), (2, 1, 2), (1, 1, 0), (1, 2, 2), True),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", MAX_CASES, ids=lambda c: f"{c[0]}d{c[1]}")
def test_max_pool_values_and_indices_equal_the_cpu(case, dtype):
    dims, shape, kernel, stride, padding, dilation, ceil_mode = case
    pool = getattr(F, f"max_pool{dims}d")
    for special in (False, True):
        x, gx = inputs(shape, dtype, special=special)
        want, want_idx = pool(x, kernel, stride, padding, dilation, ceil_mode, return_indices=True)
        got, got_idx = pool(gx, kernel, stride, padding, dilation, ceil_mode, return_indices=True)
        exact(got, want)
        exact(got_idx, want_idx)
        assert got_idx.dtype == ember.int64


AVG_CASES = [
    # (dims, input shape, kernel_size, stride, padding, ceil_mode)
    (1, (2, 3, 17), 3, 2, 1, False),
    (1, (3, 20), 4, 3, 2, True),
    (2, (2, 3, 8, 8), 2, None, 0, False),
    (2, (2, 4, 11, 9), 3, 2, 1, True),
    (2, (1, 2, 13, 10), (3, 2), (2, 1), (1, 0), True),
    (3, (2, 2, 5, 6, 7), 2, None, 0, False),
    (3, (1, 3, 7, 5, 9), (3, 2, 3), (2, 1, 2), (1, 1, 0), True),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", AVG_CASES, ids=lambda c: f"{c[0]}d{c[1]}")
def test_avg_pool_equals_the_cpu_for_every_divisor(case, dtype):
    dims, shape, kernel, stride, padding, ceil_mode = case
    pool = getattr(F, f"avg_pool{dims}d")
    x, gx = inputs(shape, dtype)
    for include_pad in (True, False):
        args = (kernel, stride, padding, ceil_mode, include_pad)
        close(pool(gx, *args), pool(x, *args))
    if dims > 1:
        close(pool(gx, kernel, stride, padding, ceil_mode, True, 5), pool(x, kernel, stride, padding, ceil_mode, True, 5))


ADAPTIVE_CASES = [
    (1, (2, 3, 17), 5),
    (2, (2, 3, 10, 7), (3, 4)),
    (2, (3, 9, 9), (None, 2)),
    (2, (1, 2, 5, 5), 7),
    (3, (1, 2, 6, 5, 7), (2, 3, 4)),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", ADAPTIVE_CASES, ids=lambda c: f"{c[0]}d{c[1]}")
def test_adaptive_pools_equal_the_cpu(case, dtype):
    dims, shape, size = case
    x, gx = inputs(shape, dtype, special=True)
    close(getattr(F, f"adaptive_avg_pool{dims}d")(gx, size), getattr(F, f"adaptive_avg_pool{dims}d")(x, size))
    got, got_idx = getattr(F, f"adaptive_max_pool{dims}d")(gx, size, return_indices=True)
    want, want_idx = getattr(F, f"adaptive_max_pool{dims}d")(x, size, return_indices=True)
    exact(got, want)
    exact(got_idx, want_idx)


def layouts(x):
    """Views of a `[N, C, H, W]` tensor that are not row-major contiguous."""
    return {
        "channels_last": x.contiguous(memory_format=ember.channels_last),
        "transposed": x.transpose(2, 3),
        "sliced": x[:, 1:, ::2, 1:],
        "expanded": x[:1].expand(3, -1, -1, -1),
    }


@pytest.mark.parametrize("layout", ["channels_last", "transposed", "sliced", "expanded"])
def test_pools_read_any_layout(layout):
    x, _ = inputs((2, 3, 9, 10), special=True)
    cpu_view = layouts(x)[layout]
    gpu_view = layouts(x.cuda())[layout]
    exact(F.max_pool2d(gpu_view, 3, 2, 1), F.max_pool2d(cpu_view, 3, 2, 1))
    exact(F.max_pool2d(gpu_view, 2, return_indices=True)[1], F.max_pool2d(cpu_view, 2, return_indices=True)[1])
    close(F.avg_pool2d(gpu_view, 3, 2, 1), F.avg_pool2d(cpu_view, 3, 2, 1))
    close(F.adaptive_avg_pool2d(gpu_view, (2, 3)), F.adaptive_avg_pool2d(cpu_view, (2, 3)))


def test_empty_batches_pool_to_empty_results():
    gx = ember.zeros(0, 3, 8, 8, device="cuda")
    values, indices = F.max_pool2d(gx, 2, return_indices=True)
    assert values.shape == indices.shape == (0, 3, 4, 4) and values.is_cuda and indices.is_cuda
    assert F.avg_pool2d(gx, 2).shape == (0, 3, 4, 4)
    assert F.adaptive_avg_pool2d(gx, 1).shape == (0, 3, 1, 1)


def grads(fn, x, gx, seed=1):
    """The input gradients of `fn` on both devices for one random output gradient."""
    x, gx = x.clone().requires_grad_(), gx.clone().requires_grad_()
    y = fn(x)
    w = inputs(tuple(y.shape), y.dtype, seed=seed)[0]
    y.backward(w)
    fn(gx).backward(w.cuda())
    assert gx.grad.device.type == "cuda"
    return gx.grad, x.grad


GRAD_CASES = {
    "max_pool2d 2x2": lambda t: F.max_pool2d(t, 2),
    "max_pool2d overlapping": lambda t: F.max_pool2d(t, 3, 2, 1),
    "max_pool2d dilated ceil": lambda t: F.max_pool2d(t, 2, 1, 0, 2, True),
    "max_pool1d": lambda t: F.max_pool1d(t.flatten(2), 4, 3, 1),
    "max_pool3d": lambda t: F.max_pool3d(t.unflatten(2, (3, 3)), 2, 1),
    "avg_pool2d include pad": lambda t: F.avg_pool2d(t, 3, 2, 1),
    "avg_pool2d exclude pad ceil": lambda t: F.avg_pool2d(t, 3, 2, 1, True, False),
    "avg_pool2d divisor": lambda t: F.avg_pool2d(t, 2, divisor_override=3),
    "avg_pool1d": lambda t: F.avg_pool1d(t.flatten(2), 3, 2, 1),
    "avg_pool3d": lambda t: F.avg_pool3d(t.unflatten(2, (3, 3)), 2, 1, 1),
    "adaptive_avg_pool2d": lambda t: F.adaptive_avg_pool2d(t, (3, 4)),
    "adaptive_avg_pool2d global": lambda t: F.adaptive_avg_pool2d(t, 1),
    "adaptive_max_pool2d": lambda t: F.adaptive_max_pool2d(t, (4, 3)),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_gradients_equal_the_cpu(name, dtype):
    x, gx = inputs((2, 3, 9, 10), dtype)
    got, want = grads(GRAD_CASES[name], x, gx)
    close(got, want)


def test_gradient_of_a_channels_last_input():
    x, _ = inputs((2, 4, 8, 8))
    got, want = grads(lambda t: F.max_pool2d(t.contiguous(memory_format=ember.channels_last), 2), x, x.cuda())
    close(got, want)


def test_pooling_modules_in_a_small_network():
    nn = ember.nn
    ember.manual_seed(0)
    model = nn.Sequential(nn.MaxPool2d(2), nn.AvgPool2d(3, 1, 1), nn.AdaptiveAvgPool2d((2, 2)), nn.Flatten())
    x, gx = inputs((4, 3, 16, 16))
    close(model(gx), model(x))
    got, want = grads(model, x, gx)
    close(got, want)


# ---- against PyTorch's CUDA kernels, where PyTorch is installed beside ----

TORCH_CASES = {
    "max_pool2d": ("max_pool2d", (3, 2, 1), {"return_indices": True}),
    "max_pool2d dilated": ("max_pool2d", (3, 1, 1, 2, True), {"return_indices": True}),
    "max_pool3d": ("max_pool3d", (2,), {"return_indices": True}),
    "avg_pool2d": ("avg_pool2d", (3, 2, 1, True, False), {}),
    "avg_pool2d divisor": ("avg_pool2d", (2,), {"divisor_override": 3}),
    "adaptive_avg_pool2d": ("adaptive_avg_pool2d", ((3, 5),), {}),
    "adaptive_max_pool2d": ("adaptive_max_pool2d", ((5, 3),), {"return_indices": True}),
}


@pytest.mark.parametrize("name", list(TORCH_CASES))
def test_forward_and_backward_equal_pytorch_cuda(name):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA here")
    fn, args, kwargs = TORCH_CASES[name]
    shape = (2, 3, 6, 11, 10) if fn.endswith("3d") else (2, 3, 11, 10)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    ex = ember.tensor(x, device="cuda").requires_grad_()
    tx = torch.tensor(x, device="cuda").requires_grad_()
    ours, theirs = getattr(F, fn)(ex, *args, **kwargs), getattr(torch.nn.functional, fn)(tx, *args, **kwargs)
    if kwargs.get("return_indices"):
        np.testing.assert_array_equal(ours[1].cpu().numpy(), theirs[1].cpu().numpy())
        ours, theirs = ours[0], theirs[0]
    np.testing.assert_allclose(ours.detach().cpu().numpy(), theirs.detach().cpu().numpy(), rtol=1e-6, atol=1e-6)
    w = np.random.default_rng(1).standard_normal(tuple(theirs.shape)).astype(np.float32)
    ours.backward(ember.tensor(w, device="cuda"))
    theirs.backward(torch.tensor(w, device="cuda"))
    np.testing.assert_allclose(ex.grad.cpu().numpy(), tx.grad.cpu().numpy(), rtol=1e-5, atol=1e-6)


# ---- padding and interpolation (the other spatial families of the backend contract) ----

PAD_CASES = [
    ((1, 2, 3, 4), "constant", 0.0),
    ((2, 0, -1, 3), "constant", 2.5),
    ((0, 0, 1, 1, 2, 0), "constant", -1.0),
    ((2, 1, 1, 2), "reflect", None),
    ((3, 0, 2, 4), "replicate", None),
    ((1, 2, 2, 1), "circular", None),
]


@pytest.mark.parametrize("dtype", FLOATS + [ember.int32, ember.uint8, ember.int64])
@pytest.mark.parametrize("case", PAD_CASES, ids=lambda c: f"{c[1]}{c[0]}")
def test_pad_equals_the_cpu(case, dtype):
    pad, mode, value = case
    x, _ = inputs((2, 3, 5, 6))
    x = (x.abs() * 10).to(dtype) if not dtype.is_floating_point else x.to(dtype)
    kwargs = {"value": value} if value is not None else {}
    exact(F.pad(x.cuda(), pad, mode, **kwargs), F.pad(x, pad, mode, **kwargs))
    # Read through strides, in place.
    exact(F.pad(x.cuda().transpose(2, 3), pad, mode, **kwargs), F.pad(x.transpose(2, 3), pad, mode, **kwargs))


def test_pad_of_bool_and_empty_results():
    x = ember.tensor([[True, False, True]])
    exact(F.pad(x.cuda(), (1, 2), value=True), F.pad(x, (1, 2), value=True))
    assert F.pad(ember.zeros(2, 3, device="cuda"), (-2, -1)).shape == (2, 0)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_gradients_equal_the_cpu(mode):
    x, gx = inputs((2, 3, 5, 6), ember.float64)
    got, want = grads(lambda t: F.pad(t, (2, 1, 1, 3), mode), x, gx)
    close(got, want)


INTERPOLATE_CASES = {
    "nearest": dict(size=(7, 13), mode="nearest"),
    "nearest-exact": dict(scale_factor=1.7, mode="nearest-exact"),
    "bilinear": dict(size=(9, 5), mode="bilinear"),
    "bilinear aligned": dict(scale_factor=2, mode="bilinear", align_corners=True),
    "bicubic": dict(size=(12, 15), mode="bicubic"),
    "bilinear antialias": dict(size=(3, 4), mode="bilinear", antialias=True),
    "bicubic antialias": dict(size=(4, 3), mode="bicubic", antialias=True),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", list(INTERPOLATE_CASES))
def test_interpolate_equals_the_cpu(name, dtype):
    x, gx = inputs((2, 3, 6, 7), dtype)
    kwargs = INTERPOLATE_CASES[name]
    # The GPU may fuse each weighted add into one rounding.
    tol = {ember.float32: 1e-5, ember.float64: 1e-12}.get(dtype)
    want = F.interpolate(x, **kwargs)
    close(F.interpolate(gx, **kwargs), want, tol)
    close(F.interpolate(gx.contiguous(memory_format=ember.channels_last), **kwargs), want, tol)


def test_interpolate_1d_and_3d_and_gradients():
    x, gx = inputs((2, 3, 4, 5, 6))
    for kwargs in (dict(size=(5, 3, 8), mode="trilinear"), dict(scale_factor=2, mode="nearest")):
        close(F.interpolate(gx, **kwargs), F.interpolate(x, **kwargs), 1e-5)
    y, gy = inputs((2, 3, 9))
    close(F.interpolate(gy, size=4, mode="linear"), F.interpolate(y, size=4, mode="linear"), 1e-5)
    x, gx = inputs((2, 3, 6, 7), ember.float64)
    got, want = grads(lambda t: F.interpolate(t, size=(9, 4), mode="bicubic"), x, gx)
    close(got, want)
