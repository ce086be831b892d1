"""Swin Transformer V1 ("Swin Transformer: Hierarchical Vision Transformer using Shifted Windows",
Liu et al.) and V2 ("Swin Transformer V2: Scaling Up Capacity and Resolution")."""
import math
from functools import partial
from typing import List, Optional

import ember
from ember import nn
from ember.nn import functional as F

from embervision.models._api import _weights_enum
from embervision.models._utils import _builder, _check_classes
from embervision.ops.misc import MLP, Permute
from embervision.ops.stochastic_depth import StochasticDepth

__all__ = ["SwinTransformer", "Swin_T_Weights", "Swin_S_Weights", "Swin_B_Weights", "Swin_V2_T_Weights",
           "Swin_V2_S_Weights", "Swin_V2_B_Weights", "swin_t", "swin_s", "swin_b", "swin_v2_t", "swin_v2_s",
           "swin_v2_b"]


def _patch_merging_pad(x):
    H, W, _ = x.shape[-3:]
    x = F.pad(x, (0, 0, 0, W % 2, 0, H % 2))
    x0 = x[..., 0::2, 0::2, :]
    x1 = x[..., 1::2, 0::2, :]
    x2 = x[..., 0::2, 1::2, :]
    x3 = x[..., 1::2, 1::2, :]
    return ember.cat([x0, x1, x2, x3], -1)


class PatchMerging(nn.Module):
    def __init__(self, dim, norm_layer=nn.LayerNorm):
        super().__init__()
        self.dim = dim
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = norm_layer(4 * dim)

    def forward(self, x):
        return self.reduction(self.norm(_patch_merging_pad(x)))


class PatchMergingV2(nn.Module):
    def __init__(self, dim, norm_layer=nn.LayerNorm):
        super().__init__()
        self.dim = dim
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = norm_layer(2 * dim)

    def forward(self, x):
        return self.norm(self.reduction(_patch_merging_pad(x)))


def _get_relative_position_bias(relative_position_bias_table, relative_position_index, window_size):
    N = window_size[0] * window_size[1]
    bias = relative_position_bias_table[relative_position_index]
    bias = bias.view(N, N, -1)
    return bias.permute(2, 0, 1).contiguous().unsqueeze(0)


def shifted_window_attention(input, qkv_weight, proj_weight, relative_position_bias, window_size, num_heads,
                             shift_size, attention_dropout=0.0, dropout=0.0, qkv_bias=None, proj_bias=None,
                             logit_scale=None, training=True):
    """Window multi-head self-attention with cyclic shift (input: B, H, W, C)."""
    B, H, W, C = input.shape
    pad_r = (window_size[1] - W % window_size[1]) % window_size[1]
    pad_b = (window_size[0] - H % window_size[0]) % window_size[0]
    x = F.pad(input, (0, 0, 0, pad_r, 0, pad_b))
    _, pad_H, pad_W, _ = x.shape
    shift_size = list(shift_size)
    if window_size[0] >= pad_H:
        shift_size[0] = 0
    if window_size[1] >= pad_W:
        shift_size[1] = 0
    if sum(shift_size) > 0:
        x = ember.roll(x, shifts=(-shift_size[0], -shift_size[1]), dims=(1, 2))
    num_windows = (pad_H // window_size[0]) * (pad_W // window_size[1])
    x = x.view(B, pad_H // window_size[0], window_size[0], pad_W // window_size[1], window_size[1], C)
    x = x.permute(0, 1, 3, 2, 4, 5).reshape(B * num_windows, window_size[0] * window_size[1], C)
    if logit_scale is not None and qkv_bias is not None:
        qkv_bias = qkv_bias.clone()
        length = qkv_bias.numel() // 3
        qkv_bias[length:2 * length].zero_()
    qkv = F.linear(x, qkv_weight, qkv_bias)
    qkv = qkv.reshape(x.size(0), x.size(1), 3, num_heads, C // num_heads).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    if logit_scale is not None:
        attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        attn = attn * ember.clamp(logit_scale, max=math.log(100.0)).exp()
    else:
        q = q * (C // num_heads) ** -0.5
        attn = q.matmul(k.transpose(-2, -1))
    attn = attn + relative_position_bias
    if sum(shift_size) > 0:
        attn_mask = x.new_zeros((pad_H, pad_W))
        h_slices = ((0, -window_size[0]), (-window_size[0], -shift_size[0]), (-shift_size[0], None))
        w_slices = ((0, -window_size[1]), (-window_size[1], -shift_size[1]), (-shift_size[1], None))
        count = 0
        for h in h_slices:
            for w in w_slices:
                attn_mask[h[0]:h[1], w[0]:w[1]] = count
                count += 1
        attn_mask = attn_mask.view(pad_H // window_size[0], window_size[0], pad_W // window_size[1], window_size[1])
        attn_mask = attn_mask.permute(0, 2, 1, 3).reshape(num_windows, window_size[0] * window_size[1])
        attn_mask = attn_mask.unsqueeze(1) - attn_mask.unsqueeze(2)
        attn_mask = attn_mask.masked_fill(attn_mask != 0, float(-100.0)).masked_fill(attn_mask == 0, float(0.0))
        attn = attn.view(x.size(0) // num_windows, num_windows, num_heads, x.size(1), x.size(1))
        attn = attn + attn_mask.unsqueeze(1).unsqueeze(0)
        attn = attn.view(-1, num_heads, x.size(1), x.size(1))
    attn = F.softmax(attn, dim=-1)
    attn = F.dropout(attn, p=attention_dropout, training=training)
    x = attn.matmul(v).transpose(1, 2).reshape(x.size(0), x.size(1), C)
    x = F.linear(x, proj_weight, proj_bias)
    x = F.dropout(x, p=dropout, training=training)
    x = x.view(B, pad_H // window_size[0], pad_W // window_size[1], window_size[0], window_size[1], C)
    x = x.permute(0, 1, 3, 2, 4, 5).reshape(B, pad_H, pad_W, C)
    if sum(shift_size) > 0:
        x = ember.roll(x, shifts=(shift_size[0], shift_size[1]), dims=(1, 2))
    return x[:, :H, :W, :].contiguous()


class ShiftedWindowAttention(nn.Module):
    def __init__(self, dim, window_size, shift_size, num_heads, qkv_bias=True, proj_bias=True,
                 attention_dropout=0.0, dropout=0.0):
        super().__init__()
        if len(window_size) != 2 or len(shift_size) != 2:
            raise ValueError("window_size and shift_size must be of length 2")
        self.window_size = window_size
        self.shift_size = shift_size
        self.num_heads = num_heads
        self.attention_dropout = attention_dropout
        self.dropout = dropout
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim, bias=proj_bias)
        self.define_relative_position_bias_table()
        self.define_relative_position_index()

    def define_relative_position_bias_table(self):
        ws = self.window_size
        self.relative_position_bias_table = nn.Parameter(ember.zeros((2 * ws[0] - 1) * (2 * ws[1] - 1),
                                                                     self.num_heads))
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)

    def define_relative_position_index(self):
        ws = self.window_size
        coords = ember.stack(ember.meshgrid(ember.arange(ws[0]), ember.arange(ws[1]), indexing="ij"))
        flat = ember.flatten(coords, 1)
        rel = (flat[:, :, None] - flat[:, None, :]).permute(1, 2, 0).contiguous()
        rel0 = (rel[:, :, 0] + (ws[0] - 1)) * (2 * ws[1] - 1)
        rel1 = rel[:, :, 1] + (ws[1] - 1)
        self.register_buffer("relative_position_index", (rel0 + rel1).flatten())

    def get_relative_position_bias(self):
        return _get_relative_position_bias(self.relative_position_bias_table, self.relative_position_index,
                                           self.window_size)

    def forward(self, x):
        return shifted_window_attention(
            x, self.qkv.weight, self.proj.weight, self.get_relative_position_bias(), self.window_size,
            self.num_heads, shift_size=self.shift_size, attention_dropout=self.attention_dropout,
            dropout=self.dropout, qkv_bias=self.qkv.bias, proj_bias=self.proj.bias, training=self.training)


class ShiftedWindowAttentionV2(ShiftedWindowAttention):
    def __init__(self, dim, window_size, shift_size, num_heads, qkv_bias=True, proj_bias=True,
                 attention_dropout=0.0, dropout=0.0):
        super().__init__(dim, window_size, shift_size, num_heads, qkv_bias=qkv_bias, proj_bias=proj_bias,
                         attention_dropout=attention_dropout, dropout=dropout)
        self.logit_scale = nn.Parameter(ember.log(10 * ember.ones((num_heads, 1, 1))))
        self.cpb_mlp = nn.Sequential(nn.Linear(2, 512, bias=True), nn.ReLU(inplace=True),
                                     nn.Linear(512, num_heads, bias=False))
        if qkv_bias:
            length = self.qkv.bias.numel() // 3
            with ember.no_grad():
                self.qkv.bias[length:2 * length].zero_()

    def define_relative_position_bias_table(self):
        ws = self.window_size
        h = ember.arange(-(ws[0] - 1), ws[0], dtype=ember.float32)
        w = ember.arange(-(ws[1] - 1), ws[1], dtype=ember.float32)
        table = ember.stack(ember.meshgrid([h, w], indexing="ij")).permute(1, 2, 0).contiguous().unsqueeze(0)
        scale = ember.tensor([ws[0] - 1, ws[1] - 1], dtype=ember.float32)
        table = table / scale * 8  # normalized to [-8, 8]
        table = ember.sign(table) * ember.log2(ember.abs(table) + 1.0) / 3.0
        self.register_buffer("relative_coords_table", table)

    def get_relative_position_bias(self):
        bias = _get_relative_position_bias(self.cpb_mlp(self.relative_coords_table).view(-1, self.num_heads),
                                           self.relative_position_index, self.window_size)
        return 16 * ember.sigmoid(bias)

    def forward(self, x):
        return shifted_window_attention(
            x, self.qkv.weight, self.proj.weight, self.get_relative_position_bias(), self.window_size,
            self.num_heads, shift_size=self.shift_size, attention_dropout=self.attention_dropout,
            dropout=self.dropout, qkv_bias=self.qkv.bias, proj_bias=self.proj.bias, logit_scale=self.logit_scale,
            training=self.training)


class SwinTransformerBlock(nn.Module):
    def __init__(self, dim, num_heads, window_size, shift_size, mlp_ratio=4.0, dropout=0.0, attention_dropout=0.0,
                 stochastic_depth_prob=0.0, norm_layer=nn.LayerNorm, attn_layer=ShiftedWindowAttention):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = attn_layer(dim, window_size, shift_size, num_heads, attention_dropout=attention_dropout,
                               dropout=dropout)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.norm2 = norm_layer(dim)
        self.mlp = MLP(dim, [int(dim * mlp_ratio), dim], activation_layer=nn.GELU, inplace=None, dropout=dropout)
        for m in self.mlp.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.normal_(m.bias, std=1e-6)

    def forward(self, x):
        x = x + self.stochastic_depth(self.attn(self.norm1(x)))
        return x + self.stochastic_depth(self.mlp(self.norm2(x)))


class SwinTransformerBlockV2(SwinTransformerBlock):
    def __init__(self, dim, num_heads, window_size, shift_size, mlp_ratio=4.0, dropout=0.0, attention_dropout=0.0,
                 stochastic_depth_prob=0.0, norm_layer=nn.LayerNorm, attn_layer=ShiftedWindowAttentionV2):
        super().__init__(dim, num_heads, window_size, shift_size, mlp_ratio=mlp_ratio, dropout=dropout,
                         attention_dropout=attention_dropout, stochastic_depth_prob=stochastic_depth_prob,
                         norm_layer=norm_layer, attn_layer=attn_layer)

    def forward(self, x):
        # post-normalization (V2)
        x = x + self.stochastic_depth(self.norm1(self.attn(x)))
        return x + self.stochastic_depth(self.norm2(self.mlp(x)))


class SwinTransformer(nn.Module):
    def __init__(self, patch_size, embed_dim, depths, num_heads, window_size, mlp_ratio=4.0, dropout=0.0,
                 attention_dropout=0.0, stochastic_depth_prob=0.1, num_classes=1000, norm_layer=None, block=None,
                 downsample_layer=PatchMerging):
        super().__init__()
        self.num_classes = num_classes
        block = block or SwinTransformerBlock
        norm_layer = norm_layer or partial(nn.LayerNorm, eps=1e-5)
        layers = [nn.Sequential(
            nn.Conv2d(3, embed_dim, kernel_size=(patch_size[0], patch_size[1]), stride=(patch_size[0], patch_size[1])),
            Permute([0, 2, 3, 1]),
            norm_layer(embed_dim),
        )]
        total = sum(depths)
        block_id = 0
        for i_stage in range(len(depths)):
            stage = []
            dim = embed_dim * 2 ** i_stage
            for i_layer in range(depths[i_stage]):
                sd_prob = stochastic_depth_prob * float(block_id) / (total - 1)
                stage.append(block(dim, num_heads[i_stage], window_size=window_size,
                                   shift_size=[0 if i_layer % 2 == 0 else w // 2 for w in window_size],
                                   mlp_ratio=mlp_ratio, dropout=dropout, attention_dropout=attention_dropout,
                                   stochastic_depth_prob=sd_prob, norm_layer=norm_layer))
                block_id += 1
            layers.append(nn.Sequential(*stage))
            if i_stage < len(depths) - 1:
                layers.append(downsample_layer(dim, norm_layer))
        self.features = nn.Sequential(*layers)
        num_features = embed_dim * 2 ** (len(depths) - 1)
        self.norm = norm_layer(num_features)
        self.permute = Permute([0, 3, 1, 2])
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten(1)
        self.head = nn.Linear(num_features, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.permute(self.norm(self.features(x)))
        return self.head(self.flatten(self.avgpool(x)))


def _swin_transformer(patch_size, embed_dim, depths, num_heads, window_size, stochastic_depth_prob, weights,
                      progress, **kwargs):
    _check_classes(kwargs, weights)
    model = SwinTransformer(patch_size=patch_size, embed_dim=embed_dim, depths=depths, num_heads=num_heads,
                            window_size=window_size, stochastic_depth_prob=stochastic_depth_prob, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress))
    return model


Swin_T_Weights = _weights_enum("Swin_T_Weights", __name__)
Swin_S_Weights = _weights_enum("Swin_S_Weights", __name__)
Swin_B_Weights = _weights_enum("Swin_B_Weights", __name__)
Swin_V2_T_Weights = _weights_enum("Swin_V2_T_Weights", __name__)
Swin_V2_S_Weights = _weights_enum("Swin_V2_S_Weights", __name__)
Swin_V2_B_Weights = _weights_enum("Swin_V2_B_Weights", __name__)

_V2 = {"block": SwinTransformerBlockV2, "downsample_layer": PatchMergingV2}


@_builder(Swin_T_Weights)
def swin_t(*, weights: Optional[Swin_T_Weights] = None, progress: bool = True, **kwargs) -> SwinTransformer:
    """Swin-T."""
    return _swin_transformer([4, 4], 96, [2, 2, 6, 2], [3, 6, 12, 24], [7, 7], 0.2, Swin_T_Weights.verify(weights),
                             progress, **kwargs)


@_builder(Swin_S_Weights)
def swin_s(*, weights: Optional[Swin_S_Weights] = None, progress: bool = True, **kwargs) -> SwinTransformer:
    """Swin-S."""
    return _swin_transformer([4, 4], 96, [2, 2, 18, 2], [3, 6, 12, 24], [7, 7], 0.3, Swin_S_Weights.verify(weights),
                             progress, **kwargs)


@_builder(Swin_B_Weights)
def swin_b(*, weights: Optional[Swin_B_Weights] = None, progress: bool = True, **kwargs) -> SwinTransformer:
    """Swin-B."""
    return _swin_transformer([4, 4], 128, [2, 2, 18, 2], [4, 8, 16, 32], [7, 7], 0.5,
                             Swin_B_Weights.verify(weights), progress, **kwargs)


@_builder(Swin_V2_T_Weights)
def swin_v2_t(*, weights: Optional[Swin_V2_T_Weights] = None, progress: bool = True, **kwargs) -> SwinTransformer:
    """Swin-V2-T."""
    return _swin_transformer([4, 4], 96, [2, 2, 6, 2], [3, 6, 12, 24], [8, 8], 0.2,
                             Swin_V2_T_Weights.verify(weights), progress, **_V2, **kwargs)


@_builder(Swin_V2_S_Weights)
def swin_v2_s(*, weights: Optional[Swin_V2_S_Weights] = None, progress: bool = True, **kwargs) -> SwinTransformer:
    """Swin-V2-S."""
    return _swin_transformer([4, 4], 96, [2, 2, 18, 2], [3, 6, 12, 24], [8, 8], 0.3,
                             Swin_V2_S_Weights.verify(weights), progress, **_V2, **kwargs)


@_builder(Swin_V2_B_Weights)
def swin_v2_b(*, weights: Optional[Swin_V2_B_Weights] = None, progress: bool = True, **kwargs) -> SwinTransformer:
    """Swin-V2-B."""
    return _swin_transformer([4, 4], 128, [2, 2, 18, 2], [4, 8, 16, 32], [8, 8], 0.5,
                             Swin_V2_B_Weights.verify(weights), progress, **_V2, **kwargs)
