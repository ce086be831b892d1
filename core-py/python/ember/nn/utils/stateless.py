"""`functional_call`: run a module with some of its parameters and buffers replaced, by
fully-qualified name, for one call; the module's own tensors are put back afterwards."""
import contextlib

from ember import _C
from ember.nn.modules.module import Module

__all__ = ["functional_call"]

_MISSING = object()


def _owner(module, name):
    """(submodule, attribute name) for the dotted `name`."""
    *path, leaf = name.split(".")
    for item in path:
        if not hasattr(module, item):
            raise AttributeError(f"{module._get_name()} has no attribute `{item}`")
        child = getattr(module, item)
        if not isinstance(child, Module):
            raise TypeError(f"submodule `{item}`: {child} is not an instance of torch.nn.Module")
        module = child
    return module, leaf


def _swap(module, name, tensor):
    """Puts `tensor` (or removes the attribute, for _MISSING) at `name`; returns what was there."""
    owner, leaf = _owner(module, name)
    for store in (owner._parameters, owner._buffers):
        if leaf in store:
            original = store[leaf]
            if tensor is _MISSING:
                del store[leaf]
            else:
                store[leaf] = tensor
            return original
    original = getattr(owner, leaf) if hasattr(owner, leaf) else _MISSING
    if original is not _MISSING and not isinstance(original, _C.Tensor):
        raise TypeError(f"attribute `{leaf}`: {original} is not an instance of torch.Tensor")
    if tensor is not _MISSING:
        setattr(owner, leaf, tensor)
    elif hasattr(owner, leaf):
        delattr(owner, leaf)
    return original


def _all_names(module):
    return list(module.named_parameters(remove_duplicate=False)) + list(module.named_buffers(remove_duplicate=False))


def _untie(module, values):
    """Extends `values` to every name sharing a tensor with a given name (tied weights)."""
    groups = {}
    for name, tensor in _all_names(module):
        groups.setdefault(id(tensor), set()).add(name)
    tied = {name: names for names in groups.values() if len(names) > 1 for name in names}
    result = dict(values)
    for given in [n for n in values if n in tied]:
        given_in_group = [n for n in tied[given] if n in values]
        if len({id(values[n]) for n in given_in_group}) > 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(tied[given])}, which are tied. Consider using tie_weights=False")
        for name in tied[given]:
            result[name] = values[given]
    return result


def _check_keys(module, values):
    known = {name for name, _ in _all_names(module)}
    unexpected = sorted(set(values) - known)
    missing = sorted(known - set(values))
    messages = []
    if unexpected:
        messages.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        messages.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if messages:
        raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(module._get_name(), "\n\t".join(messages)))


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers, tie_weights=False, strict=False):
    values = _untie(module, parameters_and_buffers) if tie_weights else dict(parameters_and_buffers)
    if strict:
        _check_keys(module, values)
    originals = {}
    try:
        for name, tensor in values.items():
            originals[name] = _swap(module, name, tensor)
        yield
    finally:
        for name, original in reversed(list(originals.items())):
            _swap(module, name, original)


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """Calls `module(*args, **kwargs)` with the tensors of `parameters_and_buffers` (a dict, or
    a sequence of dicts with distinct keys) in place of the module's by dotted name. Tied
    weights follow a value given for any of their names (`tie_weights`); `strict` requires the
    keys to be exactly the module's parameters and buffers. Names that are not the module's are
    set as attributes for the call when not strict, as PyTorch does."""
    if isinstance(parameters_and_buffers, (list, tuple)):
        merged = {}
        for d in parameters_and_buffers:
            repeated = set(merged) & set(d)
            if repeated:
                raise ValueError(f"{sorted(repeated)} appeared in multiple dictionaries; behavior of functional call is ambiguous")
            merged.update(d)
        parameters_and_buffers = merged
    kwargs = {} if kwargs is None else kwargs
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)
