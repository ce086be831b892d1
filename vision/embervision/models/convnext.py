"""ConvNeXt ("A ConvNet for the 2020s", Liu et al.)."""
from functools import partial
from typing import Optional

import ember
from ember import nn
from ember.nn import functional as F

from embervision.models._api import _weights_enum
from embervision.models._utils import _builder, _check_classes
from embervision.ops.misc import Conv2dNormActivation, Permute
from embervision.ops.stochastic_depth import StochasticDepth

__all__ = ["ConvNeXt", "ConvNeXt_Tiny_Weights", "ConvNeXt_Small_Weights", "ConvNeXt_Base_Weights",
           "ConvNeXt_Large_Weights", "convnext_tiny", "convnext_small", "convnext_base", "convnext_large"]


class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channels of an NCHW tensor."""

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class CNBlock(nn.Module):
    def __init__(self, dim, layer_scale, stochastic_depth_prob, norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or partial(nn.LayerNorm, eps=1e-6)
        self.block = nn.Sequential(
            nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim, bias=True),
            Permute([0, 2, 3, 1]),
            norm_layer(dim),
            nn.Linear(in_features=dim, out_features=4 * dim, bias=True),
            nn.GELU(),
            nn.Linear(in_features=4 * dim, out_features=dim, bias=True),
            Permute([0, 3, 1, 2]),
        )
        self.layer_scale = nn.Parameter(ember.ones(dim, 1, 1) * layer_scale)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")

    def forward(self, input):
        result = self.layer_scale * self.block(input)
        return self.stochastic_depth(result) + input


class CNBlockConfig:
    def __init__(self, input_channels, out_channels, num_layers):
        self.input_channels = input_channels
        self.out_channels = out_channels
        self.num_layers = num_layers

    def __repr__(self):
        return (f"{self.__class__.__name__}(input_channels={self.input_channels}, "
                f"out_channels={self.out_channels}, num_layers={self.num_layers})")


class ConvNeXt(nn.Module):
    def __init__(self, block_setting, stochastic_depth_prob=0.0, layer_scale=1e-6, num_classes=1000, block=None,
                 norm_layer=None, **kwargs):
        super().__init__()
        if not block_setting:
            raise ValueError("The block_setting should not be empty")
        block = block or CNBlock
        norm_layer = norm_layer or partial(LayerNorm2d, eps=1e-6)
        layers = [Conv2dNormActivation(3, block_setting[0].input_channels, kernel_size=4, stride=4, padding=0,
                                       norm_layer=norm_layer, activation_layer=None, bias=True)]
        total = sum(cnf.num_layers for cnf in block_setting)
        block_id = 0
        for cnf in block_setting:
            stage = []
            for _ in range(cnf.num_layers):
                sd_prob = stochastic_depth_prob * block_id / (total - 1.0)
                stage.append(block(cnf.input_channels, layer_scale, sd_prob))
                block_id += 1
            layers.append(nn.Sequential(*stage))
            if cnf.out_channels is not None:
                layers.append(nn.Sequential(norm_layer(cnf.input_channels),
                                            nn.Conv2d(cnf.input_channels, cnf.out_channels, kernel_size=2, stride=2)))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        last = block_setting[-1]
        last_channels = last.out_channels if last.out_channels is not None else last.input_channels
        self.classifier = nn.Sequential(norm_layer(last_channels), nn.Flatten(1), nn.Linear(last_channels, num_classes))
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x):
        return self.classifier(self.avgpool(self.features(x)))


def _convnext(block_setting, stochastic_depth_prob, weights, progress, **kwargs):
    _check_classes(kwargs, weights)
    model = ConvNeXt(block_setting, stochastic_depth_prob=stochastic_depth_prob, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress))
    return model


def _setting(channels, layers):
    outs = list(channels[1:]) + [None]
    return [CNBlockConfig(c, o, n) for c, o, n in zip(channels, outs, layers)]


ConvNeXt_Tiny_Weights = _weights_enum("ConvNeXt_Tiny_Weights", __name__)
ConvNeXt_Small_Weights = _weights_enum("ConvNeXt_Small_Weights", __name__)
ConvNeXt_Base_Weights = _weights_enum("ConvNeXt_Base_Weights", __name__)
ConvNeXt_Large_Weights = _weights_enum("ConvNeXt_Large_Weights", __name__)


@_builder(ConvNeXt_Tiny_Weights)
def convnext_tiny(*, weights: Optional[ConvNeXt_Tiny_Weights] = None, progress: bool = True, **kwargs) -> ConvNeXt:
    """ConvNeXt Tiny."""
    weights = ConvNeXt_Tiny_Weights.verify(weights)
    sd = kwargs.pop("stochastic_depth_prob", 0.1)
    return _convnext(_setting([96, 192, 384, 768], [3, 3, 9, 3]), sd, weights, progress, **kwargs)


@_builder(ConvNeXt_Small_Weights)
def convnext_small(*, weights: Optional[ConvNeXt_Small_Weights] = None, progress: bool = True, **kwargs) -> ConvNeXt:
    """ConvNeXt Small."""
    weights = ConvNeXt_Small_Weights.verify(weights)
    sd = kwargs.pop("stochastic_depth_prob", 0.4)
    return _convnext(_setting([96, 192, 384, 768], [3, 3, 27, 3]), sd, weights, progress, **kwargs)


@_builder(ConvNeXt_Base_Weights)
def convnext_base(*, weights: Optional[ConvNeXt_Base_Weights] = None, progress: bool = True, **kwargs) -> ConvNeXt:
    """ConvNeXt Base."""
    weights = ConvNeXt_Base_Weights.verify(weights)
    sd = kwargs.pop("stochastic_depth_prob", 0.5)
    return _convnext(_setting([128, 256, 512, 1024], [3, 3, 27, 3]), sd, weights, progress, **kwargs)


@_builder(ConvNeXt_Large_Weights)
def convnext_large(*, weights: Optional[ConvNeXt_Large_Weights] = None, progress: bool = True, **kwargs) -> ConvNeXt:
    """ConvNeXt Large."""
    weights = ConvNeXt_Large_Weights.verify(weights)
    sd = kwargs.pop("stochastic_depth_prob", 0.5)
    return _convnext(_setting([192, 384, 768, 1536], [3, 3, 27, 3]), sd, weights, progress, **kwargs)
