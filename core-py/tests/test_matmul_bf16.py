"""The bfloat16 matmul kernel (`vdpbf16ps`, float32 sums rounded once into the output) against
an exact reference: float64 products of the bfloat16-rounded operands. Tails of every block,
odd and unit k, transposed and strided operands, batches, addmm/baddbmm and the "medium" float32
precision, which rounds float32 operands to bfloat16 and keeps float32 output."""
import numpy as np
import pytest

import ember

pytestmark = pytest.mark.skipif("avx512bf16" not in ember._C._half_paths(), reason="no AVX512-BF16 on this CPU")


@pytest.fixture(autouse=True)
def bf16_path():
    ember._C._set_half_path("avx512bf16")
    yield
    ember._C._set_half_path(None)
    ember.set_float32_matmul_precision("highest")


def f64(t):
    return np.asarray(t.to(ember.float32)).astype(np.float64)


def bf16(rng, shape):
    return ember.tensor(rng.uniform(-2, 2, shape).astype(np.float32)).to(ember.bfloat16)


def assert_product(got, a, b, start=None, rounded=True):
    """`got` is `start + a @ b` summed in float32 (a few ulps of the summed magnitudes), then
    rounded once to bfloat16 when `rounded`."""
    a64, b64 = f64(a), f64(b)
    want, size = a64 @ b64, np.abs(a64) @ np.abs(b64)
    if start is not None:
        want, size = want + start, size + np.abs(start)
    tol = 1e-5 * size + (2.0 ** -8 * np.abs(want) if rounded else 0)
    err = np.abs(np.asarray(got.to(ember.float32)).astype(np.float64) - want)
    assert got.shape == want.shape
    assert (err <= tol).all(), f"max error {err.max()} at {np.unravel_index(np.argmax(err - tol), err.shape)}"


SHAPES = [(1, 1, 1), (5, 1, 3), (3, 7, 5), (11, 31, 40), (12, 32, 64), (13, 600, 33), (70, 20, 301)]


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_product_of_every_layout(m, k, n):
    rng = np.random.default_rng(m * 1000 + k)
    a, at = bf16(rng, (m, k)), bf16(rng, (k, m)).t()
    b, bt = bf16(rng, (k, n)), bf16(rng, (n, k)).t()
    for x in (a, at):
        for y in (b, bt):
            got = x @ y
            assert got.dtype == ember.bfloat16
            assert_product(got, x, y)


def test_strided_views():
    rng = np.random.default_rng(1)
    a, b = bf16(rng, (40, 90)), bf16(rng, (70, 66))
    assert_product(a[::3, 1::2] @ b[5:50, ::2], a[::3, 1::2], b[5:50, ::2])
    assert_product(a[:, 1:68] @ b[:67, 3:40], a[:, 1:68], b[:67, 3:40])  # odd row offsets


def test_vectors_and_batches():
    rng = np.random.default_rng(2)
    v, m = bf16(rng, (37,)), bf16(rng, (37, 20))
    assert_product((v @ m).unsqueeze(0), v.unsqueeze(0), m)
    x, w = bf16(rng, (4, 9, 20)), bf16(rng, (4, 20, 11))
    got = ember.bmm(x, w)
    for i in range(4):
        assert_product(got[i], x[i], w[i])
    left, right = bf16(rng, (3, 1, 5, 7)), bf16(rng, (2, 7, 4))
    got = left @ right
    assert tuple(got.shape) == (3, 2, 5, 4)
    for i in range(3):
        for j in range(2):
            assert_product(got[i, j], left[i, 0], right[j])


def test_addmm_and_baddbmm():
    rng = np.random.default_rng(3)
    c, a, b = bf16(rng, (9, 11)), bf16(rng, (9, 20)), bf16(rng, (20, 11))
    got = ember.addmm(c, a, b, beta=0.5, alpha=2)
    want = 0.5 * f64(c) + 2 * f64(a @ b)  # the product is rounded, then combined
    np.testing.assert_allclose(f64(got), want, rtol=2.0 ** -7, atol=1e-6)
    cb, x, w = bf16(rng, (2, 9, 11)), bf16(rng, (2, 9, 20)), bf16(rng, (2, 20, 11))
    got = ember.baddbmm(cb, x, w)
    np.testing.assert_allclose(f64(got), f64(cb) + f64(ember.bmm(x, w)), rtol=2.0 ** -7, atol=1e-6)


def test_long_k_and_wide_n():
    rng = np.random.default_rng(4)
    a, b = bf16(rng, (3, 4103)), bf16(rng, (4103, 530))
    assert_product(a @ b, a, b)


def test_medium_precision_rounds_operands_keeps_float32():
    rng = np.random.default_rng(5)
    a = ember.tensor(rng.uniform(-1, 1, (30, 77)).astype(np.float32))
    b = ember.tensor(rng.uniform(-1, 1, (50, 77)).astype(np.float32)).t()
    ember.set_float32_matmul_precision("medium")
    got = a @ b
    assert got.dtype == ember.float32
    assert_product(got, a.to(ember.bfloat16), b.to(ember.bfloat16), rounded=False)
