"""Losses, embeddings, one_hot and dropout of `ember.nn.functional` against NumPy references."""
import numpy as np
import pytest
import scipy.special as sp

import ember
import ember.nn.functional as F
from tensor_helpers import FLOATS, assert_close, layouts, to_np

REDUCTIONS = ["none", "mean", "sum"]
TOL = {"float32": 2e-5, "float64": 1e-10, "float16": 4e-3, "bfloat16": 3e-2}


def close(got, want, dtype, scale=1.0):
    tol = TOL[dtype.name] * scale
    assert_close(got, want, dtype, rtol=tol, atol=tol)


def reduce_np(loss, reduction):
    return {"none": loss, "mean": np.mean(loss), "sum": np.sum(loss)}[reduction]


# ---- cross entropy / nll ----

def np_cross_entropy(x, t, w=None, ignore_index=-100, reduction="mean", smoothing=0.0):
    """Reference for class-index targets; x is (N, C, *), t is (N, *)."""
    c = x.shape[1]
    logp = sp.log_softmax(x, 1)
    w = np.ones(c) if w is None else w
    valid = t != ignore_index
    safe_t = np.where(valid, t, 0)
    picked = np.take_along_axis(logp, safe_t[:, None], 1)[:, 0]
    nll = np.where(valid, -picked * w[safe_t], 0.0)
    smooth = np.where(valid, -(logp * w.reshape((1, c) + (1,) * (x.ndim - 2))).sum(1), 0.0)
    if reduction == "mean":
        total = np.where(valid, w[safe_t], 0.0).sum()
        nll, smooth = nll.sum() / total, smooth.sum() / total
    elif reduction == "sum":
        nll, smooth = nll.sum(), smooth.sum()
    return (1 - smoothing) * nll + smoothing / c * smooth


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=str)
def test_cross_entropy_indices(reduction, dtype):
    rng = np.random.default_rng(0)
    w = rng.uniform(0.5, 2.0, 5)
    t = rng.integers(0, 5, 6)
    t[[1, 4]] = -100
    for layout, x, a in layouts((6, 5), dtype):
        tt = ember.tensor(t)
        close(F.cross_entropy(x, tt, reduction=reduction), np_cross_entropy(a, t, reduction=reduction), dtype)
        close(F.cross_entropy(x, tt, ember.tensor(w).to(dtype), reduction=reduction), np_cross_entropy(a, t, w, reduction=reduction), dtype, scale=2)
        got = F.cross_entropy(x, tt, ember.tensor(w).to(dtype), reduction=reduction, label_smoothing=0.2)
        close(got, np_cross_entropy(a, t, w, reduction=reduction, smoothing=0.2), dtype, scale=2)


def test_cross_entropy_spatial_and_custom_ignore_index():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(2, 4, 3, 5))
    t = rng.integers(0, 4, (2, 3, 5))
    t[0, 1, 2] = 7
    got = F.cross_entropy(ember.tensor(a), ember.tensor(t), ignore_index=7, label_smoothing=0.1)
    close(got, np_cross_entropy(a, t, ignore_index=7, smoothing=0.1), ember.float64)


def test_cross_entropy_unbatched_and_probabilities():
    rng = np.random.default_rng(2)
    a = rng.normal(size=5)
    close(F.cross_entropy(ember.tensor(a), ember.tensor(3)), -sp.log_softmax(a)[3], ember.float64)
    x = rng.normal(size=(4, 5))
    p = sp.softmax(rng.normal(size=(4, 5)), 1)
    w = rng.uniform(0.5, 2, 5)
    logp = sp.log_softmax(x, 1)
    for reduction in REDUCTIONS:
        want = reduce_np(-(logp * p * w).sum(1), reduction)
        close(F.cross_entropy(ember.tensor(x), ember.tensor(p), ember.tensor(w), reduction=reduction), want, ember.float64)
    smoothed = p * 0.7 + 0.3 / 5
    close(F.cross_entropy(ember.tensor(x), ember.tensor(p), label_smoothing=0.3), (-(logp * smoothed).sum(1)).mean(), ember.float64)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss(reduction):
    rng = np.random.default_rng(3)
    logp = sp.log_softmax(rng.normal(size=(5, 4)), 1)
    t = np.array([0, 3, 1, -100, 2])
    w = rng.uniform(0.5, 2, 4)
    want = np_cross_entropy(logp, t, w, reduction=reduction)
    close(F.nll_loss(ember.tensor(logp), ember.tensor(t), ember.tensor(w), reduction=reduction), want, ember.float64)


def test_nll_loss_legacy_flags():
    logp = ember.tensor([[-1.0, -2.0], [-3.0, -0.5]])
    t = ember.tensor([0, 1])
    assert F.nll_loss(logp, t, size_average=False).item() == pytest.approx(1.5)
    assert F.nll_loss(logp, t, reduce=False).tolist() == [1.0, 0.5]


def test_cross_entropy_bad_input():
    x = ember.randn(4, 5)
    with pytest.raises(IndexError, match="Target 5 is out of bounds."):
        F.cross_entropy(x, ember.tensor([0, 1, 5, 2]))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(4\) to match target batch_size \(3\)."):
        F.cross_entropy(x, ember.tensor([0, 1, 2]))
    with pytest.raises(RuntimeError, match="expected scalar type Long but found Int"):
        F.nll_loss(x, ember.tensor([0, 1, 2, 3], dtype=ember.int32))
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        F.cross_entropy(x, ember.tensor([0, 1, 2, 3]), reduction="bad")
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0"):
        F.cross_entropy(x, ember.tensor([0, 1, 2, 3]), label_smoothing=1.5)
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 5 classes"):
        F.cross_entropy(x, ember.tensor([0, 1, 2, 3]), ember.ones(3))


# ---- pointwise losses ----

POINTWISE = {
    "mse_loss": lambda d: d * d,
    "l1_loss": np.abs,
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_pointwise_losses(dtype, reduction):
    rng = np.random.default_rng(4)
    target = ember.tensor(rng.normal(size=(5, 7))).to(dtype)
    b = to_np(target)
    for layout, x, a in layouts((5, 7), dtype):
        d = a - b
        z = np.abs(d)
        close(F.mse_loss(x, target, reduction=reduction), reduce_np(d * d, reduction), dtype, scale=4)
        close(F.l1_loss(x, target, reduction=reduction), reduce_np(z, reduction), dtype, scale=4)
        sl1 = np.where(z < 0.5, 0.5 * z * z / 0.5, z - 0.25)
        close(F.smooth_l1_loss(x, target, reduction=reduction, beta=0.5), reduce_np(sl1, reduction), dtype, scale=4)
        hub = np.where(z < 1.5, 0.5 * z * z, 1.5 * (z - 0.75))
        close(F.huber_loss(x, target, reduction=reduction, delta=1.5), reduce_np(hub, reduction), dtype, scale=4)


def test_smooth_l1_beta_zero_and_errors():
    x, y = ember.tensor([0.0, 2.0]), ember.tensor([0.5, 0.0])
    assert F.smooth_l1_loss(x, y, beta=0.0).item() == pytest.approx(1.25)
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values for beta."):
        F.smooth_l1_loss(x, y, beta=-1.0)
    with pytest.warns(UserWarning, match="different to the input size"):
        F.mse_loss(ember.ones(3, 1), ember.ones(3))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(reduction):
    rng = np.random.default_rng(5)
    x, t, w = rng.uniform(0.01, 0.99, (4, 3)), rng.uniform(0, 1, (4, 3)), rng.uniform(0.5, 2, (4, 3))
    want = -(t * np.log(x) + (1 - t) * np.log(1 - x)) * w
    close(F.binary_cross_entropy(ember.tensor(x), ember.tensor(t), ember.tensor(w), reduction=reduction), reduce_np(want, reduction), ember.float64)
    edge = F.binary_cross_entropy(ember.tensor([0.0, 1.0]), ember.tensor([1.0, 0.0]), reduction="none")
    assert to_np(edge).tolist() == [100.0, 100.0]


def test_binary_cross_entropy_errors():
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(ember.tensor([1.5]), ember.tensor([1.0]))
    with pytest.raises(ValueError, match="that is different to the input size"):
        F.binary_cross_entropy(ember.tensor([0.5, 0.5]), ember.tensor([1.0]))
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(ember.tensor([0.5, 0.5]), ember.tensor([1.0]))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits(reduction):
    rng = np.random.default_rng(6)
    x, t = rng.normal(0, 30, (4, 3)), rng.uniform(0, 1, (4, 3))
    w, pw = rng.uniform(0.5, 2, (4, 3)), rng.uniform(0.5, 3, 3)
    log_sig, log_1m_sig = -np.logaddexp(0, -x), -np.logaddexp(0, x)
    want = -(pw * t * log_sig + (1 - t) * log_1m_sig) * w
    got = F.binary_cross_entropy_with_logits(ember.tensor(x), ember.tensor(t), ember.tensor(w), reduction=reduction, pos_weight=ember.tensor(pw))
    close(got, reduce_np(want, reduction), ember.float64)
    plain = F.binary_cross_entropy_with_logits(ember.tensor(x), ember.tensor(t), reduction=reduction)
    close(plain, reduce_np(-(t * log_sig + (1 - t) * log_1m_sig), reduction), ember.float64)


def test_kl_div():
    rng = np.random.default_rng(7)
    logq = sp.log_softmax(rng.normal(size=(3, 4)), 1)
    p = sp.softmax(rng.normal(size=(3, 4)), 1)
    p[0, 0] = 0.0
    pointwise = sp.xlogy(p, p) - p * logq
    x, t = ember.tensor(logq), ember.tensor(p)
    close(F.kl_div(x, t, reduction="batchmean"), pointwise.sum() / 3, ember.float64)
    close(F.kl_div(x, t, reduction="sum"), pointwise.sum(), ember.float64)
    close(F.kl_div(x, t, reduction="none"), pointwise, ember.float64)
    with pytest.warns(UserWarning, match="batchmean"):
        close(F.kl_div(x, t), pointwise.mean(), ember.float64)
    logp = np.log(np.where(p == 0, 1e-3, p))
    close(F.kl_div(x, ember.tensor(logp), reduction="sum", log_target=True), (np.exp(logp) * (logp - logq)).sum(), ember.float64)


# ---- embeddings and one_hot ----

def test_embedding_lookup_and_padding_idx():
    w = ember.randn(10, 4)
    idx = ember.tensor([[1, 2, 9], [0, 0, 3]])
    got = F.embedding(idx, w, padding_idx=0)
    assert got.shape == (2, 3, 4)
    np.testing.assert_array_equal(to_np(got), to_np(w)[to_np(idx)])
    strided = ember.randn(4, 10).t()
    np.testing.assert_array_equal(to_np(F.embedding(idx, strided)), to_np(strided)[to_np(idx)])
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(ember.tensor([10]), w)
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar types: Long, Int"):
        F.embedding(ember.tensor([1.0]), w)
    with pytest.raises(ValueError, match="Padding_idx must be within num_embeddings"):
        F.embedding(idx, w, padding_idx=10)


def test_embedding_max_norm_renormalises_rows_in_place():
    w = ember.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]])
    out = F.embedding(ember.tensor([0, 1, 0]), w, max_norm=1.0)
    rows = to_np(w)
    np.testing.assert_allclose(np.linalg.norm(rows[0]), 1.0, rtol=1e-6)
    np.testing.assert_allclose(rows[1], [0.3, 0.4], rtol=1e-6)
    np.testing.assert_allclose(rows[2], [6.0, 8.0])  # not looked up, not renormalised
    np.testing.assert_allclose(to_np(out), rows[[0, 1, 0]])
    w1 = ember.tensor([[3.0, -4.0]])
    F.embedding(ember.tensor([0]), w1, max_norm=2.0, norm_type=1.0)
    np.testing.assert_allclose(np.abs(to_np(w1)).sum(), 2.0, rtol=1e-6)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_modes(mode):
    rng = np.random.default_rng(8)
    w = rng.normal(size=(10, 3))
    idx = np.array([1, 2, 4, 5, 4, 3, 2, 9])
    offsets = np.array([0, 4, 4])
    pool = {"sum": np.sum, "mean": np.mean, "max": np.max}[mode]
    bags = [idx[0:4], idx[4:4], idx[4:]]
    want = np.stack([pool(w[b], 0) if len(b) else np.zeros(3) for b in bags])
    got = F.embedding_bag(ember.tensor(idx), ember.tensor(w), ember.tensor(offsets), mode=mode)
    close(got, want, ember.float64)
    two_d = F.embedding_bag(ember.tensor(idx.reshape(2, 4)), ember.tensor(w), mode=mode)
    close(two_d, np.stack([pool(w[idx[:4]], 0), pool(w[idx[4:]], 0)]), ember.float64)


def test_embedding_bag_weights_padding_and_last_offset():
    rng = np.random.default_rng(9)
    w = rng.normal(size=(6, 2))
    idx = np.array([0, 1, 2, 0, 3])
    psw = rng.uniform(size=5)
    got = F.embedding_bag(ember.tensor(idx), ember.tensor(w), ember.tensor([0, 2, 5]), mode="sum", per_sample_weights=ember.tensor(psw), include_last_offset=True)
    close(got, np.stack([(w[idx[:2]] * psw[:2, None]).sum(0), (w[idx[2:]] * psw[2:, None]).sum(0)]), ember.float64)
    mean_pad = F.embedding_bag(ember.tensor(idx), ember.tensor(w), ember.tensor([0, 3]), mode="mean", padding_idx=0)
    close(mean_pad, np.stack([w[[1, 2]].mean(0), w[[3]].mean(0)]), ember.float64)
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        F.embedding_bag(ember.tensor(idx), ember.tensor(w), ember.tensor([0]), mode="max", per_sample_weights=ember.tensor(psw))
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(ember.tensor(idx), ember.tensor(w))
    with pytest.raises(ValueError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(ember.tensor(idx), ember.tensor(w), ember.tensor([1, 3]))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(ember.tensor(idx), ember.tensor(w), ember.tensor([0]), mode="median")


def test_one_hot():
    t = ember.tensor([[0, 2], [1, 0]])
    got = F.one_hot(t)
    assert got.dtype == ember.int64 and got.shape == (2, 2, 3)
    np.testing.assert_array_equal(to_np(got), np.eye(3, dtype=np.int64)[to_np(t)])
    assert F.one_hot(ember.tensor([1]), 4).tolist() == [[0, 1, 0, 0]]
    assert F.one_hot(ember.zeros(0, dtype=ember.int64), 3).shape == (0, 3)
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        F.one_hot(ember.tensor([3]), 3)
    with pytest.raises(RuntimeError, match="Class values must be non-negative."):
        F.one_hot(ember.tensor([-1]))
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor"):
        F.one_hot(ember.tensor([1.0]))


# ---- dropout ----

def test_dropout_keep_rate_scaling_and_determinism():
    x = ember.ones(200, 500)
    ember.manual_seed(123)
    a = F.dropout(x, 0.3)
    ember.manual_seed(123)
    b = F.dropout(x, 0.3)
    np.testing.assert_array_equal(to_np(a), to_np(b))
    vals = to_np(a)
    kept = vals != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(vals[kept], 1 / 0.7, rtol=1e-6)
    assert not np.array_equal(to_np(F.dropout(x, 0.3)), vals)


def test_dropout_modes():
    x = ember.randn(4, 5)
    assert F.dropout(x, 0.5, training=False) is x
    assert to_np(F.dropout(x, 1.0)).tolist() == [[0.0] * 5] * 4
    y = ember.ones(4, 5)
    r = F.dropout(y, 0.5, inplace=True)
    assert r is y and set(np.unique(to_np(y))) <= {0.0, 2.0}
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got"):
            F.dropout(x, bad)


def test_channel_dropout_zeroes_whole_channels():
    x = ember.ones(8, 16, 5, 6)
    out = to_np(F.dropout2d(x, 0.5))
    per_channel = out.reshape(8, 16, -1)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2).all(-1))
    assert 0.3 < (per_channel[..., 0] == 0).mean() < 0.7
    one_d = to_np(F.dropout1d(ember.ones(16, 7), 0.5))
    assert np.all((one_d == 0).all(-1) | (one_d == 2).all(-1))
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input"):
        F.dropout1d(ember.ones(2, 3, 4, 5))


def test_alpha_dropout_keeps_moments():
    x = ember.randn(400, 500)
    assert F.alpha_dropout(x, 0.2) is x  # training defaults to False
    y = to_np(F.alpha_dropout(x, 0.2, training=True))
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
    alpha, p = 1.7580993408473766, 0.2
    a = 1 / np.sqrt((alpha * alpha * p + 1) * (1 - p))
    dropped = np.isclose(y, -alpha * a + alpha * a * p)
    assert abs(dropped.mean() - 0.2) < 0.01
