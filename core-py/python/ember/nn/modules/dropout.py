"""Dropout, Dropout1d/2d/3d, AlphaDropout and FeatureAlphaDropout: active in training mode only."""
from ember.nn import functional as F
from ember.nn.modules.module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class _DropoutNd(Module):
    _functional = None

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0 <= p <= 1:  # NaN too
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return type(self)._functional(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    _functional = staticmethod(F.dropout)


class Dropout1d(_DropoutNd):
    _functional = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    _functional = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    _functional = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    _functional = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    _functional = staticmethod(F.feature_alpha_dropout)
