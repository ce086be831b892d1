"""interpolate against NumPy references built from PyTorch's documented coordinate rules (and
PIL's filter definition for antialias), applied one axis at a time as interpolation matrices."""
import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from tensor_helpers import FLOATS, to_np

TOL = {"float32": 2e-5, "float64": 1e-12, "float16": 4e-3, "bfloat16": 3e-2}


def make(shape, dtype, seed):
    t = ember.tensor(np.random.default_rng(seed).standard_normal(shape)).to(dtype)
    return t, to_np(t).astype(np.float64)


def ratio(n_in, n_out, scale_factor, align_corners):
    """Output-to-input coordinate ratio."""
    if align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return 1.0 / scale_factor if scale_factor else n_in / n_out


def nearest_matrix(n_in, n_out, scale_factor, exact):
    # PyTorch computes the nearest source index in float32.
    s = np.float32(1.0 / scale_factor) if scale_factor else np.float32(n_in) / np.float32(n_out)
    m = np.zeros((n_out, n_in))
    for j in range(n_out):
        pos = (np.float32(j) + np.float32(0.5 if exact else 0.0)) * s
        m[j, min(int(np.floor(pos)), n_in - 1)] = 1.0
    if not exact and n_out in (n_in, 2 * n_in):  # PyTorch's exact shortcuts for plain nearest
        m = np.eye(n_in)[np.arange(n_out) * n_in // n_out]
    return m


def linear_matrix(n_in, n_out, scale_factor, align_corners):
    s = ratio(n_in, n_out, scale_factor, align_corners)
    m = np.zeros((n_out, n_in))
    for j in range(n_out):
        x = j * s if align_corners else max((j + 0.5) * s - 0.5, 0.0)
        i0 = min(int(math.floor(x)), n_in - 1)
        lam = min(max(x - i0, 0.0), 1.0)
        m[j, i0] += 1 - lam
        m[j, min(i0 + 1, n_in - 1)] += lam
    return m


def keys(x, a):
    x = abs(x)
    if x <= 1:
        return (a + 2) * x ** 3 - (a + 3) * x ** 2 + 1
    if x < 2:
        return a * x ** 3 - 5 * a * x ** 2 + 8 * a * x - 4 * a
    return 0.0


def cubic_matrix(n_in, n_out, scale_factor, align_corners):
    s = ratio(n_in, n_out, scale_factor, align_corners)
    m = np.zeros((n_out, n_in))
    for j in range(n_out):
        x = j * s if align_corners else (j + 0.5) * s - 0.5
        i = math.floor(x)
        for k in range(-1, 3):
            m[j, min(max(i + k, 0), n_in - 1)] += keys(x - (i + k), -0.75)
    return m


def pil_matrix(n_in, n_out, scale_factor, cubic):
    """PIL's resampling coefficients: the filter widened by the downscale factor, normalised."""
    s = ratio(n_in, n_out, scale_factor, False)
    filterscale = max(s, 1.0)
    support = (2.0 if cubic else 1.0) * filterscale
    m = np.zeros((n_out, n_in))
    for j in range(n_out):
        center = (j + 0.5) * s
        lo, hi = max(int(center - support + 0.5), 0), min(int(center + support + 0.5), n_in)
        w = np.array([keys((i - center + 0.5) / filterscale, -0.5) if cubic else max(0.0, 1 - abs((i - center + 0.5) / filterscale))
                      for i in range(lo, hi)])
        m[j, lo:hi] = w / w.sum()
    return m


def apply(x, matrices):
    for axis, m in zip(range(2, x.ndim), matrices):
        x = np.moveaxis(np.tensordot(m, np.moveaxis(x, axis, 0), axes=1), 0, axis)
    return x


def check(got, want, dtype):
    assert got.dtype == dtype and tuple(got.shape) == want.shape
    tol = TOL[dtype.name]
    np.testing.assert_allclose(to_np(got).astype(np.float64), want, rtol=tol, atol=tol * max(1.0, np.abs(want).max()))


def reference(x, mode, out, scales, align_corners=False, antialias=False):
    mats = []
    for n, o, sf in zip(x.shape[2:], out, scales):
        if mode in ("nearest", "nearest-exact"):
            mats.append(nearest_matrix(n, o, sf, mode == "nearest-exact"))
        elif antialias:
            mats.append(pil_matrix(n, o, sf, mode == "bicubic"))
        elif mode == "bicubic":
            mats.append(cubic_matrix(n, o, sf, align_corners))
        else:
            mats.append(linear_matrix(n, o, sf, align_corners))
    return apply(x, mats)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear", "bicubic"])
@pytest.mark.parametrize("size", [(7, 5), (16, 9), (3, 11), (5, 6)])
def test_interpolate2d_size_parity(dtype, mode, size):
    x, xr = make((2, 3, 5, 6), dtype, 0)
    check(F.interpolate(x, size=size, mode=mode), reference(xr, mode, size, (None, None)), dtype)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("size", [(9, 4), (2, 13), (1, 1)])
def test_interpolate2d_align_corners(mode, size):
    x, xr = make((1, 2, 6, 5), ember.float64, 1)
    got = F.interpolate(x, size=size, mode=mode, align_corners=True)
    check(got, reference(xr, mode, size, (None, None), align_corners=True), ember.float64)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear", "bicubic"])
@pytest.mark.parametrize("scale", [1.7, 0.45, (2, 0.5), 3])
def test_interpolate_scale_factor_sets_the_mapping(mode, scale):
    x, xr = make((1, 2, 7, 9), ember.float64, 2)
    scales = scale if isinstance(scale, tuple) else (scale, scale)
    out = [math.floor(n * s) for n, s in zip((7, 9), scales)]
    got = F.interpolate(x, scale_factor=scale, mode=mode)
    check(got, reference(xr, mode, out, scales), ember.float64)
    recomputed = F.interpolate(x, scale_factor=scale, mode=mode, recompute_scale_factor=True)
    check(recomputed, reference(xr, mode, out, (None, None)), ember.float64)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=str)
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("size", [(3, 4), (2, 7), (11, 3), (17, 20), (1, 1)])
def test_interpolate_antialias_matches_pil_filters(dtype, mode, size):
    x, xr = make((2, 2, 12, 9), dtype, 3)
    got = F.interpolate(x, size=size, mode=mode, antialias=True)
    check(got, reference(xr, mode, size, (None, None), antialias=True), dtype)


def test_interpolate_antialias_with_scale_factor():
    x, xr = make((1, 1, 10, 10), ember.float64, 4)
    got = F.interpolate(x, scale_factor=0.3, mode="bilinear", antialias=True)
    check(got, reference(xr, "bilinear", (3, 3), (0.3, 0.3), antialias=True), ember.float64)


def test_interpolate_linear_1d_known_values():
    x = ember.arange(4.0).view(1, 1, 4)
    np.testing.assert_allclose(to_np(F.interpolate(x, size=8, mode="linear"))[0, 0], [0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3])
    np.testing.assert_allclose(to_np(F.interpolate(x, scale_factor=2, mode="nearest"))[0, 0], [0, 0, 1, 1, 2, 2, 3, 3])
    np.testing.assert_allclose(to_np(F.interpolate(x, size=7, mode="linear", align_corners=True))[0, 0], [0, 0.5, 1, 1.5, 2, 2.5, 3])


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "linear"])
def test_interpolate1d(mode):
    x, xr = make((2, 3, 9), ember.float32, 5)
    check(F.interpolate(x, size=14, mode=mode), reference(xr, mode, (14,), (None,)), ember.float32)


@pytest.mark.parametrize("mode", ["nearest", "trilinear"])
def test_interpolate3d(mode):
    x, xr = make((1, 2, 4, 5, 3), ember.float64, 6)
    check(F.interpolate(x, size=(6, 3, 5), mode=mode), reference(xr, mode, (6, 3, 5), (None,) * 3), ember.float64)


def test_interpolate_area_is_adaptive_average():
    x, xr = make((1, 2, 8, 6), ember.float64, 7)
    got = F.interpolate(x, size=(4, 3), mode="area")
    check(got, xr.reshape(1, 2, 4, 2, 3, 2).mean(axis=(3, 5)), ember.float64)


def test_interpolate_non_contiguous_input():
    rng = np.random.default_rng(8)
    base = rng.standard_normal((2, 7, 6, 3))
    x = ember.tensor(base).permute(0, 3, 1, 2)
    got = F.interpolate(x, size=(10, 4), mode="bilinear")
    check(got, reference(base.transpose(0, 3, 1, 2), "bilinear", (10, 4), (None, None)), ember.float64)


@pytest.mark.parametrize("call,exc,msg", [
    (lambda x: F.interpolate(x, size=(2, 2), scale_factor=2), ValueError, "only one of size or scale_factor should be defined"),
    (lambda x: F.interpolate(x), ValueError, "either size or scale_factor should be defined"),
    (lambda x: F.interpolate(x, size=(2, 2, 2)), ValueError, "Input and output must have the same number of spatial dimensions"),
    (lambda x: F.interpolate(x, scale_factor=(2, 2, 2)), ValueError, "Input and scale_factor must have the same number of spatial dimensions"),
    (lambda x: F.interpolate(x, size=4, align_corners=True), ValueError, "align_corners option can only be set with the interpolating modes"),
    (lambda x: F.interpolate(x, size=4, mode="linear"), NotImplementedError, "Got 4D input, but linear mode needs 3D input"),
    (lambda x: F.interpolate(x, size=4, mode="trilinear"), NotImplementedError, "Got 4D input, but trilinear mode needs 5D input"),
    (lambda x: F.interpolate(x, size=4, mode="nearest", antialias=True), ValueError, "Anti-alias option is restricted to bilinear and bicubic modes"),
    (lambda x: F.interpolate(x, size=4, mode="cubic"), NotImplementedError, r"Input Error: Only 3D, 4D and 5D input Tensors supported \(got 4D\)"),
    (lambda x: F.interpolate(x, size=(2, 2), recompute_scale_factor=True), ValueError, "recompute_scale_factor is not meaningful with an explicit size"),
    (lambda x: F.interpolate(x, size=(0, 2)), RuntimeError, "Input and output sizes should be greater than 0"),
    (lambda x: F.interpolate(x[0, 0], size=2), NotImplementedError, r"got 2D"),
    (lambda x: F.interpolate(x.long(), size=2), RuntimeError, "\"interpolate\" not implemented for 'int64'"),
])
def test_interpolate_bad_inputs(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call(ember.ones(1, 1, 4, 4))
