"""conv1d/2d/3d and conv_transpose1d/2d against NumPy references (sliding windows + einsum for
the forward conv, explicit scatter-add for the transposed one)."""
import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

import ember
import ember.nn.functional as F
from tensor_helpers import FLOATS, to_np

TOL = {"float32": 2e-4, "float64": 1e-10, "float16": 2e-2, "bfloat16": 1e-1}
SPATIAL = "xyz"
TAPS = "ijk"


def conv_ref(x, w, b, stride, pad_lo, pad_hi, dilation, groups):
    """Forward convolution of float64 arrays, batched `(N, C, *spatial)`."""
    d = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + list(zip(pad_lo, pad_hi)))
    cg, og = x.shape[1] // groups, w.shape[0] // groups
    eff = [dl * (k - 1) + 1 for dl, k in zip(dilation, w.shape[2:])]
    sp, kk = SPATIAL[:d], TAPS[:d]
    outs = []
    for g in range(groups):
        win = sliding_window_view(x[:, g * cg:(g + 1) * cg], eff, axis=tuple(range(2, 2 + d)))
        win = win[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in stride) + tuple(slice(None, None, dl) for dl in dilation)]
        outs.append(np.einsum(f"nc{sp}{kk},oc{kk}->no{sp}", win, w[g * og:(g + 1) * og]))
    y = np.concatenate(outs, 1)
    return y if b is None else y + b.reshape((1, -1) + (1,) * d)


def conv_transpose_ref(x, w, b, stride, padding, output_padding, groups, dilation):
    """Transposed convolution: every input element scatters `weight` scaled onto the output."""
    d = x.ndim - 2
    n, cin = x.shape[:2]
    cg, og = cin // groups, w.shape[1]
    k = w.shape[2:]
    full = [(s - 1) * st + dl * (kk - 1) + 1 + op for s, st, dl, kk, op in zip(x.shape[2:], stride, dilation, k, output_padding)]
    y = np.zeros((n, og * groups, *full))
    sp = SPATIAL[:d]
    for g in range(groups):
        xg, wg = x[:, g * cg:(g + 1) * cg], w[g * cg:(g + 1) * cg]
        for tap in np.ndindex(*k):
            contrib = np.einsum(f"nc{sp},co->no{sp}", xg, wg[(slice(None), slice(None)) + tap])
            idx = tuple(slice(t * dl, t * dl + (s - 1) * st + 1, st) for t, dl, s, st in zip(tap, dilation, x.shape[2:], stride))
            y[(slice(None), slice(g * og, (g + 1) * og)) + idx] += contrib
    crop = tuple(slice(p, f - p) for p, f in zip(padding, full))
    y = y[(slice(None), slice(None)) + crop]
    return y if b is None else y + b.reshape((1, -1) + (1,) * d)


def make(shape, dtype, seed):
    """An ember tensor of `dtype` and the float64 array of exactly its values."""
    t = ember.tensor(np.random.default_rng(seed).standard_normal(shape)).to(dtype)
    return t, to_np(t).astype(np.float64)


def check(got, want, dtype):
    assert got.dtype == dtype
    assert tuple(got.shape) == want.shape
    tol = TOL[dtype.name]
    np.testing.assert_allclose(to_np(got).astype(np.float64), want, rtol=tol, atol=tol * max(1.0, np.abs(want).max(initial=0)))


CASES_2D = [
    # (N, C, H, W), (O, C/g, kh, kw), stride, padding, dilation, groups
    ((2, 3, 9, 8), (4, 3, 3, 3), 1, 0, 1, 1),
    ((2, 3, 9, 8), (4, 3, 3, 3), 1, 1, 1, 1),
    ((1, 4, 11, 7), (6, 2, 3, 2), (2, 1), (1, 0), 1, 2),
    ((2, 3, 10, 10), (5, 3, 3, 3), 2, 1, 2, 1),
    ((1, 6, 7, 9), (6, 1, 3, 3), 1, 1, 1, 6),
    ((3, 8, 5, 5), (16, 8, 1, 1), 1, 0, 1, 1),
    ((2, 8, 9, 9), (4, 8, 1, 1), 2, 0, 1, 1),
    ((1, 3, 16, 16), (8, 3, 7, 7), 2, 3, 1, 1),
    ((1, 2, 5, 6), (3, 2, 5, 6), 1, 0, 1, 1),
    ((2, 4, 13, 6), (4, 2, 4, 2), (3, 2), (2, 1), (1, 3), 2),
]


def norm(v, d):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * d


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("case", CASES_2D)
def test_conv2d_parity(dtype, case):
    xs, ws, stride, padding, dilation, groups = case
    x, xr = make(xs, dtype, 0)
    w, wr = make(ws, dtype, 1)
    b, br = make(ws[:1], dtype, 2)
    got = F.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
    p = norm(padding, 2)
    check(got, conv_ref(xr, wr, br, norm(stride, 2), p, p, norm(dilation, 2), groups), dtype)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=str)
@pytest.mark.parametrize("xs,ws,stride,padding,dilation,groups", [
    ((2, 3, 17), (4, 3, 3), 1, 1, 1, 1),
    ((1, 4, 20), (8, 2, 5), 3, 2, 2, 2),
    ((3, 5, 9), (5, 1, 4), 1, 0, 1, 5),
    ((2, 6, 12), (3, 6, 1), 1, 0, 1, 1),
])
def test_conv1d_parity(dtype, xs, ws, stride, padding, dilation, groups):
    x, xr = make(xs, dtype, 3)
    w, wr = make(ws, dtype, 4)
    got = F.conv1d(x, w, None, stride, padding, dilation, groups)
    check(got, conv_ref(xr, wr, None, (stride,), (padding,), (padding,), (dilation,), groups), dtype)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=str)
@pytest.mark.parametrize("xs,ws,stride,padding,dilation,groups", [
    ((2, 3, 5, 6, 7), (4, 3, 3, 3, 3), 1, 1, 1, 1),
    ((1, 4, 7, 6, 8), (4, 2, 2, 3, 2), (2, 1, 2), (1, 0, 1), (1, 2, 1), 2),
])
def test_conv3d_parity(dtype, xs, ws, stride, padding, dilation, groups):
    x, xr = make(xs, dtype, 5)
    w, wr = make(ws, dtype, 6)
    b, br = make(ws[:1], dtype, 7)
    got = F.conv3d(x, w, b, stride, padding, dilation, groups)
    p = norm(padding, 3)
    check(got, conv_ref(xr, wr, br, norm(stride, 3), p, p, norm(dilation, 3), groups), dtype)


@pytest.mark.parametrize("ks,dilation", [((3, 4), 1), ((4, 2), 1), ((3, 3), 2), ((2, 5), (3, 1))])
def test_conv2d_same_and_valid_padding(ks, dilation):
    x, xr = make((2, 3, 9, 10), ember.float64, 8)
    w, wr = make((4, 3) + ks, ember.float64, 9)
    dl = norm(dilation, 2)
    total = [d * (k - 1) for d, k in zip(dl, ks)]
    got = F.conv2d(x, w, padding="same", dilation=dilation)
    assert tuple(got.shape) == (2, 4, 9, 10)
    check(got, conv_ref(xr, wr, None, (1, 1), [t // 2 for t in total], [t - t // 2 for t in total], dl, 1), ember.float64)
    check(F.conv2d(x, w, padding="valid", dilation=dilation), conv_ref(xr, wr, None, (1, 1), (0, 0), (0, 0), dl, 1), ember.float64)


def test_conv1d_same_odd_total_pads_right():
    x, xr = make((1, 2, 7), ember.float64, 10)
    w, wr = make((3, 2, 4), ember.float64, 11)
    check(F.conv1d(x, w, padding="same"), conv_ref(xr, wr, None, (1,), (1,), (2,), (1,), 1), ember.float64)


def test_conv_unbatched_inputs():
    x, xr = make((3, 8, 7), ember.float32, 12)
    w, wr = make((5, 3, 3, 3), ember.float32, 13)
    got = F.conv2d(x, w, padding=1)
    assert tuple(got.shape) == (5, 8, 7)
    check(got, conv_ref(xr[None], wr, None, (1, 1), (1, 1), (1, 1), (1, 1), 1)[0], ember.float32)
    x1, x1r = make((3, 10), ember.float32, 14)
    w1, w1r = make((2, 3, 3), ember.float32, 15)
    check(F.conv1d(x1, w1), conv_ref(x1r[None], w1r, None, (1,), (0,), (0,), (1,), 1)[0], ember.float32)


def test_conv_non_contiguous_inputs():
    rng = np.random.default_rng(16)
    nhwc = rng.standard_normal((2, 9, 8, 4))
    x = ember.tensor(nhwc).permute(0, 3, 1, 2)  # channels-last view of an NCHW tensor
    assert not x.is_contiguous()
    wfull = rng.standard_normal((6, 4, 3, 6))
    w = ember.tensor(wfull)[:, :, :, ::2]  # strided weight view
    xr, wr = nhwc.transpose(0, 3, 1, 2), wfull[:, :, :, ::2]
    check(F.conv2d(x, w, None, 1, 1), conv_ref(xr, wr, None, (1, 1), (1, 1), (1, 1), (1, 1), 1), ember.float64)
    xs = ember.tensor(rng.standard_normal((2, 4, 20, 20)))[:, :, ::2, 1::2]
    check(F.conv2d(xs, w, stride=2), conv_ref(to_np(xs), wr, None, (2, 2), (0, 0), (0, 0), (1, 1), 1), ember.float64)


def test_conv_large_image_uses_several_tiles():
    # A column buffer far over one tile's budget and a batch of one (threads split each GEMM).
    x, xr = make((1, 16, 90, 80), ember.float32, 17)
    w, wr = make((8, 16, 3, 3), ember.float32, 18)
    b, br = make((8,), ember.float32, 19)
    check(F.conv2d(x, w, b, padding=1), conv_ref(xr, wr, br, (1, 1), (1, 1), (1, 1), (1, 1), 1), ember.float32)


def test_conv_empty_batch():
    x = ember.zeros(0, 3, 5, 5)
    w = ember.ones(2, 3, 3, 3)
    assert tuple(F.conv2d(x, w).shape) == (0, 2, 3, 3)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("xs,ws,stride,padding,output_padding,groups,dilation", [
    ((2, 3, 5, 4), (3, 4, 3, 3), 1, 0, 0, 1, 1),
    ((2, 3, 5, 4), (3, 4, 3, 3), 2, 1, 1, 1, 1),
    ((1, 4, 6, 5), (4, 3, 2, 3), (2, 3), (0, 1), (1, 2), 2, 1),
    ((2, 2, 4, 4), (2, 3, 3, 3), 2, 2, 0, 1, 2),
    ((1, 6, 5, 5), (6, 1, 4, 4), 2, 1, 0, 6, 1),
])
def test_conv_transpose2d_parity(dtype, xs, ws, stride, padding, output_padding, groups, dilation):
    x, xr = make(xs, dtype, 20)
    w, wr = make(ws, dtype, 21)
    b, br = make((ws[1] * groups,), dtype, 22)
    got = F.conv_transpose2d(x, w, b, stride, padding, output_padding, groups, dilation)
    want = conv_transpose_ref(xr, wr, br, norm(stride, 2), norm(padding, 2), norm(output_padding, 2), groups, norm(dilation, 2))
    check(got, want, dtype)


@pytest.mark.parametrize("xs,ws,stride,padding,output_padding,groups,dilation", [
    ((2, 3, 7), (3, 2, 3), 1, 0, 0, 1, 1),
    ((1, 4, 6), (4, 2, 5), 3, 2, 2, 2, 1),
    ((3, 2, 5), (2, 3, 2), 2, 0, 0, 1, 3),
])
def test_conv_transpose1d_parity(xs, ws, stride, padding, output_padding, groups, dilation):
    x, xr = make(xs, ember.float64, 23)
    w, wr = make(ws, ember.float64, 24)
    got = F.conv_transpose1d(x, w, None, stride, padding, output_padding, groups, dilation)
    check(got, conv_transpose_ref(xr, wr, None, (stride,), (padding,), (output_padding,), groups, (dilation,)), ember.float64)


def test_conv_transpose_unbatched_and_strided():
    rng = np.random.default_rng(25)
    base = rng.standard_normal((3, 10, 8))
    x = ember.tensor(base)[:, ::2, :].transpose(1, 2)  # (3, 8, 5), non-contiguous
    wr = rng.standard_normal((3, 2, 3, 3))
    got = F.conv_transpose2d(x, ember.tensor(wr), stride=2, padding=1)
    want = conv_transpose_ref(base[:, ::2, :].transpose(0, 2, 1)[None], wr, None, (2, 2), (1, 1), (0, 0), 1, (1, 1))[0]
    check(got, want, ember.float64)


def test_top_level_aliases():
    x, w = ember.ones(1, 2, 4, 4), ember.ones(3, 2, 3, 3)
    assert ember.conv2d is F.conv2d and ember.conv_transpose1d is F.conv_transpose1d
    assert tuple(ember.conv2d(x, w).shape) == (1, 3, 2, 2)


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: F.conv2d(ember.ones(2, 3), ember.ones(4, 3, 3, 3)), RuntimeError,
     r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got input of size: \[2, 3\]"),
    (lambda: F.conv2d(ember.ones(1, 3, 5, 5), ember.ones(4, 3, 3, 3), groups=2), RuntimeError,
     r"Given groups=2, weight of size \[4, 3, 3, 3\], expected input\[1, 3, 5, 5\] to have 6 channels, but got 3 channels instead"),
    (lambda: F.conv2d(ember.ones(1, 4, 5, 5), ember.ones(3, 2, 3, 3), groups=2), RuntimeError,
     r"Given groups=2, expected weight to be divisible by 2 at dimension 0"),
    (lambda: F.conv2d(ember.ones(1, 3, 5, 5), ember.ones(4, 3, 3, 3), ember.ones(3)), RuntimeError,
     r"expected bias to be 1-dimensional with 4 elements, but got bias of size \[3\]"),
    (lambda: F.conv2d(ember.ones(1, 3, 2, 2), ember.ones(4, 3, 3, 3)), RuntimeError,
     r"Calculated padded input size per channel: \(2 x 2\). Kernel size: \(3 x 3\). Kernel size can't be greater than actual input size"),
    (lambda: F.conv2d(ember.ones(1, 3, 5, 5), ember.ones(4, 3, 3, 3), stride=0), RuntimeError, "non-positive stride is not supported"),
    (lambda: F.conv2d(ember.ones(1, 3, 5, 5), ember.ones(4, 3, 3, 3), stride=-1), RuntimeError, "non-positive stride is not supported"),
    (lambda: F.conv2d(ember.ones(1, 3, 5, 5), ember.ones(4, 3, 3, 3), padding=-1), RuntimeError, "negative padding is not supported"),
    (lambda: F.conv2d(ember.ones(1, 3, 5, 5), ember.ones(4, 3, 3, 3), dilation=0), RuntimeError, "dilation should be greater than zero"),
    (lambda: F.conv2d(ember.ones(1, 3, 5, 5), ember.ones(4, 3, 3, 3), groups=0), RuntimeError, "non-positive groups is not supported"),
    (lambda: F.conv2d(ember.ones(1, 3, 5, 5), ember.ones(4, 3, 3, 3), stride=2, padding="same"), RuntimeError,
     "padding='same' is not supported for strided convolutions"),
    (lambda: F.conv2d(ember.ones(1, 3, 5, 5), ember.ones(4, 3, 3, 3), padding="full"), RuntimeError, "Invalid padding string: 'full'"),
    (lambda: F.conv2d(ember.ones(1, 3, 5, 5), ember.ones(4, 3, 3, 3), stride=(1, 1, 1)), RuntimeError,
     r"expected stride to be a single integer value or a list of 2 values"),
    (lambda: F.conv2d(ember.ones(1, 3, 5, 5), ember.ones(4, 3, 3)), RuntimeError, r"Expected 3-dimensional input for 3-dimensional weight"),
    (lambda: F.conv2d(ember.ones(1, 3, 5, 5, dtype=ember.float64), ember.ones(4, 3, 3, 3)), RuntimeError,
     r"Input type \(float64\) and weight type \(float32\) should be the same"),
    (lambda: F.conv2d(ember.ones(1, 3, 5, 5, dtype=ember.int64), ember.ones(4, 3, 3, 3, dtype=ember.int64)), RuntimeError,
     "\"conv2d\" not implemented for 'int64'"),
    (lambda: F.conv2d([[1.0]], ember.ones(4, 3, 3, 3)), TypeError, r"conv2d\(\): argument 'input' \(position 1\) must be Tensor, not list"),
    (lambda: F.conv_transpose2d(ember.ones(1, 3, 5, 5), ember.ones(4, 2, 3, 3)), RuntimeError,
     r"Given transposed=1, weight of size \[4, 2, 3, 3\], expected input\[1, 3, 5, 5\] to have 4 channels, but got 3 channels instead"),
    (lambda: F.conv_transpose2d(ember.ones(1, 4, 5, 5), ember.ones(4, 2, 3, 3), stride=2, output_padding=2), RuntimeError,
     "output padding must be smaller than either stride or dilation"),
    (lambda: F.conv_transpose2d(ember.ones(1, 4, 1, 1), ember.ones(4, 2, 1, 1), padding=1), RuntimeError, "Output size is too small"),
])
def test_conv_bad_inputs(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


DEPTHWISE_2D = [
    # (N, C, H, W), channel multiplier, (kh, kw), stride, padding, dilation: MobileNet's and
    # EfficientNet's 3x3 / 5x5 layers at odd sizes, rows wider than 64 outputs, a multiplier > 1.
    ((2, 5, 9, 11), 1, (3, 3), 1, 1, 1),
    ((1, 3, 13, 70), 1, (5, 5), 2, 2, 1),
    ((2, 4, 12, 7), 2, (3, 5), (2, 1), (0, 2), 1),
    ((1, 2, 9, 130), 1, (3, 3), (1, 3), 2, 2),
    ((3, 6, 7, 7), 1, (5, 5), 1, 2, 1),
]


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
@pytest.mark.parametrize("xs,mult,k,stride,padding,dilation", DEPTHWISE_2D)
def test_depthwise_conv2d_parity(xs, mult, k, stride, padding, dilation, channels_last):
    """groups == channels runs the depthwise kernels (float32): NCHW, and channels-last (whose
    kernel takes a channel multiplier of 1; other multipliers run the NHWC GEMM)."""
    c = xs[1]
    x, xr = make(xs, ember.float32, 30)
    w, wr = make((c * mult, 1) + k, ember.float32, 31)
    b, br = make((c * mult,), ember.float32, 32)
    if channels_last:
        x = x.contiguous(memory_format=ember.channels_last)
    for bias, bias_ref in ((b, br), (None, None)):
        got = F.conv2d(x, w, bias, stride=stride, padding=padding, dilation=dilation, groups=c)
        p = norm(padding, 2)
        check(got, conv_ref(xr, wr, bias_ref, norm(stride, 2), p, p, norm(dilation, 2), c), ember.float32)
        assert got.is_contiguous(memory_format=ember.channels_last if channels_last else ember.contiguous_format)


def test_depthwise_conv1d_parity():
    x, xr = make((2, 4, 50), ember.float32, 33)
    w, wr = make((8, 1, 7), ember.float32, 34)
    got = F.conv1d(x, w, None, 2, 3, 2, 4)
    check(got, conv_ref(xr, wr, None, (2,), (3,), (3,), (2,), 4), ember.float32)


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
def test_depthwise_conv2d_gradients_match_float64(channels_last):
    """A training step through the depthwise kernels: input, weight and bias gradients of the
    float32 conv equal those of the float64 one (which takes the generic path)."""
    x, _ = make((2, 6, 11, 10), ember.float32, 35)
    w, _ = make((6, 1, 5, 5), ember.float32, 36)
    b, _ = make((6,), ember.float32, 37)
    grads = {}
    for dtype in (ember.float32, ember.float64):
        leaves = [t.to(dtype).detach().requires_grad_() for t in (x, w, b)]
        xi = leaves[0].contiguous(memory_format=ember.channels_last) if channels_last else leaves[0]
        y = F.conv2d(xi, leaves[1], leaves[2], stride=2, padding=2, groups=6)
        (y * y).sum().backward()
        grads[dtype] = [to_np(t.grad).astype(np.float64) for t in leaves]
    for got, want in zip(grads[ember.float32], grads[ember.float64]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
