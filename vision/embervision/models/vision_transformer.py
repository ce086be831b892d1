"""Vision Transformer ("An Image is Worth 16x16 Words", Dosovitskiy et al.)."""
import math
from collections import OrderedDict
from functools import partial
from typing import Callable, NamedTuple, Optional

import ember
from ember import nn
from ember.nn import functional as F

from embervision.models._api import _weights_enum
from embervision.models._utils import _builder, _ovewrite_named_param
from embervision.ops.misc import MLP, Conv2dNormActivation

__all__ = ["VisionTransformer", "ConvStemConfig", "interpolate_embeddings", "ViT_B_16_Weights", "ViT_B_32_Weights",
           "ViT_L_16_Weights", "ViT_L_32_Weights", "ViT_H_14_Weights", "vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32",
           "vit_h_14"]


class ConvStemConfig(NamedTuple):
    """One convolution (+ norm + activation) of the convolutional stem that replaces the patchify
    layer when `VisionTransformer(conv_stem_configs=[...])` is given ("Early Convolutions Help
    Transformers See Better", Xiao et al.)."""

    out_channels: int
    kernel_size: int
    stride: int
    norm_layer: Callable[..., nn.Module] = nn.BatchNorm2d
    activation_layer: Callable[..., nn.Module] = nn.ReLU


class MLPBlock(MLP):
    _version = 2

    def __init__(self, in_dim, mlp_dim, dropout):
        super().__init__(in_dim, [mlp_dim, in_dim], activation_layer=nn.GELU, inplace=None, dropout=dropout)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.normal_(m.bias, std=1e-6)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        # The checkpoints published with TorchVision 0.13 name the two linear layers linear_1 and
        # linear_2 (version 1 of this module); they are layers 0 and 3 of the MLP now.
        version = local_metadata.get("version", None)
        if version is None or version < 2:
            for i in range(2):
                for kind in ("weight", "bias"):
                    old = f"{prefix}linear_{i + 1}.{kind}"
                    if old in state_dict:
                        state_dict[f"{prefix}{3 * i}.{kind}"] = state_dict.pop(old)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)


class EncoderBlock(nn.Module):
    def __init__(self, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                 norm_layer=partial(nn.LayerNorm, eps=1e-6)):
        super().__init__()
        self.num_heads = num_heads
        self.ln_1 = norm_layer(hidden_dim)
        self.self_attention = nn.MultiheadAttention(hidden_dim, num_heads, dropout=attention_dropout,
                                                    batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.ln_2 = norm_layer(hidden_dim)
        self.mlp = MLPBlock(hidden_dim, mlp_dim, dropout)

    def forward(self, input):
        if input.dim() != 3:
            raise ValueError(f"Expected (batch_size, seq_length, hidden_dim) got {tuple(input.shape)}")
        x = self.ln_1(input)
        x, _ = self.self_attention(x, x, x, need_weights=False)
        x = self.dropout(x) + input
        return x + self.mlp(self.ln_2(x))


class Encoder(nn.Module):
    def __init__(self, seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                 norm_layer=partial(nn.LayerNorm, eps=1e-6)):
        super().__init__()
        # (ember.Tensor has no normal_ yet: nn.init.normal_ does the same)
        self.pos_embedding = nn.Parameter(nn.init.normal_(ember.empty(1, seq_length, hidden_dim), std=0.02))
        self.dropout = nn.Dropout(dropout)
        layers = OrderedDict()
        for i in range(num_layers):
            layers[f"encoder_layer_{i}"] = EncoderBlock(num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                                                        norm_layer)
        self.layers = nn.Sequential(layers)
        self.ln = norm_layer(hidden_dim)

    def forward(self, input):
        if input.dim() != 3:
            raise ValueError(f"Expected (batch_size, seq_length, hidden_dim) got {tuple(input.shape)}")
        input = input + self.pos_embedding
        return self.ln(self.layers(self.dropout(input)))


class VisionTransformer(nn.Module):
    def __init__(self, image_size, patch_size, num_layers, num_heads, hidden_dim, mlp_dim, dropout=0.0,
                 attention_dropout=0.0, num_classes=1000, representation_size=None,
                 norm_layer=partial(nn.LayerNorm, eps=1e-6), conv_stem_configs=None):
        super().__init__()
        if image_size % patch_size != 0:
            raise ValueError("Input shape indivisible by patch size!")
        self.image_size = image_size
        self.patch_size = patch_size
        self.hidden_dim = hidden_dim
        self.mlp_dim = mlp_dim
        self.attention_dropout = attention_dropout
        self.dropout = dropout
        self.num_classes = num_classes
        self.representation_size = representation_size
        self.norm_layer = norm_layer
        if conv_stem_configs is None:
            self.conv_proj = nn.Conv2d(3, hidden_dim, kernel_size=patch_size, stride=patch_size)
        else:
            self.conv_proj = _conv_stem(conv_stem_configs, hidden_dim)
        seq_length = (image_size // patch_size) ** 2
        self.class_token = nn.Parameter(ember.zeros(1, 1, hidden_dim))
        seq_length += 1
        self.encoder = Encoder(seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                               norm_layer)
        self.seq_length = seq_length
        heads = OrderedDict()
        if representation_size is None:
            heads["head"] = nn.Linear(hidden_dim, num_classes)
        else:
            heads["pre_logits"] = nn.Linear(hidden_dim, representation_size)
            heads["act"] = nn.Tanh()
            heads["head"] = nn.Linear(representation_size, num_classes)
        self.heads = nn.Sequential(heads)
        if isinstance(self.conv_proj, nn.Conv2d):
            fan_in = self.conv_proj.in_channels * self.conv_proj.kernel_size[0] * self.conv_proj.kernel_size[1]
            nn.init.trunc_normal_(self.conv_proj.weight, std=math.sqrt(1 / fan_in))
            nn.init.zeros_(self.conv_proj.bias)
        else:
            last = self.conv_proj.conv_last
            nn.init.normal_(last.weight, mean=0.0, std=math.sqrt(2.0 / last.out_channels))
            nn.init.zeros_(last.bias)
        if hasattr(self.heads, "pre_logits"):
            nn.init.trunc_normal_(self.heads.pre_logits.weight, std=math.sqrt(1 / self.heads.pre_logits.in_features))
            nn.init.zeros_(self.heads.pre_logits.bias)
        nn.init.zeros_(self.heads.head.weight)
        nn.init.zeros_(self.heads.head.bias)

    def _process_input(self, x):
        n, c, h, w = x.shape
        p = self.patch_size
        if h != self.image_size:
            raise ValueError(f"Wrong image height! Expected {self.image_size} but got {h}!")
        if w != self.image_size:
            raise ValueError(f"Wrong image width! Expected {self.image_size} but got {w}!")
        x = self.conv_proj(x)
        x = x.reshape(n, self.hidden_dim, (h // p) * (w // p))
        return x.permute(0, 2, 1)

    def forward(self, x):
        x = self._process_input(x)
        n = x.shape[0]
        x = ember.cat([self.class_token.expand(n, -1, -1), x], dim=1)
        x = self.encoder(x)
        return self.heads(x[:, 0])


def _conv_stem(configs, hidden_dim):
    """The convolutions of `configs` in turn from RGB, then a 1x1 convolution to `hidden_dim`
    (`conv_bn_relu_<i>` and `conv_last`, TorchVision's state-dict names)."""
    stem = nn.Sequential()
    channels = 3
    for i, config in enumerate(configs):
        stem.add_module(f"conv_bn_relu_{i}", Conv2dNormActivation(
            channels, config.out_channels, kernel_size=config.kernel_size, stride=config.stride,
            norm_layer=config.norm_layer, activation_layer=config.activation_layer))
        channels = config.out_channels
    stem.add_module("conv_last", nn.Conv2d(channels, hidden_dim, kernel_size=1))
    return stem


def interpolate_embeddings(image_size, patch_size, model_state, interpolation_mode="bicubic", reset_heads=False):
    """A ViT state dict made fit for another `image_size`: the position embeddings of the patch
    grid resized (the class token's kept) with `interpolation_mode`, so that weights trained at one
    resolution fine-tune or evaluate at another. `reset_heads=True` drops the `heads.*` entries.
    Returns `model_state` itself when the sequence length does not change."""
    pos_embedding = model_state["encoder.pos_embedding"]
    n, seq_length, hidden_dim = pos_embedding.shape
    if n != 1:
        raise ValueError(f"Unexpected position embedding shape: {tuple(pos_embedding.shape)}")
    new_side = image_size // patch_size
    if new_side * new_side + 1 == seq_length:
        return model_state
    side = math.isqrt(seq_length - 1)
    if side * side != seq_length - 1:
        raise ValueError(f"seq_length is not a perfect square! Instead got seq_length_1d * seq_length_1d = "
                         f"{side * side} and seq_length = {seq_length - 1}")
    grid = pos_embedding[:, 1:, :].permute(0, 2, 1).reshape(1, hidden_dim, side, side)
    grid = F.interpolate(grid, size=new_side, mode=interpolation_mode, align_corners=True)
    grid = grid.reshape(1, hidden_dim, new_side * new_side).permute(0, 2, 1)
    model_state["encoder.pos_embedding"] = ember.cat([pos_embedding[:, :1, :], grid], dim=1)
    if reset_heads:
        model_state = OrderedDict((k, v) for k, v in model_state.items() if not k.startswith("heads"))
    return model_state


def _vision_transformer(patch_size, num_layers, num_heads, hidden_dim, mlp_dim, weights, progress, **kwargs):
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
        if weights.meta["min_size"][0] != weights.meta["min_size"][1]:
            raise ValueError(f"the weights' min_size {weights.meta['min_size']} is not square")
        _ovewrite_named_param(kwargs, "image_size", weights.meta["min_size"][0])
    image_size = kwargs.pop("image_size", 224)
    model = VisionTransformer(image_size=image_size, patch_size=patch_size, num_layers=num_layers,
                              num_heads=num_heads, hidden_dim=hidden_dim, mlp_dim=mlp_dim, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress))
    return model


ViT_B_16_Weights = _weights_enum("ViT_B_16_Weights", __name__)
ViT_B_32_Weights = _weights_enum("ViT_B_32_Weights", __name__)
ViT_L_16_Weights = _weights_enum("ViT_L_16_Weights", __name__)
ViT_L_32_Weights = _weights_enum("ViT_L_32_Weights", __name__)
ViT_H_14_Weights = _weights_enum("ViT_H_14_Weights", __name__)


@_builder(ViT_B_16_Weights)
def vit_b_16(*, weights: Optional[ViT_B_16_Weights] = None, progress: bool = True, **kwargs) -> VisionTransformer:
    """ViT-B/16."""
    return _vision_transformer(16, 12, 12, 768, 3072, ViT_B_16_Weights.verify(weights), progress, **kwargs)


@_builder(ViT_B_32_Weights)
def vit_b_32(*, weights: Optional[ViT_B_32_Weights] = None, progress: bool = True, **kwargs) -> VisionTransformer:
    """ViT-B/32."""
    return _vision_transformer(32, 12, 12, 768, 3072, ViT_B_32_Weights.verify(weights), progress, **kwargs)


@_builder(ViT_L_16_Weights)
def vit_l_16(*, weights: Optional[ViT_L_16_Weights] = None, progress: bool = True, **kwargs) -> VisionTransformer:
    """ViT-L/16."""
    return _vision_transformer(16, 24, 16, 1024, 4096, ViT_L_16_Weights.verify(weights), progress, **kwargs)


@_builder(ViT_L_32_Weights)
def vit_l_32(*, weights: Optional[ViT_L_32_Weights] = None, progress: bool = True, **kwargs) -> VisionTransformer:
    """ViT-L/32."""
    return _vision_transformer(32, 24, 16, 1024, 4096, ViT_L_32_Weights.verify(weights), progress, **kwargs)


@_builder(ViT_H_14_Weights, pretrained=None)
def vit_h_14(*, weights: Optional[ViT_H_14_Weights] = None, progress: bool = True, **kwargs) -> VisionTransformer:
    """ViT-H/14."""
    return _vision_transformer(14, 32, 16, 1280, 5120, ViT_H_14_Weights.verify(weights), progress, **kwargs)
