"""Softmax family, normalisation layers, linear layers and distances against NumPy/SciPy."""
import numpy as np
import pytest
import scipy.special as sp

import ember
import ember.nn.functional as F
from tensor_helpers import FLOATS, assert_close, layouts, to_np

TOL = {"float32": 2e-5, "float64": 1e-10, "float16": 4e-3, "bfloat16": 3e-2}


def close(got, want, dtype, scale=1.0):
    assert got.dtype == dtype
    tol = TOL[dtype.name] * scale
    assert_close(got, want, dtype, rtol=tol, atol=tol)


# ---- softmax family ----

@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_family_parity(dtype, dim):
    for layout, t, a in layouts((6, 70), dtype):
        close(F.softmax(t, dim), sp.softmax(a, dim), dtype)
        close(F.log_softmax(t, dim), sp.log_softmax(a, dim), dtype, scale=4)
        close(F.softmin(t, dim), sp.softmax(-a, dim), dtype)


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_softmax_3d_every_dim(dim):
    for layout, t, a in layouts((3, 5, 130), ember.float32):
        close(F.softmax(t, dim), sp.softmax(a, dim), ember.float32)
        close(t.log_softmax(dim), sp.log_softmax(a, dim), ember.float32, scale=4)


def test_softmax_methods_and_top_level():
    x = ember.randn(4, 9)
    a = to_np(x)
    close(ember.softmax(x, 1), sp.softmax(a, 1), ember.float32)
    close(ember.log_softmax(x, -1), sp.log_softmax(a, -1), ember.float32, scale=4)
    close(x.softmax(0), sp.softmax(a, 0), ember.float32)
    close(x.softmax(-1, dtype=ember.float64), sp.softmax(a, -1), ember.float64, scale=1e5)


def test_softmax_dtype_argument_casts_first():
    x = ember.randn(3, 5).half()
    y = F.softmax(x, 1, dtype=ember.float32)
    assert y.dtype == ember.float32
    close(y, sp.softmax(to_np(x).astype(np.float64), 1), ember.float32)


def test_softmax_edge_cases():
    assert F.softmax(ember.tensor(2.5), 0).item() == 1.0
    assert F.log_softmax(ember.tensor(2.5), -1).item() == 0.0
    assert F.softmax(ember.zeros(0, 4), 1).shape == (0, 4)
    big = ember.tensor([[1000.0, 0.0, -1000.0], [float("-inf"), 0.0, 0.0]])
    close(F.softmax(big, 1), [[1, 0, 0], [0, 0.5, 0.5]], ember.float32)
    close(F.log_softmax(big, 1), [[0, -1000, -2000], [-np.inf, np.log(0.5), np.log(0.5)]], ember.float32)
    with pytest.warns(UserWarning, match="Implicit dimension"):
        close(F.softmax(ember.ones(2, 4)), np.full((2, 4), 0.25), ember.float32)


def test_softmax_large_rows_parallel():
    a = np.random.default_rng(1).normal(size=(300, 1000)).astype(np.float32)
    close(F.softmax(ember.tensor(a), -1), sp.softmax(a.astype(np.float64), -1), ember.float32)
    close(F.softmax(ember.tensor(a), 0), sp.softmax(a.astype(np.float64), 0), ember.float32)


def test_softmax_bad_input():
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        F.softmax(ember.arange(4), 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.softmax(ember.ones(2, 3), 2)
    with pytest.raises(TypeError, match="must be Tensor"):
        F.softmax([1.0, 2.0], 0)


# ---- normalisation ----

def np_layer_norm(a, k, w=None, b=None, eps=1e-5):
    axes = tuple(range(a.ndim - k, a.ndim))
    y = (a - a.mean(axes, keepdims=True)) / np.sqrt(a.var(axes, keepdims=True) + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_layer_norm_parity(dtype):
    rng = np.random.default_rng(2)
    w, b = rng.normal(size=(5, 7)), rng.normal(size=(5, 7))
    tw, tb = ember.tensor(w).to(dtype), ember.tensor(b).to(dtype)
    for layout, t, a in layouts((4, 5, 7), dtype):
        close(F.layer_norm(t, (5, 7)), np_layer_norm(a, 2), dtype, scale=4)
        close(F.layer_norm(t, [7], eps=1e-3), np_layer_norm(a, 1, eps=1e-3), dtype, scale=4)
        close(F.layer_norm(t, (5, 7), tw, tb), np_layer_norm(a, 2, to_np(tw), to_np(tb)), dtype, scale=8)


def test_layer_norm_large_and_empty():
    a = np.random.default_rng(3).normal(3.0, 2.0, size=(64, 4096)).astype(np.float32)
    close(F.layer_norm(ember.tensor(a), (4096,)), np_layer_norm(a.astype(np.float64), 1), ember.float32, scale=10)
    assert F.layer_norm(ember.zeros(0, 3), (3,)).shape == (0, 3)


def test_layer_norm_bad_shapes():
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\], but got input of size\[2, 3\]"):
        F.layer_norm(ember.ones(2, 3), (4,))
    with pytest.raises(RuntimeError, match=r"Expected weight to be of same shape as normalized_shape, but got weight of shape \[2\] and normalized_shape = \[3\]"):
        F.layer_norm(ember.ones(2, 3), (3,), ember.ones(2))


def np_group_norm(a, g, w=None, b=None, eps=1e-5):
    n, c = a.shape[:2]
    r = a.reshape(n, g, -1)
    y = ((r - r.mean(-1, keepdims=True)) / np.sqrt(r.var(-1, keepdims=True) + eps)).reshape(a.shape)
    shape = (1, c) + (1,) * (a.ndim - 2)
    return y * (1 if w is None else w.reshape(shape)) + (0 if b is None else b.reshape(shape))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_group_norm_parity(dtype):
    rng = np.random.default_rng(4)
    w, b = ember.tensor(rng.normal(size=6)).to(dtype), ember.tensor(rng.normal(size=6)).to(dtype)
    for layout, t, a in layouts((3, 6, 5), dtype):
        close(F.group_norm(t, 3), np_group_norm(a, 3), dtype, scale=4)
        close(F.group_norm(t, 2, w, b), np_group_norm(a, 2, to_np(w), to_np(b)), dtype, scale=8)
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(ember.ones(2, 6, 4), 4)


def channel_view(v, ndim):
    return v.reshape((1, -1) + (1,) * (ndim - 2))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_batch_norm_training_updates_running_stats(dtype):
    rng = np.random.default_rng(5)
    w, b = rng.normal(size=4), rng.normal(size=4)
    for layout, t, a in layouts((3, 4, 5), dtype):
        a = a.astype(np.float64)
        rm, rv = ember.zeros(4), ember.ones(4)
        got = F.batch_norm(t, rm, rv, ember.tensor(w).to(dtype), ember.tensor(b).to(dtype), training=True, momentum=0.2)
        mean, var = a.mean((0, 2)), a.var((0, 2))
        want = (a - channel_view(mean, 3)) / np.sqrt(channel_view(var, 3) + 1e-5)
        wr, br = to_np(ember.tensor(w).to(dtype)), to_np(ember.tensor(b).to(dtype))
        close(got, want * channel_view(wr, 3) + channel_view(br, 3), dtype, scale=8)
        np.testing.assert_allclose(to_np(rm), 0.2 * mean, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(to_np(rv), 0.8 + 0.2 * a.var((0, 2), ddof=1), rtol=1e-5, atol=1e-6)


def test_batch_norm_eval_uses_running_stats_and_2d_input():
    a = np.random.default_rng(6).normal(size=(8, 3))
    rm, rv = ember.tensor([0.5, -1.0, 2.0], dtype=ember.float64), ember.tensor([1.5, 0.5, 4.0], dtype=ember.float64)
    got = F.batch_norm(ember.tensor(a), rm, rv, training=False, eps=1e-3)
    close(got, (a - to_np(rm)) / np.sqrt(to_np(rv) + 1e-3), ember.float64)
    assert to_np(rm).tolist() == [0.5, -1.0, 2.0]
    no_stats = F.batch_norm(ember.tensor(a), None, None, training=True)
    close(no_stats, (a - a.mean(0)) / np.sqrt(a.var(0) + 1e-5), ember.float64)


def test_batch_norm_bad_input():
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        F.batch_norm(ember.ones(1, 3), None, None, training=True)
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 4"):
        F.batch_norm(ember.ones(2, 3), ember.zeros(4), ember.ones(4))


def test_instance_norm():
    a = np.random.default_rng(7).normal(size=(2, 3, 10))
    t = ember.tensor(a)
    want = (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5)
    close(F.instance_norm(t), want, ember.float64)
    rm, rv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    F.instance_norm(t, rm, rv, momentum=0.5)
    np.testing.assert_allclose(to_np(rm), 0.5 * a.mean(-1).mean(0))
    np.testing.assert_allclose(to_np(rv), 0.5 + 0.5 * a.var(-1, ddof=1).mean(0))
    evaluated = F.instance_norm(t, rm, rv, use_input_stats=False)
    close(evaluated, (a - channel_view(to_np(rm), 3)) / np.sqrt(channel_view(to_np(rv), 3) + 1e-5), ember.float64)


def test_local_response_norm():
    a = np.random.default_rng(8).normal(size=(2, 5, 3, 2))
    size, alpha, beta, k = 3, 1e-2, 0.75, 2.0
    sq = np.pad(a * a, ((0, 0), (size // 2, (size - 1) // 2), (0, 0), (0, 0)))
    avg = np.stack([sq[:, c:c + size].mean(1) for c in range(5)], 1)
    close(F.local_response_norm(ember.tensor(a), size, alpha, beta, k), a / (k + alpha * avg) ** beta, ember.float64)
    with pytest.raises(ValueError, match="Expected 3D or higher dimensionality input"):
        F.local_response_norm(ember.ones(2, 3), 2)


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0])
def test_normalize(p):
    for layout, t, a in layouts((4, 6), ember.float64):
        n = np.maximum((np.abs(a) ** p).sum(1, keepdims=True) ** (1 / p), 1e-12)
        close(F.normalize(t, p), a / n, ember.float64)
    zero = F.normalize(ember.zeros(2, 3), dim=1)
    assert to_np(zero).tolist() == [[0, 0, 0], [0, 0, 0]]


# ---- linear layers and distances ----

def test_linear_and_bilinear():
    rng = np.random.default_rng(9)
    x, w, b = rng.normal(size=(2, 3, 4)), rng.normal(size=(5, 4)), rng.normal(size=5)
    close(F.linear(ember.tensor(x), ember.tensor(w), ember.tensor(b)), x @ w.T + b, ember.float64)
    close(F.linear(ember.tensor(x), ember.tensor(w)), x @ w.T, ember.float64)
    x1, x2, wb, bb = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 6)), rng.normal(size=(5, 4, 6)), rng.normal(size=5)
    want = np.einsum("bsi,oij,bsj->bso", x1, wb, x2) + bb
    close(F.bilinear(ember.tensor(x1), ember.tensor(x2), ember.tensor(wb), ember.tensor(bb)), want, ember.float64)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        F.linear(ember.ones(2, 3), ember.ones(4, 5))


def test_cosine_similarity_and_pairwise_distance():
    rng = np.random.default_rng(10)
    a, b = rng.normal(size=(4, 6)), rng.normal(size=(1, 6))
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    close(F.cosine_similarity(ember.tensor(a), ember.tensor(b)), cos, ember.float64)
    close(F.cosine_similarity(ember.zeros(2, 3), ember.ones(2, 3)), [0, 0], ember.float64 if False else ember.float32)
    for p in (1.0, 2.0, 3.5):
        want = (np.abs(a - b + 1e-6) ** p).sum(-1) ** (1 / p)
        close(F.pairwise_distance(ember.tensor(a), ember.tensor(b), p), want, ember.float64)
    assert F.pairwise_distance(ember.tensor(a), ember.tensor(b), keepdim=True).shape == (4, 1)


# ---- attention ----

def np_attention(q, k, v, mask=None, causal=False, scale=None):
    scores = q @ np.swapaxes(k, -1, -2) * (scale if scale is not None else 1 / np.sqrt(q.shape[-1]))
    if causal:
        mask = np.tril(np.ones((q.shape[-2], k.shape[-2]), dtype=bool))
    if mask is not None:
        scores = np.where(mask, scores, -np.inf) if mask.dtype == bool else scores + mask
    return sp.softmax(scores, -1) @ v


def test_scaled_dot_product_attention():
    rng = np.random.default_rng(11)
    q, k, v = rng.normal(size=(2, 3, 5, 8)), rng.normal(size=(2, 3, 7, 8)), rng.normal(size=(2, 3, 7, 4))
    tq, tk, tv = ember.tensor(q), ember.tensor(k), ember.tensor(v)
    close(F.scaled_dot_product_attention(tq, tk, tv), np_attention(q, k, v), ember.float64)
    close(F.scaled_dot_product_attention(tq, tk, tv, scale=0.3), np_attention(q, k, v, scale=0.3), ember.float64)
    bool_mask = rng.random((5, 7)) > 0.3
    bool_mask[:, 0] = True
    close(F.scaled_dot_product_attention(tq, tk, tv, attn_mask=ember.tensor(bool_mask)), np_attention(q, k, v, bool_mask), ember.float64)
    float_mask = rng.normal(size=(5, 7))
    close(F.scaled_dot_product_attention(tq, tk, tv, attn_mask=ember.tensor(float_mask)), np_attention(q, k, v, float_mask), ember.float64)
    kc, vc = ember.tensor(k[:, :, :5]), ember.tensor(v[:, :, :5])
    close(F.scaled_dot_product_attention(tq, kc, vc, is_causal=True), np_attention(q, k[:, :, :5], v[:, :, :5], causal=True), ember.float64)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        F.scaled_dot_product_attention(tq, tk, tv, attn_mask=ember.tensor(bool_mask), is_causal=True)


def test_attention_grouped_query_heads():
    rng = np.random.default_rng(12)
    q, k, v = rng.normal(size=(1, 4, 3, 8)), rng.normal(size=(1, 2, 5, 8)), rng.normal(size=(1, 2, 5, 8))
    got = F.scaled_dot_product_attention(ember.tensor(q), ember.tensor(k), ember.tensor(v), enable_gqa=True)
    close(got, np_attention(q, np.repeat(k, 2, 1), np.repeat(v, 2, 1)), ember.float64)
