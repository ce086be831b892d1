"""Inception v3 ("Rethinking the Inception Architecture for Computer Vision", Szegedy et al.)."""
import warnings
from collections import namedtuple
from typing import Optional

import ember
from ember import nn
from ember.nn import functional as F

from embervision.models._api import _weights_enum
from embervision.models._utils import _builder, _ovewrite_named_param

__all__ = ["Inception3", "InceptionOutputs", "_InceptionOutputs", "Inception_V3_Weights", "inception_v3"]

InceptionOutputs = namedtuple("InceptionOutputs", ["logits", "aux_logits"])
_InceptionOutputs = InceptionOutputs


class BasicConv2d(nn.Module):
    def __init__(self, in_channels, out_channels, **kwargs):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, bias=False, **kwargs)
        self.bn = nn.BatchNorm2d(out_channels, eps=0.001)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)), inplace=True)


class InceptionA(nn.Module):
    def __init__(self, in_channels, pool_features, conv_block=None):
        super().__init__()
        c = conv_block or BasicConv2d
        self.branch1x1 = c(in_channels, 64, kernel_size=1)
        self.branch5x5_1 = c(in_channels, 48, kernel_size=1)
        self.branch5x5_2 = c(48, 64, kernel_size=5, padding=2)
        self.branch3x3dbl_1 = c(in_channels, 64, kernel_size=1)
        self.branch3x3dbl_2 = c(64, 96, kernel_size=3, padding=1)
        self.branch3x3dbl_3 = c(96, 96, kernel_size=3, padding=1)
        self.branch_pool = c(in_channels, pool_features, kernel_size=1)

    def forward(self, x):
        b1 = self.branch1x1(x)
        b5 = self.branch5x5_2(self.branch5x5_1(x))
        b3 = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        bp = self.branch_pool(F.avg_pool2d(x, kernel_size=3, stride=1, padding=1))
        return ember.cat([b1, b5, b3, bp], 1)


class InceptionB(nn.Module):
    def __init__(self, in_channels, conv_block=None):
        super().__init__()
        c = conv_block or BasicConv2d
        self.branch3x3 = c(in_channels, 384, kernel_size=3, stride=2)
        self.branch3x3dbl_1 = c(in_channels, 64, kernel_size=1)
        self.branch3x3dbl_2 = c(64, 96, kernel_size=3, padding=1)
        self.branch3x3dbl_3 = c(96, 96, kernel_size=3, stride=2)

    def forward(self, x):
        b3 = self.branch3x3(x)
        bd = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        return ember.cat([b3, bd, F.max_pool2d(x, kernel_size=3, stride=2)], 1)


class InceptionC(nn.Module):
    def __init__(self, in_channels, channels_7x7, conv_block=None):
        super().__init__()
        c = conv_block or BasicConv2d
        c7 = channels_7x7
        self.branch1x1 = c(in_channels, 192, kernel_size=1)
        self.branch7x7_1 = c(in_channels, c7, kernel_size=1)
        self.branch7x7_2 = c(c7, c7, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7_3 = c(c7, 192, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7dbl_1 = c(in_channels, c7, kernel_size=1)
        self.branch7x7dbl_2 = c(c7, c7, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7dbl_3 = c(c7, c7, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7dbl_4 = c(c7, c7, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7dbl_5 = c(c7, 192, kernel_size=(1, 7), padding=(0, 3))
        self.branch_pool = c(in_channels, 192, kernel_size=1)

    def forward(self, x):
        b1 = self.branch1x1(x)
        b7 = self.branch7x7_3(self.branch7x7_2(self.branch7x7_1(x)))
        bd = self.branch7x7dbl_1(x)
        for layer in (self.branch7x7dbl_2, self.branch7x7dbl_3, self.branch7x7dbl_4, self.branch7x7dbl_5):
            bd = layer(bd)
        bp = self.branch_pool(F.avg_pool2d(x, kernel_size=3, stride=1, padding=1))
        return ember.cat([b1, b7, bd, bp], 1)


class InceptionD(nn.Module):
    def __init__(self, in_channels, conv_block=None):
        super().__init__()
        c = conv_block or BasicConv2d
        self.branch3x3_1 = c(in_channels, 192, kernel_size=1)
        self.branch3x3_2 = c(192, 320, kernel_size=3, stride=2)
        self.branch7x7x3_1 = c(in_channels, 192, kernel_size=1)
        self.branch7x7x3_2 = c(192, 192, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7x3_3 = c(192, 192, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7x3_4 = c(192, 192, kernel_size=3, stride=2)

    def forward(self, x):
        b3 = self.branch3x3_2(self.branch3x3_1(x))
        b7 = self.branch7x7x3_4(self.branch7x7x3_3(self.branch7x7x3_2(self.branch7x7x3_1(x))))
        return ember.cat([b3, b7, F.max_pool2d(x, kernel_size=3, stride=2)], 1)


class InceptionE(nn.Module):
    def __init__(self, in_channels, conv_block=None):
        super().__init__()
        c = conv_block or BasicConv2d
        self.branch1x1 = c(in_channels, 320, kernel_size=1)
        self.branch3x3_1 = c(in_channels, 384, kernel_size=1)
        self.branch3x3_2a = c(384, 384, kernel_size=(1, 3), padding=(0, 1))
        self.branch3x3_2b = c(384, 384, kernel_size=(3, 1), padding=(1, 0))
        self.branch3x3dbl_1 = c(in_channels, 448, kernel_size=1)
        self.branch3x3dbl_2 = c(448, 384, kernel_size=3, padding=1)
        self.branch3x3dbl_3a = c(384, 384, kernel_size=(1, 3), padding=(0, 1))
        self.branch3x3dbl_3b = c(384, 384, kernel_size=(3, 1), padding=(1, 0))
        self.branch_pool = c(in_channels, 192, kernel_size=1)

    def forward(self, x):
        b1 = self.branch1x1(x)
        b3 = self.branch3x3_1(x)
        b3 = ember.cat([self.branch3x3_2a(b3), self.branch3x3_2b(b3)], 1)
        bd = self.branch3x3dbl_2(self.branch3x3dbl_1(x))
        bd = ember.cat([self.branch3x3dbl_3a(bd), self.branch3x3dbl_3b(bd)], 1)
        bp = self.branch_pool(F.avg_pool2d(x, kernel_size=3, stride=1, padding=1))
        return ember.cat([b1, b3, bd, bp], 1)


class InceptionAux(nn.Module):
    def __init__(self, in_channels, num_classes, conv_block=None):
        super().__init__()
        c = conv_block or BasicConv2d
        self.conv0 = c(in_channels, 128, kernel_size=1)
        self.conv1 = c(128, 768, kernel_size=5)
        self.conv1.stddev = 0.01
        self.fc = nn.Linear(768, num_classes)
        self.fc.stddev = 0.001

    def forward(self, x):
        x = self.conv1(self.conv0(F.avg_pool2d(x, kernel_size=5, stride=3)))
        x = F.adaptive_avg_pool2d(x, (1, 1))
        return self.fc(ember.flatten(x, 1))


class Inception3(nn.Module):
    def __init__(self, num_classes=1000, aux_logits=True, transform_input=False, inception_blocks=None,
                 init_weights=None, dropout=0.5):
        super().__init__()
        if inception_blocks is None:
            inception_blocks = [BasicConv2d, InceptionA, InceptionB, InceptionC, InceptionD, InceptionE, InceptionAux]
        if init_weights is None:
            warnings.warn(
                "The default weight initialization of inception_v3 will be changed in future releases of "
                "torchvision. If you wish to keep the old behavior (which leads to long initialization times"
                " due to scipy/scipy#11299), please set init_weights=True.",
                FutureWarning,
            )
            init_weights = True
        if len(inception_blocks) != 7:
            raise ValueError(f"length of inception_blocks should be 7 instead of {len(inception_blocks)}")
        conv_block, a, b, c, d, e, aux = inception_blocks
        self.aux_logits = aux_logits
        self.transform_input = transform_input
        self.Conv2d_1a_3x3 = conv_block(3, 32, kernel_size=3, stride=2)
        self.Conv2d_2a_3x3 = conv_block(32, 32, kernel_size=3)
        self.Conv2d_2b_3x3 = conv_block(32, 64, kernel_size=3, padding=1)
        self.maxpool1 = nn.MaxPool2d(kernel_size=3, stride=2)
        self.Conv2d_3b_1x1 = conv_block(64, 80, kernel_size=1)
        self.Conv2d_4a_3x3 = conv_block(80, 192, kernel_size=3)
        self.maxpool2 = nn.MaxPool2d(kernel_size=3, stride=2)
        self.Mixed_5b = a(192, pool_features=32)
        self.Mixed_5c = a(256, pool_features=64)
        self.Mixed_5d = a(288, pool_features=64)
        self.Mixed_6a = b(288)
        self.Mixed_6b = c(768, channels_7x7=128)
        self.Mixed_6c = c(768, channels_7x7=160)
        self.Mixed_6d = c(768, channels_7x7=160)
        self.Mixed_6e = c(768, channels_7x7=192)
        self.AuxLogits = aux(768, num_classes) if aux_logits else None
        self.Mixed_7a = d(768)
        self.Mixed_7b = e(1280)
        self.Mixed_7c = e(2048)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(p=dropout)
        self.fc = nn.Linear(2048, num_classes)
        if init_weights:
            for m in self.modules():
                if isinstance(m, (nn.Conv2d, nn.Linear)):
                    stddev = float(m.stddev) if hasattr(m, "stddev") else 0.1
                    nn.init.trunc_normal_(m.weight, mean=0.0, std=stddev, a=-2, b=2)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)

    def _transform_input(self, x):
        if self.transform_input:
            x_ch0 = ember.unsqueeze(x[:, 0], 1) * (0.229 / 0.5) + (0.485 - 0.5) / 0.5
            x_ch1 = ember.unsqueeze(x[:, 1], 1) * (0.224 / 0.5) + (0.456 - 0.5) / 0.5
            x_ch2 = ember.unsqueeze(x[:, 2], 1) * (0.225 / 0.5) + (0.406 - 0.5) / 0.5
            x = ember.cat((x_ch0, x_ch1, x_ch2), 1)
        return x

    def _forward(self, x):
        x = self.Conv2d_2b_3x3(self.Conv2d_2a_3x3(self.Conv2d_1a_3x3(x)))
        x = self.maxpool1(x)
        x = self.maxpool2(self.Conv2d_4a_3x3(self.Conv2d_3b_1x1(x)))
        x = self.Mixed_5d(self.Mixed_5c(self.Mixed_5b(x)))
        x = self.Mixed_6e(self.Mixed_6d(self.Mixed_6c(self.Mixed_6b(self.Mixed_6a(x)))))
        aux = self.AuxLogits(x) if self.AuxLogits is not None and self.training else None
        x = self.Mixed_7c(self.Mixed_7b(self.Mixed_7a(x)))
        x = self.dropout(self.avgpool(x))
        return self.fc(ember.flatten(x, 1)), aux

    def forward(self, x):
        x, aux = self._forward(self._transform_input(x))
        if self.training and self.aux_logits:
            return InceptionOutputs(x, aux)
        return x


Inception_V3_Weights = _weights_enum("Inception_V3_Weights", __name__)


@_builder(Inception_V3_Weights)
def inception_v3(*, weights: Optional[Inception_V3_Weights] = None, progress: bool = True, **kwargs) -> Inception3:
    """Inception v3 (expects 299x299 inputs, at least 75x75)."""
    weights = Inception_V3_Weights.verify(weights)
    original_aux_logits = kwargs.get("aux_logits", True)
    if weights is not None:
        if "transform_input" not in kwargs:
            _ovewrite_named_param(kwargs, "transform_input", True)
        _ovewrite_named_param(kwargs, "aux_logits", True)
        _ovewrite_named_param(kwargs, "init_weights", False)
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = Inception3(**kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress))
        if not original_aux_logits:
            model.aux_logits = False
            model.AuxLogits = None
    return model
