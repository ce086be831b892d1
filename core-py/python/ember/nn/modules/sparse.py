"""Embedding and EmbeddingBag."""
import ember
from ember.nn import functional as F
from ember.nn import init
from ember.nn.modules.module import Module, _place
from ember.nn.parameter import Parameter

__all__ = ["Embedding", "EmbeddingBag"]


def _check_padding_idx(padding_idx, num_embeddings):
    """PyTorch asserts the range and stores a negative index counted from the end."""
    if padding_idx is None:
        return None
    if padding_idx >= num_embeddings or padding_idx < -num_embeddings:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx + num_embeddings if padding_idx < 0 else padding_idx


def _given_weight(num_embeddings, embedding_dim, _weight, dtype):
    if _weight is None:
        return None
    if list(_weight.shape) != [num_embeddings, embedding_dim]:
        raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
    return Parameter(_weight)


class Embedding(Module):
    """A lookup table of `num_embeddings` vectors of size `embedding_dim`, N(0, 1) initialised,
    with the `padding_idx` row zero (and never updated by its gradient)."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, _weight=None, _freeze=False, device=None, dtype=None):
        super().__init__()
        ember._device.check(device)
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = _check_padding_idx(padding_idx, num_embeddings)
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        given = _given_weight(num_embeddings, embedding_dim, _weight, dtype)
        if given is None:
            self.weight = Parameter(ember.empty(num_embeddings, embedding_dim, dtype=dtype), requires_grad=not _freeze)
            self.reset_parameters()
        else:
            self.weight = given
            self.weight.requires_grad_(not _freeze)
        _place(self, device)

    def reset_parameters(self):
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self):
        if self.padding_idx is not None:
            with ember.no_grad():
                self.weight[self.padding_idx] = 0

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        if self.sparse is not False:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, sparse=False):
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse, _weight=embeddings,
                   _freeze=freeze)


class EmbeddingBag(Module):
    """Sums, means or maxes of bags of embedding rows (bags cut by `offsets`, or the rows of a
    2-d input), optionally weighted per sample (mode "sum" only)."""

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                 mode="mean", sparse=False, _weight=None, include_last_offset=False, padding_idx=None,
                 device=None, dtype=None):
        super().__init__()
        ember._device.check(device)
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        self.padding_idx = _check_padding_idx(padding_idx, num_embeddings)
        given = _given_weight(num_embeddings, embedding_dim, _weight, dtype)
        if given is None:
            self.weight = Parameter(ember.empty(num_embeddings, embedding_dim, dtype=dtype))
            self.reset_parameters()
        else:
            self.weight = given
        self.mode, self.sparse, self.include_last_offset = mode, sparse, include_last_offset
        _place(self, device)

    def reset_parameters(self):
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with ember.no_grad():
                self.weight[self.padding_idx] = 0

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                               self.mode, self.sparse, per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                        mode="mean", sparse=False, include_last_offset=False, padding_idx=None):
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse, embeddings, include_last_offset,
                  padding_idx)
        bag.weight.requires_grad = not freeze
        return bag
