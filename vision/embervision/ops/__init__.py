"""Vision operators (the parts of `torchvision.ops` the models use so far)."""
from embervision.ops.misc import MLP, Conv2dNormActivation, Conv3dNormActivation, FrozenBatchNorm2d, Permute, SqueezeExcitation
from embervision.ops.stochastic_depth import StochasticDepth, stochastic_depth

__all__ = ["Conv2dNormActivation", "Conv3dNormActivation", "FrozenBatchNorm2d", "MLP", "Permute",
           "SqueezeExcitation", "StochasticDepth", "stochastic_depth"]
