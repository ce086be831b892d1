"""EfficientNet B0-B7 ("EfficientNet: Rethinking Model Scaling for CNNs", Tan and Le) and
EfficientNetV2 S/M/L ("EfficientNetV2: Smaller Models and Faster Training")."""
import copy
import math
from functools import partial
from typing import Optional

import ember
from ember import nn

from embervision.models._api import _weights_enum
from embervision.models._utils import _builder, _check_classes, _make_divisible
from embervision.ops.misc import Conv2dNormActivation, SqueezeExcitation
from embervision.ops.stochastic_depth import StochasticDepth

__all__ = ["EfficientNet"] + [f"EfficientNet_B{i}_Weights" for i in range(8)] + [
    "EfficientNet_V2_S_Weights", "EfficientNet_V2_M_Weights", "EfficientNet_V2_L_Weights"] + [
    f"efficientnet_b{i}" for i in range(8)] + ["efficientnet_v2_s", "efficientnet_v2_m", "efficientnet_v2_l"]


class _MBConvConfig:
    def __init__(self, expand_ratio, kernel, stride, input_channels, out_channels, num_layers, block):
        self.expand_ratio = expand_ratio
        self.kernel = kernel
        self.stride = stride
        self.input_channels = input_channels
        self.out_channels = out_channels
        self.num_layers = num_layers
        self.block = block

    @staticmethod
    def adjust_channels(channels, width_mult, min_value=None):
        return _make_divisible(channels * width_mult, 8, min_value)


class MBConvConfig(_MBConvConfig):
    def __init__(self, expand_ratio, kernel, stride, input_channels, out_channels, num_layers, width_mult=1.0,
                 depth_mult=1.0, block=None):
        input_channels = self.adjust_channels(input_channels, width_mult)
        out_channels = self.adjust_channels(out_channels, width_mult)
        num_layers = int(math.ceil(num_layers * depth_mult))
        super().__init__(expand_ratio, kernel, stride, input_channels, out_channels, num_layers, block or MBConv)


class FusedMBConvConfig(_MBConvConfig):
    def __init__(self, expand_ratio, kernel, stride, input_channels, out_channels, num_layers, block=None):
        super().__init__(expand_ratio, kernel, stride, input_channels, out_channels, num_layers,
                         block or FusedMBConv)


class MBConv(nn.Module):
    def __init__(self, cnf, stochastic_depth_prob, norm_layer, se_layer=SqueezeExcitation):
        super().__init__()
        if not (1 <= cnf.stride <= 2):
            raise ValueError("illegal stride value")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        layers = []
        expanded = cnf.adjust_channels(cnf.input_channels, cnf.expand_ratio)
        if expanded != cnf.input_channels:
            layers.append(Conv2dNormActivation(cnf.input_channels, expanded, kernel_size=1, norm_layer=norm_layer,
                                               activation_layer=nn.SiLU))
        layers.append(Conv2dNormActivation(expanded, expanded, kernel_size=cnf.kernel, stride=cnf.stride,
                                           groups=expanded, norm_layer=norm_layer, activation_layer=nn.SiLU))
        layers.append(se_layer(expanded, max(1, cnf.input_channels // 4), activation=partial(nn.SiLU, inplace=True)))
        layers.append(Conv2dNormActivation(expanded, cnf.out_channels, kernel_size=1, norm_layer=norm_layer,
                                           activation_layer=None))
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.out_channels = cnf.out_channels

    def forward(self, input):
        result = self.block(input)
        if self.use_res_connect:
            result = self.stochastic_depth(result) + input
        return result


class FusedMBConv(nn.Module):
    def __init__(self, cnf, stochastic_depth_prob, norm_layer):
        super().__init__()
        if not (1 <= cnf.stride <= 2):
            raise ValueError("illegal stride value")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        layers = []
        expanded = cnf.adjust_channels(cnf.input_channels, cnf.expand_ratio)
        if expanded != cnf.input_channels:
            layers.append(Conv2dNormActivation(cnf.input_channels, expanded, kernel_size=cnf.kernel,
                                               stride=cnf.stride, norm_layer=norm_layer, activation_layer=nn.SiLU))
            layers.append(Conv2dNormActivation(expanded, cnf.out_channels, kernel_size=1, norm_layer=norm_layer,
                                               activation_layer=None))
        else:
            layers.append(Conv2dNormActivation(cnf.input_channels, cnf.out_channels, kernel_size=cnf.kernel,
                                               stride=cnf.stride, norm_layer=norm_layer, activation_layer=nn.SiLU))
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.out_channels = cnf.out_channels

    def forward(self, input):
        result = self.block(input)
        if self.use_res_connect:
            result = self.stochastic_depth(result) + input
        return result


class EfficientNet(nn.Module):
    def __init__(self, inverted_residual_setting, dropout, stochastic_depth_prob=0.2, num_classes=1000,
                 norm_layer=None, last_channel=None):
        super().__init__()
        if not inverted_residual_setting:
            raise ValueError("The inverted_residual_setting should not be empty")
        norm_layer = norm_layer or nn.BatchNorm2d
        layers = [Conv2dNormActivation(3, inverted_residual_setting[0].input_channels, kernel_size=3, stride=2,
                                       norm_layer=norm_layer, activation_layer=nn.SiLU)]
        total = sum(cnf.num_layers for cnf in inverted_residual_setting)
        block_id = 0
        for cnf in inverted_residual_setting:
            stage = []
            for _ in range(cnf.num_layers):
                block_cnf = copy.copy(cnf)
                if stage:
                    block_cnf.input_channels = block_cnf.out_channels
                    block_cnf.stride = 1
                sd_prob = stochastic_depth_prob * float(block_id) / total
                stage.append(block_cnf.block(block_cnf, sd_prob, norm_layer))
                block_id += 1
            layers.append(nn.Sequential(*stage))
        last_in = inverted_residual_setting[-1].out_channels
        last_out = last_channel if last_channel is not None else 4 * last_in
        layers.append(Conv2dNormActivation(last_in, last_out, kernel_size=1, norm_layer=norm_layer,
                                           activation_layer=nn.SiLU))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout, inplace=True), nn.Linear(last_out, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                r = 1.0 / math.sqrt(m.out_features)
                nn.init.uniform_(m.weight, -r, r)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.avgpool(self.features(x))
        return self.classifier(ember.flatten(x, 1))


def _efficientnet_conf(arch, **kwargs):
    if arch.startswith("efficientnet_b"):
        c = partial(MBConvConfig, width_mult=kwargs.pop("width_mult"), depth_mult=kwargs.pop("depth_mult"))
        setting = [c(1, 3, 1, 32, 16, 1), c(6, 3, 2, 16, 24, 2), c(6, 5, 2, 24, 40, 2), c(6, 3, 2, 40, 80, 3),
                   c(6, 5, 1, 80, 112, 3), c(6, 5, 2, 112, 192, 4), c(6, 3, 1, 192, 320, 1)]
        return setting, None
    F_, M_ = FusedMBConvConfig, MBConvConfig
    if arch.startswith("efficientnet_v2_s"):
        setting = [F_(1, 3, 1, 24, 24, 2), F_(4, 3, 2, 24, 48, 4), F_(4, 3, 2, 48, 64, 4), M_(4, 3, 2, 64, 128, 6),
                   M_(6, 3, 1, 128, 160, 9), M_(6, 3, 2, 160, 256, 15)]
    elif arch.startswith("efficientnet_v2_m"):
        setting = [F_(1, 3, 1, 24, 24, 3), F_(4, 3, 2, 24, 48, 5), F_(4, 3, 2, 48, 80, 5), M_(4, 3, 2, 80, 160, 7),
                   M_(6, 3, 1, 160, 176, 14), M_(6, 3, 2, 176, 304, 18), M_(6, 3, 1, 304, 512, 5)]
    elif arch.startswith("efficientnet_v2_l"):
        setting = [F_(1, 3, 1, 32, 32, 4), F_(4, 3, 2, 32, 64, 7), F_(4, 3, 2, 64, 96, 7), M_(4, 3, 2, 96, 192, 10),
                   M_(6, 3, 1, 192, 224, 19), M_(6, 3, 2, 224, 384, 25), M_(6, 3, 1, 384, 640, 7)]
    else:
        raise ValueError(f"Unsupported model type {arch}")
    return setting, 1280


def _efficientnet(setting, dropout, last_channel, weights, progress, **kwargs):
    _check_classes(kwargs, weights)
    model = EfficientNet(setting, dropout, last_channel=last_channel, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress))
    return model


_B_PARAMS = {0: (1.0, 1.0, 0.2), 1: (1.0, 1.1, 0.2), 2: (1.1, 1.2, 0.3), 3: (1.2, 1.4, 0.3), 4: (1.4, 1.8, 0.4),
             5: (1.6, 2.2, 0.4), 6: (1.8, 2.6, 0.5), 7: (2.0, 3.1, 0.5)}
_V2_DROPOUT = {"s": 0.2, "m": 0.3, "l": 0.4}

EfficientNet_B0_Weights = _weights_enum("EfficientNet_B0_Weights", __name__)
EfficientNet_B1_Weights = _weights_enum("EfficientNet_B1_Weights", __name__)
EfficientNet_B2_Weights = _weights_enum("EfficientNet_B2_Weights", __name__)
EfficientNet_B3_Weights = _weights_enum("EfficientNet_B3_Weights", __name__)
EfficientNet_B4_Weights = _weights_enum("EfficientNet_B4_Weights", __name__)
EfficientNet_B5_Weights = _weights_enum("EfficientNet_B5_Weights", __name__)
EfficientNet_B6_Weights = _weights_enum("EfficientNet_B6_Weights", __name__)
EfficientNet_B7_Weights = _weights_enum("EfficientNet_B7_Weights", __name__)
EfficientNet_V2_S_Weights = _weights_enum("EfficientNet_V2_S_Weights", __name__)
EfficientNet_V2_M_Weights = _weights_enum("EfficientNet_V2_M_Weights", __name__)
EfficientNet_V2_L_Weights = _weights_enum("EfficientNet_V2_L_Weights", __name__)


def _b(i, weights, progress, kwargs):
    width, depth, dropout = _B_PARAMS[i]
    setting, last = _efficientnet_conf(f"efficientnet_b{i}", width_mult=width, depth_mult=depth)
    if i >= 5:
        kwargs.setdefault("norm_layer", partial(nn.BatchNorm2d, eps=0.001, momentum=0.01))
    return _efficientnet(setting, kwargs.pop("dropout", dropout), last, weights, progress, **kwargs)


def _v2(size, weights, progress, kwargs):
    setting, last = _efficientnet_conf(f"efficientnet_v2_{size}")
    kwargs.setdefault("norm_layer", partial(nn.BatchNorm2d, eps=1e-03))
    return _efficientnet(setting, kwargs.pop("dropout", _V2_DROPOUT[size]), last, weights, progress, **kwargs)


@_builder(EfficientNet_B0_Weights)
def efficientnet_b0(*, weights: Optional[EfficientNet_B0_Weights] = None, progress: bool = True, **kwargs):
    """EfficientNet B0."""
    return _b(0, EfficientNet_B0_Weights.verify(weights), progress, kwargs)


@_builder(EfficientNet_B1_Weights)
def efficientnet_b1(*, weights: Optional[EfficientNet_B1_Weights] = None, progress: bool = True, **kwargs):
    """EfficientNet B1."""
    return _b(1, EfficientNet_B1_Weights.verify(weights), progress, kwargs)


@_builder(EfficientNet_B2_Weights)
def efficientnet_b2(*, weights: Optional[EfficientNet_B2_Weights] = None, progress: bool = True, **kwargs):
    """EfficientNet B2."""
    return _b(2, EfficientNet_B2_Weights.verify(weights), progress, kwargs)


@_builder(EfficientNet_B3_Weights)
def efficientnet_b3(*, weights: Optional[EfficientNet_B3_Weights] = None, progress: bool = True, **kwargs):
    """EfficientNet B3."""
    return _b(3, EfficientNet_B3_Weights.verify(weights), progress, kwargs)


@_builder(EfficientNet_B4_Weights)
def efficientnet_b4(*, weights: Optional[EfficientNet_B4_Weights] = None, progress: bool = True, **kwargs):
    """EfficientNet B4."""
    return _b(4, EfficientNet_B4_Weights.verify(weights), progress, kwargs)


@_builder(EfficientNet_B5_Weights)
def efficientnet_b5(*, weights: Optional[EfficientNet_B5_Weights] = None, progress: bool = True, **kwargs):
    """EfficientNet B5."""
    return _b(5, EfficientNet_B5_Weights.verify(weights), progress, kwargs)


@_builder(EfficientNet_B6_Weights)
def efficientnet_b6(*, weights: Optional[EfficientNet_B6_Weights] = None, progress: bool = True, **kwargs):
    """EfficientNet B6."""
    return _b(6, EfficientNet_B6_Weights.verify(weights), progress, kwargs)


@_builder(EfficientNet_B7_Weights)
def efficientnet_b7(*, weights: Optional[EfficientNet_B7_Weights] = None, progress: bool = True, **kwargs):
    """EfficientNet B7."""
    return _b(7, EfficientNet_B7_Weights.verify(weights), progress, kwargs)


@_builder(EfficientNet_V2_S_Weights)
def efficientnet_v2_s(*, weights: Optional[EfficientNet_V2_S_Weights] = None, progress: bool = True, **kwargs):
    """EfficientNetV2 S."""
    return _v2("s", EfficientNet_V2_S_Weights.verify(weights), progress, kwargs)


@_builder(EfficientNet_V2_M_Weights)
def efficientnet_v2_m(*, weights: Optional[EfficientNet_V2_M_Weights] = None, progress: bool = True, **kwargs):
    """EfficientNetV2 M."""
    return _v2("m", EfficientNet_V2_M_Weights.verify(weights), progress, kwargs)


@_builder(EfficientNet_V2_L_Weights)
def efficientnet_v2_l(*, weights: Optional[EfficientNet_V2_L_Weights] = None, progress: bool = True, **kwargs):
    """EfficientNetV2 L."""
    return _v2("l", EfficientNet_V2_L_Weights.verify(weights), progress, kwargs)
