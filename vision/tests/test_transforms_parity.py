"""embervision.transforms.functional against TorchVision's outputs stored in fixtures/transforms_expected.npz
(made by fixtures/make_transforms_fixtures.py on the same inputs and parameters)."""
import os
import sys

import numpy as np
import pytest

import ember
import embervision.transforms.functional as F
from embervision.transforms import InterpolationMode

PIL = pytest.importorskip("PIL.Image")

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
sys.path.insert(0, FIXTURES)
from transforms_cases import PRESET_CASES, cases, inputs, pil_images  # noqa: E402

EXPECTED = np.load(os.path.join(FIXTURES, "transforms_expected.npz"))


def _images():
    arrays = inputs()
    images = {k: ember.from_numpy(v) for k, v in arrays.items()}
    images.update(pil_images(arrays, PIL))
    return images


IMAGES = _images()


def _np(out):
    if isinstance(out, (tuple, list)):
        return np.stack([_np(o) for o in out])
    if isinstance(out, ember.Tensor):
        return out.contiguous().numpy()
    return np.asarray(out)


@pytest.mark.parametrize("name,key,tol,call", cases(), ids=[c[0] for c in cases()])
def test_functional_matches_torchvision(name, key, tol, call):
    img = IMAGES[key]
    out = call(F, InterpolationMode)(img)
    if isinstance(img, ember.Tensor) and not isinstance(out, (tuple, list)) and name != "to_pil_f32":
        assert isinstance(out, ember.Tensor)
    got, want = _np(out), EXPECTED[name]
    if want.dtype == np.uint16:  # ember has no uint16: 16-bit images come back as int32
        assert got.dtype == np.int32
        got = got.astype(np.uint16)
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    if tol == "ties":
        differ = np.any(got != want, axis=-3) if got.ndim >= 3 else got != want
        assert differ.mean() < 0.02, f"{differ.mean():.3%} pixels differ"
    elif tol == 0:
        np.testing.assert_array_equal(got, want)
    else:
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        assert diff.max() <= tol, f"max abs diff {diff.max()}"
        if want.dtype == np.uint8:
            # off-by-one from float rounding may touch a few pixels only
            assert (diff > 0).mean() < 0.02, f"{(diff > 0).mean():.3%} pixels differ"


@pytest.mark.parametrize("name,key,tol,expr", PRESET_CASES, ids=[c[0] for c in PRESET_CASES])
def test_presets_match_torchvision(name, key, tol, expr):
    from embervision.transforms import _presets as P

    out = eval(expr, {"P": P, "IM": InterpolationMode})(IMAGES[key])
    got, want = _np(out), EXPECTED[name]
    assert got.shape == want.shape and got.dtype == want.dtype
    if tol == "level":
        level = 1 / 255 / 0.216989  # one uint8 level over the smallest std of the presets
        diff = np.abs(got - want)
        assert diff.max() <= level * 1.001 and (diff > 1e-5).mean() < 0.01
    else:
        np.testing.assert_allclose(got, want, rtol=0, atol=tol)
