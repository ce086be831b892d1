"""`nn.Module`: the base class of every layer, with PyTorch's registration, traversal,
state_dict, mode, conversion and hook semantics."""
import itertools
from collections import OrderedDict, namedtuple
from collections.abc import Mapping as _Mapping

import ember
from ember import _C
from ember.nn.modules._backward_hooks import BackwardHookState
from ember.nn.parameter import Parameter
from ember.utils.hooks import RemovableHandle, add_hook

__all__ = ["Module", "register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_full_backward_pre_hook", "register_module_full_backward_hook",
           "register_module_backward_hook"]

# Hooks every module runs (before its own), registered by the `register_module_*` functions.
_global_forward_pre_hooks = OrderedDict()
_global_forward_hooks = OrderedDict()
_global_backward_pre_hooks = OrderedDict()
_global_backward_hooks = OrderedDict()
# Whether the global backward hooks are full ones (True), deprecated ones (False), or none yet.
_global_is_full_backward_hook = None


def register_module_forward_pre_hook(hook):
    """A forward pre-hook run by every module, before the module's own."""
    return add_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook):
    """A forward hook run by every module, before the module's own."""
    return add_hook(_global_forward_hooks, hook)


def register_module_full_backward_pre_hook(hook):
    """A backward pre-hook run by every module, before the module's own."""
    return add_hook(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook):
    """A full backward hook run by every module, before the module's own."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is False:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a global Module hook. Please use only one of them.")
    _global_is_full_backward_hook = True
    return add_hook(_global_backward_hooks, hook)


def register_module_backward_hook(hook):
    """Deprecated form of `register_module_full_backward_hook` (see
    `Module.register_backward_hook` for how Ember runs it)."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is True:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a global Module hook. Please use only one of them.")
    _global_is_full_backward_hook = False
    return add_hook(_global_backward_hooks, hook)


def _typename(obj):
    """PyTorch's `torch.typename`: a tensor's type string, else the object's qualified class name."""
    if isinstance(obj, _C.Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def _addindent(text, spaces):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What `load_state_dict` returns: the keys the module expected but did not get, and the
    keys it got but does not have."""

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _forward_unimplemented(self, *input):
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


class Module:
    """Base class of all layers. Attributes that are Parameters, Modules or registered buffers
    are kept in `_parameters`, `_modules` and `_buffers` (so they are found by traversal and
    state_dict), everything else in the instance `__dict__`."""

    dump_patches = False
    _version = 1
    training: bool
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if not self.call_super_init and kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'")
        if not self.call_super_init and args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but {len(args) + 1} were given")
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", OrderedDict())
        setattr_(self, "_buffers", OrderedDict())
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_forward_hooks", OrderedDict())
        setattr_(self, "_forward_hooks_with_kwargs", OrderedDict())
        setattr_(self, "_forward_hooks_always_called", OrderedDict())
        setattr_(self, "_forward_pre_hooks", OrderedDict())
        setattr_(self, "_forward_pre_hooks_with_kwargs", OrderedDict())
        setattr_(self, "_backward_pre_hooks", OrderedDict())
        setattr_(self, "_backward_hooks", OrderedDict())
        setattr_(self, "_is_full_backward_hook", None)
        setattr_(self, "_state_dict_hooks", OrderedDict())
        setattr_(self, "_load_state_dict_pre_hooks", OrderedDict())
        setattr_(self, "_load_state_dict_post_hooks", OrderedDict())
        setattr_(self, "_modules", OrderedDict())
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    forward = _forward_unimplemented

    # ---- registration ----

    def _check_member_name(self, name, kind, store):
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."' + (f", got: {name}" if kind == "module" else ""))
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in store:
            raise KeyError(f"attribute '{name}' already exists")

    def register_buffer(self, name, tensor, persistent=True):
        """Adds a tensor that is part of the module's state but not a parameter (running
        statistics, say). Non-persistent buffers are left out of `state_dict`."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_member_name(name, "buffer", self._buffers)
        if tensor is not None and not isinstance(tensor, _C.Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' (torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Adds a Parameter (or None, a declared but absent parameter such as a missing bias)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_member_name(name, "parameter", self._parameters)
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' (torch.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be created explicitly. To express '{name}' as a function of another Tensor, compute the value in the forward() method.")
        self._parameters[name] = param

    def add_module(self, name, module):
        """Adds a child module, reachable as an attribute called `name`."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        self._check_member_name(name, "module", self._modules)
        self._modules[name] = module

    def register_module(self, name, module):
        """Alias of `add_module`."""
        self.add_module(name, module)

    def get_submodule(self, target):
        """The module at the dotted path `target` ("" is this module)."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_parameter(self, target):
        """The parameter at the dotted path `target`."""
        module_path, _, param_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, param_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + param_name + "`")
        param = getattr(mod, param_name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + param_name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        """The buffer at the dotted path `target`."""
        module_path, _, buffer_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, buffer_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + buffer_name + "`")
        if buffer_name not in mod._buffers:
            raise AttributeError("`" + buffer_name + "` is not a buffer")
        return getattr(mod, buffer_name)

    def get_extra_state(self):
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state):
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    # ---- attribute rules ----

    def __getattr__(self, name):
        # Only called when normal lookup fails: members live in the three dicts.
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            members = d.get(store)
            if members is not None and name in members:
                return members[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, "__dict__", "_buffers", "_modules", "_non_persistent_buffers_set")
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' (torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            self._set_non_parameter(name, value)

    def _set_non_parameter(self, name, value):
        d = self.__dict__
        modules = d.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, "__dict__", "_parameters", "_buffers", "_non_persistent_buffers_set")
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' (torch.nn.Module or None expected)")
            modules[name] = value
        else:
            buffers = d.get("_buffers")
            if buffers is not None and name in buffers:
                if value is not None and not isinstance(value, _C.Tensor):
                    raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' (torch.Tensor or None expected)")
                buffers[name] = value
            else:
                object.__setattr__(self, name, value)

    def _forget(self, name, *stores):
        for store in stores:
            members = self.__dict__ if store == "__dict__" else self.__dict__[store]
            if isinstance(members, set):
                members.discard(name)
            elif name in members:
                del members[name]

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = list(super().__dir__()) + list(self._parameters) + list(self._modules) + list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    def __setstate__(self, state):
        self.__dict__.update(state)
        for store in ("_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_forward_pre_hooks_with_kwargs",
                      "_load_state_dict_post_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks",
                      "_backward_pre_hooks", "_backward_hooks"):
            self.__dict__.setdefault(store, OrderedDict())
        self.__dict__.setdefault("_is_full_backward_hook", None)
        self.__dict__.setdefault("_non_persistent_buffers_set", set())

    # ---- traversal ----

    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in get_members(module):
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield (module_prefix + ("." if module_prefix else "") + name, value)

    def parameters(self, recurse=True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_children(self):
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """This module and every descendant, depth first, each named by its dotted path."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    # ---- modes, gradients, conversion ----

    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Drops every parameter's gradient (or zeroes it in place when `set_to_none=False`)."""
        for p in self.parameters():
            grad = p.grad
            if grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                if grad.grad_fn is not None:
                    grad = grad.detach()
                    p.grad = grad
                else:
                    grad.requires_grad_(False)
                grad.zero_()

    def share_memory(self):
        return self

    def _apply(self, fn, recurse=True):
        """Replaces every parameter's and buffer's data by `fn(data)`, keeping the Parameter
        objects themselves (so optimizers holding them stay valid), as PyTorch does."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        for param in self._parameters.values():
            if param is None:
                continue
            grad = param.grad
            with ember.no_grad():
                new = fn(param)
                if new is not param:  # an unchanged tensor keeps its data
                    param.data = new
                if grad is not None:
                    param.grad = fn(grad)
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def apply(self, fn):
        """Calls `fn` on every descendant (children first) and then on this module."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        """`to(dtype)`, `to(device)`, `to(device, dtype)`, `to(tensor)`: floating-point
        parameters and buffers are cast; integer ones (counters, indices) are left alone.
        `memory_format=` relays out every 4-d and 5-d parameter and buffer, as PyTorch does."""
        device, dtype, memory_format = _parse_to(*args, **kwargs)
        device = ember._device.check(device)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired dtype={dtype}")
        if dtype is None and memory_format is None and device is None:
            return self

        def convert(t):
            t = ember._device.move(t, device)
            if dtype is not None and t.is_floating_point() and t.dtype != dtype:
                t = t._to_dtype(dtype)
            return t.to(memory_format=memory_format) if memory_format is not None and t.ndim in (4, 5) else t

        return self._apply(convert)

    def _cast_floats(self, dtype):
        return self._apply(lambda t: t._to_dtype(dtype) if t.is_floating_point() and t.dtype != dtype else t)

    def float(self):
        return self._cast_floats(ember.float32)

    def double(self):
        return self._cast_floats(ember.float64)

    def half(self):
        return self._cast_floats(ember.float16)

    def bfloat16(self):
        return self._cast_floats(ember.bfloat16)

    def type(self, dst_type):
        return self._apply(lambda t: t._to_dtype(dst_type) if t.dtype != dst_type else t)

    def cpu(self):
        """Moves every parameter and buffer to the CPU."""
        return self.to("cpu")

    def cuda(self, device=None):
        """Moves every parameter and buffer to a CUDA device (the current one, or `device`)."""
        return self.to(ember.device("cuda", device) if isinstance(device, int) else ember.device("cuda" if device is None else device))

    # ---- state dict ----

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + "_extra_state"] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An OrderedDict of every parameter and persistent buffer by dotted name (detached
        tensors sharing the module's memory unless `keep_vars`), with a `_metadata` attribute
        holding each module's version."""
        if args:
            destination, prefix, keep_vars = (list(args) + [destination, prefix, keep_vars][len(args):])[:3]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        metadata = getattr(destination, "_metadata", None)
        # The hooks get the very dict stored in `_metadata`, so what they record is saved.
        local_metadata = {"version": self._version}
        if metadata is not None:
            metadata[prefix[:-1]] = local_metadata
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if result is not None:
                destination = result
        return destination

    def register_state_dict_hook(self, hook):
        return add_hook(self._state_dict_hooks, hook)

    def _register_state_dict_hook(self, hook):
        return self.register_state_dict_hook(hook)

    def register_load_state_dict_pre_hook(self, hook):
        """`hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)`."""
        return add_hook(self._load_state_dict_pre_hooks, hook)

    def register_load_state_dict_post_hook(self, hook):
        """`hook(module, incompatible_keys)`, which may edit the key lists in place."""
        return add_hook(self._load_state_dict_post_hooks, hook)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        """Copies this module's own entries (not its children's) from `state_dict`."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        persistent = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(), persistent.items()) if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key in state_dict:
                self._load_one(name, key, param, state_dict[key], assign, error_msgs)
            elif strict:
                missing_keys.append(key)
        extra_key = prefix + "_extra_state"
        has_extra = type(self).set_extra_state is not Module.set_extra_state
        if has_extra:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_key:
                    head = key[len(prefix):].split(".", 1)[0]
                    if head not in self._modules and head not in local_state:
                        unexpected_keys.append(key)

    def _load_one(self, name, key, param, value, assign, error_msgs):
        if not isinstance(value, _C.Tensor):
            error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like object from checkpoint but received {type(value)}')
            return
        if param.ndim == 0 and value.ndim == 1 and value.shape[0] == 1:
            value = value[0]  # checkpoints from before 0-d tensors stored scalars as 1-element vectors
        if tuple(value.shape) != tuple(param.shape):
            error_msgs.append(f"size mismatch for {key}: copying a param with shape {value.shape} from checkpoint, the shape in current model is {param.shape}.")
            return
        try:
            with ember.no_grad():
                if assign:
                    self._assign(name, param, value)
                else:
                    param.copy_(value)
        except Exception as ex:  # noqa: BLE001  (reported with the key, as PyTorch does)
            error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are {param.size()} and whose dimensions in the checkpoint are {value.size()}, an exception occurred : {ex.args}.')

    def _assign(self, name, param, value):
        if isinstance(param, Parameter):
            if not isinstance(value, Parameter):
                value = Parameter(value, requires_grad=param.requires_grad)
            else:
                value.requires_grad_(param.requires_grad)
        setattr(self, name, value)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copies parameters and buffers from `state_dict` (by dotted name) into this module.
        With `strict`, keys that do not match exactly raise; returns the missing and
        unexpected keys either way."""
        if not isinstance(state_dict, _Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys, unexpected_keys, error_msgs = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True, missing_keys, unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state = {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)}
                    load(child, child_state, child_prefix)
            incompatible = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module._load_state_dict_post_hooks.values():
                hook(module, incompatible)

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(type(self).__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # ---- hooks and calling ----

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """`hook(module, args)` (or `hook(module, args, kwargs)` with `with_kwargs`) runs before
        `forward`; a non-None result replaces the arguments."""
        handle = RemovableHandle(self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """`hook(module, args, output)` (or `hook(module, args, kwargs, output)`) runs after
        `forward`; a non-None result replaces the output. `always_call` runs it even when
        forward raised."""
        handle = RemovableHandle(self._forward_hooks, extra_dict=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """`hook(module, grad_output)` runs when the gradients with respect to the module's
        outputs are known; a non-None result (one entry per output) replaces them."""
        handle = add_hook(self._backward_pre_hooks, hook)
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        """`hook(module, grad_input, grad_output)` runs when the gradients with respect to the
        module's positional inputs are known (one entry per argument, None for non-tensors
        and tensors needing no gradient); a non-None result replaces `grad_input`. Inputs
        and outputs must not be modified in place in forward."""
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. Please use only one of them.")
        self._is_full_backward_hook = True
        handle = add_hook(self._backward_hooks, hook)
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_backward_hook(self, hook):
        """Deprecated. Ember runs it as a full backward hook: `grad_input` holds the gradients
        with respect to the module's inputs, where PyTorch passes those of the last autograd
        node recorded in forward (the same thing for single-op modules such as activations)."""
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. Please use only one of them.")
        self._is_full_backward_hook = False
        return add_hook(self._backward_hooks, hook)

    def _backward_hook_state(self):
        """The hook runner for one forward call, or None when no backward hook applies."""
        hooks = list(_global_backward_hooks.values()) + list(self._backward_hooks.values())
        pre_hooks = list(_global_backward_pre_hooks.values()) + list(self._backward_pre_hooks.values())
        if not (hooks or pre_hooks):
            return None
        return BackwardHookState(self, hooks, pre_hooks)

    def _call_impl(self, *args, **kwargs):
        if not (self._forward_hooks or self._forward_pre_hooks or self._backward_hooks or self._backward_pre_hooks
                or _global_forward_hooks or _global_forward_pre_hooks or _global_backward_hooks or _global_backward_pre_hooks):
            return self.forward(*args, **kwargs)
        args, kwargs = self._run_pre_hooks(args, kwargs)
        backward_hooks = self._backward_hook_state()
        if backward_hooks is not None:
            args = backward_hooks.wrap_inputs(args)
        called = set()
        try:
            result = self.forward(*args, **kwargs)
            result = self._run_post_hooks(args, kwargs, result, called)
        except Exception:
            for hook_id, hook in self._forward_hooks.items():
                if hook_id in self._forward_hooks_always_called and hook_id not in called:
                    try:
                        self._call_post_hook(hook_id, hook, args, kwargs, None)
                    except Exception:  # noqa: BLE001,S110  (the forward error is the one to report)
                        pass
            raise
        if backward_hooks is not None:
            backward_hooks.check_inputs_unmodified(args)
            result = backward_hooks.wrap_outputs(result)
        return result

    __call__ = _call_impl

    def _run_pre_hooks(self, args, kwargs):
        for hook in _global_forward_pre_hooks.values():
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        # A snapshot: a hook may remove itself (a lazy module's initializer does).
        for hook_id, hook in list(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(f"forward pre-hook must return None or a tuple of (new_args, new_kwargs), but got {result}.")
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        return args, kwargs

    def _call_post_hook(self, hook_id, hook, args, kwargs, result):
        if hook_id in self._forward_hooks_with_kwargs:
            return hook(self, args, kwargs, result)
        return hook(self, args, result)

    def _run_post_hooks(self, args, kwargs, result, called):
        for hook in _global_forward_hooks.values():
            hook_result = hook(self, args, result)
            if hook_result is not None:
                result = hook_result
        for hook_id, hook in self._forward_hooks.items():
            called.add(hook_id)
            hook_result = self._call_post_hook(hook_id, hook, args, kwargs, result)
            if hook_result is not None:
                result = hook_result
        return result

    # ---- printing ----

    def _get_name(self):
        return type(self).__name__

    def extra_repr(self):
        """The text inside the parentheses of this module's repr; layers override it."""
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = ["(" + key + "): " + _addindent(repr(module), 2) for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _place(module, device):
    """Moves what a module's `__init__` made to its `device=` argument (None: stays). Modules
    make and initialise their parameters and buffers on the CPU, so a seed gives the same
    initial values whatever the device, then move them as `Module.to` does: each Parameter
    object stays, with its requires_grad. Every module taking `device=` ends its `__init__`
    with this call (a module whose base class already moved everything moves nothing)."""
    if device is not None:
        module.to(device)


def _parse_to(*args, **kwargs):
    """(device, dtype) from `to`'s argument forms."""
    device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    memory_format = kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() received an invalid combination of arguments: unexpected keyword '{next(iter(kwargs))}'")
    for a in args:
        if isinstance(a, _C.dtype):
            dtype = a
        elif isinstance(a, _C.Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, (str, ember.device, int)) and not isinstance(a, bool):
            device = f"cuda:{a}" if isinstance(a, int) else a
        elif isinstance(a, bool):
            continue  # non_blocking given positionally
        else:
            raise TypeError(f"to() received an invalid combination of arguments: {type(a).__name__}")
    return device, dtype, memory_format

