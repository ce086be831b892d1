"""embervision.utils against TorchVision's outputs on the same inputs (fixtures/utils_expected.npz)."""
import io
import os
import sys

import numpy as np
import pytest

import ember
import embervision.utils as U

Image = pytest.importorskip("PIL.Image")

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
sys.path.insert(0, FIXTURES)
from utils_cases import CASES, inputs  # noqa: E402

EXPECTED = np.load(os.path.join(FIXTURES, "utils_expected.npz"))
X = inputs()


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torchvision(name):
    out = CASES[name](ember, U, X)
    got, want = out.numpy(), EXPECTED[name]
    assert got.shape == want.shape and got.dtype == want.dtype
    if want.dtype == np.uint8:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_save_image(tmp_path):
    buf = io.BytesIO()
    U.save_image(ember.from_numpy(X["batch"]), buf, format="png", nrow=2, normalize=True)
    np.testing.assert_array_equal(np.asarray(Image.open(buf)), EXPECTED["save_image"])
    U.save_image(ember.rand(3, 8, 8), tmp_path / "a.png")
    assert Image.open(tmp_path / "a.png").size == (8, 8)


def test_errors_and_empty():
    img = ember.from_numpy(X["img"])
    with pytest.raises(ValueError, match="xmin, ymin, xmax, ymax"):
        U.draw_bounding_boxes(img, ember.tensor([[10.0, 10.0, 5.0, 20.0]]))
    with pytest.raises(ValueError, match="Pass individual images"):
        U.draw_bounding_boxes(img[None], ember.zeros(1, 4))
    with pytest.raises(ValueError, match="labels"):
        U.draw_bounding_boxes(img, ember.from_numpy(X["boxes"]), labels=["a"])
    with pytest.warns(UserWarning, match="No box was drawn"):
        assert U.draw_bounding_boxes(img, ember.zeros(0, 4)) is img
    with pytest.raises(ValueError, match="dtype bool"):
        U.draw_segmentation_masks(img, ember.zeros(40, 50))
    with pytest.raises(ValueError, match="same height and width"):
        U.draw_segmentation_masks(img, ember.zeros(1, 4, 5, dtype=ember.bool))
    with pytest.raises(ValueError, match="Number of colors"):
        U.draw_segmentation_masks(img, ember.from_numpy(X["masks"]), colors=["red"])
    with pytest.raises(ValueError, match="num_instances, K, 2"):
        U.draw_keypoints(img, ember.zeros(3, 2))
    with pytest.raises(TypeError, match="tensor or list of tensors"):
        U.make_grid("nope")
