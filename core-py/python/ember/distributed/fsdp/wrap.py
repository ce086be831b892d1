"""Auto-wrap policies for FullyShardedDataParallel: `policy(module, recurse, nonwrapped_numel)`
answers, with `recurse=True`, whether to look inside `module`, and with `recurse=False`, whether
to wrap it in its own FSDP unit."""

__all__ = ["ModuleWrapPolicy", "lambda_auto_wrap_policy", "size_based_auto_wrap_policy", "transformer_auto_wrap_policy"]


def size_based_auto_wrap_policy(module, recurse, nonwrapped_numel, min_num_params=int(1e8), force_leaf_modules=None,
                                exclude_wrap_modules=None):
    """Wraps a module once its parameters not yet wrapped number at least `min_num_params`."""
    force_leaf = tuple(force_leaf_modules or ())
    exclude = tuple(exclude_wrap_modules or ())
    if recurse:
        return not isinstance(module, force_leaf)
    return nonwrapped_numel >= min_num_params and not isinstance(module, exclude)


def lambda_auto_wrap_policy(module, recurse, nonwrapped_numel, lambda_fn):
    """Wraps the modules for which `lambda_fn(module)` is true."""
    return True if recurse else bool(lambda_fn(module))


def transformer_auto_wrap_policy(module, recurse, nonwrapped_numel, transformer_layer_cls):
    """Wraps every instance of the given layer classes."""
    return True if recurse else isinstance(module, tuple(transformer_layer_cls))


class ModuleWrapPolicy:
    """Wraps every instance of `module_classes`."""

    def __init__(self, module_classes):
        self._classes = tuple(module_classes)

    def __call__(self, module, recurse, nonwrapped_numel):
        return True if recurse else isinstance(module, self._classes)


def _policy(policy):
    if policy is None or callable(policy):
        return policy
    raise TypeError(f"auto_wrap_policy must be callable (a policy function or ModuleWrapPolicy), but got {policy!r}")


