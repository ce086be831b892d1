"""embervision.transforms classes: reprs/describe() equal TorchVision's, seeding, PIL and batched inputs."""
import json
import os
import sys

import numpy as np
import pytest

import ember
import embervision.transforms as T
import embervision.transforms.functional as F
from embervision.transforms import _presets as P

Image = pytest.importorskip("PIL.Image")

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
sys.path.insert(0, FIXTURES)
from transforms_cases import REPR_EXPRS  # noqa: E402

with open(os.path.join(FIXTURES, "transforms_reprs.json")) as f:
    REPRS = json.load(f)


@pytest.mark.parametrize("expr", REPR_EXPRS)
def test_repr_and_describe_match_torchvision(expr):
    t = eval(expr, {"T": T, "P": P})
    want_repr, want_describe = REPRS[expr]
    assert repr(t) == want_repr
    if want_describe is not None:
        assert t.describe() == want_describe


def _img(shape=(3, 32, 40), seed=0):
    return ember.from_numpy(np.random.RandomState(seed).randint(0, 256, shape).astype(np.uint8))


RANDOM = [
    T.RandomResizedCrop(24), T.RandomCrop(20, padding=2), T.RandomHorizontalFlip(), T.RandomVerticalFlip(),
    T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomRotation(30), T.RandomAffine(20, (0.1, 0.1), (0.8, 1.2), 10),
    T.RandomPerspective(p=1.0), T.GaussianBlur(5), T.RandomGrayscale(0.5), T.RandomInvert(), T.RandomPosterize(3),
    T.RandomSolarize(100), T.RandomAdjustSharpness(2), T.RandomAutocontrast(), T.RandomEqualize(),
    T.AutoAugment(), T.RandAugment(), T.TrivialAugmentWide(), T.AugMix(), T.ElasticTransform(),
    T.RandomApply([T.ColorJitter(0.5)], p=0.5),
]


@pytest.mark.parametrize("t", RANDOM, ids=[type(t).__name__ for t in RANDOM])
def test_random_transforms_follow_ember_seed(t):
    img = _img()
    ember.manual_seed(7)
    a = [t(img).numpy() for _ in range(4)]
    ember.manual_seed(7)
    b = [t(img).numpy() for _ in range(4)]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    pil = F.to_pil_image(img)
    out = t(pil)
    assert isinstance(out, Image.Image)


def test_random_erasing_on_tensors():
    img = _img().to(ember.float32) + 1.0
    ember.manual_seed(0)
    out = T.RandomErasing(p=1.0, value=0)(img)
    assert out.shape == img.shape and (out == 0).any() and not (img == 0).any()
    out = T.RandomErasing(p=1.0, value="random")(img)
    assert out.dtype == ember.float32
    out = T.RandomErasing(p=1.0, value=(1.0, 2.0, 3.0))(img)
    with pytest.raises(ValueError):
        T.RandomErasing(value="bad")


def test_random_resized_crop_params_in_range():
    img = _img((3, 50, 80))
    ember.manual_seed(1)
    for _ in range(50):
        i, j, h, w = T.RandomResizedCrop.get_params(img, (0.08, 1.0), (3 / 4, 4 / 3))
        assert 0 <= i and 0 <= j and i + h <= 50 and j + w <= 80 and h > 0 and w > 0


def test_flips_probability():
    img = _img()
    ember.manual_seed(3)
    flipped = sum(bool((T.RandomHorizontalFlip()(img) != img).any()) for _ in range(200))
    assert 60 < flipped < 140


def test_classification_pipeline_batched_and_pil():
    pipeline = T.Compose([T.Resize(36), T.CenterCrop(32), T.ConvertImageDtype(ember.float32),
                          T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    batch = ember.stack([_img(seed=s) for s in range(3)])
    out = pipeline(batch)
    assert out.shape == (3, 3, 32, 32) and out.dtype == ember.float32
    single = pipeline(batch[1])
    np.testing.assert_allclose(out[1].numpy(), single.numpy(), atol=1e-6)
    pil_pipeline = T.Compose([T.Resize(36), T.CenterCrop(32), T.ToTensor()])
    assert pil_pipeline(F.to_pil_image(batch[0])).shape == (3, 32, 32)


def test_presets_tensor_and_pil_agree():
    preset = P.ImageClassification(crop_size=24, resize_size=28)
    img = _img((3, 40, 50))
    a = preset(img)
    b = preset(F.to_pil_image(img))
    assert a.shape == b.shape == (3, 24, 24)
    # tensor antialias and PIL resampling differ only by rounding (TorchVision's own tolerance)
    assert float((a - b).abs().mean()) < 0.02
    video = P.VideoClassification(crop_size=(8, 8), resize_size=(10, 12))
    assert video(ember.zeros(2, 5, 3, 20, 24, dtype=ember.uint8)).shape == (2, 3, 5, 8, 8)
    flow = P.OpticalFlow()(img, img)
    assert float(flow[0].min()) >= -1 and float(flow[0].max()) <= 1


def test_linear_transformation_and_to_tensor():
    x = ember.rand(1, 2, 2)
    m = ember.eye(4)
    out = T.LinearTransformation(m, ember.zeros(4))(x)
    np.testing.assert_allclose(out.numpy(), x.numpy())
    with pytest.raises(ValueError):
        T.LinearTransformation(ember.zeros(3, 4), ember.zeros(3))
    arr = np.arange(12, dtype=np.uint8).reshape(2, 2, 3)
    t = T.ToTensor()(arr)
    assert t.shape == (3, 2, 2) and abs(float(t[2, 1, 1]) - 11 / 255) < 1e-7
    assert T.PILToTensor()(Image.fromarray(arr)).dtype == ember.uint8


def test_errors():
    img = _img()
    with pytest.raises(TypeError, match="Only torch.uint8"):
        F.posterize(img.to(ember.float32), 3)
    with pytest.raises(ValueError, match="hue_factor"):
        F.adjust_hue(img, 0.7)
    with pytest.raises(ValueError, match="Requested crop size"):
        F.five_crop(img, 100)
    with pytest.raises(TypeError, match="Input tensor should be a float tensor"):
        F.normalize(img, [0.5], [0.5])
    with pytest.raises(ValueError, match="kernel_size should have odd"):
        F.gaussian_blur(img, 4)
    with pytest.raises(ValueError, match="unsupported with Tensor input"):
        F.rotate(img, 10, interpolation=T.InterpolationMode.BICUBIC)


def test_transforms_pickle_and_deepcopy():
    import copy
    import pickle

    for t in [T.Compose([T.RandomResizedCrop(8), T.RandomHorizontalFlip(), T.ToTensor()]), T.AutoAugment(),
              T.AugMix(), P.ImageClassification(crop_size=8), T.ColorJitter(0.3), T.RandomErasing()]:
        assert repr(pickle.loads(pickle.dumps(t))) == repr(t)
        assert repr(copy.deepcopy(t)) == repr(t)
