"""Builder helpers: the deprecated `pretrained=` interface and argument checks against weights."""
import functools
import inspect
import warnings

from embervision.models._api import WeightsEnum


def _sequence_to_str(seq, separate_last=""):
    if not seq:
        return ""
    if len(seq) == 1:
        return f"'{seq[0]}'"
    head = "'" + "', '".join(str(item) for item in seq[:-1]) + "'"
    tail = f"{'' if separate_last and len(seq) == 2 else ','} {separate_last}'{seq[-1]}'"
    return head + tail


def kwonly_to_pos_or_kw(fn):
    """Accepts the keyword-only parameters of `fn` positionally too, with a deprecation warning."""
    params = inspect.signature(fn).parameters
    try:
        start = next(i for i, p in enumerate(params.values()) if p.kind == p.KEYWORD_ONLY)
    except StopIteration:
        raise TypeError(f"Found no keyword-only parameter on function '{fn.__name__}'") from None
    names = tuple(params)[start:]

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        args, extra = args[:start], args[start:]
        if extra:
            extra_kwargs = dict(zip(names, extra))
            warnings.warn(
                f"Using {_sequence_to_str(tuple(extra_kwargs), separate_last='and ')} as positional parameter(s) is "
                "deprecated since 0.13 and may be removed in the future. Please use keyword parameter(s) instead."
            )
            kwargs.update(extra_kwargs)
        return fn(*args, **kwargs)

    return wrapper


def handle_legacy_interface(**weights):
    """Maps the pre-0.13 `pretrained=True/False` (and positional) arguments onto `weights=`, with
    TorchVision's deprecation warnings. Each keyword is `weights_param=(legacy_name, default)`, the
    default being a member or a callable of the keyword arguments."""

    def outer(builder):
        @kwonly_to_pos_or_kw
        @functools.wraps(builder)
        def inner(*args, **kwargs):
            for weights_param, (pretrained_param, default) in weights.items():
                sentinel = object()
                weights_arg = kwargs.get(weights_param, sentinel)
                if ((weights_param not in kwargs and pretrained_param not in kwargs)
                        or isinstance(weights_arg, WeightsEnum)
                        or (isinstance(weights_arg, str) and weights_arg != "legacy")
                        or weights_arg is None):
                    continue
                positional = weights_arg is not sentinel
                if positional:
                    kwargs[pretrained_param] = pretrained_arg = kwargs.pop(weights_param)
                else:
                    pretrained_arg = kwargs[pretrained_param]
                if pretrained_arg:
                    default_arg = default(kwargs) if callable(default) else default
                    if not isinstance(default_arg, WeightsEnum):
                        raise ValueError(f"No weights available for model {builder.__name__}")
                else:
                    default_arg = None
                if not positional:
                    warnings.warn(
                        f"The parameter '{pretrained_param}' is deprecated since 0.13 and may be removed in the "
                        f"future, please use '{weights_param}' instead."
                    )
                msg = (
                    f"Arguments other than a weight enum or `None` for '{weights_param}' are deprecated since 0.13 "
                    f"and may be removed in the future. The current behavior is equivalent to passing "
                    f"`{weights_param}={default_arg}`."
                )
                if pretrained_arg:
                    msg += (f" You can also use `{weights_param}={type(default_arg).__name__}.DEFAULT` to get the "
                            "most up-to-date weights.")
                warnings.warn(msg)
                del kwargs[pretrained_param]
                kwargs[weights_param] = default_arg
            return builder(*args, **kwargs)

        return inner

    return outer


def _ovewrite_named_param(kwargs, param, new_value):
    if param in kwargs:
        if kwargs[param] != new_value:
            raise ValueError(f"The parameter '{param}' expected value {new_value} but got {kwargs[param]} instead.")
    else:
        kwargs[param] = new_value


def _ovewrite_value_param(param, actual, expected):
    if actual is not None and actual != expected:
        raise ValueError(f"The parameter '{param}' expected value {expected} but got {actual} instead.")
    return expected


def _make_divisible(v, divisor, min_value=None):
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:  # do not round down by more than 10%
        new_v += divisor
    return new_v


def _load_weights(model, weights, progress):
    """Loads `weights` (a member) into `model`."""
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


_FIRST = object()


def _builder(weights_enum, legacy=True, pretrained=_FIRST):
    """Registers a builder and (with `legacy`) accepts the deprecated `pretrained=`, meaning the
    enum's first (V1) weights unless `pretrained` names other ones (None: no legacy weights, so
    `pretrained=True` raises as in TorchVision)."""
    from embervision.models._api import register_model

    first = next(iter(weights_enum)) if pretrained is _FIRST else pretrained

    def wrap(fn):
        if legacy:
            fn = handle_legacy_interface(weights=("pretrained", first))(fn)
        return register_model()(fn)

    return wrap


def _check_classes(kwargs, weights):
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
