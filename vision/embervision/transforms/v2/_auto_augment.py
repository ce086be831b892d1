"""AutoAugment, RandAugment, TrivialAugmentWide and AugMix for v2 samples: the v1 policies applied to
the sample's one image or video; other items pass through, boxes and masks are refused (as in
TorchVision, whose policies have no box-aware ops)."""
from ... import tv_tensors
from ...tv_tensors import TVTensor, _pure
from .. import autoaugment as A1
from ..autoaugment import AutoAugmentPolicy
from ..functional import InterpolationMode
from ._geometry import _check_interpolation
from ._transform import Transform, _get_fill, _is_image_like, _setup_fill_arg, tree_flatten, tree_unflatten


class _AutoAugmentBase(Transform):
    _v1_cls = None

    def __init__(self, interpolation, fill):
        super().__init__()
        self.interpolation = _check_interpolation(interpolation)
        self.fill = fill
        self._fill = _setup_fill_arg(fill)

    def _v1_kwargs(self):
        """The policy's own arguments for its v1 class."""
        raise NotImplementedError

    def forward(self, *inputs):
        flat_inputs, spec = tree_flatten(inputs if len(inputs) > 1 else inputs[0])
        idx = self._image_or_video_index(flat_inputs)
        inpt = flat_inputs[idx]
        policy = self._v1_cls(**self._v1_kwargs(), interpolation=self.interpolation,
                              fill=_get_fill(self._fill, type(inpt)))
        output = policy(_pure(inpt))
        flat_inputs[idx] = tv_tensors.wrap(output, like=inpt) if isinstance(inpt, TVTensor) else output
        return tree_unflatten(flat_inputs, spec)

    def _image_or_video_index(self, flat_inputs):
        found = []
        for idx, (inpt, need) in enumerate(zip(flat_inputs, self._needs_transform_list(flat_inputs))):
            if need and _is_image_like(inpt):
                found.append(idx)
            elif isinstance(inpt, (tv_tensors.BoundingBoxes, tv_tensors.Mask)):
                raise TypeError(f"Inputs of type {type(inpt).__name__} are not supported by {type(self).__name__}()")
        if not found:
            raise TypeError("Found no image in the sample.")
        if len(found) > 1:
            raise TypeError("Auto augment transformations are only properly defined for a single image or video, "
                            f"but found {len(found)}.")
        return found[0]


class AutoAugment(_AutoAugmentBase):
    """The AutoAugment policies learned on ImageNet, CIFAR10 and SVHN."""

    _v1_cls = A1.AutoAugment

    def __init__(self, policy=AutoAugmentPolicy.IMAGENET, interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__(interpolation, fill)
        A1.AutoAugment(policy)  # validates the policy
        self.policy = policy

    def _v1_kwargs(self):
        return dict(policy=self.policy)


class RandAugment(_AutoAugmentBase):
    """`num_ops` ops drawn uniformly, each at the fixed `magnitude` bin of `num_magnitude_bins`."""

    _v1_cls = A1.RandAugment

    def __init__(self, num_ops=2, magnitude=9, num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST,
                 fill=None):
        super().__init__(interpolation, fill)
        self.num_ops = num_ops
        self.magnitude = magnitude
        self.num_magnitude_bins = num_magnitude_bins

    def _v1_kwargs(self):
        return dict(num_ops=self.num_ops, magnitude=self.magnitude, num_magnitude_bins=self.num_magnitude_bins)


class TrivialAugmentWide(_AutoAugmentBase):
    """One op and one magnitude bin, both drawn uniformly."""

    _v1_cls = A1.TrivialAugmentWide

    def __init__(self, num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__(interpolation, fill)
        self.num_magnitude_bins = num_magnitude_bins

    def _v1_kwargs(self):
        return dict(num_magnitude_bins=self.num_magnitude_bins)


class AugMix(_AutoAugmentBase):
    """A Dirichlet-weighted mix of `mixture_width` augmentation chains, blended with the image."""

    _v1_cls = A1.AugMix

    def __init__(self, severity=3, mixture_width=3, chain_depth=-1, alpha=1.0, all_ops=True,
                 interpolation=InterpolationMode.BILINEAR, fill=None):
        super().__init__(interpolation, fill)
        A1.AugMix(severity=severity)  # validates the severity
        self.severity = severity
        self.mixture_width = mixture_width
        self.chain_depth = chain_depth
        self.alpha = alpha
        self.all_ops = all_ops

    def _v1_kwargs(self):
        return dict(severity=self.severity, mixture_width=self.mixture_width, chain_depth=self.chain_depth,
                    alpha=self.alpha, all_ops=self.all_ops)
