"""DenseNet ("Densely Connected Convolutional Networks", Huang et al.)."""
import re
from collections import OrderedDict
from typing import Optional

import ember
from ember import nn
from ember.nn import functional as F

from embervision.models._api import _weights_enum
from embervision.models._utils import _builder, _check_classes

__all__ = ["DenseNet", "DenseNet121_Weights", "DenseNet161_Weights", "DenseNet169_Weights", "DenseNet201_Weights",
           "densenet121", "densenet161", "densenet169", "densenet201"]


class _DenseLayer(nn.Module):
    def __init__(self, num_input_features, growth_rate, bn_size, drop_rate, memory_efficient=False):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(num_input_features)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, kernel_size=1, stride=1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, kernel_size=3, stride=1, padding=1, bias=False)
        self.drop_rate = float(drop_rate)
        self.memory_efficient = memory_efficient  # accepted for compatibility; no checkpointing yet

    def forward(self, input):
        prev = [input] if isinstance(input, ember.Tensor) else input
        bottleneck = self.conv1(self.relu1(self.norm1(ember.cat(prev, 1))))
        new = self.conv2(self.relu2(self.norm2(bottleneck)))
        if self.drop_rate > 0:
            new = F.dropout(new, p=self.drop_rate, training=self.training)
        return new


class _DenseBlock(nn.ModuleDict):
    _version = 2

    def __init__(self, num_layers, num_input_features, bn_size, growth_rate, drop_rate, memory_efficient=False):
        super().__init__()
        for i in range(num_layers):
            layer = _DenseLayer(num_input_features + i * growth_rate, growth_rate=growth_rate, bn_size=bn_size,
                                drop_rate=drop_rate, memory_efficient=memory_efficient)
            self.add_module("denselayer%d" % (i + 1), layer)

    def forward(self, init_features):
        features = [init_features]
        for _, layer in self.items():
            features.append(layer(features))
        return ember.cat(features, 1)


class _Transition(nn.Sequential):
    def __init__(self, num_input_features, num_output_features):
        super().__init__()
        self.norm = nn.BatchNorm2d(num_input_features)
        self.relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(num_input_features, num_output_features, kernel_size=1, stride=1, bias=False)
        self.pool = nn.AvgPool2d(kernel_size=2, stride=2)


class DenseNet(nn.Module):
    def __init__(self, growth_rate=32, block_config=(6, 12, 24, 16), num_init_features=64, bn_size=4, drop_rate=0,
                 num_classes=1000, memory_efficient=False):
        super().__init__()
        self.features = nn.Sequential(OrderedDict([
            ("conv0", nn.Conv2d(3, num_init_features, kernel_size=7, stride=2, padding=3, bias=False)),
            ("norm0", nn.BatchNorm2d(num_init_features)),
            ("relu0", nn.ReLU(inplace=True)),
            ("pool0", nn.MaxPool2d(kernel_size=3, stride=2, padding=1)),
        ]))
        num_features = num_init_features
        for i, num_layers in enumerate(block_config):
            block = _DenseBlock(num_layers=num_layers, num_input_features=num_features, bn_size=bn_size,
                                growth_rate=growth_rate, drop_rate=drop_rate, memory_efficient=memory_efficient)
            self.features.add_module("denseblock%d" % (i + 1), block)
            num_features = num_features + num_layers * growth_rate
            if i != len(block_config) - 1:
                self.features.add_module("transition%d" % (i + 1),
                                         _Transition(num_features, num_features // 2))
                num_features = num_features // 2
        self.features.add_module("norm5", nn.BatchNorm2d(num_features))
        self.classifier = nn.Linear(num_features, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        out = F.relu(self.features(x), inplace=True)
        out = F.adaptive_avg_pool2d(out, (1, 1))
        return self.classifier(ember.flatten(out, 1))


# The published checkpoints name the dense layers' parts "norm.1" where the modules say "norm1".
_OLD_KEY = re.compile(r"^(.*denselayer\d+\.(?:norm|relu|conv))\.((?:[12])\.(?:weight|bias|running_mean|running_var))$")


def _load_state_dict(model, weights, progress):
    state_dict = weights.get_state_dict(progress=progress)
    for key in list(state_dict.keys()):
        res = _OLD_KEY.match(key)
        if res:
            state_dict[res.group(1) + res.group(2)] = state_dict.pop(key)
    model.load_state_dict(state_dict)


def _densenet(growth_rate, block_config, num_init_features, weights, progress, **kwargs):
    _check_classes(kwargs, weights)
    model = DenseNet(growth_rate, block_config, num_init_features, **kwargs)
    if weights is not None:
        _load_state_dict(model, weights, progress)
    return model


DenseNet121_Weights = _weights_enum("DenseNet121_Weights", __name__)
DenseNet161_Weights = _weights_enum("DenseNet161_Weights", __name__)
DenseNet169_Weights = _weights_enum("DenseNet169_Weights", __name__)
DenseNet201_Weights = _weights_enum("DenseNet201_Weights", __name__)


@_builder(DenseNet121_Weights)
def densenet121(*, weights: Optional[DenseNet121_Weights] = None, progress: bool = True, **kwargs) -> DenseNet:
    """DenseNet-121."""
    return _densenet(32, (6, 12, 24, 16), 64, DenseNet121_Weights.verify(weights), progress, **kwargs)


@_builder(DenseNet161_Weights)
def densenet161(*, weights: Optional[DenseNet161_Weights] = None, progress: bool = True, **kwargs) -> DenseNet:
    """DenseNet-161."""
    return _densenet(48, (6, 12, 36, 24), 96, DenseNet161_Weights.verify(weights), progress, **kwargs)


@_builder(DenseNet169_Weights)
def densenet169(*, weights: Optional[DenseNet169_Weights] = None, progress: bool = True, **kwargs) -> DenseNet:
    """DenseNet-169."""
    return _densenet(32, (6, 12, 32, 32), 64, DenseNet169_Weights.verify(weights), progress, **kwargs)


@_builder(DenseNet201_Weights)
def densenet201(*, weights: Optional[DenseNet201_Weights] = None, progress: bool = True, **kwargs) -> DenseNet:
    """DenseNet-201."""
    return _densenet(32, (6, 12, 48, 32), 64, DenseNet201_Weights.verify(weights), progress, **kwargs)
