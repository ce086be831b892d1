"""The inference transforms attached to pretrained weights (`Weights.transforms`), as TorchVision's.

Private API in TorchVision too: reach them through `weights.transforms()`.
"""
import ember
from ember import Tensor, nn

from . import functional as F
from .functional import InterpolationMode

__all__ = ["ObjectDetection", "ImageClassification", "VideoClassification", "SemanticSegmentation", "OpticalFlow"]

_ACCEPTS = "Accepts ``PIL.Image``, batched ``(B, C, H, W)`` and single ``(C, H, W)`` image ``torch.Tensor`` objects. "


def _fields(obj, names):
    body = "".join(f"\n    {name}={getattr(obj, name)}" for name in names)
    return f"{obj.__class__.__name__}({body}\n)"


class ObjectDetection(nn.Module):
    """PIL image or uint8 tensor → float tensor in [0, 1]."""

    def forward(self, img):
        if not isinstance(img, Tensor):
            img = F.pil_to_tensor(img)
        return F.convert_image_dtype(img, ember.float32)

    def __repr__(self):
        return self.__class__.__name__ + "()"

    def describe(self):
        return _ACCEPTS + "The images are rescaled to ``[0.0, 1.0]``."


class ImageClassification(nn.Module):
    """Resize the smaller edge to `resize_size`, centre-crop `crop_size`, rescale to [0, 1], normalise."""

    def __init__(self, *, crop_size, resize_size=256, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225),
                 interpolation=InterpolationMode.BILINEAR, antialias=True):
        super().__init__()
        self.crop_size = [crop_size]
        self.resize_size = [resize_size]
        self.mean = list(mean)
        self.std = list(std)
        self.interpolation = interpolation
        self.antialias = antialias

    def forward(self, img):
        img = F.resize(img, self.resize_size, interpolation=self.interpolation, antialias=self.antialias)
        img = F.center_crop(img, self.crop_size)
        if not isinstance(img, Tensor):
            img = F.pil_to_tensor(img)
        img = F.convert_image_dtype(img, ember.float32)
        return F.normalize(img, mean=self.mean, std=self.std)

    def __repr__(self):
        return _fields(self, ["crop_size", "resize_size", "mean", "std", "interpolation"])

    def describe(self):
        return (
            _ACCEPTS
            + f"The images are resized to ``resize_size={self.resize_size}`` using ``interpolation={self.interpolation}``, "
            f"followed by a central crop of ``crop_size={self.crop_size}``. Finally the values are first rescaled to "
            f"``[0.0, 1.0]`` and then normalized using ``mean={self.mean}`` and ``std={self.std}``."
        )


class VideoClassification(nn.Module):
    """Frames `(..., T, C, H, W)` resized (no antialias, as the published models were trained),
    centre-cropped, rescaled, normalised, and returned as `(..., C, T, H, W)`."""

    def __init__(self, *, crop_size, resize_size, mean=(0.43216, 0.394666, 0.37645),
                 std=(0.22803, 0.22145, 0.216989), interpolation=InterpolationMode.BILINEAR):
        super().__init__()
        self.crop_size = list(crop_size)
        self.resize_size = list(resize_size)
        self.mean = list(mean)
        self.std = list(std)
        self.interpolation = interpolation

    def forward(self, vid):
        squeeze = vid.ndim < 5
        if squeeze:
            vid = vid.unsqueeze(dim=0)
        n, t, c, h, w = vid.shape
        vid = vid.reshape(-1, c, h, w)
        vid = F.resize(vid, self.resize_size, interpolation=self.interpolation, antialias=False)
        vid = F.center_crop(vid, self.crop_size)
        vid = F.convert_image_dtype(vid, ember.float32)
        vid = F.normalize(vid, mean=self.mean, std=self.std)
        ch, cw = self.crop_size
        vid = vid.reshape(n, t, c, ch, cw).permute(0, 2, 1, 3, 4)
        if squeeze:
            vid = vid.squeeze(dim=0)
        return vid

    def __repr__(self):
        return _fields(self, ["crop_size", "resize_size", "mean", "std", "interpolation"])

    def describe(self):
        return (
            "Accepts batched ``(B, T, C, H, W)`` and single ``(T, C, H, W)`` video frame ``torch.Tensor`` objects. "
            f"The frames are resized to ``resize_size={self.resize_size}`` using ``interpolation={self.interpolation}``, "
            f"followed by a central crop of ``crop_size={self.crop_size}``. Finally the values are first rescaled to "
            f"``[0.0, 1.0]`` and then normalized using ``mean={self.mean}`` and ``std={self.std}``. Finally the output "
            "dimensions are permuted to ``(..., C, T, H, W)`` tensors."
        )


class SemanticSegmentation(nn.Module):
    """Optional resize of the smaller edge, then rescale to [0, 1] and normalise."""

    def __init__(self, *, resize_size, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225),
                 interpolation=InterpolationMode.BILINEAR, antialias=True):
        super().__init__()
        self.resize_size = [resize_size] if resize_size is not None else None
        self.mean = list(mean)
        self.std = list(std)
        self.interpolation = interpolation
        self.antialias = antialias

    def forward(self, img):
        if isinstance(self.resize_size, list):
            img = F.resize(img, self.resize_size, interpolation=self.interpolation, antialias=self.antialias)
        if not isinstance(img, Tensor):
            img = F.pil_to_tensor(img)
        img = F.convert_image_dtype(img, ember.float32)
        return F.normalize(img, mean=self.mean, std=self.std)

    def __repr__(self):
        return _fields(self, ["resize_size", "mean", "std", "interpolation"])

    def describe(self):
        return (
            _ACCEPTS
            + f"The images are resized to ``resize_size={self.resize_size}`` using ``interpolation={self.interpolation}``. "
            f"Finally the values are first rescaled to ``[0.0, 1.0]`` and then normalized using ``mean={self.mean}`` and "
            f"``std={self.std}``."
        )


class OpticalFlow(nn.Module):
    """A pair of images → float tensors in [-1, 1]."""

    def forward(self, img1, img2):
        out = []
        for img in (img1, img2):
            if not isinstance(img, Tensor):
                img = F.pil_to_tensor(img)
            img = F.convert_image_dtype(img, ember.float32)
            img = F.normalize(img, mean=[0.5, 0.5, 0.5], std=[0.5, 0.5, 0.5])
            out.append(img.contiguous())
        return tuple(out)

    def __repr__(self):
        return self.__class__.__name__ + "()"

    def describe(self):
        return _ACCEPTS + "The images are rescaled to ``[-1.0, 1.0]``."
