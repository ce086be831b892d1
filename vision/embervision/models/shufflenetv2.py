"""ShuffleNetV2 ("ShuffleNet V2: Practical Guidelines for Efficient CNN Architecture Design", Ma et al.)."""
from typing import Optional

import ember
from ember import nn

from embervision.models._api import _weights_enum
from embervision.models._utils import _builder, _check_classes

__all__ = ["ShuffleNetV2", "ShuffleNet_V2_X0_5_Weights", "ShuffleNet_V2_X1_0_Weights", "ShuffleNet_V2_X1_5_Weights",
           "ShuffleNet_V2_X2_0_Weights", "shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "shufflenet_v2_x1_5",
           "shufflenet_v2_x2_0"]


def channel_shuffle(x, groups):
    b, c, h, w = x.shape
    x = x.reshape(b, groups, c // groups, h, w)
    x = ember.transpose(x, 1, 2).contiguous()
    return x.reshape(b, c, h, w)


class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride):
        super().__init__()
        if not (1 <= stride <= 3):
            raise ValueError("illegal stride value")
        self.stride = stride
        branch_features = oup // 2
        if (self.stride == 1) and (inp != branch_features << 1):
            raise ValueError(
                f"Invalid combination of stride {stride}, inp {inp} and oup {oup} values. If stride == 1 then "
                f"inp should be equal to oup // 2 << 1.")
        if self.stride > 1:
            self.branch1 = nn.Sequential(
                self.depthwise_conv(inp, inp, kernel_size=3, stride=self.stride, padding=1), nn.BatchNorm2d(inp),
                nn.Conv2d(inp, branch_features, kernel_size=1, stride=1, padding=0, bias=False),
                nn.BatchNorm2d(branch_features), nn.ReLU(inplace=True),
            )
        else:
            self.branch1 = nn.Sequential()
        self.branch2 = nn.Sequential(
            nn.Conv2d(inp if (self.stride > 1) else branch_features, branch_features, kernel_size=1, stride=1,
                      padding=0, bias=False),
            nn.BatchNorm2d(branch_features), nn.ReLU(inplace=True),
            self.depthwise_conv(branch_features, branch_features, kernel_size=3, stride=self.stride, padding=1),
            nn.BatchNorm2d(branch_features),
            nn.Conv2d(branch_features, branch_features, kernel_size=1, stride=1, padding=0, bias=False),
            nn.BatchNorm2d(branch_features), nn.ReLU(inplace=True),
        )

    @staticmethod
    def depthwise_conv(i, o, kernel_size, stride=1, padding=0, bias=False):
        return nn.Conv2d(i, o, kernel_size, stride, padding, bias=bias, groups=i)

    def forward(self, x):
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = ember.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = ember.cat((self.branch1(x), self.branch2(x)), dim=1)
        return channel_shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    def __init__(self, stages_repeats, stages_out_channels, num_classes=1000, inverted_residual=InvertedResidual):
        super().__init__()
        if len(stages_repeats) != 3:
            raise ValueError("expected stages_repeats as list of 3 positive ints")
        if len(stages_out_channels) != 5:
            raise ValueError("expected stages_out_channels as list of 5 positive ints")
        self._stage_out_channels = stages_out_channels
        input_channels = 3
        output_channels = self._stage_out_channels[0]
        self.conv1 = nn.Sequential(nn.Conv2d(input_channels, output_channels, 3, 2, 1, bias=False),
                                   nn.BatchNorm2d(output_channels), nn.ReLU(inplace=True))
        input_channels = output_channels
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        for name, repeats, output_channels in zip(["stage2", "stage3", "stage4"], stages_repeats,
                                                  self._stage_out_channels[1:]):
            seq = [inverted_residual(input_channels, output_channels, 2)]
            for _ in range(repeats - 1):
                seq.append(inverted_residual(output_channels, output_channels, 1))
            setattr(self, name, nn.Sequential(*seq))
            input_channels = output_channels
        output_channels = self._stage_out_channels[-1]
        self.conv5 = nn.Sequential(nn.Conv2d(input_channels, output_channels, 1, 1, 0, bias=False),
                                   nn.BatchNorm2d(output_channels), nn.ReLU(inplace=True))
        self.fc = nn.Linear(output_channels, num_classes)

    def forward(self, x):
        x = self.maxpool(self.conv1(x))
        x = self.stage4(self.stage3(self.stage2(x)))
        x = self.conv5(x)
        x = x.mean([2, 3])
        return self.fc(x)


def _shufflenetv2(weights, progress, *args, **kwargs):
    _check_classes(kwargs, weights)
    model = ShuffleNetV2(*args, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress))
    return model


ShuffleNet_V2_X0_5_Weights = _weights_enum("ShuffleNet_V2_X0_5_Weights", __name__)
ShuffleNet_V2_X1_0_Weights = _weights_enum("ShuffleNet_V2_X1_0_Weights", __name__)
ShuffleNet_V2_X1_5_Weights = _weights_enum("ShuffleNet_V2_X1_5_Weights", __name__)
ShuffleNet_V2_X2_0_Weights = _weights_enum("ShuffleNet_V2_X2_0_Weights", __name__)


@_builder(ShuffleNet_V2_X0_5_Weights)
def shufflenet_v2_x0_5(*, weights: Optional[ShuffleNet_V2_X0_5_Weights] = None, progress: bool = True,
                       **kwargs) -> ShuffleNetV2:
    """ShuffleNetV2 with 0.5x output channels."""
    weights = ShuffleNet_V2_X0_5_Weights.verify(weights)
    return _shufflenetv2(weights, progress, [4, 8, 4], [24, 48, 96, 192, 1024], **kwargs)


@_builder(ShuffleNet_V2_X1_0_Weights)
def shufflenet_v2_x1_0(*, weights: Optional[ShuffleNet_V2_X1_0_Weights] = None, progress: bool = True,
                       **kwargs) -> ShuffleNetV2:
    """ShuffleNetV2 with 1.0x output channels."""
    weights = ShuffleNet_V2_X1_0_Weights.verify(weights)
    return _shufflenetv2(weights, progress, [4, 8, 4], [24, 116, 232, 464, 1024], **kwargs)


@_builder(ShuffleNet_V2_X1_5_Weights)
def shufflenet_v2_x1_5(*, weights: Optional[ShuffleNet_V2_X1_5_Weights] = None, progress: bool = True,
                       **kwargs) -> ShuffleNetV2:
    """ShuffleNetV2 with 1.5x output channels."""
    weights = ShuffleNet_V2_X1_5_Weights.verify(weights)
    return _shufflenetv2(weights, progress, [4, 8, 4], [24, 176, 352, 704, 1024], **kwargs)


@_builder(ShuffleNet_V2_X2_0_Weights)
def shufflenet_v2_x2_0(*, weights: Optional[ShuffleNet_V2_X2_0_Weights] = None, progress: bool = True,
                       **kwargs) -> ShuffleNetV2:
    """ShuffleNetV2 with 2.0x output channels."""
    weights = ShuffleNet_V2_X2_0_Weights.verify(weights)
    return _shufflenetv2(weights, progress, [4, 8, 4], [24, 244, 488, 976, 2048], **kwargs)
