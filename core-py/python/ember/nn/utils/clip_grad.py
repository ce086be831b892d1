"""Gradient clipping by total norm or by value, in place."""
import math
import warnings

import ember
from ember import _C


def _grads(parameters):
    if isinstance(parameters, _C.Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The `norm_type` norm of all `tensors` taken together (the norm of their norms)."""
    if isinstance(tensors, _C.Tensor):
        tensors = [tensors]
    tensors = list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return ember.tensor(0.0)
    with ember.no_grad():
        if math.isinf(norm_type):
            pick = ember.amax if norm_type > 0 else ember.amin
            total = pick(ember.stack([pick(ember.abs(t)) for t in tensors]))
        else:
            total = ember.norm(ember.stack([ember.norm(t, norm_type) for t in tensors]), norm_type)
    if error_if_nonfinite and not math.isfinite(float(total)):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error and scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scales every gradient by min(1, max_norm / (total_norm + 1e-6)); returns the total norm
    (before clipping) as a 0-d tensor."""
    grads = _grads(parameters)
    if not grads:
        return ember.tensor(0.0)
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    with ember.no_grad():
        coef = ember.clamp(float(max_norm) / (total + 1e-6), max=1.0)
        for g in grads:
            g.mul_(coef._to_dtype(g.dtype) if coef.dtype != g.dtype else coef)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamps every gradient into [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    with ember.no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
