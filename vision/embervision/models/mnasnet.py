"""MNASNet ("MnasNet: Platform-Aware Neural Architecture Search for Mobile", Tan et al.)."""
import warnings
from typing import Optional

from ember import nn

from embervision.models._api import _weights_enum
from embervision.models._utils import _builder, _check_classes

__all__ = ["MNASNet", "MNASNet0_5_Weights", "MNASNet0_75_Weights", "MNASNet1_0_Weights", "MNASNet1_3_Weights",
           "mnasnet0_5", "mnasnet0_75", "mnasnet1_0", "mnasnet1_3"]

# Paper suggests 0.9997 momentum, for TensorFlow; the PyTorch-style equivalent is 1 - that.
_BN_MOMENTUM = 1 - 0.9997


class _InvertedResidual(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, stride, expansion_factor, bn_momentum=0.1):
        super().__init__()
        if stride not in [1, 2]:
            raise ValueError(f"stride should be 1 or 2 instead of {stride}")
        if kernel_size not in [3, 5]:
            raise ValueError(f"kernel_size should be 3 or 5 instead of {kernel_size}")
        mid_ch = in_ch * expansion_factor
        self.apply_residual = in_ch == out_ch and stride == 1
        self.layers = nn.Sequential(
            nn.Conv2d(in_ch, mid_ch, 1, bias=False), nn.BatchNorm2d(mid_ch, momentum=bn_momentum),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid_ch, mid_ch, kernel_size, padding=kernel_size // 2, stride=stride, groups=mid_ch,
                      bias=False),
            nn.BatchNorm2d(mid_ch, momentum=bn_momentum), nn.ReLU(inplace=True),
            nn.Conv2d(mid_ch, out_ch, 1, bias=False), nn.BatchNorm2d(out_ch, momentum=bn_momentum),
        )

    def forward(self, input):
        return self.layers(input) + input if self.apply_residual else self.layers(input)


def _stack(in_ch, out_ch, kernel_size, stride, exp_factor, repeats, bn_momentum):
    first = _InvertedResidual(in_ch, out_ch, kernel_size, stride, exp_factor, bn_momentum=bn_momentum)
    rest = [_InvertedResidual(out_ch, out_ch, kernel_size, 1, exp_factor, bn_momentum=bn_momentum)
            for _ in range(1, repeats)]
    return nn.Sequential(first, *rest)


def _round_to_multiple_of(val, divisor, round_up_bias=0.9):
    new_val = max(divisor, int(val + divisor / 2) // divisor * divisor)
    return new_val if new_val >= round_up_bias * val else new_val + divisor


def _get_depths(alpha):
    return [_round_to_multiple_of(depth * alpha, 8) for depth in [32, 16, 24, 40, 80, 96, 192, 320]]


class MNASNet(nn.Module):
    _version = 2

    def __init__(self, alpha, num_classes=1000, dropout=0.2):
        super().__init__()
        if alpha <= 0.0:
            raise ValueError(f"alpha should be greater than 0.0 instead of {alpha}")
        self.alpha = alpha
        self.num_classes = num_classes
        d = _get_depths(alpha)
        m = _BN_MOMENTUM
        layers = [
            nn.Conv2d(3, d[0], 3, padding=1, stride=2, bias=False), nn.BatchNorm2d(d[0], momentum=m),
            nn.ReLU(inplace=True),
            nn.Conv2d(d[0], d[0], 3, padding=1, stride=1, groups=d[0], bias=False), nn.BatchNorm2d(d[0], momentum=m),
            nn.ReLU(inplace=True),
            nn.Conv2d(d[0], d[1], 1, padding=0, stride=1, bias=False), nn.BatchNorm2d(d[1], momentum=m),
            _stack(d[1], d[2], 3, 2, 3, 3, m), _stack(d[2], d[3], 5, 2, 3, 3, m), _stack(d[3], d[4], 5, 2, 6, 3, m),
            _stack(d[4], d[5], 3, 1, 6, 2, m), _stack(d[5], d[6], 5, 2, 6, 4, m), _stack(d[6], d[7], 3, 1, 6, 1, m),
            nn.Conv2d(d[7], 1280, 1, padding=0, stride=1, bias=False), nn.BatchNorm2d(1280, momentum=m),
            nn.ReLU(inplace=True),
        ]
        self.layers = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout, inplace=True), nn.Linear(1280, num_classes))
        for mod in self.modules():
            if isinstance(mod, nn.Conv2d):
                nn.init.kaiming_normal_(mod.weight, mode="fan_out", nonlinearity="relu")
                if mod.bias is not None:
                    nn.init.zeros_(mod.bias)
            elif isinstance(mod, nn.BatchNorm2d):
                nn.init.ones_(mod.weight)
                nn.init.zeros_(mod.bias)
            elif isinstance(mod, nn.Linear):
                nn.init.kaiming_uniform_(mod.weight, mode="fan_out", nonlinearity="sigmoid")
                nn.init.zeros_(mod.bias)

    def forward(self, x):
        x = self.layers(x)
        return self.classifier(x.mean([2, 3]))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        # Version 1 checkpoints had a fixed-width stem (32/16 channels) whatever alpha was: the
        # model is rebuilt so before loading them. (A state dict without metadata counts as
        # version 2, where TorchVision raises.)
        version = local_metadata.get("version", None)
        if version not in (None, 1, 2):
            raise ValueError(f"version should be set to 1 or 2 instead of {version}")
        if version == 1 and not self.alpha == 1.0:
            d = _get_depths(self.alpha)
            m = _BN_MOMENTUM
            v1_stem = [
                nn.Conv2d(3, 32, 3, padding=1, stride=2, bias=False), nn.BatchNorm2d(32, momentum=m),
                nn.ReLU(inplace=True),
                nn.Conv2d(32, 32, 3, padding=1, stride=1, groups=32, bias=False), nn.BatchNorm2d(32, momentum=m),
                nn.ReLU(inplace=True),
                nn.Conv2d(32, 16, 1, padding=0, stride=1, bias=False), nn.BatchNorm2d(16, momentum=m),
                _stack(16, d[2], 3, 2, 3, 3, m),
            ]
            for idx, layer in enumerate(v1_stem):
                self.layers[idx] = layer
            self._version = 1
            warnings.warn(
                "A new version of MNASNet model has been implemented. Your checkpoint was saved using the previous "
                "version. This checkpoint will load and work as before, but you may want to upgrade by training a "
                "newer model or transfer learning from an updated ImageNet checkpoint.",
                UserWarning,
            )
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)


def _mnasnet(alpha, weights, progress, **kwargs):
    _check_classes(kwargs, weights)
    model = MNASNet(alpha, **kwargs)
    if weights:
        model.load_state_dict(weights.get_state_dict(progress=progress))
    return model


MNASNet0_5_Weights = _weights_enum("MNASNet0_5_Weights", __name__)
MNASNet0_75_Weights = _weights_enum("MNASNet0_75_Weights", __name__)
MNASNet1_0_Weights = _weights_enum("MNASNet1_0_Weights", __name__)
MNASNet1_3_Weights = _weights_enum("MNASNet1_3_Weights", __name__)


@_builder(MNASNet0_5_Weights)
def mnasnet0_5(*, weights: Optional[MNASNet0_5_Weights] = None, progress: bool = True, **kwargs) -> MNASNet:
    """MNASNet with depth multiplier 0.5."""
    return _mnasnet(0.5, MNASNet0_5_Weights.verify(weights), progress, **kwargs)


@_builder(MNASNet0_75_Weights)
def mnasnet0_75(*, weights: Optional[MNASNet0_75_Weights] = None, progress: bool = True, **kwargs) -> MNASNet:
    """MNASNet with depth multiplier 0.75."""
    return _mnasnet(0.75, MNASNet0_75_Weights.verify(weights), progress, **kwargs)


@_builder(MNASNet1_0_Weights)
def mnasnet1_0(*, weights: Optional[MNASNet1_0_Weights] = None, progress: bool = True, **kwargs) -> MNASNet:
    """MNASNet with depth multiplier 1.0."""
    return _mnasnet(1.0, MNASNet1_0_Weights.verify(weights), progress, **kwargs)


@_builder(MNASNet1_3_Weights)
def mnasnet1_3(*, weights: Optional[MNASNet1_3_Weights] = None, progress: bool = True, **kwargs) -> MNASNet:
    """MNASNet with depth multiplier 1.3."""
    return _mnasnet(1.3, MNASNet1_3_Weights.verify(weights), progress, **kwargs)
