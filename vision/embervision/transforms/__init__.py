"""`torchvision.transforms` (v1) on ember tensors and PIL images."""
from . import functional
from .autoaugment import AugMix, AutoAugment, AutoAugmentPolicy, RandAugment, TrivialAugmentWide
from .functional import InterpolationMode
from .transforms import *  # noqa: F401,F403
from .transforms import __all__ as _all

__all__ = list(_all) + ["AugMix", "AutoAugment", "AutoAugmentPolicy", "RandAugment", "TrivialAugmentWide", "functional"]
