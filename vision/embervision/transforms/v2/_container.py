"""Compose, RandomApply, RandomChoice and RandomOrder for v2 transforms (any callables work)."""
from collections.abc import Sequence

import ember
from ember import nn

from ._transform import Transform


def _call(transform, inputs, needs_unpacking):
    outputs = transform(*inputs)
    return outputs if needs_unpacking else (outputs,)


def _check_transforms(transforms):
    if not isinstance(transforms, (Sequence, nn.ModuleList)):
        raise TypeError("Argument transforms should be a sequence of callables")


def _container_repr(transforms):
    return "\n".join(f"    {t}" for t in transforms)


class Compose(Transform):
    """Applies `transforms` in order; a sample given as several arguments stays a tuple."""

    def __init__(self, transforms):
        super().__init__()
        _check_transforms(transforms)
        if not transforms:
            raise ValueError("Pass at least one transform")
        self.transforms = transforms

    def forward(self, *inputs):
        needs_unpacking = len(inputs) > 1
        for transform in self.transforms:
            inputs = _call(transform, inputs, needs_unpacking)
        return inputs if needs_unpacking else inputs[0]

    def extra_repr(self):
        return _container_repr(self.transforms)


class RandomApply(Transform):
    """Applies all of `transforms`, in order, with probability `p`."""

    def __init__(self, transforms, p=0.5):
        super().__init__()
        if not isinstance(transforms, (Sequence, nn.ModuleList)):
            raise TypeError("Argument transforms should be a sequence of callables or a `nn.ModuleList`")
        if not (0.0 <= p <= 1.0):
            raise ValueError("`p` should be a floating point value in the interval [0.0, 1.0].")
        self.transforms = transforms
        self.p = p

    def forward(self, *inputs):
        needs_unpacking = len(inputs) > 1
        if float(ember.rand(1).item()) >= self.p:
            return inputs if needs_unpacking else inputs[0]
        for transform in self.transforms:
            inputs = _call(transform, inputs, needs_unpacking)
        return inputs if needs_unpacking else inputs[0]

    def extra_repr(self):
        return f"p={self.p}\n" + _container_repr(self.transforms)


class RandomChoice(Transform):
    """Applies one of `transforms`, picked with (relative) probabilities `p` (uniform by default)."""

    def __init__(self, transforms, p=None):
        super().__init__()
        _check_transforms(transforms)
        if p is None:
            p = [1] * len(transforms)
        elif len(p) != len(transforms):
            raise ValueError(f"Length of p doesn't match the number of transforms: {len(p)} != {len(transforms)}")
        total = sum(p)
        self.transforms = transforms
        self.p = [prob / total for prob in p]

    def forward(self, *inputs):
        idx = int(ember.multinomial(ember.tensor(self.p), 1).item())
        return self.transforms[idx](*inputs)

    def extra_repr(self):
        return f"p={self.p}\n" + _container_repr(self.transforms)


class RandomOrder(Transform):
    """Applies all of `transforms` in a random order."""

    def __init__(self, transforms):
        super().__init__()
        _check_transforms(transforms)
        self.transforms = transforms

    def forward(self, *inputs):
        needs_unpacking = len(inputs) > 1
        for idx in ember.randperm(len(self.transforms)).tolist():
            inputs = _call(self.transforms[idx], inputs, needs_unpacking)
        return inputs if needs_unpacking else inputs[0]

    def extra_repr(self):
        return _container_repr(self.transforms)
