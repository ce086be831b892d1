"""BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d (and their lazy forms), LayerNorm, GroupNorm and
LocalResponseNorm."""
import numbers
import warnings

import ember
from ember.nn import functional as F
from ember.nn import init
from ember.nn.modules.lazy import LazyModuleMixin
from ember.nn.modules.module import Module, _place
from ember.nn.parameter import Parameter, UninitializedBuffer, UninitializedParameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
           "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
           "LazyInstanceNorm3d", "LayerNorm", "GroupNorm", "LocalResponseNorm"]


class _NormBase(Module):
    """Per-channel affine parameters and running statistics shared by batch and instance norm."""

    _version = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None,
                 *, bias=True):
        super().__init__()
        ember._device.check(device)
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.register_parameter("weight", Parameter(ember.empty(num_features, dtype=dtype)) if affine else None)
        self.register_parameter("bias", Parameter(ember.empty(num_features, dtype=dtype)) if affine and bias else None)
        if track_running_stats:
            self.register_buffer("running_mean", ember.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", ember.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", ember.tensor(0, dtype=ember.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()
        _place(self, device)

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        # Checkpoints from before version 2 have no counter: start it at 0.
        version = local_metadata.get("version", None)
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and key not in state_dict:
            state_dict[key] = ember.tensor(0, dtype=ember.int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)


class _BatchNorm(_NormBase):
    _expected_dims = ()

    def _check_input_dim(self, input):
        if input.ndim not in self._expected_dims:
            want = " or ".join(f"{d}D" for d in self._expected_dims)
            raise ValueError(f"expected {want} input (got {input.ndim}D input)")

    def forward(self, input):
        """Batch statistics in training (blended into the running ones with `momentum`, or
        averaged cumulatively when momentum is None); running statistics in eval mode."""
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            factor = 1.0 / int(self.num_batches_tracked) if self.momentum is None else self.momentum
        use_batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        keep_stats = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if keep_stats else None, self.running_var if keep_stats else None,
                            self.weight, self.bias, use_batch_stats, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    _expected_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    _expected_dims = (4,)


class BatchNorm3d(_BatchNorm):
    _expected_dims = (5,)


class _InstanceNorm(_NormBase):
    _batched_dims = 0

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None, dtype=None,
                 *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        _place(self, device)

    def _check_input_dim(self, input):
        if input.ndim not in (self._batched_dims - 1, self._batched_dims):
            raise ValueError(f"expected {self._batched_dims - 1}D or {self._batched_dims}D input (got {input.ndim}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        channel_dim = input.ndim - self._batched_dims + 1
        if input.shape[channel_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={channel_dim} to match num_features ({self.num_features}), but got: {input.shape[channel_dim]}.")
            warnings.warn(f"input's size at dim={channel_dim} does not match num_features. You can silence this warning by not passing in num_features, which is not used because affine=False", stacklevel=2)
        unbatched = input.ndim == self._batched_dims - 1
        x = input.unsqueeze(0) if unbatched else input
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    _batched_dims = 3


class InstanceNorm2d(_InstanceNorm):
    _batched_dims = 4


class InstanceNorm3d(_InstanceNorm):
    _batched_dims = 5


class _LazyNormBase(LazyModuleMixin):
    """Built with 0 features and uninitialized affine parameters and running statistics;
    `num_features` is dim 1 of the first input. As in PyTorch, the lazy instance norms share
    batch norm's defaults (affine, tracking running statistics) and take dim 1 of unbatched
    input too."""

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None):
        super().__init__(0, eps, momentum, False, False, device, dtype)
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(dtype=dtype)
            self.bias = UninitializedParameter(dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(dtype=dtype)
            self.running_var = UninitializedBuffer(dtype=dtype)
            self.num_batches_tracked = ember.tensor(0, dtype=ember.int64)
        _place(self, device)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if not self.has_uninitialized_params():
            return
        self.num_features = input.shape[1]
        entries = (["weight", "bias"] if self.affine else []) + (["running_mean", "running_var"] if self.track_running_stats else [])
        for name in entries:
            getattr(self, name).materialize((self.num_features,))
        self._adopt_materialized_buffers()
        self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, BatchNorm1d):
    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNormBase, BatchNorm2d):
    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNormBase, BatchNorm3d):
    cls_to_become = BatchNorm3d


class LazyInstanceNorm1d(_LazyNormBase, InstanceNorm1d):
    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyNormBase, InstanceNorm2d):
    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(_LazyNormBase, InstanceNorm3d):
    cls_to_become = InstanceNorm3d


class LayerNorm(Module):
    """Normalises over the trailing `normalized_shape` dims, with an elementwise affine map."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        ember._device.check(device)
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ember.empty(self.normalized_shape, dtype=dtype))
            if bias:
                self.bias = Parameter(ember.empty(self.normalized_shape, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()
        _place(self, device)

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"


class GroupNorm(Module):
    """Normalises each of `num_groups` groups of channels, then a per-channel affine map."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        ember._device.check(device)
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        self.register_parameter("weight", Parameter(ember.empty(num_channels, dtype=dtype)) if affine else None)
        self.register_parameter("bias", Parameter(ember.empty(num_channels, dtype=dtype)) if affine and bias else None)
        self.reset_parameters()
        _place(self, device)

    def reset_parameters(self):
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, bias={self.bias is not None}"


class LocalResponseNorm(Module):
    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
