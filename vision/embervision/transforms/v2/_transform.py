"""The v2 `Transform` base class: one set of random parameters per call, applied to every input it
knows (images, videos, masks, boxes), anything else passed through unchanged."""
import enum
from collections.abc import Mapping, Sequence

import ember
from ember import Tensor, nn

from ... import tv_tensors
from .functional import get_dimensions, get_size
from .functional._utils import PILImage, _get_kernel, is_pure_tensor


# ---- nested inputs ----

def tree_flatten(obj):
    """(leaves, spec): lists, tuples and dicts are walked; anything else is a leaf."""
    if isinstance(obj, (list, tuple)):
        leaves, specs = [], []
        for item in obj:
            sub_leaves, sub_spec = tree_flatten(item)
            leaves += sub_leaves
            specs.append(sub_spec)
        return leaves, (type(obj), None, specs)
    if isinstance(obj, Mapping):
        leaves, specs = [], []
        for value in obj.values():
            sub_leaves, sub_spec = tree_flatten(value)
            leaves += sub_leaves
            specs.append(sub_spec)
        return leaves, (type(obj), list(obj.keys()), specs)
    return [obj], None


def tree_unflatten(leaves, spec):
    return _unflatten(iter(leaves), spec)


def _unflatten(leaves, spec):
    if spec is None:
        return next(leaves)
    kind, keys, specs = spec
    items = [_unflatten(leaves, s) for s in specs]
    if keys is not None:
        return kind(zip(keys, items))
    if _is_namedtuple_type(kind):
        return kind(*items)
    return kind(items)


def _is_namedtuple_type(kind):
    return issubclass(kind, tuple) and hasattr(kind, "_fields")


# ---- queries over a flattened sample ----

def _is_image_like(inpt):
    return isinstance(inpt, (tv_tensors.Image, tv_tensors.Video, PILImage)) or is_pure_tensor(inpt)


def has_any(flat_inputs, *types_or_checks):
    return any(_matches(inpt, types_or_checks) for inpt in flat_inputs)


def _matches(inpt, types_or_checks):
    for check in types_or_checks:
        if isinstance(check, type) and isinstance(inpt, check):
            return True
        if not isinstance(check, type) and check(inpt):
            return True
    return False


def query_chw(flat_inputs):
    """(C, H, W) shared by the images and videos of a sample."""
    chws = {tuple(get_dimensions(inpt)) for inpt in flat_inputs if _is_image_like(inpt)}
    if not chws:
        raise TypeError("No image or video was found in the sample")
    if len(chws) > 1:
        raise ValueError(f"Found multiple CxHxW dimensions in the sample: {sorted(chws)}")
    return chws.pop()


def query_size(flat_inputs):
    """(H, W) shared by the images, videos, masks and boxes of a sample."""
    sizes = {
        tuple(get_size(inpt)) for inpt in flat_inputs
        if _is_image_like(inpt) or isinstance(inpt, (tv_tensors.Mask, tv_tensors.BoundingBoxes))
    }
    if not sizes:
        raise TypeError("No image, video, mask or bounding box was found in the sample")
    if len(sizes) > 1:
        raise ValueError(f"Found multiple HxW dimensions in the sample: {sorted(sizes)}")
    return sizes.pop()


def get_bounding_boxes(flat_inputs):
    for inpt in flat_inputs:
        if isinstance(inpt, tv_tensors.BoundingBoxes):
            return inpt
    raise ValueError("No bounding boxes were found in the sample")


# ---- the base classes ----

class Transform(nn.Module):
    """Base of the v2 transforms.

    `forward(*inputs)` flattens the inputs, asks `make_params` once for the random parameters,
    and calls `transform(inpt, params)` on each leaf of a type in `_transformed_types`. A plain
    tensor is treated as the image only when it is the first one and the sample holds no
    `Image`, `Video` or PIL image; other plain tensors (labels, ...) pass through.
    """

    _transformed_types = (Tensor, PILImage)

    def check_inputs(self, flat_inputs):
        """Hook for rejecting a sample before anything is drawn."""

    def make_params(self, flat_inputs):
        """The random parameters for one call, shared by all inputs."""
        return {}

    def transform(self, inpt, params):
        raise NotImplementedError

    def _call_kernel(self, functional, inpt, *args, **kwargs):
        # Types without a kernel (e.g. boxes for a colour transform) pass through.
        kernel = _get_kernel(functional, type(inpt), allow_passthrough=True)
        return kernel(inpt, *args, **kwargs)

    def forward(self, *inputs):
        flat_inputs, spec = tree_flatten(inputs if len(inputs) > 1 else inputs[0])
        self.check_inputs(flat_inputs)
        needs = self._needs_transform_list(flat_inputs)
        params = self.make_params([inpt for inpt, need in zip(flat_inputs, needs) if need])
        flat_outputs = [self.transform(inpt, params) if need else inpt for inpt, need in zip(flat_inputs, needs)]
        return tree_unflatten(flat_outputs, spec)

    def _needs_transform_list(self, flat_inputs):
        transform_pure_tensor = not has_any(flat_inputs, tv_tensors.Image, tv_tensors.Video, PILImage)
        needs = []
        for inpt in flat_inputs:
            need = _matches(inpt, self._transformed_types)
            if need and is_pure_tensor(inpt):
                need, transform_pure_tensor = transform_pure_tensor, False
            needs.append(need)
        return needs

    def extra_repr(self):
        fields = []
        for name, value in self.__dict__.items():
            if name.startswith("_") or name == "training":
                continue
            if isinstance(value, (bool, int, float, str, tuple, list, enum.Enum, ember.dtype)) or value is None:
                fields.append(f"{name}={value}")
        return ", ".join(fields)


class _RandomApplyTransform(Transform):
    """A transform applied with probability `p` (one draw per call)."""

    def __init__(self, p=0.5):
        if not (0.0 <= p <= 1.0):
            raise ValueError("`p` should be a floating point value in the interval [0.0, 1.0].")
        super().__init__()
        self.p = p

    def forward(self, *inputs):
        sample = inputs if len(inputs) > 1 else inputs[0]
        self.check_inputs(tree_flatten(sample)[0])
        if float(ember.rand(1).item()) >= self.p:
            return sample
        return super().forward(*inputs)


# ---- fill values, per input type ----

def _check_fill(fill):
    if fill is not None and not isinstance(fill, (int, float, tuple, list)):
        raise TypeError("Got inappropriate fill arg, only Numbers, tuples, lists and dicts are allowed.")


def _setup_fill_arg(fill):
    """`fill` as a {type: value} mapping (a dict as given, otherwise the same value for every type)."""
    if isinstance(fill, dict):
        for value in fill.values():
            _check_fill(value)
        return dict(fill)
    _check_fill(fill)
    return {"others": fill}


def _get_fill(fill_map, inpt_type):
    # Exact types, as TorchVision: a key `Tensor` means plain tensors, not every tv_tensor.
    return fill_map[inpt_type] if inpt_type in fill_map else fill_map.get("others")


def _setup_size(size, error_msg):
    if isinstance(size, int):
        return (size, size)
    if isinstance(size, Sequence) and len(size) == 1:
        return (size[0], size[0])
    if not isinstance(size, Sequence) or len(size) != 2:
        raise ValueError(error_msg)
    return tuple(size)
