"""Globals the caller lets `weights_only` loading use beyond Ember's own list, as
`torch.serialization.add_safe_globals` does: NumPy arrays, a training script's config class...

An entry is the object itself, known in a pickle as `module.qualname`, or a pair `(object,
"module.name")` for an object a file names otherwise (a class pickled from `__main__`, a NumPy
function under its NumPy 1 name). The list is process-wide, as PyTorch's is.
"""
from contextlib import contextmanager

_entries = {}  # entry -> None: an ordered set, in the order added


def _pickle_name(entry):
    """(the name a pickle uses for the entry, the object)."""
    if isinstance(entry, tuple):
        if len(entry) != 2:
            raise ValueError("Expected tuple of length 2 (global, str of callable full path), "
                             f"but got tuple of length: {len(entry)}")
        obj, name = entry
        if type(name) is not str:
            raise TypeError(f"Expected second item in tuple to be str of callable full path, but got: {type(name)}")
        return name, obj
    return f"{entry.__module__}.{entry.__qualname__}", entry


def add_safe_globals(safe_globals):
    """Allows these globals (objects, or `(object, "module.name")` pairs) in `weights_only` loads."""
    safe_globals = list(safe_globals)
    for entry in safe_globals:
        _pickle_name(entry)  # refuse a malformed entry before adding any
    _entries.update(dict.fromkeys(safe_globals))


def get_safe_globals():
    """The globals added by `add_safe_globals`, as they were given."""
    return list(_entries)


def clear_safe_globals():
    _entries.clear()


@contextmanager
def safe_globals(safe_globals):
    """Allows these globals inside the `with` block; entries allowed before it stay allowed."""
    added = [entry for entry in safe_globals if entry not in _entries]
    add_safe_globals(added)
    try:
        yield
    finally:
        for entry in added:
            _entries.pop(entry, None)


def by_pickle_name():
    """{name a pickle uses: object} for the entries allowed now."""
    return dict(_pickle_name(entry) for entry in _entries)
