"""AutoAugment, RandAugment, TrivialAugmentWide and AugMix on ember tensors and PIL images."""
import math
from enum import Enum

import ember
from ember import Tensor, nn

from . import functional as F
from .functional import InterpolationMode

__all__ = ["AutoAugmentPolicy", "AutoAugment", "RandAugment", "TrivialAugmentWide", "AugMix"]


def _apply_op(img, op_name, magnitude, interpolation, fill):
    if op_name == "ShearX":
        # matches the original AutoAugment (shear about the top-left corner, angle atan(magnitude))
        return F.affine(img, angle=0.0, translate=[0, 0], scale=1.0, shear=[math.degrees(math.atan(magnitude)), 0.0],
                        interpolation=interpolation, fill=fill, center=[0, 0])
    if op_name == "ShearY":
        return F.affine(img, angle=0.0, translate=[0, 0], scale=1.0, shear=[0.0, math.degrees(math.atan(magnitude))],
                        interpolation=interpolation, fill=fill, center=[0, 0])
    if op_name == "TranslateX":
        return F.affine(img, angle=0.0, translate=[int(magnitude), 0], scale=1.0, interpolation=interpolation,
                        shear=[0.0, 0.0], fill=fill)
    if op_name == "TranslateY":
        return F.affine(img, angle=0.0, translate=[0, int(magnitude)], scale=1.0, interpolation=interpolation,
                        shear=[0.0, 0.0], fill=fill)
    if op_name == "Rotate":
        return F.rotate(img, magnitude, interpolation=interpolation, fill=fill)
    if op_name == "Brightness":
        return F.adjust_brightness(img, 1.0 + magnitude)
    if op_name == "Color":
        return F.adjust_saturation(img, 1.0 + magnitude)
    if op_name == "Contrast":
        return F.adjust_contrast(img, 1.0 + magnitude)
    if op_name == "Sharpness":
        return F.adjust_sharpness(img, 1.0 + magnitude)
    if op_name == "Posterize":
        return F.posterize(img, int(magnitude))
    if op_name == "Solarize":
        return F.solarize(img, magnitude)
    if op_name == "AutoContrast":
        return F.autocontrast(img)
    if op_name == "Equalize":
        return F.equalize(img)
    if op_name == "Invert":
        return F.invert(img)
    if op_name == "Identity":
        return img
    raise ValueError(f"The provided operator {op_name} is not recognized.")


class AutoAugmentPolicy(Enum):
    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


# The learned sub-policies of "AutoAugment: Learning Augmentation Strategies from Data"
# (Cubuk et al., 2019): pairs of (op, probability, magnitude bin) as "op:p:bin,op:p:bin".
_POLICIES = {
    "imagenet": (
        "Posterize:0.4:8,Rotate:0.6:9 Solarize:0.6:5,AutoContrast:0.6: Equalize:0.8:,Equalize:0.6: Posterize:0.6:7,Posterize:0.6:6 "
        "Equalize:0.4:,Solarize:0.2:4 Equalize:0.4:,Rotate:0.8:8 Solarize:0.6:3,Equalize:0.6: Posterize:0.8:5,Equalize:1.0: "
        "Rotate:0.2:3,Solarize:0.6:8 Equalize:0.6:,Posterize:0.4:6 Rotate:0.8:8,Color:0.4:0 Rotate:0.4:9,Equalize:0.6: "
        "Equalize:0.0:,Equalize:0.8: Invert:0.6:,Equalize:1.0: Color:0.6:4,Contrast:1.0:8 Rotate:0.8:8,Color:1.0:2 "
        "Color:0.8:8,Solarize:0.8:7 Sharpness:0.4:7,Invert:0.6: ShearX:0.6:5,Equalize:1.0: Color:0.4:0,Equalize:0.6: "
        "Equalize:0.4:,Solarize:0.2:4 Solarize:0.6:5,AutoContrast:0.6: Invert:0.6:,Equalize:1.0: Color:0.6:4,Contrast:1.0:8 "
        "Equalize:0.8:,Equalize:0.6:"
    ),
    "cifar10": (
        "Invert:0.1:,Contrast:0.2:6 Rotate:0.7:2,TranslateX:0.3:9 Sharpness:0.8:1,Sharpness:0.9:3 ShearY:0.5:8,TranslateY:0.7:9 "
        "AutoContrast:0.5:,Equalize:0.9: ShearY:0.2:7,Posterize:0.3:7 Color:0.4:3,Brightness:0.6:7 Sharpness:0.3:9,Brightness:0.7:9 "
        "Equalize:0.6:,Equalize:0.5: Contrast:0.6:7,Sharpness:0.6:5 Color:0.7:7,TranslateX:0.5:8 Equalize:0.3:,AutoContrast:0.4: "
        "TranslateY:0.4:3,Sharpness:0.2:6 Brightness:0.9:6,Color:0.2:8 Solarize:0.5:2,Invert:0.0: Equalize:0.2:,AutoContrast:0.6: "
        "Equalize:0.2:,Equalize:0.6: Color:0.9:9,Equalize:0.6: AutoContrast:0.8:,Solarize:0.2:8 Brightness:0.1:3,Color:0.7:0 "
        "Solarize:0.4:5,AutoContrast:0.9: TranslateY:0.9:9,TranslateY:0.7:9 AutoContrast:0.9:,Solarize:0.8:3 Equalize:0.8:,Invert:0.1: "
        "TranslateY:0.7:9,AutoContrast:0.9:"
    ),
    "svhn": (
        "ShearX:0.9:4,Invert:0.2: ShearY:0.9:8,Invert:0.7: Equalize:0.6:,Solarize:0.6:6 Invert:0.9:,Equalize:0.6: "
        "Equalize:0.6:,Rotate:0.9:3 ShearX:0.9:4,AutoContrast:0.8: ShearY:0.9:8,Invert:0.4: ShearY:0.9:5,Solarize:0.2:6 "
        "Invert:0.9:,AutoContrast:0.8: Equalize:0.6:,Rotate:0.9:3 ShearX:0.9:4,Solarize:0.3:3 ShearY:0.8:8,Invert:0.7: "
        "Equalize:0.9:,TranslateY:0.6:6 Invert:0.9:,Equalize:0.6: Contrast:0.3:3,Rotate:0.8:4 Invert:0.8:,TranslateY:0.0:2 "
        "ShearY:0.7:6,Solarize:0.4:8 Invert:0.6:,Rotate:0.8:4 ShearY:0.3:7,TranslateX:0.9:3 ShearX:0.1:6,Invert:0.6: "
        "Solarize:0.7:2,TranslateY:0.6:7 ShearY:0.8:4,Invert:0.8: ShearX:0.7:9,TranslateY:0.8:3 ShearY:0.8:5,AutoContrast:0.7: "
        "ShearX:0.7:2,Invert:0.1:"
    ),
}


def _parse_policy(text):
    def op(s):
        name, p, m = s.split(":")
        return name, float(p), int(m) if m else None
    return [tuple(op(o) for o in pair.split(",")) for pair in text.split()]


def _linspace(a, b, n):
    return ember.linspace(a, b, steps=n).tolist()


def _posterize_bins(top, n, span):
    return (top - ember.round(ember.arange(n) / ((n - 1) / span))).to(ember.int32).tolist()


def _space(num_bins, translate, rotate, shear, enhance, poster_top, poster_span, with_identity,
           with_invert):
    s = {"Identity": (None, False)} if with_identity else {}
    s.update({
        "ShearX": (_linspace(0.0, shear, num_bins), True),
        "ShearY": (_linspace(0.0, shear, num_bins), True),
        "TranslateX": (_linspace(0.0, translate[1], num_bins), True),
        "TranslateY": (_linspace(0.0, translate[0], num_bins), True),
        "Rotate": (_linspace(0.0, rotate, num_bins), True),
    })
    if enhance is not None:
        for k in ("Brightness", "Color", "Contrast", "Sharpness"):
            s[k] = (_linspace(0.0, enhance, num_bins), True)
    s["Posterize"] = (_posterize_bins(poster_top, num_bins, poster_span), False)
    s["Solarize"] = (_linspace(255.0, 0.0, num_bins), False)
    s["AutoContrast"] = (None, False)
    s["Equalize"] = (None, False)
    if with_invert:
        s["Invert"] = (None, False)
    return s


def _fill_for(img, fill):
    channels = F.get_dimensions(img)[0]
    if isinstance(img, Tensor):
        if isinstance(fill, (int, float)):
            return [float(fill)] * channels
        if fill is not None:
            return [float(f) for f in fill]
    return fill


def _randint(high):
    return int(ember.randint(high, (1,)).item())


class AutoAugment(nn.Module):
    """The AutoAugment policies learned on ImageNet, CIFAR10 and SVHN."""

    def __init__(self, policy=AutoAugmentPolicy.IMAGENET, interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__()
        self.policy = policy
        self.interpolation = interpolation
        self.fill = fill
        self.policies = self._get_policies(policy)

    def _get_policies(self, policy):
        if not isinstance(policy, AutoAugmentPolicy) or policy.value not in _POLICIES:
            raise ValueError(f"The provided policy {policy} is not recognized.")
        return _parse_policy(_POLICIES[policy.value])

    def _augmentation_space(self, num_bins, image_size):
        t = (150.0 / 331.0 * image_size[0], 150.0 / 331.0 * image_size[1])
        return _space(num_bins, t, 30.0, 0.3, 0.9, 8, 4, False, True)

    @staticmethod
    def get_params(transform_num):
        policy_id = _randint(transform_num)
        probs = ember.rand((2,))
        signs = ember.randint(2, (2,))
        return policy_id, probs, signs

    def forward(self, img):
        fill = _fill_for(img, self.fill)
        _, height, width = F.get_dimensions(img)
        transform_id, probs, signs = self.get_params(len(self.policies))
        probs, signs = probs.tolist(), signs.tolist()
        op_meta = self._augmentation_space(10, (height, width))
        for i, (op_name, p, magnitude_id) in enumerate(self.policies[transform_id]):
            if probs[i] <= p:
                magnitudes, signed = op_meta[op_name]
                magnitude = float(magnitudes[magnitude_id]) if magnitude_id is not None else 0.0
                if signed and signs[i] == 0:
                    magnitude *= -1.0
                img = _apply_op(img, op_name, magnitude, interpolation=self.interpolation, fill=fill)
        return img

    def __repr__(self):
        return f"{self.__class__.__name__}(policy={self.policy}, fill={self.fill})"


class RandAugment(nn.Module):
    """RandAugment: `num_ops` ops drawn uniformly, each at the fixed `magnitude` bin."""

    def __init__(self, num_ops=2, magnitude=9, num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST,
                 fill=None):
        super().__init__()
        self.num_ops = num_ops
        self.magnitude = magnitude
        self.num_magnitude_bins = num_magnitude_bins
        self.interpolation = interpolation
        self.fill = fill

    def _augmentation_space(self, num_bins, image_size):
        t = (150.0 / 331.0 * image_size[0], 150.0 / 331.0 * image_size[1])
        return _space(num_bins, t, 30.0, 0.3, 0.9, 8, 4, True, False)

    def forward(self, img):
        fill = _fill_for(img, self.fill)
        _, height, width = F.get_dimensions(img)
        op_meta = self._augmentation_space(self.num_magnitude_bins, (height, width))
        names = list(op_meta.keys())
        for _ in range(self.num_ops):
            op_name = names[_randint(len(op_meta))]
            magnitudes, signed = op_meta[op_name]
            magnitude = float(magnitudes[self.magnitude]) if magnitudes is not None else 0.0
            if signed and _randint(2):
                magnitude *= -1.0
            img = _apply_op(img, op_name, magnitude, interpolation=self.interpolation, fill=fill)
        return img

    def __repr__(self):
        return (f"{self.__class__.__name__}(num_ops={self.num_ops}, magnitude={self.magnitude}, "
                f"num_magnitude_bins={self.num_magnitude_bins}, interpolation={self.interpolation}, fill={self.fill})")


class TrivialAugmentWide(nn.Module):
    """TrivialAugment (wide): one op, one magnitude bin, both uniform."""

    def __init__(self, num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__()
        self.num_magnitude_bins = num_magnitude_bins
        self.interpolation = interpolation
        self.fill = fill

    def _augmentation_space(self, num_bins):
        return _space(num_bins, (32.0, 32.0), 135.0, 0.99, 0.99, 8, 6, True, False)

    def forward(self, img):
        fill = _fill_for(img, self.fill)
        op_meta = self._augmentation_space(self.num_magnitude_bins)
        op_name = list(op_meta.keys())[_randint(len(op_meta))]
        magnitudes, signed = op_meta[op_name]
        magnitude = float(magnitudes[_randint(len(magnitudes))]) if magnitudes is not None else 0.0
        if signed and _randint(2):
            magnitude *= -1.0
        return _apply_op(img, op_name, magnitude, interpolation=self.interpolation, fill=fill)

    def __repr__(self):
        return (f"{self.__class__.__name__}(num_magnitude_bins={self.num_magnitude_bins}, "
                f"interpolation={self.interpolation}, fill={self.fill})")


def _sample_gamma(alpha):
    """One Gamma(alpha, 1) draw from ember's generator (Marsaglia-Tsang; boosted for alpha < 1)."""
    if alpha < 1.0:
        return _sample_gamma(alpha + 1.0) * float(ember.rand(1).item()) ** (1.0 / alpha)
    d = alpha - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x = float(ember.randn(1).item())
        v = (1.0 + c * x) ** 3
        if v <= 0:
            continue
        u = float(ember.rand(1).item())
        if math.log(max(u, 1e-300)) < 0.5 * x * x + d - d * v + d * math.log(v):
            return d * v


def _sample_dirichlet(alphas, rows):
    out = []
    for _ in range(rows):
        g = [_sample_gamma(a) for a in alphas]
        total = sum(g)
        out.append([x / total for x in g])
    return ember.tensor(out, dtype=ember.float32)


class AugMix(nn.Module):
    """AugMix: a Dirichlet-weighted mix of `mixture_width` augmentation chains, blended with the image."""

    def __init__(self, severity=3, mixture_width=3, chain_depth=-1, alpha=1.0, all_ops=True,
                 interpolation=InterpolationMode.BILINEAR, fill=None):
        super().__init__()
        self._PARAMETER_MAX = 10
        if not 1 <= severity <= self._PARAMETER_MAX:
            raise ValueError(f"The severity must be between [1, {self._PARAMETER_MAX}]. Got {severity} instead.")
        self.severity = severity
        self.mixture_width = mixture_width
        self.chain_depth = chain_depth
        self.alpha = alpha
        self.all_ops = all_ops
        self.interpolation = interpolation
        self.fill = fill

    def _augmentation_space(self, num_bins, image_size):
        t = (image_size[0] / 3.0, image_size[1] / 3.0)
        return _space(num_bins, t, 30.0, 0.3, 0.9 if self.all_ops else None, 4, 4, False, False)

    def forward(self, orig_img):
        fill = _fill_for(orig_img, self.fill)
        _, height, width = F.get_dimensions(orig_img)
        img = orig_img if isinstance(orig_img, Tensor) else F.pil_to_tensor(orig_img)
        op_meta = self._augmentation_space(self._PARAMETER_MAX, (height, width))
        names = list(op_meta.keys())
        orig_dims = list(img.shape)
        batch = img.reshape([1] * max(4 - img.ndim, 0) + orig_dims)
        n = batch.shape[0]
        batch_dims = [n] + [1] * (batch.ndim - 1)
        m = _sample_dirichlet([self.alpha, self.alpha], n)
        combined = _sample_dirichlet([self.alpha] * self.mixture_width, n) * m[:, 1].reshape(n, -1)
        mix = m[:, 0].reshape(batch_dims) * batch
        for i in range(self.mixture_width):
            aug = batch
            depth = self.chain_depth if self.chain_depth > 0 else int(ember.randint(1, 4, (1,)).item())
            for _ in range(depth):
                op_name = names[_randint(len(op_meta))]
                magnitudes, signed = op_meta[op_name]
                magnitude = float(magnitudes[_randint(self.severity)]) if magnitudes is not None else 0.0
                if signed and _randint(2):
                    magnitude *= -1.0
                aug = _apply_op(aug, op_name, magnitude, interpolation=self.interpolation, fill=fill)
            mix = mix + combined[:, i].reshape(batch_dims) * aug
        mix = mix.reshape(orig_dims).to(img.dtype)
        if not isinstance(orig_img, Tensor):
            return F.to_pil_image(mix)
        return mix

    def __repr__(self):
        return (f"{self.__class__.__name__}(severity={self.severity}, mixture_width={self.mixture_width}, "
                f"chain_depth={self.chain_depth}, alpha={self.alpha}, all_ops={self.all_ops}, "
                f"interpolation={self.interpolation}, fill={self.fill})")
