"""`LazyModuleMixin`: modules whose parameter shapes come from their first input. Until the
first forward the parameters are `UninitializedParameter`s; that call runs
`initialize_parameters(*args)`, then the module turns into its `cls_to_become` (LazyLinear
into Linear, ...). A state_dict with real tensors materializes them on loading."""
import itertools

from ember.nn.modules.module import _place
from ember.nn.parameter import _MaterializedBuffer, is_lazy

__all__ = ["LazyModuleMixin"]


def _lazy_load_pre_hook(module, state_dict, prefix, *args):
    module._lazy_load_hook(state_dict, prefix, *args)


class LazyModuleMixin:
    """Put before the layer class in the bases; the subclass defines `initialize_parameters`."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = self.register_load_state_dict_pre_hook(_lazy_load_pre_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        # Uninitialized entries are saved as themselves: detaching would lose what they are.
        for name, value in itertools.chain(self._parameters.items(), self._buffers.items()):
            if value is None or name in self._non_persistent_buffers_set:
                continue
            destination[prefix + name] = value if keep_vars or is_lazy(value) else value.detach()

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        """Gives uninitialized entries the shape of the real tensors about to be loaded."""
        for name, value in itertools.chain(self._parameters.items(), self._buffers.items()):
            incoming = state_dict.get(prefix + name)
            if value is not None and incoming is not None and is_lazy(value) and not is_lazy(incoming):
                value.materialize(incoming.shape)
        self._adopt_materialized_buffers()

    def _load_one(self, name, key, param, value, assign, error_msgs):
        if is_lazy(param) and is_lazy(value):
            return  # both still uninitialized: nothing to copy
        super()._load_one(name, key, param, value, assign, error_msgs)

    def _apply(self, fn, recurse=True):
        # Module._apply replaces buffers by fn's results, which would lose the placeholders:
        # they take the converted data (a dtype change, say) and stay.
        placeholders = {name: buf for name, buf in self._buffers.items() if is_lazy(buf)}
        super()._apply(fn, recurse)
        for name, buf in placeholders.items():
            if self._buffers[name] is not buf:  # fn may return its input unchanged
                buf.data = self._buffers[name]
                self._buffers[name] = buf
        return self

    def _adopt_materialized_buffers(self):
        for name, buf in self._buffers.items():
            if type(buf) is _MaterializedBuffer:
                self._buffers[name] = buf.detach()  # a plain tensor on the same memory

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self).__name__}")

    def has_uninitialized_params(self):
        """Whether any parameter or buffer still waits for its shape."""
        return any(is_lazy(v) for v in itertools.chain(self._parameters.values(), self._buffers.values()))

    def _infer_parameters(self, module, args, kwargs=None):
        """The forward pre-hook of the first call: materialize, then become `cls_to_become`.
        Like every module, it initialises on the CPU (so a seed gives the same values whatever
        the device), then moves to the placeholders' device (`device=`, or a later `.to`)."""
        device = next((v.device for v in itertools.chain(module._parameters.values(), module._buffers.values())
                       if v is not None and is_lazy(v)), None)
        if device is not None:
            module.cpu()
        try:
            module.initialize_parameters(*args, **(kwargs or {}))
            module._adopt_materialized_buffers()
        finally:
            _place(module, device)
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        del module._initialize_hook, module._load_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with `DataParallel`. Run a dummy forward pass to correctly initialize the modules")
