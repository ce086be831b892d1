"""`torchvision.transforms.v2`: transforms that take whole samples (images, videos, masks, bounding
boxes, labels, in any nesting of tuples, lists and dicts) and move their parts together.

Inputs: `embervision.tv_tensors` tell the transforms what a tensor holds; a plain tensor is the
image (only the first one, and only when no Image/Video/PIL image is present); PIL images work
where TorchVision's do; anything else passes through. See `Transform` for writing your own.
"""
from ..autoaugment import AutoAugmentPolicy
from ..functional import InterpolationMode
from . import functional
from ._augment import JPEG, CutMix, MixUp, RandomErasing
from ._auto_augment import AugMix, AutoAugment, RandAugment, TrivialAugmentWide
from ._color import (
    RGB, ColorJitter, Grayscale, RandomAdjustSharpness, RandomAutocontrast, RandomChannelPermutation, RandomEqualize,
    RandomGrayscale, RandomInvert, RandomPhotometricDistort, RandomPosterize, RandomSolarize,
)
from ._container import Compose, RandomApply, RandomChoice, RandomOrder
from ._geometry import (
    CenterCrop, ElasticTransform, FiveCrop, Pad, RandomAffine, RandomCrop, RandomHorizontalFlip, RandomIoUCrop,
    RandomPerspective, RandomResize, RandomResizedCrop, RandomRotation, RandomShortestSize, RandomVerticalFlip,
    RandomZoomOut, Resize, ScaleJitter, TenCrop,
)
from ._misc import (
    ClampBoundingBoxes, ConvertBoundingBoxFormat, ConvertImageDtype, GaussianBlur, GaussianNoise, Identity, Lambda,
    LinearTransformation, Normalize, PILToTensor, SanitizeBoundingBoxes, ToDtype, ToImage, ToPILImage, ToPureTensor,
    ToTensor, UniformTemporalSubsample,
)
from ._transform import Transform

# TorchVision v2 transforms not built here (vision/README.md lists them).
_MISSING = {"ClampKeyPoints", "SanitizeKeyPoints"}


def __getattr__(name):
    if name in _MISSING:
        raise NotImplementedError(f"embervision.transforms.v2.{name} is not implemented yet (see vision/README.md)")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AugMix", "AutoAugment", "AutoAugmentPolicy", "CenterCrop", "ClampBoundingBoxes", "ColorJitter", "Compose",
    "ConvertBoundingBoxFormat", "ConvertImageDtype", "CutMix", "ElasticTransform", "FiveCrop", "GaussianBlur",
    "GaussianNoise", "Grayscale", "Identity", "InterpolationMode", "JPEG", "Lambda", "LinearTransformation",
    "MixUp", "Normalize", "PILToTensor", "Pad", "RGB", "RandAugment", "RandomAdjustSharpness", "RandomAffine",
    "RandomApply", "RandomAutocontrast", "RandomChannelPermutation", "RandomChoice", "RandomCrop", "RandomEqualize",
    "RandomErasing", "RandomGrayscale", "RandomHorizontalFlip", "RandomInvert", "RandomIoUCrop", "RandomOrder",
    "RandomPerspective", "RandomPhotometricDistort", "RandomPosterize", "RandomResize", "RandomResizedCrop",
    "RandomRotation", "RandomShortestSize", "RandomSolarize", "RandomVerticalFlip", "RandomZoomOut", "Resize",
    "SanitizeBoundingBoxes", "ScaleJitter", "TenCrop", "ToDtype", "ToImage", "ToPILImage", "ToPureTensor",
    "ToTensor", "Transform", "TrivialAugmentWide", "UniformTemporalSubsample", "functional",
]
