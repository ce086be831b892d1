"""pad against np.pad (constant/reflect/edge/wrap are PyTorch's constant/reflect/replicate/circular),
with negative pads as crops."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from tensor_helpers import ALL, FLOATS, to_np

NP_MODE = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def pad_ref(x, pad, mode, value=0.0):
    pairs = [(0, 0)] * x.ndim
    for j in range(len(pad) // 2):
        pairs[x.ndim - 1 - j] = (pad[2 * j], pad[2 * j + 1])
    grow = [(max(lo, 0), max(hi, 0)) for lo, hi in pairs]
    kwargs = {"constant_values": value} if mode == "constant" else {}
    y = np.pad(x, grow, mode=NP_MODE[mode], **kwargs)
    crop = tuple(slice(-min(lo, 0), y.shape[d] + min(hi, 0)) for d, (lo, hi) in enumerate(pairs))
    return y[crop]


def make(shape, dtype, seed=0):
    t = ember.tensor(np.random.default_rng(seed).uniform(-5, 5, shape)).to(dtype)
    return t, to_np(t)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,pad", [
    ((2, 3, 6), (2, 3)), ((3, 6), (1, 0)), ((2, 3, 5, 6), (1, 2, 3, 4)), ((3, 5, 6), (2, 0, 0, 1)),
    ((1, 2, 4, 5, 6), (1, 1, 2, 0, 3, 2)), ((2, 4, 5, 6), (0, 1, 1, 0, 2, 3)), ((2, 3, 7), (-2, 1)),
])
def test_pad_parity(dtype, mode, shape, pad):
    x, xr = make(shape, dtype)
    got = F.pad(x, pad, mode=mode)
    want = pad_ref(xr, pad, mode)
    assert got.dtype == dtype and tuple(got.shape) == want.shape
    np.testing.assert_array_equal(to_np(got), want)


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_constant_pad_any_dtype_and_value(dtype):
    x, xr = make((2, 3, 4), dtype, 1)
    value = True if dtype == ember.bool else 7
    got = F.pad(x, (1, 2, 0, 1, 1, 1), value=value)
    want = pad_ref(xr, (1, 2, 0, 1, 1, 1), "constant", value)
    assert got.dtype == dtype
    np.testing.assert_array_equal(to_np(got), want)


def test_constant_pad_crops_and_fills_float_value():
    x, xr = make((4, 5), ember.float64, 2)
    np.testing.assert_array_equal(to_np(F.pad(x, (-1, -2, 1, -1), value=-0.5)), pad_ref(xr, (-1, -2, 1, -1), "constant", -0.5))
    assert tuple(F.pad(x, ()).shape) == (4, 5)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_non_contiguous_input(mode):
    rng = np.random.default_rng(3)
    base = rng.standard_normal((2, 8, 6, 3))
    x = ember.tensor(base).permute(0, 3, 1, 2)[:, :, ::2, :]
    want = pad_ref(base.transpose(0, 3, 1, 2)[:, :, ::2, :], (2, 1, 3, 2), mode)
    np.testing.assert_array_equal(to_np(F.pad(x, (2, 1, 3, 2), mode=mode)), want)


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: F.pad(ember.ones(2, 3), (1,)), RuntimeError, "Padding length must be divisible by 2"),
    (lambda: F.pad(ember.ones(2, 3), (1, 1, 1, 1, 1, 1)), RuntimeError,
     "Padding length should be less than or equal to two times the input dimension but got padding length 6 and input of dimension 2"),
    (lambda: F.pad(ember.ones(1, 1, 3), (3, 3), mode="reflect"), RuntimeError,
     r"Padding size should be less than the corresponding input dimension, but got: padding \(3, 3\) at dimension 2 of input \[1, 1, 3\]"),
    (lambda: F.pad(ember.ones(1, 1, 3), (4, 0), mode="circular"), RuntimeError, "Padding value causes wrapping around more than once"),
    (lambda: F.pad(ember.ones(5), (1, 1), mode="reflect"), NotImplementedError, "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported"),
    (lambda: F.pad(ember.ones(1, 2, 3, 4), (1, 1), mode="replicate"), NotImplementedError, "Only 2D, 3D, 4D, 5D padding"),
    (lambda: F.pad(ember.ones(2, 3), (-2, -2)), RuntimeError, "resulted in a negative output size"),
    (lambda: F.pad(ember.ones(2, 3), (1, 1), mode="reflect", value=1.0), RuntimeError, "Padding mode \"reflect\" doesn't take in value argument"),
    (lambda: F.pad(ember.ones(2, 3), (1, 1), mode="mirror"), RuntimeError, "Unrecognised padding mode mirror"),
    (lambda: F.pad(ember.ones(2, 3), (1.5, 1)), TypeError, "argument 'pad' must be an int or a tuple of ints"),
])
def test_pad_bad_inputs(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()
