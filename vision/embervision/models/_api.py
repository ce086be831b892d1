"""The multi-weight API (TorchVision 0.13) and the model registry of later TorchVision."""
import dataclasses
import fnmatch
import importlib
import inspect
import sys
import typing
from enum import Enum
from types import ModuleType
from typing import Any, Callable, Dict, Iterable, Optional, Union

from ember.hub import load_state_dict_from_url

__all__ = ["Weights", "WeightsEnum", "register_model", "list_models", "get_model", "get_model_builder",
           "get_model_weights", "get_weight"]


class _Preset:
    """`functools.partial`-like constructor of a preset transform of `embervision.transforms._presets`.

    The preset classes are looked up when the transform is built: the models package does not
    import the transforms package.
    """

    def __init__(self, name, **keywords):
        self.name = name
        self.keywords = keywords

    @property
    def func(self):
        return getattr(importlib.import_module("embervision.transforms._presets"), self.name)

    def _resolved_keywords(self):
        kw = dict(self.keywords)
        if isinstance(kw.get("interpolation"), str):
            functional = importlib.import_module("embervision.transforms.functional")
            kw["interpolation"] = functional.InterpolationMode(kw["interpolation"])
        for key in ("mean", "std"):
            if isinstance(kw.get(key), list):
                kw[key] = tuple(kw[key])
        return kw

    def __call__(self, *args, **kwargs):
        func = self.func
        return func(*args, **{**self._resolved_keywords(), **kwargs})

    def __eq__(self, other):
        return isinstance(other, _Preset) and (self.name, self.keywords) == (other.name, other.keywords)

    def __hash__(self):
        return hash((self.name, tuple(sorted((k, repr(v)) for k, v in self.keywords.items()))))

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.keywords.items())
        return f"functools.partial({self.name}, {args})"


@dataclasses.dataclass
class Weights:
    """One set of pretrained weights: where to download them (`url`), the preset that prepares
    inputs as in training (`transforms`, a callable returning the transform) and `meta` (categories,
    num_params, min_size, _metrics, recipe, _ops, _file_size, _docs)."""

    url: str
    transforms: Callable
    meta: Dict[str, Any]

    def __eq__(self, other):
        if not isinstance(other, Weights):
            return NotImplemented
        return self.url == other.url and self.meta == other.meta and self.transforms == other.transforms


class WeightsEnum(Enum):
    """Base class of every model's weights enum (its values are `Weights`)."""

    @classmethod
    def verify(cls, obj):
        """Returns the member that `obj` names (`None`, a member, "NAME" or "Class.NAME")."""
        if obj is not None:
            if type(obj) is str:
                key = obj.replace(cls.__name__ + ".", "")
                try:
                    obj = cls[key]
                except KeyError:
                    raise ValueError(
                        f"Invalid weight name provided: '{obj}'. {cls.__name__} has: {', '.join(cls.__members__)}."
                    ) from None
            elif not isinstance(obj, cls):
                raise TypeError(
                    f"Invalid Weight class provided; expected {cls.__name__} but received {obj.__class__.__name__}."
                )
        return obj

    def get_state_dict(self, *args, **kwargs):
        """The state dict, through `ember.hub.load_state_dict_from_url(self.url, *args, **kwargs)`
        (`progress`, `model_dir`, `check_hash`, ...)."""
        return load_state_dict_from_url(self.url, *args, **kwargs)

    def __repr__(self):
        return f"{self.__class__.__name__}.{self._name_}"

    # Members pickle and deep-copy by name: the enum class is found again on load, and the
    # member is the same object (Enum's default pickles the value, whose transforms may not pickle).
    def __reduce_ex__(self, protocol):
        return getattr, (self.__class__, self._name_)

    def __deepcopy__(self, memo):
        return self

    def __copy__(self):
        return self

    @property
    def url(self):
        return self.value.url

    @property
    def transforms(self):
        return self.value.transforms

    @property
    def meta(self):
        return self.value.meta


def get_weight(name: str) -> WeightsEnum:
    """The weight member called `name` ("ResNet50_Weights.IMAGENET1K_V1")."""
    try:
        enum_name, value_name = name.split(".")
    except ValueError:
        raise ValueError(f"Invalid weight name provided: '{name}'.") from None
    models = importlib.import_module("embervision.models")
    candidates = [models] + [m for n, m in sorted(sys.modules.items()) if n.startswith("embervision.models.") and m]
    weights_enum = None
    for module in candidates:
        found = module.__dict__.get(enum_name)
        if isinstance(found, type) and issubclass(found, WeightsEnum):
            weights_enum = found
            break
    if weights_enum is None:
        raise ValueError(f"The weight enum '{enum_name}' for the specific method couldn't be retrieved.")
    return weights_enum[value_name]


def get_model_weights(name: Union[Callable, str]) -> type:
    """The weights enum class of a model (given by name or builder)."""
    model = get_model_builder(name) if isinstance(name, str) else name
    return _get_enum_from_fn(model)


def _get_enum_from_fn(fn):
    sig = inspect.signature(fn)
    if "weights" not in sig.parameters:
        raise ValueError("The method is missing the 'weights' argument.")
    annotation = sig.parameters["weights"].annotation
    weights_enum = None
    if isinstance(annotation, type) and issubclass(annotation, WeightsEnum):
        weights_enum = annotation
    else:
        for t in typing.get_args(annotation):
            if isinstance(t, type) and issubclass(t, WeightsEnum):
                weights_enum = t
                break
    if weights_enum is None:
        raise ValueError(
            "The WeightsEnum class for the specific method couldn't be retrieved. Make sure the typing info is correct."
        )
    return weights_enum


BUILTIN_MODELS: Dict[str, Callable] = {}


def register_model(name: Optional[str] = None):
    """Decorator registering a model builder under `name` (default: the function's name)."""

    def wrapper(fn):
        key = name if name is not None else fn.__name__
        if key in BUILTIN_MODELS:
            raise ValueError(f"An entry is already registered under the name '{key}'.")
        BUILTIN_MODELS[key] = fn
        return fn

    return wrapper


def list_models(module: Optional[ModuleType] = None, include: Union[Iterable[str], str, None] = None,
                exclude: Union[Iterable[str], str, None] = None):
    """Sorted names of the registered models, optionally those of `module` only, filtered by
    `include` (union of fnmatch patterns) then `exclude` (patterns removed)."""
    all_models = {
        k for k, v in BUILTIN_MODELS.items() if module is None or v.__module__.rsplit(".", 1)[0] == module.__name__
    }
    if include:
        models = set()
        for pattern in [include] if isinstance(include, str) else include:
            models |= set(fnmatch.filter(all_models, pattern))
    else:
        models = all_models
    if exclude:
        for pattern in [exclude] if isinstance(exclude, str) else exclude:
            models -= set(fnmatch.filter(all_models, pattern))
    return sorted(models)


def get_model_builder(name: str):
    """The builder registered under `name`."""
    name = name.lower()
    try:
        return BUILTIN_MODELS[name]
    except KeyError:
        raise ValueError(f"Unknown model {name}") from None


def get_model(name: str, **config):
    """Builds the registered model `name` with `config` passed to its builder."""
    return get_model_builder(name)(**config)


def _weights_from_data(enum_name, member):
    """The `Weights` of `enum_name.member` from the generated table."""
    from embervision.models._weights_data import WEIGHTS

    entry = WEIGHTS[enum_name]["entries"][member]
    return Weights(url=entry["url"], transforms=_Preset("ImageClassification", **entry["transforms"]),
                   meta=dict(entry["meta"]))


def _weights_enum(enum_name, module):
    """The weights enum `enum_name` (defined in `module`) with the members and DEFAULT alias of the table."""
    from embervision.models._weights_data import WEIGHTS

    data = WEIGHTS[enum_name]
    members = [(m, _weights_from_data(enum_name, m)) for m in data["entries"]]
    values = dict(members)
    members.append(("DEFAULT", values[data["default"]]))
    return WeightsEnum(enum_name, members, module=module, qualname=enum_name)
