"""Models against TorchVision: state-dict keys and shapes, logits with synthetic weights, and the
weight entries (fixtures/models_manifest.json, made by fixtures/make_model_fixtures.py).

Models above SMALL parameters run only with EMBERVISION_SLOW_TESTS=1."""
import json
import os
import sys

import numpy as np
import pytest

import ember
import embervision.models as M

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "fixtures"))
import synthetic  # noqa: E402

with open(os.path.join(HERE, "fixtures", "models_manifest.json")) as f:
    MANIFEST = json.load(f)

SLOW = os.environ.get("EMBERVISION_SLOW_TESTS") == "1"
SMALL = 30_000_000
IMPLEMENTED = M.list_models()
README = open(os.path.join(HERE, "..", "README.md")).read()


def _size_gate(params):
    if params > SMALL and not SLOW:
        pytest.skip(f"{params} parameters: set EMBERVISION_SLOW_TESTS=1")


def test_registered_builders_are_torchvision_builders():
    assert set(IMPLEMENTED) <= set(MANIFEST["builders"])
    assert len(IMPLEMENTED) >= 10


@pytest.mark.parametrize("name", sorted(MANIFEST["builders"]))
def test_missing_builders_are_listed_in_readme(name):
    if name not in IMPLEMENTED:
        assert f"`{name}`" in README, f"{name} is neither implemented nor listed as missing in vision/README.md"


@pytest.mark.parametrize("name", IMPLEMENTED)
def test_weights_equal_torchvision(name):
    expected = MANIFEST["weights"][MANIFEST["builders"][name]["weights_enum"]]
    enum_cls = M.get_model_weights(name)
    assert enum_cls.__name__ == MANIFEST["builders"][name]["weights_enum"]
    assert enum_cls.DEFAULT.name == expected["default"]
    assert [m.name for m in enum_cls] == list(expected["members"])
    for member in enum_cls:
        want = expected["members"][member.name]
        assert member.url == want["url"]
        t = dict(want["transforms"])
        assert t.pop("preset") == member.transforms.name
        assert member.transforms.keywords == t
        meta = dict(member.meta)
        cats = meta.pop("categories")
        assert (None if cats is None else __import__("hashlib").sha256("\n".join(cats).encode()).hexdigest()) == \
            want["meta"]["categories"]
        want_meta = {k: v for k, v in want["meta"].items() if k != "categories"}
        assert json.loads(json.dumps(meta, default=list).replace("NaN", '"nan"')) == want_meta


@pytest.mark.parametrize("name", IMPLEMENTED)
def test_state_dict_keys_and_shapes(name):
    entry = MANIFEST["builders"][name]
    _size_gate(entry["num_params"])
    ember.manual_seed(0)
    model = M.get_model(name)
    got = [[k, list(v.shape), str(v.dtype).replace("ember.", "")] for k, v in model.state_dict().items()]
    assert got == entry["keys"]


@pytest.mark.parametrize("name", IMPLEMENTED)
def test_logits_equal_torchvision(name):
    entry = MANIFEST["builders"][name]["logits"]
    if entry is None:
        pytest.skip("no stored logits (too large)")
    _size_gate(entry["params"])
    ember.manual_seed(0)
    model = M.get_model(name, **entry["kwargs"]).eval()
    params = dict(model.named_parameters())
    sd = model.state_dict()
    for k, v in sd.items():
        if synthetic.is_synthetic(k, k in params):
            sd[k] = ember.from_numpy(synthetic.value(k, tuple(v.shape)))
    model.load_state_dict(sd)
    with ember.no_grad():
        out = model(ember.from_numpy(synthetic.image(tuple(entry["input"]))))
    got = out.numpy().ravel()
    want = np.array(entry["values"], dtype=np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(want).max()))
