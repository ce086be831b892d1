"""PyTorch's CPU autocast policy (as torch 2.x applies it), and the wrappers that apply it.

Three classes of ops:
- lower precision: float tensor arguments (not float64) are cast to the autocast dtype: the
  matrix products and convolutions;
- float32: float tensor arguments (not float64) are cast to float32: losses, 3-d pools, padding
  by reflection/replication, spectral ops, decompositions and other precision-sensitive ops;
- promote: float tensor arguments are cast to the widest float dtype among them (cat, stack,
  index_copy).
Every other op runs on its inputs as they are (softmax, the norms, elementwise ops: PyTorch 2's
CPU policy leaves them in the input's dtype too).

A wrapper runs its op with autocast off, so ops it calls internally do not cast again, and a
cast is an ordinary differentiable `to`: gradients reach float32 parameters as float32."""
import functools
import sys

from ember import _C
from ember.amp import autocast_mode as _mode

_LOWER = {
    "ember": ["mm", "matmul", "bmm", "addmm", "baddbmm", "addbmm", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
              "conv_transpose2d", "conv_transpose3d", "prelu", "einsum", "tensordot", "chain_matmul"],
    "ember.nn.functional": ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                            "conv_transpose3d", "prelu", "scaled_dot_product_attention"],
    "ember.linalg": ["multi_dot", "vecdot"],
    "Tensor": ["mm", "matmul", "bmm", "addmm", "baddbmm", "addbmm", "__matmul__", "__rmatmul__"],
}
_FLOAT32 = {
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
    "ember.fft": ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
                  "hfft", "ihfft"],
    "Tensor": ["prod", "trace", "inverse", "pinverse", "quantile", "nanquantile", "cholesky", "qr", "svd", "stft", "istft"],
}
_PROMOTE = {
    "ember": ["cat", "concat", "concatenate", "stack", "index_copy"],
    "Tensor": ["index_copy"],
}
# Padding modes PyTorch's policy runs in float32 (its reflection and replication kernels).
_FLOAT32_PAD_MODES = ("reflect", "replicate")

_installed = False


def _eligible(t):
    """A float tensor autocast may cast (float64 never is, as in PyTorch)."""
    return isinstance(t, _C.Tensor) and t.is_floating_point() and t.dtype != _C.float64


def _cast(t, dtype):
    if not _eligible(t) or t.dtype == dtype:
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


def _cast_all(value, dtype):
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_all(v, dtype) for v in value)
    return _cast(value, dtype)


def _widest(args, kwargs):
    """The widest float dtype among the float tensors of the arguments (lists included)."""
    best = None
    stack = list(args) + list(kwargs.values())
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, _C.Tensor) and v.is_floating_point():
            best = v.dtype if best is None else _C.promote_types(best, v.dtype)
    return best


def _run_cast(fn, dtype, args, kwargs):
    """`fn` on the arguments cast to `dtype`, with autocast off inside it."""
    state = _mode._state
    args = tuple(_cast_all(a, dtype) for a in args)
    kwargs = {k: _cast_all(v, dtype) for k, v in kwargs.items()}
    state.enabled = False
    try:
        return fn(*args, **kwargs)
    finally:
        state.enabled = True


def _wrap(fn, target):
    """`fn` under the policy class `target` ("lower", "float32", "promote" or "pad")."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not _mode._active[0] or not _mode._state.enabled:
            return fn(*args, **kwargs)
        if target == "lower":
            dtype = _mode._state.dtype
        elif target == "float32":
            dtype = _C.float32
        elif target == "pad":
            mode = kwargs.get("mode", args[2] if len(args) > 2 else "constant")
            if mode not in _FLOAT32_PAD_MODES:
                return fn(*args, **kwargs)
            dtype = _C.float32
        else:
            dtype = _widest(args, kwargs)
            if dtype is None:
                return fn(*args, **kwargs)
        return _run_cast(fn, dtype, args, kwargs)

    wrapper.__wrapped_by_autocast__ = fn
    return wrapper


def _holders(module_name):
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


def _install_table(table, target, done):
    for module_name, names in table.items():
        holder = _holders(module_name)
        if holder is None:
            continue
        for name in names:
            original = holder.__dict__.get(name) if module_name == "Tensor" else getattr(holder, name, None)
            if original is None:
                continue
            if id(original) not in done:
                done[id(original)] = (original, _wrap(original, target))
            wrapped = done[id(original)][1]
            setattr(holder, name, wrapped)
            if module_name != "Tensor":
                _replace_everywhere(original, wrapped)


def install():
    """Wraps the policy's ops, once (the first time an autocast region is entered)."""
    global _installed
    if _installed:
        return
    import ember.fft  # noqa: F401  (make sure every module in the tables is loaded)
    import ember.linalg  # noqa: F401
    import ember.nn.functional  # noqa: F401
    done = {}
    _install_table(_LOWER, "lower", done)
    _install_table(_FLOAT32, "float32", done)
    _install_table(_PROMOTE, "promote", done)
    _install_table({"ember.nn.functional": ["pad"]}, "pad", done)
    _installed = True
