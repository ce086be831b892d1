"""ViT's convolutional stem (`conv_stem_configs`) and `interpolate_embeddings`; against TorchVision
too where torch and torchvision are installed."""
from collections import OrderedDict

import numpy as np
import pytest

import ember
from embervision.models.vision_transformer import ConvStemConfig, VisionTransformer, interpolate_embeddings

SMALL_VIT = dict(patch_size=16, num_layers=1, num_heads=2, hidden_dim=32, mlp_dim=64, num_classes=10)
STEM = [(16, 3, 2), (32, 3, 2), (64, 3, 2), (64, 3, 2)]  # four stride-2 convolutions: a 16x16 patch grid


def small_vit(image_size=64, stem=None):
    ember.manual_seed(0)
    return VisionTransformer(image_size=image_size, conv_stem_configs=stem, **SMALL_VIT).eval()


def test_conv_stem_names_shapes_and_output():
    model = small_vit(stem=[ConvStemConfig(*c) for c in STEM])
    keys = [k for k in model.state_dict() if k.startswith("conv_proj.")]
    assert keys[:7] == ["conv_proj.conv_bn_relu_0.0.weight", "conv_proj.conv_bn_relu_0.1.weight",
                        "conv_proj.conv_bn_relu_0.1.bias", "conv_proj.conv_bn_relu_0.1.running_mean",
                        "conv_proj.conv_bn_relu_0.1.running_var", "conv_proj.conv_bn_relu_0.1.num_batches_tracked",
                        "conv_proj.conv_bn_relu_1.0.weight"]
    assert keys[-2:] == ["conv_proj.conv_last.weight", "conv_proj.conv_last.bias"]
    assert tuple(model.conv_proj.conv_last.weight.shape) == (32, 64, 1, 1)
    assert isinstance(model.conv_proj.conv_bn_relu_0[2], ember.nn.ReLU)
    with ember.no_grad():
        assert tuple(model(ember.randn(2, 3, 64, 64)).shape) == (2, 10)


def test_conv_stem_norm_and_activation_are_configurable():
    stem = [ConvStemConfig(8, 3, 4, activation_layer=ember.nn.SiLU), ConvStemConfig(16, 3, 4, norm_layer=None)]
    model = small_vit(stem=stem)
    assert isinstance(model.conv_proj.conv_bn_relu_0[2], ember.nn.SiLU)
    assert len(model.conv_proj.conv_bn_relu_1) == 2 and model.conv_proj.conv_bn_relu_1[0].bias is not None


def test_interpolate_embeddings_resizes_the_patch_grid():
    state = small_vit().state_dict()
    old = state["encoder.pos_embedding"].clone()
    new = interpolate_embeddings(96, 16, OrderedDict(state))
    pos = new["encoder.pos_embedding"]
    assert tuple(pos.shape) == (1, 37, 32)
    assert ember.equal(pos[:, 0], old[:, 0])  # the class token's embedding is kept
    # align_corners: the grid's four corners land on the old corners exactly
    old_grid, new_grid = old[0, 1:].reshape(4, 4, 32), pos[0, 1:].reshape(6, 6, 32)
    for (i, j), (a, b) in zip([(0, 0), (0, 3), (3, 0), (3, 3)], [(0, 0), (0, 5), (5, 0), (5, 5)]):
        np.testing.assert_allclose(new_grid[a, b].numpy(), old_grid[i, j].numpy(), rtol=1e-5, atol=1e-6)
    bigger = small_vit(image_size=96)
    bigger.load_state_dict(new)
    with ember.no_grad():
        assert tuple(bigger(ember.randn(1, 3, 96, 96)).shape) == (1, 10)


def test_interpolate_embeddings_bilinear_keeps_a_linear_ramp():
    state = small_vit().state_dict()
    ramp = ember.arange(4, dtype=ember.float32).view(4, 1, 1).expand(4, 4, 32).reshape(1, 16, 32)
    state["encoder.pos_embedding"] = ember.cat([ember.zeros(1, 1, 32), ramp], dim=1)
    pos = interpolate_embeddings(112, 16, state, interpolation_mode="bilinear")["encoder.pos_embedding"]
    want = np.repeat(np.linspace(0, 3, 7, dtype=np.float32), 7 * 32).reshape(49, 32)
    np.testing.assert_allclose(pos[0, 1:].numpy(), want, atol=1e-5)


def test_interpolate_embeddings_heads_and_unchanged_size():
    state = OrderedDict(small_vit().state_dict())
    assert interpolate_embeddings(64, 16, state, reset_heads=True) is state  # same grid: nothing to do
    resized = interpolate_embeddings(96, 16, OrderedDict(state), reset_heads=True)
    assert not any(k.startswith("heads") for k in resized) and "encoder.ln.weight" in resized


def test_interpolate_embeddings_bad_input():
    state = small_vit().state_dict()
    with pytest.raises(ValueError, match="Unexpected position embedding shape"):
        interpolate_embeddings(96, 16, {"encoder.pos_embedding": ember.zeros(2, 17, 32)})
    with pytest.raises(ValueError, match="seq_length is not a perfect square"):
        interpolate_embeddings(96, 16, {"encoder.pos_embedding": ember.zeros(1, 16, 32)})
    assert tuple(state["encoder.pos_embedding"].shape) == (1, 17, 32)


def test_against_torchvision():
    torch = pytest.importorskip("torch")
    tv = pytest.importorskip("torchvision.models.vision_transformer")
    torch.manual_seed(0)
    theirs = tv.VisionTransformer(image_size=64, conv_stem_configs=[tv.ConvStemConfig(*c) for c in STEM],
                                  **SMALL_VIT).eval()
    ours = small_vit(stem=[ConvStemConfig(*c) for c in STEM])
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: ember.from_numpy(v.numpy().copy()) for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 3, 64, 64)).astype(np.float32)
    with torch.no_grad():
        want = theirs(torch.from_numpy(x)).numpy()
    with ember.no_grad():
        np.testing.assert_allclose(ours(ember.from_numpy(x)).numpy(), want, rtol=1e-4, atol=1e-5)
    for mode in ("bicubic", "bilinear"):
        a = tv.interpolate_embeddings(96, 16, OrderedDict(theirs.state_dict()), mode)["encoder.pos_embedding"]
        b = interpolate_embeddings(96, 16, OrderedDict(ours.state_dict()), mode)["encoder.pos_embedding"]
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6)
