"""The named tuples of ops that return several tensors, as `torch.return_types`: fields by name,
unpacking like a tuple, PyTorch's repr, and picklable (each class lives in this module)."""
import collections


def _named_result(name, fields):
    def __repr__(self):
        body = ",\n".join(f"{field}={value!r}" for field, value in zip(self._fields, self))
        return f"ember.return_types.{name}(\n{body})"

    base = collections.namedtuple(name, fields)
    return type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__module__": __name__})


_VALUES_INDICES = ("max", "min", "sort", "topk", "mode", "median", "nanmedian", "kthvalue", "cummax", "cummin")
globals().update({name: _named_result(name, ["values", "indices"]) for name in _VALUES_INDICES})
aminmax = _named_result("aminmax", ["min", "max"])

__all__ = [*_VALUES_INDICES, "aminmax"]
