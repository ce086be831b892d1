"""RandomErasing, and the batch transforms MixUp and CutMix."""
import math
import numbers
import warnings
from collections.abc import Sequence

import ember
from ember import Tensor

from ... import tv_tensors
from ...tv_tensors import _pure
from ..autoaugment import _sample_gamma
from ..transforms import _randint, _uniform
from . import functional as F
from ._misc import _parse_labels_getter
from ._transform import Transform, _RandomApplyTransform, has_any, query_chw, query_size, tree_flatten, tree_unflatten
from .functional._utils import PILImage, is_pure_tensor


class RandomErasing(_RandomApplyTransform):
    """Erases a random box (area fraction `scale`, aspect `ratio`) of images and videos with probability
    `p`; `value` is a number, one per channel, or "random" (normal noise). Boxes and masks pass through."""

    def __init__(self, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0.0, inplace=False):
        super().__init__(p=p)
        if not isinstance(value, (numbers.Number, str, tuple, list)):
            raise TypeError("Argument value should be either a number or str or a sequence")
        if isinstance(value, str) and value != "random":
            raise ValueError("If value is str, it should be 'random'")
        if not isinstance(scale, Sequence) or not isinstance(ratio, Sequence):
            raise TypeError("Scale and ratio should be sequences")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            warnings.warn("Scale and ratio should be of kind (min, max)")
        if scale[0] < 0 or scale[1] > 1:
            raise ValueError("Scale should be between 0 and 1")
        self.scale = scale
        self.ratio = ratio
        self.value = value
        self.inplace = inplace
        if isinstance(value, numbers.Number):
            self._fill = [float(value)]
        elif isinstance(value, str):
            self._fill = None
        else:
            self._fill = [float(v) for v in value]

    def _call_kernel(self, functional, inpt, *args, **kwargs):
        if isinstance(inpt, (tv_tensors.BoundingBoxes, tv_tensors.Mask)):
            warnings.warn(f"{type(self).__name__}() is currently passing through inputs of type "
                          f"tv_tensors.{type(inpt).__name__}. This will likely change in the future.")
        return super()._call_kernel(functional, inpt, *args, **kwargs)

    def make_params(self, flat_inputs):
        img_c, img_h, img_w = query_chw(flat_inputs)
        if self._fill is not None and len(self._fill) not in (1, img_c):
            raise ValueError(
                f"If value is a sequence, it should have either a single value or {img_c} (number of inpt channels)")
        area = img_h * img_w
        log_ratio = (math.log(self.ratio[0]), math.log(self.ratio[1]))
        for _ in range(10):
            erase_area = area * _uniform(self.scale[0], self.scale[1])
            aspect_ratio = math.exp(_uniform(log_ratio[0], log_ratio[1]))
            h = int(round(math.sqrt(erase_area * aspect_ratio)))
            w = int(round(math.sqrt(erase_area / aspect_ratio)))
            if not (h < img_h and w < img_w):
                continue
            if self._fill is None:
                v = ember.randn(img_c, h, w, dtype=ember.float32)
            else:
                v = ember.tensor(self._fill)[:, None, None]
            return dict(i=_randint(0, img_h - h + 1), j=_randint(0, img_w - w + 1), h=h, w=w, v=v)
        return dict(i=0, j=0, h=img_h, w=img_w, v=None)

    def transform(self, inpt, params):
        if params["v"] is None:
            return inpt
        if isinstance(inpt, Tensor):
            params = dict(params, v=params["v"].to(inpt.dtype))
        return self._call_kernel(F.erase, inpt, **params, inplace=self.inplace)


def _sample_beta(alpha):
    """One Beta(alpha, alpha) draw."""
    x, y = _sample_gamma(alpha), _sample_gamma(alpha)
    return x / (x + y)


class _BaseMixUpCutMix(Transform):
    def __init__(self, *, alpha=1.0, num_classes=None, labels_getter="default"):
        super().__init__()
        if not alpha > 0:
            raise ValueError(f"alpha must be positive, got {alpha}")
        if num_classes is not None and num_classes < 1:
            raise ValueError(f"num_classes must be greater than 0, got {num_classes}")
        self.alpha = float(alpha)
        self.num_classes = num_classes
        self._labels_getter = _parse_labels_getter(labels_getter)

    def forward(self, *inputs):
        sample = inputs if len(inputs) > 1 else inputs[0]
        flat_inputs, spec = tree_flatten(sample)
        if has_any(flat_inputs, PILImage, tv_tensors.BoundingBoxes, tv_tensors.Mask):
            raise ValueError(f"{type(self).__name__}() does not support PIL images, bounding boxes and masks.")
        labels = self._labels_getter(sample)
        if not isinstance(labels, Tensor):
            raise ValueError(f"The labels must be a ember.Tensor, but got {type(labels)} instead.")
        if labels.ndim not in (1, 2):
            raise ValueError(
                "labels should be index based with shape (batch_size,) or probability based with shape "
                f"(batch_size, num_classes), but got a tensor of shape {tuple(labels.shape)} instead.")
        if labels.ndim == 1 and self.num_classes is None:
            raise ValueError("num_classes must be passed when the labels are class indices (shape (batch_size,)).")
        if labels.ndim == 2 and self.num_classes is not None and labels.shape[-1] != self.num_classes:
            raise ValueError(f"When passing 2D labels, the number of elements in last dimension must match "
                             f"num_classes: {labels.shape[-1]} != {self.num_classes}. You can Leave num_classes to "
                             "None.")
        needs = self._needs_transform_list(flat_inputs)
        params = dict(labels=labels, batch_size=labels.shape[0],
                      **self.make_params([inpt for inpt, need in zip(flat_inputs, needs) if need]))
        # The labels come after the image, so the plain-tensor rule left them out; they are mixed too.
        needs = [need or inpt is labels for inpt, need in zip(flat_inputs, needs)]
        flat_outputs = [self.transform(inpt, params) if need else inpt for inpt, need in zip(flat_inputs, needs)]
        return tree_unflatten(flat_outputs, spec)

    def _check_image_or_video(self, inpt, batch_size):
        expected_ndim = 5 if isinstance(inpt, tv_tensors.Video) else 4
        if inpt.ndim != expected_ndim:
            raise ValueError("The transform expects a batched input")
        if inpt.shape[0] != batch_size:
            raise ValueError(f"The batch size of the image or video does not match the batch size of the labels: "
                             f"{inpt.shape[0]} != {batch_size}.")

    def _mix_labels(self, labels, lam):
        if labels.ndim == 1:
            labels = ember.nn.functional.one_hot(labels, num_classes=self.num_classes)
        if not labels.is_floating_point():
            labels = labels.to(ember.float32)
        return labels.roll(1, 0) * (1.0 - lam) + labels * lam

    def _is_image_or_video(self, inpt):
        return isinstance(inpt, (tv_tensors.Image, tv_tensors.Video)) or is_pure_tensor(inpt)


class MixUp(_BaseMixUpCutMix):
    """Blends each sample of a batch with the previous one (`lam ~ Beta(alpha, alpha)`), labels alike."""

    def make_params(self, flat_inputs):
        return dict(lam=_sample_beta(self.alpha))

    def transform(self, inpt, params):
        lam = params["lam"]
        if inpt is params["labels"]:
            return self._mix_labels(inpt, lam)
        if not self._is_image_or_video(inpt):
            return inpt
        self._check_image_or_video(inpt, params["batch_size"])
        plain = _pure(inpt)
        output = (plain.roll(1, 0) * (1.0 - lam) + plain * lam).to(plain.dtype)
        return tv_tensors.wrap(output, like=inpt) if isinstance(inpt, tv_tensors.TVTensor) else output


class CutMix(_BaseMixUpCutMix):
    """Pastes a random box of the previous sample of the batch into each sample; labels are mixed by the
    pasted area."""

    def make_params(self, flat_inputs):
        lam = _sample_beta(self.alpha)
        height, width = query_size(flat_inputs)
        r_x, r_y = _randint(0, width), _randint(0, height)
        r = 0.5 * math.sqrt(1.0 - lam)
        r_w_half, r_h_half = int(r * width), int(r * height)
        x1, y1 = max(r_x - r_w_half, 0), max(r_y - r_h_half, 0)
        x2, y2 = min(r_x + r_w_half, width), min(r_y + r_h_half, height)
        lam_adjusted = float(1.0 - (x2 - x1) * (y2 - y1) / (width * height))
        return dict(box=(x1, y1, x2, y2), lam_adjusted=lam_adjusted)

    def transform(self, inpt, params):
        if inpt is params["labels"]:
            return self._mix_labels(inpt, params["lam_adjusted"])
        if not self._is_image_or_video(inpt):
            return inpt
        self._check_image_or_video(inpt, params["batch_size"])
        x1, y1, x2, y2 = params["box"]
        plain = _pure(inpt)
        output = plain.clone()
        output[..., y1:y2, x1:x2] = plain.roll(1, 0)[..., y1:y2, x1:x2]
        return tv_tensors.wrap(output, like=inpt) if isinstance(inpt, tv_tensors.TVTensor) else output


class JPEG(Transform):
    """Round-trips uint8 images through JPEG compression at `quality`, or at a quality drawn from a
    (min, max) range."""

    def __init__(self, quality):
        super().__init__()
        if isinstance(quality, int):
            quality = [quality, quality]
        elif not (isinstance(quality, Sequence) and len(quality) == 2 and all(isinstance(q, int) for q in quality)):
            raise TypeError(f"quality can either be an integer or a sequence of two integers, got {quality!r}")
        if not 1 <= quality[0] <= quality[1] <= 100:
            raise ValueError(f"quality must be an integer from 1 to 100, got quality={quality}")
        self.quality = quality

    def make_params(self, flat_inputs):
        return dict(quality=_randint(self.quality[0], self.quality[1] + 1))

    def transform(self, inpt, params):
        return self._call_kernel(F.jpeg, inpt, quality=params["quality"])
