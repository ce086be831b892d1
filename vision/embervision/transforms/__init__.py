"""`torchvision.transforms` (v1) on ember tensors and PIL images."""
from . import functional
from .functional import InterpolationMode
