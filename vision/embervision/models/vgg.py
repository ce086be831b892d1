"""VGG ("Very Deep Convolutional Networks for Large-Scale Image Recognition", Simonyan and Zisserman)."""
from typing import Optional

import ember
from ember import nn

from embervision.models._api import _weights_enum
from embervision.models._utils import _builder, _ovewrite_named_param

__all__ = ["VGG", "VGG11_Weights", "VGG11_BN_Weights", "VGG13_Weights", "VGG13_BN_Weights", "VGG16_Weights",
           "VGG16_BN_Weights", "VGG19_Weights", "VGG19_BN_Weights", "vgg11", "vgg11_bn", "vgg13", "vgg13_bn",
           "vgg16", "vgg16_bn", "vgg19", "vgg19_bn"]


class VGG(nn.Module):
    def __init__(self, features, num_classes=1000, init_weights=True, dropout=0.5):
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, num_classes),
        )
        if init_weights:
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                    if m.bias is not None:
                        nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, 0, 0.01)
                    nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.avgpool(self.features(x))
        return self.classifier(ember.flatten(x, 1))


def make_layers(cfg, batch_norm=False):
    layers = []
    in_channels = 3
    for v in cfg:
        if v == "M":
            layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
        else:
            conv2d = nn.Conv2d(in_channels, v, kernel_size=3, padding=1)
            layers += [conv2d, nn.BatchNorm2d(v), nn.ReLU(inplace=True)] if batch_norm else [conv2d, nn.ReLU(inplace=True)]
            in_channels = v
    return nn.Sequential(*layers)


cfgs = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "E": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"],
}


def _vgg(cfg, batch_norm, weights, progress, **kwargs):
    if weights is not None:
        kwargs["init_weights"] = False
        if weights.meta["categories"] is not None:
            _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = VGG(make_layers(cfgs[cfg], batch_norm=batch_norm), **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress))
    return model


VGG11_Weights = _weights_enum("VGG11_Weights", __name__)
VGG11_BN_Weights = _weights_enum("VGG11_BN_Weights", __name__)
VGG13_Weights = _weights_enum("VGG13_Weights", __name__)
VGG13_BN_Weights = _weights_enum("VGG13_BN_Weights", __name__)
VGG16_Weights = _weights_enum("VGG16_Weights", __name__)
VGG16_BN_Weights = _weights_enum("VGG16_BN_Weights", __name__)
VGG19_Weights = _weights_enum("VGG19_Weights", __name__)
VGG19_BN_Weights = _weights_enum("VGG19_BN_Weights", __name__)


@_builder(VGG11_Weights)
def vgg11(*, weights: Optional[VGG11_Weights] = None, progress: bool = True, **kwargs) -> VGG:
    """VGG-11 (configuration A)."""
    return _vgg("A", False, VGG11_Weights.verify(weights), progress, **kwargs)


@_builder(VGG11_BN_Weights)
def vgg11_bn(*, weights: Optional[VGG11_BN_Weights] = None, progress: bool = True, **kwargs) -> VGG:
    """VGG-11 with batch normalization."""
    return _vgg("A", True, VGG11_BN_Weights.verify(weights), progress, **kwargs)


@_builder(VGG13_Weights)
def vgg13(*, weights: Optional[VGG13_Weights] = None, progress: bool = True, **kwargs) -> VGG:
    """VGG-13 (configuration B)."""
    return _vgg("B", False, VGG13_Weights.verify(weights), progress, **kwargs)


@_builder(VGG13_BN_Weights)
def vgg13_bn(*, weights: Optional[VGG13_BN_Weights] = None, progress: bool = True, **kwargs) -> VGG:
    """VGG-13 with batch normalization."""
    return _vgg("B", True, VGG13_BN_Weights.verify(weights), progress, **kwargs)


@_builder(VGG16_Weights)
def vgg16(*, weights: Optional[VGG16_Weights] = None, progress: bool = True, **kwargs) -> VGG:
    """VGG-16 (configuration D). `VGG16_Weights.IMAGENET1K_FEATURES` has valid `features` only."""
    return _vgg("D", False, VGG16_Weights.verify(weights), progress, **kwargs)


@_builder(VGG16_BN_Weights)
def vgg16_bn(*, weights: Optional[VGG16_BN_Weights] = None, progress: bool = True, **kwargs) -> VGG:
    """VGG-16 with batch normalization."""
    return _vgg("D", True, VGG16_BN_Weights.verify(weights), progress, **kwargs)


@_builder(VGG19_Weights)
def vgg19(*, weights: Optional[VGG19_Weights] = None, progress: bool = True, **kwargs) -> VGG:
    """VGG-19 (configuration E)."""
    return _vgg("E", False, VGG19_Weights.verify(weights), progress, **kwargs)


@_builder(VGG19_BN_Weights)
def vgg19_bn(*, weights: Optional[VGG19_BN_Weights] = None, progress: bool = True, **kwargs) -> VGG:
    """VGG-19 with batch normalization."""
    return _vgg("E", True, VGG19_BN_Weights.verify(weights), progress, **kwargs)
