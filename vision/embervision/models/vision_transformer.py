"""Vision Transformer ("An Image is Worth 16x16 Words", Dosovitskiy et al.)."""
import math
from collections import OrderedDict
from functools import partial
from typing import Optional

import ember
from ember import nn

from embervision.models._api import _weights_enum
from embervision.models._utils import _builder, _ovewrite_named_param
from embervision.ops.misc import MLP

__all__ = ["VisionTransformer", "ViT_B_16_Weights", "ViT_B_32_Weights", "ViT_L_16_Weights", "ViT_L_32_Weights",
           "ViT_H_14_Weights", "vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32", "vit_h_14"]


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
        if conv_stem_configs is not None:
            raise NotImplementedError("conv_stem_configs is not supported yet")
        self.image_size = image_size
        self.patch_size = patch_size
        self.hidden_dim = hidden_dim
        self.mlp_dim = mlp_dim
        self.attention_dropout = attention_dropout
        self.dropout = dropout
        self.num_classes = num_classes
        self.representation_size = representation_size
        self.norm_layer = norm_layer
        self.conv_proj = nn.Conv2d(3, hidden_dim, kernel_size=patch_size, stride=patch_size)
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
        fan_in = self.conv_proj.in_channels * self.conv_proj.kernel_size[0] * self.conv_proj.kernel_size[1]
        nn.init.trunc_normal_(self.conv_proj.weight, std=math.sqrt(1 / fan_in))
        nn.init.zeros_(self.conv_proj.bias)
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
