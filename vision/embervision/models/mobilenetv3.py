"""MobileNetV3 ("Searching for MobileNetV3", Howard et al.)."""
from functools import partial
from typing import Optional

import ember
from ember import nn

from embervision.models._api import _weights_enum
from embervision.models._utils import _builder, _check_classes, _make_divisible
from embervision.ops.misc import Conv2dNormActivation, SqueezeExcitation as SElayer

__all__ = ["MobileNetV3", "MobileNet_V3_Large_Weights", "MobileNet_V3_Small_Weights", "mobilenet_v3_large",
           "mobilenet_v3_small"]


class InvertedResidualConfig:
    def __init__(self, input_channels, kernel, expanded_channels, out_channels, use_se, activation, stride,
                 dilation, width_mult):
        self.input_channels = self.adjust_channels(input_channels, width_mult)
        self.kernel = kernel
        self.expanded_channels = self.adjust_channels(expanded_channels, width_mult)
        self.out_channels = self.adjust_channels(out_channels, width_mult)
        self.use_se = use_se
        self.use_hs = activation == "HS"
        self.stride = stride
        self.dilation = dilation

    @staticmethod
    def adjust_channels(channels, width_mult):
        return _make_divisible(channels * width_mult, 8)


class InvertedResidual(nn.Module):
    def __init__(self, cnf, norm_layer, se_layer=partial(SElayer, scale_activation=nn.Hardsigmoid)):
        super().__init__()
        if not (1 <= cnf.stride <= 2):
            raise ValueError("illegal stride value")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        layers = []
        activation_layer = nn.Hardswish if cnf.use_hs else nn.ReLU
        if cnf.expanded_channels != cnf.input_channels:
            layers.append(Conv2dNormActivation(cnf.input_channels, cnf.expanded_channels, kernel_size=1,
                                               norm_layer=norm_layer, activation_layer=activation_layer))
        stride = 1 if cnf.dilation > 1 else cnf.stride
        layers.append(Conv2dNormActivation(cnf.expanded_channels, cnf.expanded_channels, kernel_size=cnf.kernel,
                                           stride=stride, dilation=cnf.dilation, groups=cnf.expanded_channels,
                                           norm_layer=norm_layer, activation_layer=activation_layer))
        if cnf.use_se:
            layers.append(se_layer(cnf.expanded_channels, _make_divisible(cnf.expanded_channels // 4, 8)))
        layers.append(Conv2dNormActivation(cnf.expanded_channels, cnf.out_channels, kernel_size=1,
                                           norm_layer=norm_layer, activation_layer=None))
        self.block = nn.Sequential(*layers)
        self.out_channels = cnf.out_channels
        self._is_cn = cnf.stride > 1

    def forward(self, input):
        result = self.block(input)
        return result + input if self.use_res_connect else result


class MobileNetV3(nn.Module):
    def __init__(self, inverted_residual_setting, last_channel, num_classes=1000, block=None, norm_layer=None,
                 dropout=0.2, **kwargs):
        super().__init__()
        if not inverted_residual_setting:
            raise ValueError("The inverted_residual_setting should not be empty")
        block = block or InvertedResidual
        norm_layer = norm_layer or partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)
        layers = []
        first = inverted_residual_setting[0].input_channels
        layers.append(Conv2dNormActivation(3, first, kernel_size=3, stride=2, norm_layer=norm_layer,
                                           activation_layer=nn.Hardswish))
        for cnf in inverted_residual_setting:
            layers.append(block(cnf, norm_layer))
        last_in = inverted_residual_setting[-1].out_channels
        last_out = 6 * last_in
        layers.append(Conv2dNormActivation(last_in, last_out, kernel_size=1, norm_layer=norm_layer,
                                           activation_layer=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(last_out, last_channel), nn.Hardswish(inplace=True),
                                        nn.Dropout(p=dropout, inplace=True), nn.Linear(last_channel, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.avgpool(self.features(x))
        return self.classifier(ember.flatten(x, 1))


def _mobilenet_v3_conf(arch, width_mult=1.0, reduced_tail=False, dilated=False, **kwargs):
    rd = 2 if reduced_tail else 1
    dil = 2 if dilated else 1
    c = partial(InvertedResidualConfig, width_mult=width_mult)
    adjust = partial(InvertedResidualConfig.adjust_channels, width_mult=width_mult)
    if arch == "mobilenet_v3_large":
        setting = [
            c(16, 3, 16, 16, False, "RE", 1, 1), c(16, 3, 64, 24, False, "RE", 2, 1),
            c(24, 3, 72, 24, False, "RE", 1, 1), c(24, 5, 72, 40, True, "RE", 2, 1),
            c(40, 5, 120, 40, True, "RE", 1, 1), c(40, 5, 120, 40, True, "RE", 1, 1),
            c(40, 3, 240, 80, False, "HS", 2, 1), c(80, 3, 200, 80, False, "HS", 1, 1),
            c(80, 3, 184, 80, False, "HS", 1, 1), c(80, 3, 184, 80, False, "HS", 1, 1),
            c(80, 3, 480, 112, True, "HS", 1, 1), c(112, 3, 672, 112, True, "HS", 1, 1),
            c(112, 5, 672, 160 // rd, True, "HS", 2, dil),
            c(160 // rd, 5, 960 // rd, 160 // rd, True, "HS", 1, dil),
            c(160 // rd, 5, 960 // rd, 160 // rd, True, "HS", 1, dil),
        ]
        last_channel = adjust(1280 // rd)
    elif arch == "mobilenet_v3_small":
        setting = [
            c(16, 3, 16, 16, True, "RE", 2, 1), c(16, 3, 72, 24, False, "RE", 2, 1),
            c(24, 3, 88, 24, False, "RE", 1, 1), c(24, 5, 96, 40, True, "HS", 2, 1),
            c(40, 5, 240, 40, True, "HS", 1, 1), c(40, 5, 240, 40, True, "HS", 1, 1),
            c(40, 5, 120, 48, True, "HS", 1, 1), c(48, 5, 144, 48, True, "HS", 1, 1),
            c(48, 5, 288, 96 // rd, True, "HS", 2, dil),
            c(96 // rd, 5, 576 // rd, 96 // rd, True, "HS", 1, dil),
            c(96 // rd, 5, 576 // rd, 96 // rd, True, "HS", 1, dil),
        ]
        last_channel = adjust(1024 // rd)
    else:
        raise ValueError(f"Unsupported model type {arch}")
    return setting, last_channel


def _mobilenet_v3(arch, weights, progress, **kwargs):
    _check_classes(kwargs, weights)
    setting, last_channel = _mobilenet_v3_conf(arch, **kwargs)
    for key in ("width_mult", "reduced_tail", "dilated"):
        kwargs.pop(key, None)
    model = MobileNetV3(setting, last_channel, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress))
    return model


MobileNet_V3_Large_Weights = _weights_enum("MobileNet_V3_Large_Weights", __name__)
MobileNet_V3_Small_Weights = _weights_enum("MobileNet_V3_Small_Weights", __name__)


@_builder(MobileNet_V3_Large_Weights)
def mobilenet_v3_large(*, weights: Optional[MobileNet_V3_Large_Weights] = None, progress: bool = True,
                       **kwargs) -> MobileNetV3:
    """MobileNetV3 large."""
    weights = MobileNet_V3_Large_Weights.verify(weights)
    return _mobilenet_v3("mobilenet_v3_large", weights, progress, **kwargs)


@_builder(MobileNet_V3_Small_Weights)
def mobilenet_v3_small(*, weights: Optional[MobileNet_V3_Small_Weights] = None, progress: bool = True,
                       **kwargs) -> MobileNetV3:
    """MobileNetV3 small."""
    weights = MobileNet_V3_Small_Weights.verify(weights)
    return _mobilenet_v3("mobilenet_v3_small", weights, progress, **kwargs)
