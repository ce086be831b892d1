"""PyTorch's autocast policies for the CPU and for CUDA (as torch 2.x applies them), and the op
wrappers that apply them.

Each device type's policy sorts ops into rules:
- lower precision: float tensor arguments (not float64) are cast to the region's dtype: the
  matrix products and convolutions;
- float32: float tensor arguments (not float64) are cast to float32: losses, norms, and (on
  CUDA) exp/log/pow and the other precision-sensitive pointwise ops; on the CPU 3-d pools,
  spectral ops, decompositions;
- float32 output (PyTorch's `fp32_set_opt_dtype`, CUDA): reductions and softmaxes with a
  `dtype=` argument run with `dtype=float32` when their input is eligible and no dtype is given;
- promote: float tensor arguments are cast to the widest float dtype among them;
- float32 by mode: float32 for some values of a `mode` argument only (the CPU's reflection and
  replication padding, CUDA's interpolation other than "area");
- banned: `binary_cross_entropy` on CUDA tensors raises (PyTorch's advice: use the logits form).
Every other op runs on its inputs as they are. A table may name an op Ember lacks; it is
skipped until the op exists.

One wrapper per op serves every device type: it applies the rule of each device type whose
region is active in this thread, to the tensors on that device type only (as PyTorch's
per-device autocast dispatch keys do), so a CPU tensor in an `autocast("cuda")` region is left
alone. A wrapper runs its op with autocast off, so ops it calls internally do not cast again,
and a cast is an ordinary differentiable `to`: gradients reach float32 parameters as float32."""
import functools
import sys

from ember import _C
from ember.amp import autocast_mode as _mode


def _eligible(t, device_type):
    """A float tensor on `device_type` that autocast may cast (float64 never is, as in PyTorch).
    Ember's tensors live on the CPU or a CUDA device; `is_cuda` is a cheap flag read."""
    return (isinstance(t, _C.Tensor) and t.is_cuda == (device_type == "cuda") and t.is_floating_point()
            and t.dtype != _C.float64)


def _cast(t, dtype, device_type):
    if not _eligible(t, device_type) or t.dtype == dtype:
        return t
    state = _mode._state
    # Parameters (leaves that require grad) are cast once per region: PyTorch's weight cache.
    cacheable = state.cache_enabled and t.requires_grad and t.grad_fn is None
    if cacheable:
        hit = state.cache.get((id(t), dtype))
        if hit is not None and hit[0] is t:
            return hit[1]
    out = t.to(dtype)
    if cacheable:
        state.cache[(id(t), dtype)] = (t, out)
    return out


def _cast_all(value, dtype, device_type):
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_all(v, dtype, device_type) for v in value)
    return _cast(value, dtype, device_type)


def _cast_args(args, kwargs, dtype, device_type):
    return (tuple(_cast_all(a, dtype, device_type) for a in args),
            {k: _cast_all(v, dtype, device_type) for k, v in kwargs.items()})


def _tensors(args, kwargs):
    """The tensors among the arguments, lists and tuples included."""
    stack = list(args) + list(kwargs.values())
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, _C.Tensor):
            yield v


# ---- the rules: each returns the arguments to run the op with, or None where it does not apply ----

def _lower(device_type, args, kwargs):
    return _cast_args(args, kwargs, _mode._state.dtypes[device_type], device_type)


def _float32(device_type, args, kwargs):
    return _cast_args(args, kwargs, _C.float32, device_type)


def _float32_output(device_type, args, kwargs):
    first = args[0] if args else kwargs.get("input")
    explicit = kwargs.get("dtype") is not None or any(isinstance(a, _C.dtype) for a in args)
    if explicit or not _eligible(first, device_type):
        return None
    return args, {**kwargs, "dtype": _C.float32}


def _promote(device_type, args, kwargs):
    widest = None
    for t in _tensors(args, kwargs):
        if _eligible(t, device_type):
            widest = t.dtype if widest is None else _C.promote_types(widest, t.dtype)
    return None if widest is None else _cast_args(args, kwargs, widest, device_type)


def _float32_for_modes(position, default, modes):
    """float32 when the op's `mode` argument (keyword, or positional at `position`) is in `modes`."""

    def rule(device_type, args, kwargs):
        mode = kwargs.get("mode", args[position] if len(args) > position else default)
        return _float32(device_type, args, kwargs) if mode in modes else None

    return rule


def _banned(device_type, args, kwargs):
    if any(t.is_cuda == (device_type == "cuda") for t in _tensors(args, kwargs)):
        raise RuntimeError("ember.nn.functional.binary_cross_entropy and ember.nn.BCELoss are unsafe to autocast.\n"
                           "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
                           "In this case, combine the two layers using ember.nn.functional.binary_cross_entropy_with_logits\n"
                           "or ember.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
                           "safe to autocast.")
    return None


_CONVS = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
_MATMULS = ["mm", "matmul", "bmm", "addmm", "baddbmm", "addbmm"]
_CUDA_FLOAT32_POINTWISE = ["acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal",
                           "rsqrt", "sinh", "tan", "pow"]
_CUDA_FLOAT32_LOSSES = ["poisson_nll_loss", "cosine_embedding_loss", "hinge_embedding_loss", "kl_div", "margin_ranking_loss",
                        "binary_cross_entropy_with_logits"]
_CUDA_FLOAT32_OUTPUT = ["prod", "softmax", "log_softmax", "cumprod", "cumsum", "sum", "norm"]
_CUDA_PROMOTE = ["addcdiv", "addcmul", "atan2", "cross", "dot", "vdot", "tensordot", "scatter_add", "index_put", "cat",
                 "concat", "concatenate", "stack", "index_copy"]

# device type -> [(rule, {holder: [op names]})]; a holder is a module name or "Tensor" (methods).
_POLICIES = {
    "cpu": [
        (_lower, {
            "ember": _MATMULS + _CONVS + ["prelu", "einsum", "tensordot", "chain_matmul"],
            "ember.nn.functional": ["linear", "prelu", "scaled_dot_product_attention"] + _CONVS,
            "ember.linalg": ["multi_dot", "vecdot"],
            "Tensor": _MATMULS + ["__matmul__", "__rmatmul__"],
        }),
        (_float32, {
            "ember": ["prod", "cdist", "polar", "stft", "istft", "trace", "inverse", "pinverse", "quantile", "nanquantile",
                      "view_as_complex", "cholesky", "cholesky_solve", "cholesky_inverse", "qr", "svd"],
            "ember.nn.functional": ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "cross_entropy",
                                    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
                                    "cosine_embedding_loss", "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
                                    "triplet_margin_loss", "multi_margin_loss", "multilabel_margin_loss", "ctc_loss",
                                    "avg_pool3d", "max_pool3d", "max_pool3d_with_indices", "adaptive_avg_pool3d",
                                    "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "grid_sample"],
            "ember.linalg": ["cholesky", "cholesky_ex", "eig", "eigh", "eigvals", "eigvalsh", "inv", "inv_ex", "lstsq", "qr",
                             "solve", "svd", "svdvals", "pinv"],
            "ember.fft": ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn",
                          "irfftn", "hfft", "ihfft"],
            "Tensor": ["prod", "trace", "inverse", "pinverse", "quantile", "nanquantile", "cholesky", "qr", "svd", "stft",
                       "istft"],
        }),
        (_promote, {"ember": ["cat", "concat", "concatenate", "stack", "index_copy"], "Tensor": ["index_copy"]}),
        (_float32_for_modes(2, "constant", ("reflect", "replicate")), {"ember.nn.functional": ["pad"]}),
    ],
    "cuda": [
        (_lower, {
            "ember": _MATMULS + _CONVS + ["addmv", "addr", "mv", "einsum", "chain_matmul", "convolution", "conv_tbc", "prelu",
                                         "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"],
            "ember.nn.functional": ["linear", "prelu", "scaled_dot_product_attention"] + _CONVS,
            "ember.linalg": ["multi_dot", "vecdot"],
            "Tensor": _MATMULS + ["addmv", "addr", "mv", "__matmul__", "__rmatmul__"],
        }),
        (_float32, {
            "ember": _CUDA_FLOAT32_POINTWISE + _CUDA_FLOAT32_LOSSES + [
                "layer_norm", "group_norm", "frobenius_norm", "nuclear_norm", "cosine_similarity", "dist", "pdist", "cdist",
                "renorm", "logsumexp"],
            "ember.nn.functional": _CUDA_FLOAT32_LOSSES + [
                "softplus", "layer_norm", "group_norm", "cosine_similarity", "pdist", "nll_loss", "cross_entropy", "l1_loss",
                "smooth_l1_loss", "huber_loss", "mse_loss", "multilabel_margin_loss", "soft_margin_loss",
                "triplet_margin_loss", "multi_margin_loss"],
            "Tensor": _CUDA_FLOAT32_POINTWISE + ["__pow__", "__rpow__", "dist", "renorm", "logsumexp"],
        }),
        (_float32_output, {
            "ember": _CUDA_FLOAT32_OUTPUT,
            "ember.nn.functional": ["softmax", "log_softmax"],
            "ember.linalg": ["vector_norm", "matrix_norm"],
            "Tensor": _CUDA_FLOAT32_OUTPUT,
        }),
        (_promote, {
            "ember": _CUDA_PROMOTE,
            "ember.nn.functional": ["bilinear", "grid_sample"],
            "ember.linalg": ["cross"],
            "Tensor": _CUDA_PROMOTE,
        }),
        (_float32_for_modes(3, "nearest", ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear")),
         {"ember.nn.functional": ["interpolate", "upsample"]}),
        (_banned, {"ember.nn.functional": ["binary_cross_entropy"]}),
    ],
}

_installed = set()
# id(original op) -> its wrapper, across installs (the wrapper keeps the original alive).
_wrappers = {}


def _wrap(fn):
    """The one wrapper of `fn`: its `rules` (device type -> rule) are filled by `install`."""
    rules = {}

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not _mode._active[0]:
            return fn(*args, **kwargs)
        state = _mode._state
        active = state.active
        applied = False
        for device_type in active:
            rule = rules.get(device_type)
            if rule is not None:
                cast = rule(device_type, args, kwargs)
                if cast is not None:
                    args, kwargs = cast
                    applied = True
        if not applied:
            return fn(*args, **kwargs)
        state.active = ()
        try:
            return fn(*args, **kwargs)
        finally:
            state.active = active

    wrapper.__wrapped_by_autocast__ = fn
    wrapper.autocast_rules = rules
    return wrapper


def _holder(module_name):
    if module_name == "Tensor":
        return _C.Tensor
    return sys.modules.get(module_name)


def _replace_everywhere(original, wrapped):
    """Points every `ember` module attribute that holds `original` at `wrapped`, and every
    `staticmethod(original)` of a class defined there (the nn modules keep their functional
    that way), so `ember.matmul`, re-exports and `nn.Conv2d` all go through the policy."""
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "ember" or name.startswith("ember.")):
            continue
        for attr, value in list(vars(module).items()):
            if value is original:
                setattr(module, attr, wrapped)
            elif isinstance(value, type) and value.__module__ == name:
                for key, member in list(vars(value).items()):
                    if isinstance(member, staticmethod) and member.__func__ is original:
                        setattr(value, key, staticmethod(wrapped))


def _install_rule(device_type, rule, table):
    for module_name, names in table.items():
        holder = _holder(module_name)
        if holder is None:
            continue
        for name in names:
            current = holder.__dict__.get(name) if module_name == "Tensor" else getattr(holder, name, None)
            if current is None:
                continue
            wrapper = current if hasattr(current, "autocast_rules") else _wrappers.get(id(current))
            if wrapper is None:
                wrapper = _wrappers[id(current)] = _wrap(current)
            wrapper.autocast_rules[device_type] = rule
            if current is not wrapper:
                setattr(holder, name, wrapper)
                if module_name != "Tensor":
                    _replace_everywhere(current, wrapper)


def install(device_type):
    """Wraps the ops of `device_type`'s policy, once (the first time one of its regions is
    entered)."""
    if device_type in _installed:
        return
    import ember.fft  # noqa: F401  (make sure every module in the tables is loaded)
    import ember.linalg  # noqa: F401
    import ember.nn.functional  # noqa: F401
    for rule, table in _POLICIES[device_type]:
        _install_rule(device_type, rule, table)
    _installed.add(device_type)
