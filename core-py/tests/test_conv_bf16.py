"""bfloat16 conv2d (the bf16 GEMM where the CPU has AVX512-BF16, float32 compute elsewhere; both
forced through `ember._C._set_half_path`): values against a float64 conv of the bf16 operands,
within float32 accumulation plus the one final rounding, in NCHW and channels-last, with groups,
stride, padding, dilation and bias; and autograd through a conv under bf16 autocast."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F

PATHS = [p for p in ("avx512bf16", "avx512") if p in ember._C._half_paths()]

# (N, C, K, H, W, kernel, stride, padding, dilation, groups, bias)
CASES = [
    (2, 16, 24, 9, 11, 1, 1, 0, 1, 1, True),     # 1x1 stride 1: the input is the GEMM operand
    (1, 8, 16, 6, 6, 1, 1, 0, 1, 1, False),      # small image: images side by side
    (3, 32, 8, 5, 4, 3, 1, 1, 1, 1, True),
    (2, 12, 20, 10, 9, 3, 2, 1, 1, 2, True),     # groups, stride
    (1, 10, 9, 12, 13, 3, 1, 2, 2, 1, False),    # dilation
    (2, 3, 16, 23, 19, 7, 2, 3, 1, 1, False),    # the ResNet stem's 7x7/2
    (2, 64, 32, 7, 7, 1, 2, 0, 1, 1, True),      # strided 1x1 (a downsample)
    (1, 6, 6, 8, 8, 3, 1, 1, 1, 6, True),        # depthwise: float32 compute
]


@pytest.fixture(params=PATHS)
def path(request):
    ember._C._set_half_path(request.param)
    yield request.param
    ember._C._set_half_path(None)


def operands(n, c, k, h, w, ks, groups, bias, seed=0):
    rng = np.random.default_rng(seed)
    x = ember.from_numpy(rng.standard_normal((n, c, h, w)).astype(np.float32)).to(ember.bfloat16)
    wt = ember.from_numpy(rng.standard_normal((k, c // groups, ks, ks)).astype(np.float32)).to(ember.bfloat16)
    b = ember.from_numpy(rng.standard_normal(k).astype(np.float32)).to(ember.bfloat16) if bias else None
    return x, wt, b


def check(got, x, wt, b, args):
    """float64 conv of the bf16 operands; error within float32 sums of |terms| plus one bf16 rounding."""
    d = ember.float64
    want = F.conv2d(x.to(d), wt.to(d), None if b is None else b.to(d), *args)
    size = F.conv2d(x.to(d).abs(), wt.to(d).abs(), None if b is None else b.to(d).abs(), *args)
    got, want, size = got.to(d).numpy(), want.numpy(), size.numpy()
    bound = 2.0 ** -8 * np.abs(want) + 1e-5 * size + 1e-30
    assert np.all(np.abs(got - want) <= bound), np.max(np.abs(got - want) / bound)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("channels_last", [False, True])
def test_bf16_conv2d_matches_float64_reference(path, case, channels_last):
    n, c, k, h, w, ks, stride, pad, dil, groups, bias = case
    x, wt, b = operands(n, c, k, h, w, ks, groups, bias)
    if channels_last:
        x, wt = x.contiguous(memory_format=ember.channels_last), wt.contiguous(memory_format=ember.channels_last)
    args = (stride, pad, dil, groups)
    got = F.conv2d(x, wt, b, *args)
    assert got.dtype == ember.bfloat16
    assert got.is_contiguous(memory_format=ember.channels_last) == channels_last
    check(got, x, wt, b, args)


def test_bf16_conv1d_and_unbatched(path):
    rng = np.random.default_rng(1)
    x = ember.from_numpy(rng.standard_normal((4, 30)).astype(np.float32)).to(ember.bfloat16)
    wt = ember.from_numpy(rng.standard_normal((6, 4, 3)).astype(np.float32)).to(ember.bfloat16)
    got = F.conv1d(x, wt, padding=1)
    want = F.conv1d(x.to(ember.float64), wt.to(ember.float64), padding=1)
    assert got.shape == (6, 30) and got.dtype == ember.bfloat16
    np.testing.assert_allclose(got.to(ember.float64).numpy(), want.numpy(), rtol=2 ** -7, atol=1e-4)


def test_bf16_conv_autograd_under_autocast(path):
    rng = np.random.default_rng(2)
    x = ember.from_numpy(rng.standard_normal((2, 8, 6, 6)).astype(np.float32)).requires_grad_()
    wt = ember.from_numpy(rng.standard_normal((4, 8, 3, 3)).astype(np.float32) * 0.1).requires_grad_()
    with ember.autocast("cpu", dtype=ember.bfloat16):
        y = F.conv2d(x, wt, padding=1)
    assert y.dtype == ember.bfloat16
    y.float().sum().backward()
    # d(sum)/dx is the conv of a ones gradient with the flipped weight; check against float64.
    ones = ember.ones(2, 4, 6, 6, dtype=ember.float64)
    wb = wt.detach().to(ember.bfloat16).to(ember.float64)
    gx = F.conv_transpose2d(ones, wb, padding=1)
    assert x.grad.dtype == ember.float32 and wt.grad.dtype == ember.float32
    np.testing.assert_allclose(x.grad.numpy(), gx.numpy(), rtol=2 ** -7, atol=2e-2)
