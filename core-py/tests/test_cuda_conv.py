"""Convolutions on a CUDA GPU (cuDNN): forward and backward equal to the CPU's on the same
inputs, in every dimensionality, with groups, strides, padding and dilation. Skipped where
`ember.cuda.is_available()` is False."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F

pytestmark = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU and its driver")

TOLERANCE = {ember.float32: 1e-4, ember.float64: 1e-10, ember.float16: 2e-2, ember.bfloat16: 1e-1}


@pytest.fixture(autouse=True)
def full_float32():
    ember.backends.cudnn.allow_tf32 = False
    yield
    ember.backends.cudnn.allow_tf32 = True


def rand(*shape, seed=0):
    return ember.randn(*shape, generator=ember.Generator().manual_seed(seed), dtype=ember.float64)


def close(gpu, cpu, dtype, scale=1.0):
    assert gpu.device.type == "cuda" and gpu.shape == cpu.shape
    tol = TOLERANCE[dtype] * scale
    np.testing.assert_allclose(gpu.detach().cpu().double().numpy(), cpu.detach().double().numpy(), rtol=tol, atol=tol)


CASES = [
    # (function, input shape, weight shape, kwargs)
    (F.conv1d, (2, 4, 17), (6, 4, 3), {}),
    (F.conv1d, (2, 4, 17), (6, 2, 5), dict(stride=2, padding=2, dilation=2, groups=2)),
    (F.conv2d, (2, 3, 9, 11), (8, 3, 3, 3), dict(padding=1)),
    (F.conv2d, (1, 4, 12, 10), (4, 1, 3, 3), dict(stride=2, padding=1, groups=4)),
    (F.conv2d, (3, 6, 8, 8), (6, 3, 1, 1), dict(groups=2)),
    (F.conv2d, (2, 2, 7, 9), (3, 2, 2, 3), dict(stride=(2, 1), dilation=(1, 2))),
    (F.conv3d, (1, 2, 5, 6, 7), (3, 2, 3, 3, 3), dict(padding=1)),
]


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.bfloat16])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_convolution_forward_and_backward_equal_the_cpu(case, dtype):
    fn, xs, ws, kwargs = CASES[case]
    x, w, b = rand(*xs, seed=1), rand(*ws, seed=2), rand(ws[0], seed=3)
    cpu = [t.clone().requires_grad_() for t in (x, w, b)]
    gpu = [t.to(dtype).cuda().requires_grad_() for t in (x, w, b)]
    y_cpu, y_gpu = fn(*cpu, **kwargs), fn(*gpu, **kwargs)
    assert y_gpu.dtype == dtype
    close(y_gpu, y_cpu.to(dtype), dtype, scale=ws[1] * np.prod(ws[2:]) ** 0.5)
    g = rand(*y_cpu.shape, seed=4)
    y_cpu.backward(g)
    y_gpu.backward(g.to(dtype).cuda())
    for got, want in zip(gpu, cpu):
        close(got.grad, want.grad.to(dtype), dtype, scale=max(8.0, float(np.prod(y_cpu.shape[2:])) ** 0.5))


@pytest.mark.parametrize("kwargs", [{}, dict(stride=2, padding=1, output_padding=1), dict(groups=2, dilation=2)])
def test_transposed_convolution_equals_the_cpu(kwargs):
    x, w, b = rand(2, 4, 6, 7, seed=1), rand(4, 3, 3, 3, seed=2), rand(3 * kwargs.get("groups", 1), seed=3)
    y = F.conv_transpose2d(x.cuda(), w.cuda(), b.cuda(), **kwargs)
    close(y, F.conv_transpose2d(x, w, b, **kwargs), ember.float64)


def test_tf32_follows_cudnn_allow_tf32():
    x, w = rand(4, 64, 16, 16, seed=1).float(), rand(64, 64, 3, 3, seed=2).float()
    want = F.conv2d(x.double(), w.double(), padding=1).numpy()
    full = np.abs(F.conv2d(x.cuda(), w.cuda(), padding=1).cpu().double().numpy() - want).max()
    ember.backends.cudnn.allow_tf32 = True
    tf32 = np.abs(F.conv2d(x.cuda(), w.cuda(), padding=1).cpu().double().numpy() - want).max()
    assert full < 1e-3 and full <= tf32, (full, tf32)


def test_cudnn_reports_its_version():
    assert ember.backends.cudnn.is_available() and ember.backends.cudnn.version() >= 8000


def test_integer_convolution_is_refused():
    x = ember.ones(1, 1, 4, 4, dtype=ember.int64, device="cuda")
    with pytest.raises(RuntimeError):
        F.conv2d(x, x[:, :, :3, :3])
