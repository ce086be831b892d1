"""Channels-last memory format: strides and contiguity as PyTorch reports them, the NHWC kernels
(conv2d, batch_norm, pools, interpolate) against the NCHW path, layout preservation through
elementwise ops, autograd through a small channels-last CNN, and `Module.to(memory_format=)`."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import _memory_format as _mf

CL = ember.channels_last


def cl(t):
    return t.contiguous(memory_format=CL)


def close(a, b, tol=1e-4):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


SHAPES = [(2, 3, 4, 5), (2, 1, 4, 5), (2, 3, 1, 1), (1, 3, 4, 5), (2, 3, 1, 5)]


@pytest.mark.parametrize("shape", SHAPES)
def test_strides_and_contiguity_match_pytorch(shape):
    torch = pytest.importorskip("torch")
    t, e = torch.randn(*shape), ember.randn(*shape)
    tc, ec = t.contiguous(memory_format=torch.channels_last), e.contiguous(memory_format=CL)
    assert ec.stride() == tc.stride()
    assert e.is_contiguous(memory_format=CL) == t.is_contiguous(memory_format=torch.channels_last)
    assert ec.is_contiguous() == tc.is_contiguous()
    assert ember.zeros_like(e, memory_format=CL).stride() == torch.zeros_like(t, memory_format=torch.channels_last).stride()
    assert ember.empty_like(ec).stride() == torch.empty_like(tc).stride()
    assert (ec + 1).stride() == (tc + 1).stride()
    assert ec.clone().stride() == tc.clone().stride()
    assert e.to(memory_format=CL).stride() == t.to(memory_format=torch.channels_last).stride()
    assert ember.empty(*shape, memory_format=CL).stride() == torch.empty(*shape, memory_format=torch.channels_last).stride()


def test_format_objects_and_errors():
    assert repr(CL) == "ember.channels_last" and isinstance(ember.preserve_format, ember.memory_format)
    import pickle
    assert pickle.loads(pickle.dumps(CL)) is CL
    x = ember.randn(2, 3, 4, 5)
    y = cl(x)
    assert y.stride() == (60, 1, 15, 3) and not y.is_contiguous() and y.is_contiguous(memory_format=CL)
    assert y.contiguous(memory_format=CL) is y and y.to(memory_format=CL) is y
    assert y.contiguous().stride() == (60, 20, 5, 1)
    assert y.clone(memory_format=ember.contiguous_format).stride() == (60, 20, 5, 1)
    assert x.to(ember.float64, memory_format=CL).stride() == (60, 1, 15, 3)
    z = ember.randn(2, 3, 4, 5, 6).contiguous(memory_format=ember.channels_last_3d)
    assert z.stride() == (360, 1, 90, 18, 3)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        ember.randn(2, 3, 4).contiguous(memory_format=CL)
    with pytest.raises(RuntimeError, match="required rank 4"):
        ember.randn(2, 3).to(memory_format=CL)
    with pytest.raises(RuntimeError, match="preserve memory format is unsupported"):
        x.transpose(2, 3).contiguous(memory_format=ember.preserve_format)
    with pytest.raises(TypeError, match="memory_format"):
        x.contiguous(memory_format="channels_last")
    assert not ember.randn(2, 3, 4).is_contiguous(memory_format=CL)
    close(y, x)


def test_copy_to_channels_last_is_differentiable():
    x = ember.randn(2, 3, 4, 5, requires_grad=True)
    (cl(x) * ember.arange(60.0).reshape(3, 4, 5)).sum().backward()
    close(x.grad, ember.arange(60.0).reshape(3, 4, 5).expand(2, 3, 4, 5))


def test_elementwise_ops_keep_channels_last():
    x = cl(ember.randn(2, 3, 4, 5))
    other = ember.randn(2, 3, 4, 5)
    for out in (x + 1, x.relu(), F.relu(x), x * other, x + ember.randn(3, 1, 1), ember.where(x > 0, x, other), x.exp(), F.gelu(x)):
        assert out.is_contiguous(memory_format=CL) and not out.is_contiguous()
    assert (other * x).is_contiguous()  # the first operand decides, as in PyTorch


CONV_CASES = [
    dict(k=3, stride=1, padding=1, dilation=1, groups=1, bias=True),
    dict(k=1, stride=1, padding=0, dilation=1, groups=1, bias=False),
    dict(k=1, stride=2, padding=0, dilation=1, groups=1, bias=True),
    dict(k=3, stride=2, padding=1, dilation=1, groups=2, bias=True),
    dict(k=3, stride=1, padding=2, dilation=2, groups=1, bias=False),
    dict(k=3, stride=1, padding=1, dilation=1, groups=8, bias=True),  # depthwise
    dict(k=3, stride=2, padding=0, dilation=1, groups=4, bias=False),  # 2 channels per group
    dict(k=(2, 3), stride=(1, 2), padding=(1, 0), dilation=1, groups=1, bias=True),
]


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_conv2d_channels_last_equals_nchw(case, dtype):
    k = case["k"] if isinstance(case["k"], tuple) else (case["k"], case["k"])
    x = ember.randn(2, 8, 9, 10, dtype=dtype)
    w = ember.randn(8, 8 // case["groups"], *k, dtype=dtype)
    b = ember.randn(8, dtype=dtype) if case["bias"] else None
    args = dict(stride=case["stride"], padding=case["padding"], dilation=case["dilation"], groups=case["groups"])
    ref = F.conv2d(x, w, b, **args)
    for xi, wi in ((cl(x), w), (cl(x), cl(w)), (x, cl(w)), (x, w.to(memory_format=CL))):
        out = F.conv2d(xi, wi, b, **args)
        # PyTorch's rule: channels-last when the input or the weight's strides are. `cl(w)` of
        # a 1x1 or one-channel weight is `w` itself (already channels-last contiguous), NCHW.
        expect_cl = xi is not x or _mf.suggest(wi) is CL
        assert out.is_contiguous(memory_format=CL) == expect_cl and out.shape == ref.shape
        close(out, ref, 1e-4 if dtype == ember.float32 else 1e-10)


@pytest.mark.parametrize("stride", [1, 2])
def test_conv2d_channels_last_small_images_match_float64(stride):
    # Wide enough in channels and positions for the small-image direct kernel, which reads and
    # writes NHWC through strides; 40 outputs leave a partial block of 32.
    x, w, b = ember.randn(2, 12, 24, 24), ember.randn(40, 12, 3, 3), ember.randn(40)
    ref = F.conv2d(x.double(), w.double(), b.double(), stride=stride, padding=1)
    for wi in (w, cl(w)):
        out = F.conv2d(cl(x), wi, b, stride=stride, padding=1)
        assert out.is_contiguous(memory_format=CL) and out.shape == ref.shape
        close(out.double(), ref, 1e-4)
    flipped = w.flip(-1)  # negative strides
    ref = F.conv2d(x.double(), flipped.double(), b.double(), stride=stride, padding=1)
    close(F.conv2d(cl(x), flipped, b, stride=stride, padding=1).double(), ref, 1e-4)


def test_conv2d_channels_last_other_shapes():
    x = ember.randn(1, 3, 7, 7)
    close(F.conv2d(cl(x), ember.ones(5, 3, 3, 3), padding="same"), F.conv2d(x, ember.ones(5, 3, 3, 3), padding="same"))
    x16 = cl(ember.randn(2, 4, 6, 6)).bfloat16()
    w16 = ember.randn(6, 4, 3, 3).bfloat16()
    out = F.conv2d(x16, w16)
    assert out.dtype == ember.bfloat16 and out.is_contiguous(memory_format=CL)
    close(out.float(), F.conv2d(x16.contiguous(), w16).float(), 1e-2)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_channels_last(training):
    x = ember.randn(4, 6, 5, 7) * 3 + 1
    w, b = ember.randn(6), ember.randn(6)
    rm, rv = ember.randn(6), ember.rand(6) + 0.5
    rm2, rv2 = rm.clone(), rv.clone()
    ref = F.batch_norm(x, rm, rv, w, b, training=training, momentum=0.2)
    out = F.batch_norm(cl(x), rm2, rv2, w, b, training=training, momentum=0.2)
    assert out.is_contiguous(memory_format=CL)
    close(out, ref)
    close(rm2, rm)
    close(rv2, rv)


@pytest.mark.parametrize("op", [
    lambda x: F.max_pool2d(x, 2),
    lambda x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
    lambda x: F.max_pool2d(x, 3, stride=1, dilation=2),
    lambda x: F.avg_pool2d(x, 3, stride=2, padding=1),
    lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False),
    lambda x: F.avg_pool2d(x, 2, divisor_override=3),
    lambda x: F.adaptive_avg_pool2d(x, 1),
    lambda x: F.adaptive_avg_pool2d(x, (3, 4)),
    lambda x: F.adaptive_max_pool2d(x, (3, 2)),
    lambda x: F.interpolate(x, scale_factor=2, mode="nearest"),
    lambda x: F.interpolate(x, size=(5, 13), mode="bilinear", align_corners=False),
    lambda x: F.interpolate(x, size=(5, 13), mode="bilinear", align_corners=True),
])
def test_pools_and_interpolate_channels_last(op):
    x = ember.randn(2, 5, 9, 11)
    x[0, 1, 2, 3] = float("nan")
    ref, out = op(x), op(cl(x))
    assert out.is_contiguous(memory_format=CL) and out.shape == ref.shape
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)


def test_one_channel_channels_last_follows_pytorch():
    # [N, 1, H, W] with channels-last strides is contiguous too; PyTorch still treats it as
    # channels-last (by the order of its strides), and so do the kernels here.
    x = ember.randn(2, 1, 6, 6).to(memory_format=CL)
    assert x.stride() == (36, 1, 6, 1) and x.is_contiguous()
    assert F.conv2d(x, ember.randn(3, 1, 3, 3)).stride() == (48, 1, 12, 3)
    assert F.max_pool2d(x, 2).stride() == (9, 1, 3, 1)
    assert (x + 1).stride() == (36, 1, 6, 1)
    close(F.max_pool2d(x, 2), F.max_pool2d(x.contiguous(), 2))


def test_max_pool_indices_channels_last():
    x = ember.randn(2, 4, 6, 6)
    v, i = F.max_pool2d(cl(x), 2, return_indices=True)
    v0, i0 = F.max_pool2d(x, 2, return_indices=True)
    assert i.is_contiguous(memory_format=CL)
    assert (i == i0).all() and (v == v0).all()


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("dtype", [ember.bfloat16, ember.float16])
def test_half_batch_norm_channels_last_stays_half_and_channels_last(training, dtype):
    # Half types run on the NHWC kernel in float32 (no NCHW copy): same values as the NCHW path.
    x = (ember.randn(4, 6, 5, 7) * 3 + 1).to(dtype)
    w, b = ember.randn(6), ember.randn(6)
    rm, rv = ember.randn(6), ember.rand(6) + 0.5
    rm2, rv2 = rm.clone(), rv.clone()
    ref = F.batch_norm(x, rm, rv, w, b, training=training, momentum=0.2)
    out = F.batch_norm(cl(x), rm2, rv2, w, b, training=training, momentum=0.2)
    assert out.dtype == dtype and out.is_contiguous(memory_format=CL)
    close(out.float(), ref.float(), tol=1e-2)
    close(rm2, rm)
    close(rv2, rv)


@pytest.mark.parametrize("dtype", [ember.bfloat16, ember.float16, ember.float64])
def test_max_pool_channels_last_other_dtypes(dtype):
    # Compared where the values lie: the maxima and their indices equal the NCHW kernel's.
    x = ember.randn(2, 5, 9, 11).to(dtype)
    x[1, 2, 4, 4] = float("nan")
    v, i = F.max_pool2d(cl(x), 3, stride=2, padding=1, return_indices=True)
    v0, i0 = F.max_pool2d(x, 3, stride=2, padding=1, return_indices=True)
    assert v.dtype == dtype and v.is_contiguous(memory_format=CL)
    assert (i == i0).all()
    np.testing.assert_array_equal(v.double().numpy(), v0.double().numpy())


def _cnn():
    ember.manual_seed(1)
    return ember.nn.Sequential(
        ember.nn.Conv2d(3, 8, 3, padding=1), ember.nn.BatchNorm2d(8), ember.nn.ReLU(), ember.nn.MaxPool2d(2),
        ember.nn.Conv2d(8, 8, 3, padding=1, groups=8), ember.nn.Conv2d(8, 16, 1), ember.nn.ReLU(),
        ember.nn.AdaptiveAvgPool2d(1), ember.nn.Flatten(), ember.nn.Linear(16, 4))


def test_small_cnn_forward_backward_channels_last_equals_nchw():
    x = ember.randn(4, 3, 12, 12)
    target = ember.tensor([0, 1, 2, 3])
    ref_model, model = _cnn(), _cnn().to(memory_format=CL)
    assert model[0].weight.is_contiguous(memory_format=CL) and model[0].bias.stride() == (1,)
    grads = []
    for m, inp in ((ref_model, x), (model, cl(x))):
        loss = F.cross_entropy(m(inp), target)
        loss.backward()
        grads.append([p.grad for p in m.parameters()])
    close(F.cross_entropy(model(cl(x)), target), F.cross_entropy(ref_model(x), target))
    for g, g0 in zip(*grads[::-1]):
        close(g, g0, 1e-3)
    features = model[:4](cl(x))
    assert features.is_contiguous(memory_format=CL)


def test_module_to_memory_format_leaves_other_ranks():
    m = ember.nn.Sequential(ember.nn.Conv2d(2, 3, 3), ember.nn.Linear(3, 3))
    w = m[0].weight
    m.to(memory_format=CL)
    assert m[0].weight is w and w.is_contiguous(memory_format=CL) and not w.is_contiguous()
    assert m[1].weight.is_contiguous()
    with pytest.raises(RuntimeError, match="required rank 5"):
        ember.nn.Conv2d(2, 3, 3).to(memory_format=ember.channels_last_3d)
