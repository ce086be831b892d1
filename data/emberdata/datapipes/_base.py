"""IterDataPipe, MapDataPipe, DataChunk and the functional-name registry (torch.utils.data.datapipes)."""
import functools
import inspect
import pickle

from emberdata.dataset import Dataset, IterableDataset

try:
    import dill

    DILL_AVAILABLE = True
except ImportError:
    dill = None
    DILL_AVAILABLE = False


class DataChunk(list):
    """A list that marks a batch, so that `unbatch` and `in_batch_shuffle` know where batches are."""

    def as_str(self, indent=""):
        return indent + "[" + ", ".join(str(i) for i in iter(self)) + "]"

    def raw_iterator(self):
        yield from list.__iter__(self)


def _is_unpicklable_fn(obj):
    """Lambdas and functions defined inside other functions pickle by name, which cannot work."""
    return inspect.isfunction(obj) and ("<lambda>" in obj.__qualname__ or "<locals>" in obj.__qualname__)


def _describe_fn(fn):
    code = fn.__code__
    return f"{fn.__qualname__} ({code.co_filename}:{code.co_firstlineno})"


class _DillFunction:
    """A lambda carried through pickle as dill bytes (only built when dill is installed); where
    it is not pickled (a forked worker inherits it) it calls the function itself."""

    def __init__(self, fn):
        self.fn = fn
        self.payload = dill.dumps(fn)

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def __reduce__(self):
        return dill.loads, (self.payload,)


def picklable_function(fn):
    """`fn` itself, or, for a lambda or local function when `dill` is installed, a stand-in that
    pickles it by value (as TorchData does)."""
    return _DillFunction(fn) if DILL_AVAILABLE and _is_unpicklable_fn(fn) else fn


def _serialize_value(owner, name, value):
    if _is_unpicklable_fn(value):
        if DILL_AVAILABLE:
            return picklable_function(value)
        raise pickle.PicklingError(
            f"{type(owner).__name__}.{name}: cannot pickle the local function or lambda {_describe_fn(value)}; "
            "install `dill`, or use a module-level function or functools.partial (needed for worker processes)"
        )
    return value


class _DataPipeBase:
    functions = {}

    @classmethod
    def register_datapipe_as_function(cls, function_name, cls_to_register, enable_df_api_tracing=False):
        if function_name in cls.functions:
            raise Exception(f"Unable to add DataPipe function name {function_name} as it is already taken")
        cls.functions[function_name] = cls_to_register

    def __getattr__(self, name):
        fn_cls = type(self).functions.get(name)
        if fn_cls is None:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        return functools.partial(fn_cls, self)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(type(self).functions))

    def __getstate__(self):
        # Lambdas would make worker processes fail late and obscurely; name them here instead.
        return {k: _serialize_value(self, k, v) for k, v in self.__dict__.items()}

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __repr__(self):
        return f"{type(self).__name__}"


class IterDataPipe(_DataPipeBase, IterableDataset):
    """An iterable over samples; `dp.map(fn)` and friends build a graph of IterDataPipes."""

    functions = {}

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __len__(self):
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")


class MapDataPipe(_DataPipeBase, Dataset):
    """A map-style dataset (`__getitem__`, `__len__`) with functional names such as `dp.map(fn)`."""

    functions = {}

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __iter__(self):
        # Iterating a map-style pipe walks its indices, as sequences do.
        for i in range(len(self)):
            yield self[i]


class functional_datapipe:
    """Class decorator: `@functional_datapipe("map")` makes `dp.map(...)` build that DataPipe."""

    def __init__(self, name, enable_df_api_tracing=False):
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"functional_datapipe(): name must be an identifier string, got {name!r}")
        self.name = name
        self.enable_df_api_tracing = enable_df_api_tracing

    def __call__(self, cls):
        if issubclass(cls, IterDataPipe):
            IterDataPipe.register_datapipe_as_function(self.name, cls, self.enable_df_api_tracing)
        elif issubclass(cls, MapDataPipe):
            MapDataPipe.register_datapipe_as_function(self.name, cls)
        else:
            raise TypeError(f"functional_datapipe: {cls.__name__} must subclass IterDataPipe or MapDataPipe")
        return cls


def check_datapipe(value, name, kind=IterDataPipe):
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be an {kind.__name__}, got {type(value).__name__}")
    return value


def check_callable(value, name, allow_none=False):
    if value is None and allow_none:
        return value
    if not callable(value):
        raise TypeError(f"{name} must be callable, got {type(value).__name__}")
    return value


def check_int(value, name, minimum=None, allow_none=False):
    if value is None and allow_none:
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value
