"""`ember.utils.hooks`: the handle that module hooks return (`handle.remove()`, or use it as a
context manager). Tensor hooks return the native handle of the same name from `ember._C`."""
import weakref
from collections import OrderedDict


class RemovableHandle:
    """Removes one hook from the dicts it was registered in. The dicts are held weakly, so a
    handle kept after its module is gone does not keep the module's hooks alive."""

    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        extras = extra_dict if isinstance(extra_dict, (list, tuple)) else [extra_dict] if extra_dict is not None else []
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras)

    def remove(self):
        for ref in (self.hooks_dict_ref,) + self.extra_dict_ref:
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __getstate__(self):
        # The dicts themselves, so a copied or unpickled module's handle removes its own hooks.
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state):
        hooks_dict, self.id, extras = state
        if hooks_dict is None:  # its module was gone when saved: nothing left to remove
            hooks_dict = self._orphan_hooks = OrderedDict()
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras if d is not None)
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.remove()

    def __repr__(self):
        return f"<ember.utils.hooks.RemovableHandle id={self.id}>"


def add_hook(hooks_dict, hook, **kwargs):
    """Registers `hook` in `hooks_dict` and returns the handle that removes it."""
    handle = RemovableHandle(hooks_dict, **kwargs)
    hooks_dict[handle.id] = hook
    return handle
