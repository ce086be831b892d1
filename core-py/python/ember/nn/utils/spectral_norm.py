"""The older, hook-based `nn.utils.spectral_norm`: parameter `<name>_orig`, buffers `<name>_u`
and `<name>_v`, and `<name>` = `<name>_orig` / σ set by a forward pre-hook (power iteration
in training mode only). Superseded in PyTorch by `parametrizations.spectral_norm`, whose
power step updates u before v; this one updates v first."""
import ember
from ember.nn import functional as F
from ember.nn.modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ember.nn.parameter import Parameter, UninitializedParameter

__all__ = ["SpectralNorm", "SpectralNormLoadStateDictPreHook", "SpectralNormStateDictHook", "spectral_norm",
           "remove_spectral_norm"]


class SpectralNorm:
    _version = 1

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}")
        self.name, self.dim, self.n_power_iterations, self.eps = name, dim, n_power_iterations, eps

    def reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.ndim) if d != self.dim])
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with ember.no_grad():
                for _ in range(self.n_power_iterations):
                    F.normalize(ember.mv(weight_mat.t(), u), dim=0, eps=self.eps, out=v)
                    F.normalize(ember.mv(weight_mat, v), dim=0, eps=self.eps, out=u)
                # Copies, so the next step's in-place update does not disturb this backward.
                u, v = u.clone(), v.clone()
        return weight / ember.dot(u, ember.mv(weight_mat, v))

    def remove(self, module):
        with ember.no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    def _solve_v_and_rescale(self, weight_mat, u, target_sigma):
        """A v with u = W v / σ (least squares), scaled so that uᵀ W v = target_sigma."""
        v = (ember.linalg.pinv(weight_mat.t() @ weight_mat) @ weight_mat.t() @ u.unsqueeze(1)).squeeze(1)
        return v * (target_sigma / ember.dot(u, ember.mv(weight_mat, v)))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        if any(isinstance(hook, SpectralNorm) and hook.name == name for hook in module._forward_pre_hooks.values()):
            raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `SpectralNorm` can't have uninitialized parameters. Make sure to run the dummy forward before applying spectral normalization")
        with ember.no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = F.normalize(ember.randn(h, dtype=weight.dtype), dim=0, eps=fn.eps)
            v = F.normalize(ember.randn(w, dtype=weight.dtype), dim=0, eps=fn.eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", weight)
        setattr(module, name, weight.detach())
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(fn)
        module.register_state_dict_hook(SpectralNormStateDictHook(fn))
        module.register_load_state_dict_pre_hook(SpectralNormLoadStateDictPreHook(fn))
        return fn


class SpectralNormLoadStateDictPreHook:
    """Loads checkpoints saved before version 1, which stored `<name>` and no `<name>_v`:
    v is solved for from u and the stored σ."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        fn = self.fn
        version = local_metadata.get("spectral_norm", {}).get(fn.name + ".version", None)
        if version is not None and version >= 1:
            return
        weight_key = prefix + fn.name
        if version is None and weight_key not in state_dict and all(weight_key + s in state_dict for s in ("_orig", "_u", "_v")):
            return  # a current checkpoint saved without metadata
        missing = [weight_key + s for s in ("_orig", "", "_u") if weight_key + s not in state_dict]
        if missing:
            if strict:
                missing_keys.extend(missing)
            return
        with ember.no_grad():
            weight_orig = state_dict[weight_key + "_orig"]
            sigma = (weight_orig / state_dict.pop(weight_key)).mean()
            weight_mat = fn.reshape_weight_to_matrix(weight_orig)
            state_dict[weight_key + "_v"] = fn._solve_v_and_rescale(weight_mat, state_dict[weight_key + "_u"], sigma)


class SpectralNormStateDictHook:
    """Records the format version in the state_dict's metadata."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, module, state_dict, prefix, local_metadata):
        versions = local_metadata.setdefault("spectral_norm", {})
        key = self.fn.name + ".version"
        if key in versions:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        versions[key] = self.fn._version


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divides `module.<name>` by its spectral norm on every forward. `dim` (the output-channel
    dim) defaults to 1 for ConvTranspose layers and 0 otherwise."""
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            break
    else:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    _drop_hooks(module._state_dict_hooks, SpectralNormStateDictHook, name)
    _drop_hooks(module._load_state_dict_pre_hooks, SpectralNormLoadStateDictPreHook, name)
    return module


def _drop_hooks(hooks, hook_type, name):
    for key, hook in list(hooks.items()):
        if isinstance(hook, hook_type) and hook.fn.name == name:
            del hooks[key]
            break
