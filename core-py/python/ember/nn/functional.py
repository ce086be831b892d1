"""`ember.nn.functional`: activations, softmax, normalisation, embeddings, dropout, losses and
attention, with PyTorch's signatures. Softmax, the norms, `nll_loss` and the embeddings are
native kernels; the rest composes them with elementwise ops and reductions."""
import math
import numbers
import warnings

import ember
from ember import _C, _ops
from ember._functorch._batched import BatchedTensor, batched


def _act(name, input, inplace):
    try:
        if not inplace:
            return _C.unary(name, input)
        _C.unary(name, input, input)
    except TypeError:
        return batched("unary", name, input, input if inplace else None)
    return input


def _param_act(name, input, a, b, inplace):
    try:
        if not inplace:
            return _C.unary_with(name, input, a, b)
        _C.unary_with(name, input, a, b, None, input)
    except TypeError:
        return batched("unary_with", name, input, a, b, None, input if inplace else None)
    return input


def relu(input, inplace=False):
    return _act("relu", input, inplace)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) cannot be greater than max_val ({max_val})")
    return _param_act("hardtanh", input, min_val, max_val, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _param_act("leaky_relu", input, negative_slope, None, inplace)


def elu(input, alpha=1.0, inplace=False):
    return _param_act("elu", input, alpha, None, inplace)


def selu(input, inplace=False):
    return _act("selu", input, inplace)


def celu(input, alpha=1.0, inplace=False):
    if alpha == 0:
        raise ValueError("celu: alpha cannot be 0")
    r = elu(input / alpha) * alpha
    return input.copy_(r) if inplace else r


def gelu(input, approximate="none"):
    """GELU; `approximate="tanh"` uses the tanh formula."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate argument must be either none or tanh, got '{approximate}'")
    return _act("gelu" if approximate == "none" else "gelu_tanh", input, False)


def silu(input, inplace=False):
    return _act("silu", input, inplace)


def mish(input, inplace=False):
    return _act("mish", input, inplace)


def hardswish(input, inplace=False):
    return _act("hardswish", input, inplace)


def hardsigmoid(input, inplace=False):
    return _act("hardsigmoid", input, inplace)


def softplus(input, beta=1.0, threshold=20.0):
    return _param_act("softplus", input, beta, threshold, False)


def sigmoid(input):
    return _act("sigmoid", input, False)


def tanh(input):
    return _act("tanh", input, False)


def logsigmoid(input):
    return -softplus(-input)


def softsign(input):
    return input / (_ops.abs(input) + 1)


def tanhshrink(input):
    return input - _ops.tanh(input)


def threshold(input, threshold, value, inplace=False):
    r = _ops.where(input > threshold, input, value)
    return input.copy_(r) if inplace else r
from ember.nn._spatial import *  # noqa


# ---- softmax family ----

def _softmax_dim(ndim):
    """PyTorch's legacy choice of dim when none is given (with its deprecation warning)."""
    warnings.warn("Implicit dimension choice for softmax has been deprecated. Change the call to include dim=X as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def _softmax(input, dim, dtype, log):
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"softmax(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if dim is None:
        dim = _softmax_dim(input.ndim)
    if dtype is not None:
        input = input._to_dtype(dtype)
    return _native_softmax(input, dim, log)


def _native_softmax(input, dim, log):
    try:
        return _C.softmax(input, dim, log)
    except TypeError:
        return batched("softmax", input, dim, log)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along `dim`; `dtype` casts the input first."""
    return _softmax(input, dim, dtype, False)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """x - log(sum(exp(x))) along `dim`, computed in one fused pass per row."""
    return _softmax(input, dim, dtype, True)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dtype is not None:
        input = input._to_dtype(dtype)
    return _softmax(-input, dim, None, False)


# ---- normalisation ----

def _shape_list(shape):
    return [shape] if isinstance(shape, numbers.Integral) else [int(s) for s in shape]


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    return _C.layer_norm(input, _shape_list(normalized_shape), weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):
    return _C.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05):
    """Normalises each channel (dim 1); in training uses the batch statistics and blends them into
    `running_mean`/`running_var` in place (the variance unbiased), otherwise uses the running ones."""
    return _C.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True, momentum=0.1, eps=1e-05):
    return _C.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x² over `size` neighbouring channels, zero-padded) ** beta."""
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions)")
    if input.numel() == 0:
        return input
    n, c = input.shape[0], input.shape[1]
    padded = ember.zeros((n, c + size - 1) + tuple(input.shape[2:]), dtype=input.dtype)
    padded[:, size // 2:size // 2 + c] = input * input
    window_mean = _ops.sum(padded.unfold(1, size, 1), -1) / size
    return input / (window_mean * alpha + k) ** beta


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(‖input‖_p over `dim`, eps)."""
    denom = _ops.clamp_min(_ops.norm(input, p, dim, True), eps).expand_as(input)
    if out is None:
        return input / denom
    return ember.div(input, denom, out=out)


# ---- linear layers ----

def linear(input, weight, bias=None):
    """input @ weight.T + bias."""
    out = _ops.matmul(input, weight.t())
    return out if bias is None else out + bias


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = x1[..., i] · weight[o, i, j] · x2[..., j] + bias[o]."""
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got {list(input1.shape[:-1])} and {list(input2.shape[:-1])}")
    if weight.ndim != 3 or weight.shape[1] != input1.shape[-1] or weight.shape[2] != input2.shape[-1]:
        raise RuntimeError(f"bilinear(): weight of shape {list(weight.shape)} does not match input1 features {input1.shape[-1]} and input2 features {input2.shape[-1]}")
    lead = input1.shape[:-1]
    x1, x2 = input1.reshape(-1, input1.shape[-1]), input2.reshape(-1, input2.shape[-1])
    y = _ops.sum(_ops.matmul(x1, weight) * x2, -1).t()  # (out, batch) -> (batch, out)
    y = y.reshape(tuple(lead) + (weight.shape[0],))
    return y if bias is None else y + bias


# ---- embeddings ----

def _padding_idx(padding_idx, num_embeddings):
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise ValueError(f"Padding_idx must be within num_embeddings, got padding_idx={padding_idx} for num_embeddings={num_embeddings}")
    return padding_idx + num_embeddings if padding_idx < 0 else padding_idx


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` picked by `input`; with `max_norm`, the picked rows of `weight` whose
    norm exceeds it are first rescaled in place (as PyTorch does)."""
    padding_idx = _padding_idx(padding_idx, weight.shape[0])
    if scale_grad_by_freq and weight.requires_grad and ember.is_grad_enabled():
        raise RuntimeError("derivative for embedding with scale_grad_by_freq=True is not implemented")
    if max_norm is not None:
        _C.embedding_renorm_(weight, input, max_norm, norm_type)
    try:
        return _C.embedding(weight, input, padding_idx)
    except TypeError:
        return batched("embedding", weight, input, padding_idx)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxes of bags of embedding rows. A 2-d `input` is one bag per row;
    a 1-d `input` is cut into bags by `offsets`."""
    padding_idx = _padding_idx(padding_idx, weight.shape[0])
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length sequences. However, found offsets of type {type(offsets).__name__}")
        bags, length = input.shape
        offsets = ember.arange(0, bags * length, max(length, 1), dtype=ember.int64)[:bags]
        input = input.reshape(-1)
        per_sample_weights = None if per_sample_weights is None else per_sample_weights.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if max_norm is not None:
        _C.embedding_renorm_(weight, input, max_norm, norm_type)
    with ember.no_grad():  # the native kernel records nothing; the tracked path below does
        out = _C.embedding_bag(weight, input, offsets, mode, per_sample_weights, include_last_offset, padding_idx)
    tracked = weight.requires_grad or (per_sample_weights is not None and per_sample_weights.requires_grad)
    if not (tracked and ember.is_grad_enabled()):
        return out
    return _embedding_bag_tracked(input, weight, offsets, mode, per_sample_weights, padding_idx, out)


def _embedding_bag_tracked(input, weight, offsets, mode, per_sample_weights, padding_idx, out):
    """The same bags composed from differentiable ops (embedding, index_add, gather), so
    gradients reach `weight` and `per_sample_weights`; the native result picks max winners."""
    n, bags, dim = input.shape[0], out.shape[0], weight.shape[1]
    bag_of = ember.searchsorted(offsets[:bags].contiguous(), ember.arange(n), right=True) - 1
    in_bag = (bag_of >= 0) & (bag_of < bags) & (ember.arange(n) < (offsets[bags] if offsets.shape[0] > bags else n))
    keep = in_bag if padding_idx is None else in_bag & (input != padding_idx)
    bag_of = _ops.clamp(bag_of, 0, max(bags - 1, 0))
    rows = _C.embedding(weight, input, None) * keep.unsqueeze(1)._to_dtype(weight.dtype)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(1)
    if mode == "max":
        is_max = (rows.detach() == out[bag_of]) & keep.unsqueeze(1)
        position = ember.where(is_max, ember.arange(n).unsqueeze(1), n)
        winner = ember.full((bags, dim), n, dtype=ember.int64).scatter_reduce(0, bag_of.unsqueeze(1).expand(n, dim), position, "amin")
        return ember.cat([rows, ember.zeros((1, dim), dtype=rows.dtype)]).gather(0, winner)
    total = ember.zeros((bags, dim), dtype=rows.dtype).index_add(0, bag_of, rows)
    if mode == "sum":
        return total
    counts = ember.zeros(bags, dtype=rows.dtype).index_add(0, bag_of, keep._to_dtype(rows.dtype))
    return total / _ops.clamp_min(counts, 1.0).unsqueeze(1)


def one_hot(tensor, num_classes=-1):
    """int64 tensor with a trailing dim of `num_classes`, 1 at each value's position."""
    if tensor.dtype != ember.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel() > 0 and bool(_ops.any(tensor < 0)):
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(_ops.amax(tensor)) + 1
    elif tensor.numel() > 0 and bool(_ops.any(tensor >= num_classes)):
        raise RuntimeError("Class values must be smaller than num_classes.")
    classes = ember.arange(num_classes, dtype=ember.int64)
    return (tensor.unsqueeze(-1) == classes)._to_dtype(ember.int64)


# ---- dropout: masks drawn from ember's Philox generator (seeded by ember.manual_seed) ----

def _check_p(p):
    if not 0.0 <= p <= 1.0:  # NaN too
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(shape, p, dtype, device):
    """1 with probability 1 - p, else 0, in `dtype`, drawn on `device` (the input's)."""
    u = _C.uniform(tuple(shape), 0.0, 1.0, ember.float32, None, str(device))
    return (u >= p)._to_dtype(dtype)


def _apply(input, result, inplace):
    return input.copy_(result) if inplace else result


def _dropout(input, p, training, inplace, mask_shape):
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _apply(input, input * 0, inplace)
    if type(input) is BatchedTensor:
        from ember._functorch._rules_nn import dropout_mask

        return _apply(input, input * (dropout_mask(input, mask_shape, p, input.dtype) / (1.0 - p)), inplace)
    return _apply(input, input * (_keep_mask(mask_shape, p, input.dtype, input.device) / (1.0 - p)), inplace)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes each element with probability `p` and scales the rest by 1 / (1 - p)."""
    return _dropout(input, p, training, inplace, input.shape)


def _channel_mask_shape(input):
    return tuple(input.shape[:2]) + (1,) * (input.ndim - 2)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of (N, C, L) or (C, L) input."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    if input.ndim == 2:
        return dropout1d(input.unsqueeze(0), p, training, inplace).squeeze(0)
    return _dropout(input, p, training, inplace, _channel_mask_shape(input))


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of (N, C, H, W) input; a 3-d input is taken as (N, C, L), as PyTorch does."""
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and will result in an error in a future release. To retain the behavior and silence this warning, please use dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D inputs).", stacklevel=2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior will change in a future release to interpret the input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using dropout1d instead.", stacklevel=2)
    return _dropout(input, p, training, inplace, _channel_mask_shape(input))


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of (N, C, D, H, W) or (C, D, H, W) input; other ranks are taken
    as unbatched with a deprecation warning, as PyTorch does."""
    if input.ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated and will result in an error in a future release. To retain the behavior and silence this warning, please use dropout instead. Note that dropout3d exists to provide channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 4D or 5D inputs).", stacklevel=2)
    if input.ndim == 5:
        return _dropout(input, p, training, inplace, _channel_mask_shape(input))
    batched = input.unsqueeze(0)  # a view, so in-place dropout still writes into `input`
    return _dropout(batched, p, training, inplace, _channel_mask_shape(batched)).squeeze(0)


_SELU_ALPHA = 1.7580993408473766  # -SELU's negative saturation value divided by its scale


def _alpha_dropout(input, p, training, inplace, mask_shape):
    """Dropout that keeps SELU's zero mean and unit variance: dropped elements take SELU's
    negative saturation value, then an affine map restores the moments."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _apply(input, input * 0, inplace)
    a = 1.0 / math.sqrt((_SELU_ALPHA * _SELU_ALPHA * p + 1) * (1 - p))
    keep = _keep_mask(mask_shape, p, input.dtype, input.device)
    return _apply(input, input * keep * a + (keep - 1) * (_SELU_ALPHA * a) + _SELU_ALPHA * a * p, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _alpha_dropout(input, p, training, inplace, input.shape)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels (dim 1) of an input with at least 2 dims."""
    if training and 0.0 < p and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return _alpha_dropout(input, p, training, inplace, _channel_mask_shape(input) if input.ndim >= 2 else ())


# ---- losses ----

def _reduction(size_average, reduce, reduction):
    """The reduction named by the legacy `size_average`/`reduce` flags, or `reduction`."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return "mean" if size_average and reduce else "sum" if reduce else "none"


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    if reduction == "mean":
        return _ops.mean(loss)
    if reduction == "sum":
        return _ops.sum(loss)
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _pointwise(input, target, reduction):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({ember.Size(target.shape)}) that is different to the input size ({ember.Size(input.shape)}). This will likely lead to incorrect results due to broadcasting. Please ensure they have the same size.", stacklevel=3)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return input - target


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    d = _pointwise(input, target, reduction)
    return _reduce(d * d, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    return _reduce(_ops.abs(_pointwise(input, target, reduction)), reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 z² / beta where z = |input - target| < beta, z - 0.5 beta elsewhere (L1 when beta = 0)."""
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    reduction = _reduction(size_average, reduce, reduction)
    z = _ops.abs(_pointwise(input, target, reduction))
    if beta == 0:
        return _reduce(z, reduction)
    return _reduce(_ops.where(z < beta, z * z * (0.5 / beta), z - 0.5 * beta), reduction)


def huber_loss(input, target, reduction="mean", delta=1.0):
    """0.5 z² where z = |input - target| < delta, delta (z - 0.5 delta) elsewhere."""
    if delta <= 0:
        raise RuntimeError(f"huber_loss does not support non-positive values for delta, got {delta}.")
    z = _ops.abs(_pointwise(input, target, reduction))
    return _reduce(_ops.where(z < delta, z * z * 0.5, (z - 0.5 * delta) * delta), reduction)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(t log x + (1 - t) log(1 - x)), each log clamped at -100 as PyTorch does."""
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({ember.Size(target.shape)}) that is different to the input size ({ember.Size(input.shape)}) is deprecated. Please ensure they have the same size.")
    if input.numel() > 0 and bool(_ops.any((input < 0) | (input > 1))):
        raise RuntimeError("all elements of input should be between 0 and 1")
    log_x = _ops.clamp_min(_ops.log(input), -100.0)
    log_1mx = _ops.clamp_min(_ops.log(1 - input), -100.0)
    loss = -(target * log_x + (1 - target) * log_1mx)
    return _reduce(loss if weight is None else loss * weight, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
    """BCE on sigmoid(input), computed stably: (1 - t) x + (1 + (pw - 1) t) softplus(-x)."""
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({ember.Size(target.shape)}) must be the same as input size ({ember.Size(input.shape)})")
    softplus_neg = _ops.log1p(_ops.exp(-_ops.abs(input))) + _ops.clamp_min(-input, 0.0)
    log_weight = 1 if pos_weight is None else (pos_weight - 1) * target + 1
    loss = (1 - target) * input + log_weight * softplus_neg
    return _reduce(loss if weight is None else loss * weight, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target · (log target - input), with `input` (and, if `log_target`, `target`) as logs."""
    reduction = _reduction(size_average, reduce, reduction)
    if log_target:
        loss = _ops.exp(target) * (target - input)
    else:
        loss = _ops.where(target == 0, 0.0, target * _ops.log(target)) - target * input
    if reduction == "batchmean":
        return _ops.sum(loss) / (input.shape[0] if input.ndim > 0 else 1)
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size.'batchmean' divides only by the batch size, and aligns with the KL div math definition.'mean' will be changed to behave the same as 'batchmean' in the next major release.", stacklevel=2)
    return _reduce(loss, reduction)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """-input[n, target[n]] (times weight[target[n]]); the mean divides by the total weight."""
    return _native_nll_loss(input, target, weight, _reduction(size_average, reduce, reduction), ignore_index)[0]


def _native_nll_loss(input, target, weight, reduction, ignore_index):
    try:
        return _C.nll_loss(input, target, weight, reduction, ignore_index)
    except TypeError:
        return batched("nll_loss", input, target, weight, reduction, ignore_index)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean", label_smoothing=0.0):
    """log_softmax over the class dim (1, or 0 for unbatched input) and then nll_loss for class
    indices, or -sum(target · log_softmax) for class probabilities; `label_smoothing` mixes in
    the uniform distribution."""
    reduction = _reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 1 if input.ndim >= 2 else 0
    logp = _native_softmax(input, class_dim, True)
    if target.dtype.is_floating_point:
        return _cross_entropy_probs(logp, target, weight, class_dim, reduction, label_smoothing)
    loss, total_weight = _native_nll_loss(logp, target, weight, reduction, ignore_index)
    if label_smoothing == 0.0:
        return loss
    weighted = logp if weight is None else logp * _class_view(weight, logp, class_dim)
    smooth = _ops.where(target == ignore_index, 0.0, -_ops.sum(weighted, class_dim))
    if reduction == "mean":
        smooth = _ops.sum(smooth) / total_weight
    elif reduction == "sum":
        smooth = _ops.sum(smooth)
    classes = input.shape[class_dim]
    return loss * (1 - label_smoothing) + smooth * (label_smoothing / classes)


def _class_view(weight, logp, class_dim):
    """`weight` shaped to broadcast along the class dim of `logp`."""
    classes = logp.shape[class_dim]
    if weight.numel() != classes:
        raise RuntimeError(f"weight tensor should be defined either for all {classes} classes or no classes but got weight tensor of shape: {list(weight.shape)}")
    return weight.reshape((classes,) + (1,) * (logp.ndim - class_dim - 1))


def _cross_entropy_probs(logp, target, weight, class_dim, reduction, label_smoothing):
    if tuple(target.shape) != tuple(logp.shape):
        raise RuntimeError(f"Expected target size {list(logp.shape)}, got {list(target.shape)}")
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / logp.shape[class_dim]
    terms = logp * target if weight is None else logp * target * _class_view(weight, logp, class_dim)
    loss = -_ops.sum(terms, class_dim)
    if reduction == "mean":  # the batch size (N times the spatial size): not the weights' sum
        return _ops.sum(loss) / loss.numel()
    return _reduce(loss, reduction)


# ---- distances ----

def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 / max(‖x1‖, eps) · x2 / max(‖x2‖, eps)) along `dim`, after broadcasting."""
    x1, x2 = ember.broadcast_tensors(x1, x2)
    n1 = _ops.clamp_min(_ops.norm(x1, 2, dim, True), eps)
    n2 = _ops.clamp_min(_ops.norm(x2, 2, dim, True), eps)
    return _ops.sum((x1 / n1) * (x2 / n2), dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """‖x1 - x2 + eps‖_p over the last dim."""
    return _ops.norm(x1 - x2 + eps, p, -1, keepdim)


# ---- attention ----

def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """softmax(q kᵀ · scale + mask) v over the last two dims. A bool `attn_mask` marks the
    positions that may be attended to; a float one is added to the scores; `is_causal` masks
    the upper triangle. Dropout (on the attention weights) always applies when `dropout_p` > 0."""
    if not 0.0 <= dropout_p <= 1.0:  # NaN included
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        key, value = _repeat_heads(key, query.shape[-3]), _repeat_heads(value, query.shape[-3])
    length, source = query.shape[-2], key.shape[-2]
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = _ops.matmul(query, key.transpose(-2, -1)) * scale
    if is_causal:
        attn_mask = ember.arange(length).unsqueeze(1) >= ember.arange(source).unsqueeze(0)
    if attn_mask is not None:
        if attn_mask.dtype == ember.bool:
            scores = _ops.where(attn_mask, scores, float("-inf"))
        else:
            scores = scores + attn_mask
    weights = _C.softmax(scores, -1, False)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return _ops.matmul(weights, value)


def _repeat_heads(t, heads):
    """(..., Hkv, S, E) -> (..., heads, S, E), each kv head repeated for its query group."""
    hkv = t.shape[-3]
    if heads % hkv:
        raise RuntimeError(f"scaled_dot_product_attention: number of query heads ({heads}) must be divisible by the number of key/value heads ({hkv})")
    lead = tuple(t.shape[:-3])
    grouped = t.unsqueeze(-3).expand(*lead, hkv, heads // hkv, t.shape[-2], t.shape[-1])
    return grouped.reshape(lead + (heads, t.shape[-2], t.shape[-1]))
