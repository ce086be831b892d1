"""MaxViT ("MaxViT: Multi-Axis Vision Transformer", Tu et al.)."""
import math
from collections import OrderedDict
from functools import partial
from typing import List, Optional, Tuple

import ember
from ember import nn
from ember.nn import functional as F

from embervision.models._api import _weights_enum
from embervision.models._utils import _builder, _ovewrite_named_param
from embervision.ops.misc import Conv2dNormActivation, SqueezeExcitation
from embervision.ops.stochastic_depth import StochasticDepth

__all__ = ["MaxVit", "MaxVit_T_Weights", "maxvit_t"]


def _conv_out(size, kernel_size, stride, padding):
    return tuple((s - kernel_size + 2 * padding) // stride + 1 for s in size)


def _block_input_shapes(input_size, n_blocks):
    shape = _conv_out(input_size, 3, 2, 1)
    shapes = []
    for _ in range(n_blocks):
        shape = _conv_out(shape, 3, 2, 1)
        shapes.append(shape)
    return shapes


def _relative_position_index(height, width):
    coords = ember.stack(ember.meshgrid([ember.arange(height), ember.arange(width)], indexing="ij"))
    flat = ember.flatten(coords, 1)
    rel = (flat[:, :, None] - flat[:, None, :]).permute(1, 2, 0).contiguous()
    return (rel[:, :, 0] + (height - 1)) * (2 * width - 1) + (rel[:, :, 1] + (width - 1))


class MBConv(nn.Module):
    """Pre-normalized inverted bottleneck with squeeze-excitation; a pooled 1x1 projection as shortcut."""

    def __init__(self, in_channels, out_channels, expansion_ratio, squeeze_ratio, stride, activation_layer,
                 norm_layer, p_stochastic_dropout=0.0):
        super().__init__()
        if stride != 1 or in_channels != out_channels:
            proj = [nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=1, bias=True)]
            if stride == 2:
                proj.insert(0, nn.AvgPool2d(kernel_size=3, stride=stride, padding=1))
            self.proj = nn.Sequential(*proj)
        else:
            self.proj = nn.Identity()
        mid = int(out_channels * expansion_ratio)
        sqz = int(out_channels * squeeze_ratio)
        self.stochastic_depth = (StochasticDepth(p_stochastic_dropout, mode="row") if p_stochastic_dropout
                                 else nn.Identity())
        layers = OrderedDict()
        layers["pre_norm"] = norm_layer(in_channels)
        layers["conv_a"] = Conv2dNormActivation(in_channels, mid, kernel_size=1, stride=1, padding=0,
                                                activation_layer=activation_layer, norm_layer=norm_layer, inplace=None)
        layers["conv_b"] = Conv2dNormActivation(mid, mid, kernel_size=3, stride=stride, padding=1,
                                                activation_layer=activation_layer, norm_layer=norm_layer, groups=mid,
                                                inplace=None)
        layers["squeeze_excitation"] = SqueezeExcitation(mid, sqz, activation=nn.SiLU)
        layers["conv_c"] = nn.Conv2d(in_channels=mid, out_channels=out_channels, kernel_size=1, bias=True)
        self.layers = nn.Sequential(layers)

    def forward(self, x):
        return self.proj(x) + self.stochastic_depth(self.layers(x))


class RelativePositionalMultiHeadAttention(nn.Module):
    """Multi-head self-attention over [B, G, P, D] with a learned relative position bias."""

    def __init__(self, feat_dim, head_dim, max_seq_len):
        super().__init__()
        if feat_dim % head_dim != 0:
            raise ValueError(f"feat_dim: {feat_dim} must be divisible by head_dim: {head_dim}")
        self.n_heads = feat_dim // head_dim
        self.head_dim = head_dim
        self.size = int(math.sqrt(max_seq_len))
        self.max_seq_len = max_seq_len
        self.to_qkv = nn.Linear(feat_dim, self.n_heads * self.head_dim * 3)
        self.scale_factor = feat_dim ** -0.5
        self.merge = nn.Linear(self.head_dim * self.n_heads, feat_dim)
        self.relative_position_bias_table = nn.Parameter(
            ember.empty(((2 * self.size - 1) * (2 * self.size - 1), self.n_heads), dtype=ember.float32))
        self.register_buffer("relative_position_index", _relative_position_index(self.size, self.size))
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)

    def get_relative_positional_bias(self):
        index = self.relative_position_index.view(-1)
        bias = self.relative_position_bias_table[index].view(self.max_seq_len, self.max_seq_len, -1)
        return bias.permute(2, 0, 1).contiguous().unsqueeze(0)

    def forward(self, x):
        B, G, P, D = x.shape
        H, DH = self.n_heads, self.head_dim
        q, k, v = ember.chunk(self.to_qkv(x), 3, dim=-1)
        q = q.reshape(B, G, P, H, DH).permute(0, 1, 3, 2, 4)
        k = k.reshape(B, G, P, H, DH).permute(0, 1, 3, 2, 4) * self.scale_factor
        v = v.reshape(B, G, P, H, DH).permute(0, 1, 3, 2, 4)
        attn = F.softmax(q.matmul(k.transpose(-2, -1)) + self.get_relative_positional_bias(), dim=-1)
        out = attn.matmul(v).permute(0, 1, 3, 2, 4).reshape(B, G, P, D)
        return self.merge(out)


class SwapAxes(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.a = a
        self.b = b

    def forward(self, x):
        return ember.transpose(x, self.a, self.b)


class WindowPartition(nn.Module):
    """[B, C, H, W] -> [B, (H/P)*(W/P), P*P, C]."""

    def forward(self, x, p):
        B, C, H, W = x.shape
        x = x.reshape(B, C, H // p, p, W // p, p).permute(0, 2, 4, 3, 5, 1)
        return x.reshape(B, (H // p) * (W // p), p * p, C)


class WindowDepartition(nn.Module):
    """[B, (H/P)*(W/P), P*P, C] -> [B, C, H, W]."""

    def forward(self, x, p, h_partitions, w_partitions):
        B, G, PP, C = x.shape
        x = x.reshape(B, h_partitions, w_partitions, p, p, C).permute(0, 5, 1, 3, 2, 4)
        return x.reshape(B, C, h_partitions * p, w_partitions * p)


class PartitionAttentionLayer(nn.Module):
    """Attention within windows ("window") or across a strided grid ("grid"), then an MLP."""

    def __init__(self, in_channels, head_dim, partition_size, partition_type, grid_size, mlp_ratio,
                 activation_layer, norm_layer, attention_dropout, mlp_dropout, p_stochastic_dropout):
        super().__init__()
        self.n_heads = in_channels // head_dim
        self.head_dim = head_dim
        self.n_partitions = grid_size[0] // partition_size
        self.partition_type = partition_type
        self.grid_size = grid_size
        if partition_type not in ["grid", "window"]:
            raise ValueError("partition_type must be either 'grid' or 'window'")
        if partition_type == "window":
            self.p, self.g = partition_size, self.n_partitions
        else:
            self.p, self.g = self.n_partitions, partition_size
        self.partition_op = WindowPartition()
        self.departition_op = WindowDepartition()
        self.partition_swap = SwapAxes(-2, -3) if partition_type == "grid" else nn.Identity()
        self.departition_swap = SwapAxes(-2, -3) if partition_type == "grid" else nn.Identity()
        self.attn_layer = nn.Sequential(
            norm_layer(in_channels),
            RelativePositionalMultiHeadAttention(in_channels, head_dim, partition_size ** 2),
            nn.Dropout(attention_dropout),
        )
        self.mlp_layer = nn.Sequential(
            nn.LayerNorm(in_channels),
            nn.Linear(in_channels, in_channels * mlp_ratio),
            activation_layer(),
            nn.Linear(in_channels * mlp_ratio, in_channels),
            nn.Dropout(mlp_dropout),
        )
        self.stochastic_dropout = StochasticDepth(p_stochastic_dropout, mode="row")

    def forward(self, x):
        if self.grid_size[0] % self.p or self.grid_size[1] % self.p:
            raise ValueError(f"Grid size must be divisible by partition size. Got grid size of {self.grid_size} "
                             f"and partition size of {self.p}")
        gh, gw = self.grid_size[0] // self.p, self.grid_size[1] // self.p
        x = self.partition_swap(self.partition_op(x, self.p))
        x = x + self.stochastic_dropout(self.attn_layer(x))
        x = x + self.stochastic_dropout(self.mlp_layer(x))
        return self.departition_op(self.departition_swap(x), self.p, gh, gw)


class MaxVitLayer(nn.Module):
    def __init__(self, in_channels, out_channels, squeeze_ratio, expansion_ratio, stride, norm_layer,
                 activation_layer, head_dim, mlp_ratio, mlp_dropout, attention_dropout, p_stochastic_dropout,
                 partition_size, grid_size):
        super().__init__()
        layers = OrderedDict()
        layers["MBconv"] = MBConv(in_channels, out_channels, expansion_ratio, squeeze_ratio, stride,
                                  activation_layer, norm_layer, p_stochastic_dropout)
        for kind in ("window", "grid"):
            layers[f"{kind}_attention"] = PartitionAttentionLayer(
                out_channels, head_dim, partition_size, kind, grid_size, mlp_ratio, activation_layer, nn.LayerNorm,
                attention_dropout, mlp_dropout, p_stochastic_dropout)
        self.layers = nn.Sequential(layers)

    def forward(self, x):
        return self.layers(x)


class MaxVitBlock(nn.Module):
    def __init__(self, in_channels, out_channels, squeeze_ratio, expansion_ratio, norm_layer, activation_layer,
                 head_dim, mlp_ratio, mlp_dropout, attention_dropout, partition_size, input_grid_size, n_layers,
                 p_stochastic):
        super().__init__()
        if len(p_stochastic) != n_layers:
            raise ValueError(f"p_stochastic must have length n_layers={n_layers}, got p_stochastic={p_stochastic}.")
        self.layers = nn.ModuleList()
        self.grid_size = _conv_out(input_grid_size, 3, 2, 1)
        for idx, p in enumerate(p_stochastic):
            self.layers.append(MaxVitLayer(
                in_channels if idx == 0 else out_channels, out_channels, squeeze_ratio, expansion_ratio,
                2 if idx == 0 else 1, norm_layer, activation_layer, head_dim, mlp_ratio, mlp_dropout,
                attention_dropout, p, partition_size, self.grid_size))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class MaxVit(nn.Module):
    def __init__(self, input_size, stem_channels, partition_size, block_channels, block_layers, head_dim,
                 stochastic_depth_prob, norm_layer=None, activation_layer=nn.GELU, squeeze_ratio=0.25,
                 expansion_ratio=4, mlp_ratio=4, mlp_dropout=0.0, attention_dropout=0.0, num_classes=1000):
        super().__init__()
        norm_layer = norm_layer or partial(nn.BatchNorm2d, eps=1e-3, momentum=0.01)
        sizes = _block_input_shapes(input_size, len(block_channels))
        for idx, size in enumerate(sizes):
            if size[0] % partition_size or size[1] % partition_size:
                raise ValueError(
                    f"Input size {size} of block {idx} is not divisible by partition size {partition_size}. "
                    f"Consider changing the partition size or the input size.\n"
                    f"Current configuration yields the following block input sizes: {sizes}.")
        self.stem = nn.Sequential(
            Conv2dNormActivation(3, stem_channels, 3, stride=2, norm_layer=norm_layer,
                                 activation_layer=activation_layer, bias=False, inplace=None),
            Conv2dNormActivation(stem_channels, stem_channels, 3, stride=1, norm_layer=None, activation_layer=None,
                                 bias=True),
        )
        input_size = _conv_out(input_size, 3, 2, 1)
        self.partition_size = partition_size
        self.blocks = nn.ModuleList()
        in_channels = [stem_channels] + list(block_channels[:-1])
        total = sum(block_layers)
        p_all = [stochastic_depth_prob * i / (total - 1) if total > 1 else 0.0 for i in range(total)]
        p_idx = 0
        for cin, cout, n in zip(in_channels, block_channels, block_layers):
            self.blocks.append(MaxVitBlock(cin, cout, squeeze_ratio, expansion_ratio, norm_layer, activation_layer,
                                           head_dim, mlp_ratio, mlp_dropout, attention_dropout, partition_size,
                                           input_size, n, p_all[p_idx:p_idx + n]))
            input_size = self.blocks[-1].grid_size
            p_idx += n
        self.classifier = nn.Sequential(
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.LayerNorm(block_channels[-1]),
            nn.Linear(block_channels[-1], block_channels[-1]), nn.Tanh(),
            nn.Linear(block_channels[-1], num_classes, bias=False),
        )
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        return self.classifier(x)


MaxVit_T_Weights = _weights_enum("MaxVit_T_Weights", __name__)


@_builder(MaxVit_T_Weights)
def maxvit_t(*, weights: Optional[MaxVit_T_Weights] = None, progress: bool = True, **kwargs) -> MaxVit:
    """MaxViT-T (input 224x224 by default; `input_size` must keep every block's grid divisible by 7)."""
    weights = MaxVit_T_Weights.verify(weights)
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
        if weights.meta["min_size"][0] != weights.meta["min_size"][1]:
            raise ValueError(f"the weights' min_size {weights.meta['min_size']} is not square")
        _ovewrite_named_param(kwargs, "input_size", weights.meta["min_size"])
    input_size = kwargs.pop("input_size", (224, 224))
    model = MaxVit(input_size=input_size, stem_channels=64, block_channels=[64, 128, 256, 512],
                   block_layers=[2, 2, 5, 2], head_dim=32, stochastic_depth_prob=0.2, partition_size=7, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress))
    return model
