"""Colour v2 transforms: they change images and videos; masks and boxes pass through."""
import numbers

import ember

from ..transforms import ColorJitter as _V1ColorJitter
from ..transforms import _uniform
from . import functional as F
from ._transform import Transform, _RandomApplyTransform, query_chw


class ColorJitter(Transform):
    """Random brightness, contrast, saturation and hue, applied in a random order."""

    def __init__(self, brightness=None, contrast=None, saturation=None, hue=None):
        super().__init__()
        check = _V1ColorJitter._check_input
        self.brightness = check(self, 0 if brightness is None else brightness, "brightness")
        self.contrast = check(self, 0 if contrast is None else contrast, "contrast")
        self.saturation = check(self, 0 if saturation is None else saturation, "saturation")
        self.hue = check(self, 0 if hue is None else hue, "hue", center=0, bound=(-0.5, 0.5),
                         clip_first_on_zero=False)

    def make_params(self, flat_inputs):
        order = ember.randperm(4).tolist()
        ranges = (self.brightness, self.contrast, self.saturation, self.hue)
        factors = [None if r is None else _uniform(r[0], r[1]) for r in ranges]
        return dict(fn_idx=order, brightness_factor=factors[0], contrast_factor=factors[1],
                    saturation_factor=factors[2], hue_factor=factors[3])

    def transform(self, inpt, params):
        adjust = (
            (F.adjust_brightness, params["brightness_factor"]),
            (F.adjust_contrast, params["contrast_factor"]),
            (F.adjust_saturation, params["saturation_factor"]),
            (F.adjust_hue, params["hue_factor"]),
        )
        for idx in params["fn_idx"]:
            functional, factor = adjust[idx]
            if factor is not None:
                inpt = self._call_kernel(functional, inpt, factor)
        return inpt


class Grayscale(Transform):
    """Converts images to greyscale with `num_output_channels` (1 or 3) channels."""

    def __init__(self, num_output_channels=1):
        super().__init__()
        if num_output_channels not in (1, 3):
            raise ValueError("num_output_channels should be either 1 or 3")
        self.num_output_channels = num_output_channels

    def transform(self, inpt, params):
        return self._call_kernel(F.rgb_to_grayscale, inpt, num_output_channels=self.num_output_channels)


class RandomGrayscale(_RandomApplyTransform):
    """Converts images to greyscale with probability `p`, keeping their number of channels."""

    def __init__(self, p=0.1):
        super().__init__(p=p)

    def make_params(self, flat_inputs):
        return dict(num_input_channels=query_chw(flat_inputs)[0])

    def transform(self, inpt, params):
        return self._call_kernel(F.rgb_to_grayscale, inpt, num_output_channels=params["num_input_channels"])


class RandomInvert(_RandomApplyTransform):
    """Inverts images with probability `p`."""

    def transform(self, inpt, params):
        return self._call_kernel(F.invert, inpt)


class RandomPosterize(_RandomApplyTransform):
    """Keeps the top `bits` bits of uint8 images with probability `p`."""

    def __init__(self, bits, p=0.5):
        super().__init__(p=p)
        self.bits = bits

    def transform(self, inpt, params):
        return self._call_kernel(F.posterize, inpt, bits=self.bits)


class RandomSolarize(_RandomApplyTransform):
    """Inverts values at or above `threshold` with probability `p`."""

    def __init__(self, threshold, p=0.5):
        super().__init__(p=p)
        if not isinstance(threshold, numbers.Number):
            raise TypeError(f"threshold should be a number, got {type(threshold).__name__}")
        self.threshold = threshold

    def transform(self, inpt, params):
        return self._call_kernel(F.solarize, inpt, threshold=self.threshold)


class RandomAdjustSharpness(_RandomApplyTransform):
    """Adjusts sharpness by `sharpness_factor` with probability `p`."""

    def __init__(self, sharpness_factor, p=0.5):
        super().__init__(p=p)
        self.sharpness_factor = sharpness_factor

    def transform(self, inpt, params):
        return self._call_kernel(F.adjust_sharpness, inpt, sharpness_factor=self.sharpness_factor)


class RandomAutocontrast(_RandomApplyTransform):
    """Stretches each channel to the full range with probability `p`."""

    def transform(self, inpt, params):
        return self._call_kernel(F.autocontrast, inpt)


class RandomEqualize(_RandomApplyTransform):
    """Equalises each channel's histogram with probability `p`."""

    def transform(self, inpt, params):
        return self._call_kernel(F.equalize, inpt)


class RGB(Transform):
    """Converts images to three channels (greyscale repeated; PIL images to mode RGB)."""

    def transform(self, inpt, params):
        return self._call_kernel(F.grayscale_to_rgb, inpt)


class RandomChannelPermutation(Transform):
    """Shuffles the channels of images and videos."""

    def make_params(self, flat_inputs):
        num_channels, _, _ = query_chw(flat_inputs)
        return dict(permutation=ember.randperm(num_channels).tolist())

    def transform(self, inpt, params):
        return self._call_kernel(F.permute_channels, inpt, params["permutation"])


class RandomPhotometricDistort(Transform):
    """SSD's photometric distortions: brightness, contrast (before or after the rest), saturation, hue
    and a channel shuffle, each applied with probability `p`."""

    def __init__(self, brightness=(0.875, 1.125), contrast=(0.5, 1.5), saturation=(0.5, 1.5), hue=(-0.05, 0.05),
                 p=0.5):
        super().__init__()
        check = _V1ColorJitter._check_input
        self.brightness = check(self, brightness, "brightness")
        self.contrast = check(self, contrast, "contrast")
        self.saturation = check(self, saturation, "saturation")
        self.hue = check(self, hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)
        self.p = p

    def make_params(self, flat_inputs):
        num_channels, _, _ = query_chw(flat_inputs)
        params = {}
        for key, bounds in (("brightness_factor", self.brightness), ("contrast_factor", self.contrast),
                            ("saturation_factor", self.saturation), ("hue_factor", self.hue)):
            applied = float(ember.rand(1).item()) < self.p
            params[key] = _uniform(bounds[0], bounds[1]) if applied and bounds is not None else None
        params["contrast_before"] = float(ember.rand(1).item()) < 0.5
        shuffle = float(ember.rand(1).item()) < self.p
        params["channel_permutation"] = ember.randperm(num_channels).tolist() if shuffle else None
        return params

    def transform(self, inpt, params):
        contrast = params["contrast_factor"]
        if params["brightness_factor"] is not None:
            inpt = self._call_kernel(F.adjust_brightness, inpt, params["brightness_factor"])
        if contrast is not None and params["contrast_before"]:
            inpt = self._call_kernel(F.adjust_contrast, inpt, contrast)
        if params["saturation_factor"] is not None:
            inpt = self._call_kernel(F.adjust_saturation, inpt, params["saturation_factor"])
        if params["hue_factor"] is not None:
            inpt = self._call_kernel(F.adjust_hue, inpt, params["hue_factor"])
        if contrast is not None and not params["contrast_before"]:
            inpt = self._call_kernel(F.adjust_contrast, inpt, contrast)
        if params["channel_permutation"] is not None:
            inpt = self._call_kernel(F.permute_channels, inpt, params["channel_permutation"])
        return inpt
