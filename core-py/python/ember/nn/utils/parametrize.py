"""`nn.utils.parametrize`: expressing a parameter or buffer as a function of other tensors.

After `register_parametrization(module, "weight", P)` the module's class is a subclass
`Parametrized<Class>` whose `weight` is a property computing `P(original)`; the tensors it is
computed from live in `module.parametrizations.weight` (a `ParametrizationList`), so the
state_dict keys become `parametrizations.weight.original` (or `original0`, `original1`, ...
when `P.right_inverse` returns several tensors), as in PyTorch."""
import copy
from collections.abc import Sequence
from contextlib import contextmanager

import ember
from ember import _C
from ember.nn.modules.container import ModuleDict, ModuleList
from ember.nn.parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized", "remove_parametrizations",
           "type_before_parametrizations", "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache = {}


@contextmanager
def cached():
    """Within the block each parametrized tensor is computed once, on first access."""
    global _cache_enabled, _cache
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module, name, tensor):
    if isinstance(tensor, Parameter):
        module.register_parameter(name, tensor)
    else:
        module.register_buffer(name, tensor)


def _replace_data(target, value):
    """Makes `target` hold `value`'s data, keeping the `target` object (optimizers may hold it)."""
    if value is not target:
        target.data = value.detach()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the `original` tensor(s)
    they start from (found by running the `right_inverse`s backwards from the tensor)."""

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = tuple(original.shape), original.dtype
        with ember.no_grad():
            new = self._right_inverse_or_keep(original)
        if not isinstance(new, (_C.Tensor, Sequence)):
            raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, _C.Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            self._adopt_single_original(original, new)
        else:
            self._adopt_original_sequence(original, new)
        if not unsafe:
            self._check_unchanged(self(), original_shape, original_dtype)

    def _right_inverse_or_keep(self, value):
        """The right inverses from the last parametrization to the first; those that are
        missing or raise NotImplementedError leave the value as it is."""
        for module in reversed(self):
            if hasattr(module, "right_inverse"):
                try:
                    value = module.right_inverse(value)
                except NotImplementedError:
                    pass
        return value

    def _adopt_single_original(self, original, new):
        if original.dtype != new.dtype:
            raise ValueError(f"When `right_inverse` outputs one tensor, it may not change the dtype.\noriginal.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}")
        with ember.no_grad():
            _replace_data(original, new)
        _register_parameter_or_buffer(self, "original", original)

    def _adopt_original_sequence(self, original, new):
        for i, tensor in enumerate(new):
            if not isinstance(tensor, _C.Tensor):
                raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). Got element {i} of the sequence with type {type(tensor).__name__}.")
            if isinstance(original, Parameter):
                tensor = Parameter(tensor, original.requires_grad)
            tensor.requires_grad_(original.requires_grad)
            _register_parameter_or_buffer(self, f"original{i}", tensor)

    @staticmethod
    def _check_unchanged(value, shape, dtype):
        if not isinstance(value, _C.Tensor):
            raise ValueError(f"A parametrization must return a tensor. Got {type(value).__name__}.")
        if value.dtype != dtype:
            raise ValueError(f"Registering a parametrization may not change the dtype of the tensor, unless `unsafe` flag is enabled.\nunparametrized dtype: {dtype}\nparametrized dtype: {value.dtype}")
        if tuple(value.shape) != shape:
            raise ValueError(f"Registering a parametrization may not change the shape of the tensor, unless `unsafe` flag is enabled.\nunparametrized shape: {ember.Size(shape)}\nparametrized shape: {value.shape}")

    def right_inverse(self, value):
        """Sets the originals so that the parametrized tensor becomes `value`."""
        with ember.no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                self._set_single_original(value)
            else:
                self._set_original_sequence(value)

    def _set_single_original(self, value):
        if not isinstance(value, _C.Tensor):
            raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
        if value.dtype != self.original.dtype:
            raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} while `original` has dtype {self.original.dtype}")
        _replace_data(self.original, value)

    def _set_original_sequence(self, values):
        if not isinstance(values, Sequence):
            raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {type(values).__name__}.")
        if len(values) != self.ntensors:
            raise ValueError(f"'right_inverse' must return a sequence of tensors of length {self.ntensors}. Got a sequence of length {len(values)}.")
        for i, tensor in enumerate(values):
            original = getattr(self, f"original{i}")
            if not isinstance(tensor, _C.Tensor):
                raise ValueError(f"'right_inverse' must return a sequence of tensors or reference-type opaques. Got element {i} of type {type(tensor).__name__}.")
            if original.dtype != tensor.dtype:
                raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype {tensor.dtype} while `original{i}` has dtype {original.dtype}")
            _replace_data(original, tensor)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _refuse_pickling(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through state_dict(). See:\nhttps://pytorch.org/tutorials/beginner/saving_loading_models.html#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")


def _copy_instance(self, memo):
    """deepcopy without __getstate__ (which refuses): a new instance with a copied __dict__."""
    if id(self) in memo:
        return memo[id(self)]
    replica = self.__new__(type(self))
    memo[id(self)] = replica
    replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    return replica


def _inject_new_class(module):
    """Gives `module` a class of its own, so properties added to it touch no other module."""
    cls = type(module)
    members = {"__getstate__": _refuse_pickling}
    if not hasattr(cls, "__deepcopy__"):
        members["__deepcopy__"] = _copy_instance
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), members)


def _inject_property(module, tensor_name):
    """`module.<tensor_name>`: computed by the parametrizations (once per `cached()` block);
    assigning to it goes through their right inverses."""
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        if _cache.get(key) is None:
            _cache[key] = parametrization()
        return _cache[key]

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(type(module), tensor_name, property(get_parametrized, set_original))


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Makes `module.<tensor_name>` be `parametrization(original)`; a second call on the same
    name chains the new parametrization after the existing ones. Unless `unsafe`, the
    parametrization may change neither shape nor dtype."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_chained(module, tensor_name, parametrization)
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with name '{tensor_name}'")
    return module


def _check_chained(module, tensor_name, parametrization):
    current = getattr(module, tensor_name)
    result = parametrization(current)
    if not isinstance(result, _C.Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(result).__name__}.")
    if result.dtype != current.dtype:
        raise ValueError(f"Registering a parametrization may not change the dtype of the tensor, unless the `unsafe` flag is enabled.\nmodule.{tensor_name}.dtype: {current.dtype}\nparametrization(module.{tensor_name}).dtype: {result.dtype}")
    if tuple(result.shape) != tuple(current.shape):
        raise ValueError(f"Registering a parametrization may not change the shape of the tensor, unless the `unsafe` flag is enabled.\nmodule.{tensor_name}.shape: {current.shape}\nparametrization(module.{tensor_name}).shape: {result.shape}")
    if not hasattr(parametrization, "right_inverse"):
        return
    try:
        inverse = parametrization.right_inverse(result)
    except NotImplementedError:
        return
    if not isinstance(inverse, _C.Tensor):
        raise ValueError(f"parametrization.right_inverse must return a tensor. Got: {type(inverse).__name__}")
    if inverse.dtype != current.dtype:
        raise ValueError(f"The tensor returned by parametrization.right_inverse must have the same dtype as module.{tensor_name}, unless the `unsafe` flag is enabled.\nmodule.{tensor_name}.dtype: {current.dtype}\nreturned dtype: {inverse.dtype}")
    if tuple(inverse.shape) != tuple(current.shape):
        raise ValueError(f"The tensor returned by parametrization.right_inverse must have the same shape as module.{tensor_name}, unless the `unsafe` flag is enabled.\nmodule.{tensor_name}.shape: {current.shape}\nreturned shape: {inverse.shape}")


def is_parametrized(module, tensor_name=None):
    """Whether `module` has a parametrization (on `tensor_name`, when given)."""
    parametrizations = getattr(module, "parametrizations", None)
    if not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undoes `register_parametrization` on `tensor_name`: the tensor becomes a parameter (or
    buffer) again, holding its parametrized value (`leave_parametrized`) or the original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with ember.no_grad():
                _replace_data(original, getattr(module, tensor_name))
    elif leave_parametrized:
        value = getattr(module, tensor_name)
        original = Parameter(value.detach(), True) if value.requires_grad else value.detach()
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in terms of a sequence of tensors.")
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type(module).__bases__[0]
    return module


def type_before_parametrizations(module):
    """The module's class as it was before any parametrization."""
    return type(module).__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Registers `from_module`'s parametrizations (all, or those of `tensor_name`) on
    `to_module` too, creating the parameters there first where missing; both modules then
    share the original tensors."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
        for parametrization in from_module.parametrizations[name]:
            register_parametrization(to_module, name, parametrization)
        _share_originals(from_module.parametrizations[name], to_module.parametrizations[name])
    return to_module


def _share_originals(source, target):
    names = ["original"] if source.is_tensor else [f"original{i}" for i in range(source.ntensors)]
    for name in names:
        setattr(target, name, getattr(source, name))

