"""`ember.compat`: runs code written for PyTorch on Ember, unchanged.

    python -m ember.compat script.py [args]      # or: python -m ember.compat -m package.module [args]

or, in a notebook, `import ember.compat; ember.compat.install()` before `import torch`. While
installed, `import torch` (and `torchvision`, `torchaudio`, `torchtext`, `torchdata`, `torchrec`,
`torcharrow`, `functorch`, with their submodules) gives Ember's module itself, so
`torch.Tensor is ember.Tensor`. A torch name Ember lacks raises ModuleNotFoundError (an import)
or AttributeError (an attribute) saying it is not in Ember yet. `uninstall()` puts back whatever
`torch` modules were loaded before (a real PyTorch, say).
"""
import dis
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import multiprocessing.spawn
import sys

__all__ = ["install", "uninstall", "is_installed", "ember_name", "PACKAGES", "MOVED"]

# Each PyTorch package and the Ember package that stands in for it.
PACKAGES = {
    "torch": "ember",
    "torchvision": "embervision",
    "torchaudio": "emberaudio",
    "torchtext": "embertext",
    "torchdata": "emberdata",
    "torchrec": "emberrec",
    "torcharrow": "emberarrow",
    "functorch": "ember.func",
}

# Submodules that live elsewhere in Ember than under their torch parent's stand-in; a submodule
# of one of these follows it (`torch.utils.data.sampler` -> `emberdata.sampler`).
MOVED = {
    "torch.utils.data": "emberdata",
    "torch.utils.data.distributed": "emberdata.sampler",  # DistributedSampler
    "torch.utils.data.graph_settings": "emberdata.datapipes.graph_settings",
}

_PREFIXES = {**PACKAGES, **MOVED}


def _split_prefix(name, table):
    """The longest key of `table` that is `name` or a dotted parent of it, or None."""
    while True:
        if name in table:
            return name
        if "." not in name:
            return None
        name = name.rpartition(".")[0]


def ember_name(torch_name):
    """The Ember module that stands in for `torch_name` (None for a name outside PyTorch's)."""
    prefix = _split_prefix(torch_name, _PREFIXES)
    if prefix is None:
        return None
    return _PREFIXES[prefix] + torch_name[len(prefix):]


def _not_in_ember(torch_name, ember_target):
    prefix = _split_prefix(torch_name, _PREFIXES)
    return f"{torch_name} is not in Ember yet (ember.compat maps {prefix} to {_PREFIXES[prefix]}; {ember_target} does not exist)"


def _find_ember_spec(torch_name, target):
    """The spec of the Ember module `target`, or ModuleNotFoundError naming the torch name."""
    root = target.partition(".")[0]
    if importlib.util.find_spec(root) is None:
        raise ModuleNotFoundError(
            f"{torch_name}: ember.compat maps it to {target}, but {root} is not installed (pip install {root})",
            name=torch_name)
    try:
        spec = importlib.util.find_spec(target)
    except ModuleNotFoundError:  # a parent of `target` is missing or is not a package
        spec = None
    if spec is None:
        raise ModuleNotFoundError(_not_in_ember(torch_name, target), name=torch_name)
    return spec


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers imports of torch names with the Ember modules that stand in for them.

    The import system creates a placeholder module for the torch name; `exec_module` swaps it for
    the Ember module in `sys.modules`, which is what the import returns. Ember's own modules are
    never re-initialised under the torch name (their `__spec__` and `__name__` stay Ember's).
    """

    def __init__(self):
        self.added_attributes = []  # (Ember parent, child name) set by imports of moved modules

    def find_spec(self, fullname, path=None, target=None):
        ember_target = ember_name(fullname)
        if ember_target is None:
            return None
        ember_spec = _find_ember_spec(fullname, ember_target)
        spec = importlib.machinery.ModuleSpec(fullname, self, is_package=ember_spec.submodule_search_locations is not None)
        spec.loader_state = ember_target
        return spec

    def create_module(self, spec):
        return None  # the default placeholder; exec_module replaces it

    def exec_module(self, module):
        spec = module.__spec__
        ember_module = importlib.import_module(spec.loader_state)
        self._note_parent_attribute(spec.name)
        sys.modules[spec.name] = ember_module
        _hooks.add_tree(ember_module, spec.name)

    def _note_parent_attribute(self, torch_name):
        """The import system will set the module on its torch parent, which is an Ember module
        (`torch.utils.data` sets `ember.utils.data`): remembered, so uninstall can undo it."""
        parent_name, _, child = torch_name.rpartition(".")
        parent = sys.modules.get(parent_name)
        if parent is not None and child not in vars(parent):
            self.added_attributes.append((parent, child))


class _AttributeHooks:
    """Module `__getattr__` fallbacks on the Ember modules handed out under torch names: a
    missing attribute is first tried as a submodule (PyTorch imports `torch.utils.data` with
    `torch`), then refused with an AttributeError that names the torch attribute."""

    def __init__(self):
        self.hooked = {}  # module name -> (module, its own __getattr__ or None)

    def add_tree(self, ember_module, torch_name):
        """Hooks `ember_module` and its loaded public submodules."""
        prefix = ember_module.__name__
        self._add(ember_module, torch_name)
        for name, module in list(sys.modules.items()):
            if name.startswith(prefix + ".") and module is not None:
                self._add(module, torch_name + name[len(prefix):])

    def _add(self, module, torch_name):
        name = getattr(module, "__name__", None)
        if not isinstance(name, str) or name in self.hooked or any(p.startswith("_") for p in name.split(".")):
            return
        own = vars(module).get("__getattr__")
        self.hooked[name] = (module, own)
        module.__getattr__ = _missing_attribute_hook(module, torch_name, own)

    def remove_all(self):
        for module, own in self.hooked.values():
            if own is None:
                vars(module).pop("__getattr__", None)
            else:
                module.__getattr__ = own
        self.hooked.clear()


def _missing_attribute_hook(module, torch_name, own):
    def __getattr__(attr):
        if own is not None:
            try:
                return own(attr)
            except AttributeError:
                pass
        if attr.startswith("__"):
            raise AttributeError(f"module {module.__name__!r} has no attribute {attr!r}")
        if hasattr(module, "__path__") or f"{torch_name}.{attr}" in MOVED:
            try:
                return importlib.import_module(f"{torch_name}.{attr}")
            except ModuleNotFoundError as e:
                if e.name != f"{torch_name}.{attr}":
                    raise
        message = (f"{torch_name}.{attr} is not in Ember yet (ember.compat maps {torch_name} to {module.__name__}, "
                   f"which has no attribute {attr!r})")
        if _called_by_from_import():
            raise ImportError(message, name=torch_name)
        raise AttributeError(message)
    return __getattr__


_IMPORT_FROM = dis.opmap["IMPORT_FROM"]


def _called_by_from_import():
    """Whether the failed lookup is `from torch.x import name`. For that statement CPython turns
    an AttributeError into its own "cannot import name 'name' from 'ember.x'", which names no
    torch name; any other exception passes through. Everywhere else (hasattr, getattr with a
    default) only an AttributeError will do."""
    try:
        caller = sys._getframe(2)  # 0: this function, 1: the module __getattr__
    except ValueError:  # looked up from C with no Python code below
        return False
    return caller.f_code.co_code[caller.f_lasti] == _IMPORT_FROM


_finder = _Finder()
_hooks = _AttributeHooks()
_stashed = {}  # torch modules loaded before install (a real PyTorch), put back by uninstall


class _InstallInChild:
    """Rides in multiprocessing's preparation data, which spawn and forkserver children unpickle
    before they re-run the main script: unpickling it installs the shim there, so the script's
    `import torch` (and its classes, which workers unpickle) resolve as in the parent. Forked
    children inherit the shim anyway. (coverage.py carries its start-up the same way.)"""

    def __reduce__(self):
        return install, ()


_plain_preparation_data = multiprocessing.spawn.get_preparation_data


def _preparation_data_with_shim(name):
    data = _plain_preparation_data(name)
    data["ember_compat"] = _InstallInChild()
    return data


def _is_torch_name(name):
    return _split_prefix(name, PACKAGES) is not None


def is_installed():
    return _finder in sys.meta_path


def install():
    """Makes torch names import Ember's modules, ahead of any installed PyTorch. Idempotent."""
    if is_installed():
        return
    for name in [n for n in sys.modules if _is_torch_name(n)]:
        _stashed[name] = sys.modules.pop(name)
    sys.meta_path.insert(0, _finder)
    multiprocessing.spawn.get_preparation_data = _preparation_data_with_shim


def uninstall():
    """Undoes `install`: torch names import what they imported before (or fail again)."""
    if not is_installed():
        return
    sys.meta_path.remove(_finder)
    multiprocessing.spawn.get_preparation_data = _plain_preparation_data
    for name in [n for n in sys.modules if _is_torch_name(n)]:
        del sys.modules[name]
    sys.modules.update(_stashed)
    _stashed.clear()
    _hooks.remove_all()
    for parent, child in _finder.added_attributes:
        vars(parent).pop(child, None)
    _finder.added_attributes.clear()
