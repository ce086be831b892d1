"""Gradients of the nn.functional kernels and compositions (softmax, norms, losses, embedding,
convolution, pooling, interpolation, padding, dropout) against PyTorch and finite differences."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from autograd_helpers import compare_with_torch, gradchecks, leaf

torch = pytest.importorskip("torch")
TF = torch.nn.functional
rng = np.random.default_rng(2)
X4 = rng.standard_normal((2, 4, 5, 5))


def both(name, *args, **kwargs):
    return (lambda *t: getattr(F, name)(*t, *args, **kwargs), lambda *t: getattr(TF, name)(*t, *args, **kwargs))


def test_softmax_family():
    x = rng.standard_normal((3, 5))
    for name in ("softmax", "log_softmax", "softmin"):
        for dim in (0, 1):
            fe, ft = both(name, dim=dim)
            compare_with_torch(fe, ft, [x], layout="transposed")
            gradchecks(fe, [x])
    compare_with_torch(lambda t: t.log_softmax(-1), lambda t: t.log_softmax(-1), [X4])


def test_layer_group_norm():
    x = rng.standard_normal((2, 3, 4))
    w, b = rng.standard_normal(4) + 1, rng.standard_normal(4)
    compare_with_torch(lambda x, w, b: F.layer_norm(x, (4,), w, b), lambda x, w, b: TF.layer_norm(x, (4,), w, b), [x, w, b])
    gradchecks(lambda x, w, b: F.layer_norm(x, (4,), w, b), [x, w, b])
    compare_with_torch(lambda x: F.layer_norm(x, (3, 4)), lambda x: TF.layer_norm(x, (3, 4)), [x], layout="transposed")
    xg = rng.standard_normal((2, 6, 3))
    wg, bg = rng.standard_normal(6) + 1, rng.standard_normal(6)
    compare_with_torch(lambda x, w, b: F.group_norm(x, 3, w, b), lambda x, w, b: TF.group_norm(x, 3, w, b), [xg, wg, bg])
    gradchecks(lambda x, w, b: F.group_norm(x, 2, w, b), [xg, wg, bg])


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm(training):
    x = rng.standard_normal((4, 3, 2, 2))
    w, b = rng.standard_normal(3) + 1, rng.standard_normal(3)
    rm, rv = rng.standard_normal(3), rng.uniform(0.5, 2, 3)

    def fe(x, w, b):
        return F.batch_norm(x, ember.tensor(rm), ember.tensor(rv), w, b, training=training)

    def ft(x, w, b):
        return TF.batch_norm(x, torch.tensor(rm), torch.tensor(rv), w, b, training=training)

    compare_with_torch(fe, ft, [x, w, b])
    gradchecks(fe, [x, w, b])
    compare_with_torch(lambda x: F.instance_norm(x), lambda x: TF.instance_norm(x), [x])
    gradchecks(lambda x, w, b: F.instance_norm(x, weight=w, bias=b), [x, w, b])


def test_losses():
    logits = rng.standard_normal((4, 5))
    target = np.array([1, 0, 4, 2])
    t_e, t_t = ember.tensor(target), torch.tensor(target)
    w = rng.uniform(0.5, 2, 5)
    cases = [
        (lambda x: F.cross_entropy(x, t_e), lambda x: TF.cross_entropy(x, t_t)),
        (lambda x: F.cross_entropy(x, t_e, weight=ember.tensor(w), reduction="sum"), lambda x: TF.cross_entropy(x, t_t, weight=torch.tensor(w), reduction="sum")),
        (lambda x: F.cross_entropy(x, t_e, label_smoothing=0.2), lambda x: TF.cross_entropy(x, t_t, label_smoothing=0.2)),
        (lambda x: F.nll_loss(F.log_softmax(x, 1), t_e, ignore_index=0), lambda x: TF.nll_loss(TF.log_softmax(x, 1), t_t, ignore_index=0)),
        (lambda x: F.nll_loss(x, t_e, weight=ember.tensor(w), reduction="none"), lambda x: TF.nll_loss(x, t_t, weight=torch.tensor(w), reduction="none")),
        (lambda x: F.mse_loss(x, ember.zeros(4, 5, dtype=ember.float64)), lambda x: TF.mse_loss(x, torch.zeros(4, 5, dtype=torch.float64))),
        (lambda x: F.binary_cross_entropy_with_logits(x, ember.ones(4, 5, dtype=ember.float64) * 0.3), lambda x: TF.binary_cross_entropy_with_logits(x, torch.ones(4, 5, dtype=torch.float64) * 0.3)),
        (lambda x: F.smooth_l1_loss(x, ember.zeros(4, 5, dtype=ember.float64)), lambda x: TF.smooth_l1_loss(x, torch.zeros(4, 5, dtype=torch.float64))),
        (lambda x: F.kl_div(F.log_softmax(x, 1), ember.full((4, 5), 0.2, dtype=ember.float64), reduction="batchmean"), lambda x: TF.kl_div(TF.log_softmax(x, 1), torch.full((4, 5), 0.2, dtype=torch.float64), reduction="batchmean")),
    ]
    for fe, ft in cases:
        compare_with_torch(fe, ft, [logits])
        gradchecks(fe, [logits])
    spatial = rng.standard_normal((2, 3, 4))
    ts = rng.integers(0, 3, (2, 4))
    compare_with_torch(lambda x: F.cross_entropy(x, ember.tensor(ts)), lambda x: TF.cross_entropy(x, torch.tensor(ts)), [spatial])
    probs = rng.uniform(0.1, 0.9, (4, 5))
    compare_with_torch(lambda x: F.cross_entropy(x, ember.tensor(probs)), lambda x: TF.cross_entropy(x, torch.tensor(probs)), [logits])


def test_embedding():
    weight = rng.standard_normal((6, 3))
    idx = np.array([[0, 2, 2], [5, 1, 0]])
    compare_with_torch(lambda w: F.embedding(ember.tensor(idx), w), lambda w: TF.embedding(torch.tensor(idx), w), [weight])
    compare_with_torch(lambda w: F.embedding(ember.tensor(idx), w, padding_idx=2), lambda w: TF.embedding(torch.tensor(idx), w, padding_idx=2), [weight])
    gradchecks(lambda w: F.embedding(ember.tensor(idx), w), [weight])


CONVS = [
    (1, (2, 4, 9), (6, 2, 3), dict(stride=2, padding=1, groups=2)),
    (1, (2, 3, 8), (4, 3, 3), dict(padding="same", dilation=2)),
    (2, (2, 4, 7, 6), (6, 4, 3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2))),
    (2, (1, 4, 6, 6), (4, 1, 3, 3), dict(padding=1, groups=4)),
    (2, (2, 3, 5, 5), (4, 3, 2, 2), dict(padding="same")),
    (2, (3, 5, 5), (2, 3, 3, 3), dict()),
    (3, (1, 2, 4, 5, 4), (3, 2, 2, 3, 2), dict(stride=(1, 2, 1), padding=(1, 1, 0))),
    # stride 1: the input gradient is a conv with the flipped weight (groups, dilation) ...
    (2, (3, 4, 6, 5), (6, 2, 3, 3), dict(padding=(1, 2), dilation=(2, 1), groups=2)),
    # ... unless the padding reaches past the kernel, which takes the transposed conv.
    (2, (2, 2, 4, 4), (3, 2, 2, 2), dict(padding=2)),
]


@pytest.mark.parametrize("dims,xs,ws,kw", CONVS, ids=[f"conv{c[0]}d-{i}" for i, c in enumerate(CONVS)])
@pytest.mark.filterwarnings("ignore:Using padding=.same.")
def test_conv(dims, xs, ws, kw):
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
    fe = lambda x, w, b: getattr(F, f"conv{dims}d")(x, w, b, **kw)  # noqa: E731
    ft = lambda x, w, b: getattr(TF, f"conv{dims}d")(x, w, b, **kw)  # noqa: E731
    compare_with_torch(fe, ft, [x, w, b])
    gradchecks(fe, [x, w, b], second_order=dims < 3)


@pytest.mark.parametrize("kw", [dict(padding=1), dict(stride=2, padding=1, groups=2)])
def test_conv_weight_grad_kernel_matches_recorded_path(kw):
    # Plain backward runs the one-pass weight-gradient kernel (threads split the batch);
    # create_graph=True composes differentiable ops. Both must agree.
    x = ember.tensor(rng.standard_normal((9, 4, 11, 10)), dtype=ember.float32)
    w = ember.tensor(rng.standard_normal((6, 4 // kw.get("groups", 1), 3, 3)), dtype=ember.float32, requires_grad=True)
    y = F.conv2d(x, w, **kw)
    g = ember.tensor(rng.standard_normal(tuple(y.shape)), dtype=ember.float32)
    (fast,) = ember.autograd.grad(y, [w], g, retain_graph=True)
    (recorded,) = ember.autograd.grad(y, [w], g, create_graph=True)
    np.testing.assert_allclose(fast.numpy(), recorded.detach().numpy(), rtol=1e-4, atol=1e-4)


def test_conv_non_contiguous_and_transposed():
    x, w = rng.standard_normal((2, 3, 5, 5)), rng.standard_normal((4, 3, 3, 3))
    compare_with_torch(lambda x, w: F.conv2d(x, w, padding=1), lambda x, w: TF.conv2d(x, w, padding=1), [x, w], layout="transposed")
    wt = rng.standard_normal((3, 2, 3, 3))
    kw = dict(stride=2, padding=1, output_padding=1)
    compare_with_torch(lambda x, w: F.conv_transpose2d(x, w, **kw), lambda x, w: TF.conv_transpose2d(x, w, **kw), [x, wt])
    gradchecks(lambda x, w: F.conv_transpose2d(x, w, **kw), [x[:1, :, :3, :3], wt])
    wg = rng.standard_normal((4, 3, 2))
    kw = dict(stride=2, groups=2, dilation=2)
    x1 = rng.standard_normal((2, 4, 5))
    compare_with_torch(lambda x, w: F.conv_transpose1d(x, w, **kw), lambda x, w: TF.conv_transpose1d(x, w, **kw), [x1, wg])


POOLS = [
    ("max_pool2d", dict(kernel_size=2)),
    ("max_pool2d", dict(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=True)),
    ("max_pool1d", dict(kernel_size=2, stride=1)),
    ("avg_pool2d", dict(kernel_size=2)),
    ("avg_pool2d", dict(kernel_size=3, stride=2, padding=1, count_include_pad=False, ceil_mode=True)),
    ("avg_pool2d", dict(kernel_size=(2, 3), stride=1, padding=(1, 1))),
    ("avg_pool2d", dict(kernel_size=2, divisor_override=3)),
    ("avg_pool1d", dict(kernel_size=3, stride=2, padding=1)),
    ("adaptive_avg_pool2d", dict(output_size=(3, 2))),
    ("adaptive_avg_pool2d", dict(output_size=1)),
    ("adaptive_max_pool2d", dict(output_size=(2, 3))),
    ("adaptive_avg_pool1d", dict(output_size=3)),
]


@pytest.mark.parametrize("name,kw", POOLS, ids=[f"{p[0]}-{i}" for i, p in enumerate(POOLS)])
def test_pooling(name, kw):
    x = rng.standard_normal((2, 3, 5, 5)) if "1d" not in name else rng.standard_normal((2, 3, 7))
    fe, ft = both(name, **kw)
    compare_with_torch(fe, ft, [x])
    gradchecks(fe, [x])
    compare_with_torch(fe, ft, [x], layout="strided")


INTERP = [
    dict(scale_factor=2, mode="nearest"),
    dict(size=(7, 3), mode="bilinear", align_corners=False),
    dict(size=(7, 8), mode="bilinear", align_corners=True),
    dict(scale_factor=1.5, mode="bicubic"),
    dict(size=(2, 3), mode="bilinear", antialias=True),
    dict(size=(3, 3), mode="area"),
    dict(scale_factor=2, mode="nearest-exact"),
]


@pytest.mark.parametrize("kw", INTERP, ids=[str(i) for i in range(len(INTERP))])
def test_interpolate(kw):
    x = rng.standard_normal((1, 2, 4, 5))
    fe, ft = both("interpolate", **kw)
    compare_with_torch(fe, ft, [x])
    gradchecks(fe, [x])


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad(mode):
    x = rng.standard_normal((2, 3, 4, 5))
    pads = (1, 2, 2, 1)
    fe, ft = both("pad", pads, mode=mode)
    compare_with_torch(fe, ft, [x])
    gradchecks(fe, [x[:1, :2]])
    if mode == "constant":
        compare_with_torch(lambda t: F.pad(t, (-1, 2, 0, 0, 1, 1), value=3.0), lambda t: TF.pad(t, (-1, 2, 0, 0, 1, 1), value=3.0), [x])


def test_dropout_keeps_the_kept_elements_gradient():
    x = leaf(np.ones((50, 40)))
    y = F.dropout(x, 0.25, training=True)
    y.sum().backward()
    kept = np.asarray(y.detach()) != 0
    np.testing.assert_allclose(np.asarray(x.grad)[kept], 1 / 0.75)
    assert np.all(np.asarray(x.grad)[~kept] == 0)


def test_attention_composition():
    q, k, v = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 5, 4))
    fe = lambda q, k, v: F.scaled_dot_product_attention(q, k, v)  # noqa: E731
    ft = lambda q, k, v: TF.scaled_dot_product_attention(q, k, v)  # noqa: E731
    compare_with_torch(fe, ft, [q, k, v])
    gradchecks(fe, [q, k, v], second_order=False)
