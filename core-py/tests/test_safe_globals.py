"""`ember.serialization.add_safe_globals` and friends: checkpoints written by torch.save with NumPy
values and a script's own class (fixtures from `fixtures/make_safe_globals_fixtures.py`) are
refused by `weights_only` loading, naming the global and how to allow it, and load once allowed."""
import os
import pickle

import numpy as np
import pytest

import ember
from ember import serialization

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
NUMPY_CKPT = os.path.join(FIXTURES, "torch_numpy.pth")
CLASS_CKPT = os.path.join(FIXTURES, "torch_custom_class.pth")

# What the NumPy fixture needs, in the order loading asks for it (as PyTorch asks).
NUMPY_GLOBALS = [np._core.multiarray._reconstruct, np.ndarray, np.dtype, np.dtypes.Float32DType,
                 np.dtypes.Int64DType, np._core.multiarray.scalar, np.dtypes.Float64DType, np.dtypes.Int16DType]


class RunConfig:
    """Stands for the fixture's `__main__.RunConfig`."""


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


def make_point(x, y):
    return Point(x, y)


@pytest.fixture(autouse=True)
def _empty_allow_list():
    serialization.clear_safe_globals()
    yield
    serialization.clear_safe_globals()


def legacy_checkpoint(path, payload):
    """A legacy-format checkpoint whose object is the pickle `payload`."""
    head = b"".join(pickle.dumps(x, protocol=2) for x in (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}))
    path.write_bytes(head + payload + pickle.dumps([], protocol=2))
    return path


def test_numpy_values_are_refused_by_name_with_how_to_allow():
    with pytest.raises(pickle.UnpicklingError) as e:
        ember.load(NUMPY_CKPT)
    message = str(e.value)
    assert "GLOBAL numpy._core.multiarray._reconstruct" in message
    assert "ember.serialization.add_safe_globals([numpy._core.multiarray._reconstruct])" in message
    assert "ember.serialization.safe_globals(" in message and NUMPY_CKPT in message


@pytest.mark.parametrize("allowed, missing", [
    (1, "GLOBAL numpy.ndarray"),
    (2, "GLOBAL numpy.dtype"),
    # A dtype's state is set by BUILD: its class must be allowed too, as in PyTorch.
    (3, "an object of type numpy.dtypes.Float32DType"),
    (5, "GLOBAL numpy._core.multiarray.scalar"),
])
def test_each_missing_numpy_global_is_named(allowed, missing):
    serialization.add_safe_globals(NUMPY_GLOBALS[:allowed])
    with pytest.raises(pickle.UnpicklingError, match=missing.replace(".", r"\.")):
        ember.load(NUMPY_CKPT)


def test_numpy_values_load_once_allowed():
    with serialization.safe_globals(NUMPY_GLOBALS):
        ckpt = ember.load(NUMPY_CKPT)
    assert isinstance(ckpt["weight"], ember.Tensor)
    assert np.array_equal(np.asarray(ckpt["weight"]), np.arange(6.0).reshape(2, 3))
    assert ckpt["mean"].dtype == np.float32 and np.allclose(ckpt["mean"], [0.485, 0.456, 0.406])
    assert np.array_equal(ckpt["counts"], np.arange(4).reshape(2, 2)) and ckpt["counts"].dtype == np.int64
    assert type(ckpt["best_score"]) is np.float64 and ckpt["best_score"] == 0.875
    assert ckpt["label_dtype"] == np.dtype("int16")
    # The block's globals are gone after it.
    assert serialization.get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError, match="_reconstruct"):
        ember.load(NUMPY_CKPT)


def test_a_class_pickled_from_main_loads_under_the_name_given():
    with pytest.raises(pickle.UnpicklingError, match=r"add_safe_globals\(\[__main__\.RunConfig\]\)"):
        ember.load(CLASS_CKPT)
    serialization.add_safe_globals([(RunConfig, "__main__.RunConfig")])
    ckpt = ember.load(CLASS_CKPT)
    config = ckpt["config"]
    assert type(config) is RunConfig and ckpt["step"] == 7
    assert config.lr == 0.01 and config.layers == [64, 32]
    assert isinstance(config.weights, ember.Tensor) and config.weights.tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_a_class_is_known_by_its_module_and_qualname(tmp_path):
    path = tmp_path / "p.pt"
    ember.save({"p": Point(1, ember.ones(2))}, path)
    with pytest.raises(pickle.UnpicklingError, match=rf"GLOBAL {__name__}\.Point"):
        ember.load(path)
    serialization.add_safe_globals([Point])
    p = ember.load(path)["p"]
    assert type(p) is Point and p.x == 1 and p.y.tolist() == [1.0, 1.0]
    assert ember.load(path, weights_only=False)["p"].x == 1


@pytest.mark.parametrize("allowed", [Point, make_point])
def test_a_file_cannot_set_state_on_an_allowed_global_itself(tmp_path, allowed):
    # GLOBAL <allowed>; BUILD (None, {"x": 1}) would set `allowed.x` for every later load.
    module, name = serialization._safe_globals._pickle_name(allowed)[0].rsplit(".", 1)
    payload = b"\x80\x02c" + f"{module}\n{name}\n".encode() + b"N}X\x01\x00\x00\x00xK\x01s\x86b."
    serialization.add_safe_globals([allowed])
    with pytest.raises(pickle.UnpicklingError, match="can only set the state"):
        ember.load(legacy_checkpoint(tmp_path / "evil.pt", payload))
    assert "x" not in vars(allowed)


def test_the_allow_list_functions():
    serialization.add_safe_globals([Point, (RunConfig, "__main__.RunConfig")])
    serialization.add_safe_globals([Point])
    assert serialization.get_safe_globals() == [Point, (RunConfig, "__main__.RunConfig")]
    with serialization.safe_globals([Point, np.ndarray]):
        assert serialization.get_safe_globals() == [Point, (RunConfig, "__main__.RunConfig"), np.ndarray]
    # Entries allowed before the block stay allowed after it.
    assert serialization.get_safe_globals() == [Point, (RunConfig, "__main__.RunConfig")]
    serialization.clear_safe_globals()
    assert serialization.get_safe_globals() == []


def test_malformed_entries_are_refused_whole():
    with pytest.raises(ValueError, match="tuple of length 2"):
        serialization.add_safe_globals([Point, (RunConfig, "a.b", 3)])
    with pytest.raises(TypeError, match="str of callable full path"):
        serialization.add_safe_globals([(RunConfig, 3)])
    assert serialization.get_safe_globals() == []


def test_tensors_and_state_dicts_load_with_globals_allowed(tmp_path):
    # Allowed globals switch loading to the checked unpickler: Ember's own objects still load.
    path = tmp_path / "m.pt"
    model = ember.nn.Linear(3, 2)
    ember.save({"model": model.state_dict(), "param": ember.nn.Parameter(ember.ones(2))}, path)
    serialization.add_safe_globals([Point])
    ckpt = ember.load(path)
    assert list(ckpt["model"]) == ["weight", "bias"] and hasattr(ckpt["model"], "_metadata")
    assert isinstance(ckpt["param"], ember.nn.Parameter)
    assert ember.load(path, mmap=True)["model"]["weight"].tolist() == model.weight.tolist()
