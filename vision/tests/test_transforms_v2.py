"""embervision.transforms.v2: same outputs as v1 where v1 exists, dispatch over samples, and
bounding-box / mask geometry checked against hand-computed values."""
import collections
import copy
import pickle

import numpy as np
import pytest

import ember
import embervision.transforms as T1
import embervision.transforms.functional as F1
from embervision import tv_tensors
from embervision.transforms import v2
from embervision.transforms.v2 import functional as F

Image = pytest.importorskip("PIL.Image")

XYXY, XYWH, CXCYWH = (tv_tensors.BoundingBoxFormat.XYXY, tv_tensors.BoundingBoxFormat.XYWH,
                      tv_tensors.BoundingBoxFormat.CXCYWH)


def _img(shape=(3, 24, 32), seed=0):
    return ember.from_numpy(np.random.RandomState(seed).randint(0, 256, shape).astype(np.uint8))


def _boxes(values, format="XYXY", canvas_size=(24, 32), dtype=ember.float32):
    return tv_tensors.BoundingBoxes(ember.tensor(values, dtype=dtype), format=format, canvas_size=canvas_size)


def _np(x):
    return x.numpy() if isinstance(x, ember.Tensor) else np.asarray(x)


# ---- same outputs as v1 ----

PAIRS = [
    ("Resize", lambda m: m.Resize(17)),
    ("Resize-hw-nearest", lambda m: m.Resize((20, 10), interpolation=T1.InterpolationMode.NEAREST)),
    ("CenterCrop", lambda m: m.CenterCrop(15)),
    ("CenterCrop-larger", lambda m: m.CenterCrop((30, 36))),
    ("RandomCrop", lambda m: m.RandomCrop(18, padding=2)),
    ("RandomCrop-pad-if-needed", lambda m: m.RandomCrop((30, 20), pad_if_needed=True, fill=7)),
    ("RandomResizedCrop", lambda m: m.RandomResizedCrop(16)),
    ("RandomHorizontalFlip", lambda m: m.RandomHorizontalFlip()),
    ("RandomVerticalFlip", lambda m: m.RandomVerticalFlip()),
    ("Pad-constant", lambda m: m.Pad((1, 2, 3, 4), fill=9)),
    ("Pad-edge", lambda m: m.Pad(3, padding_mode="edge")),
    ("Pad-reflect", lambda m: m.Pad((2, 3), padding_mode="reflect")),
    ("Pad-symmetric", lambda m: m.Pad(2, padding_mode="symmetric")),
    ("ColorJitter", lambda m: m.ColorJitter(0.4, 0.4, 0.4, 0.1)),
    ("RandomRotation", lambda m: m.RandomRotation(40)),
    ("RandomRotation-expand", lambda m: m.RandomRotation(40, expand=True, fill=3)),
    ("RandomAffine", lambda m: m.RandomAffine(20, (0.1, 0.2), (0.8, 1.2), (-10, 10, -5, 5))),
    ("GaussianBlur", lambda m: m.GaussianBlur(5)),
    ("Grayscale", lambda m: m.Grayscale(3)),
    ("RandomGrayscale", lambda m: m.RandomGrayscale(0.5)),
    ("RandomInvert", lambda m: m.RandomInvert()),
    ("RandomPosterize", lambda m: m.RandomPosterize(3)),
    ("RandomSolarize", lambda m: m.RandomSolarize(100)),
    ("RandomAdjustSharpness", lambda m: m.RandomAdjustSharpness(2)),
    ("RandomAutocontrast", lambda m: m.RandomAutocontrast()),
    ("RandomEqualize", lambda m: m.RandomEqualize()),
    ("RandomPerspective", lambda m: m.RandomPerspective(0.4, p=0.7)),
    ("ElasticTransform", lambda m: m.ElasticTransform(alpha=20.0, sigma=3.0)),
    ("AutoAugment", lambda m: m.AutoAugment(T1.AutoAugmentPolicy.CIFAR10)),
    ("RandAugment", lambda m: m.RandAugment(fill=5)),
    ("TrivialAugmentWide", lambda m: m.TrivialAugmentWide()),
    ("AugMix", lambda m: m.AugMix(severity=2)),
]


@pytest.mark.parametrize("name,make", PAIRS, ids=[p[0] for p in PAIRS])
def test_v2_equals_v1_on_tensors_images_and_pil(name, make):
    t1, t2 = make(T1), make(v2)
    img = _img()
    for seed in range(3):
        ember.manual_seed(seed)
        want = t1(img)
        ember.manual_seed(seed)
        got_plain = t2(img)
        ember.manual_seed(seed)
        got_image = t2(tv_tensors.Image(img))
        assert type(got_plain) is ember.Tensor and type(got_image) is tv_tensors.Image
        np.testing.assert_array_equal(_np(got_plain), _np(want))
        np.testing.assert_array_equal(_np(got_image), _np(want))
    pil = F1.to_pil_image(img)
    ember.manual_seed(5)
    want = t1(pil)
    ember.manual_seed(5)
    got = t2(pil)
    assert isinstance(got, Image.Image)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("name,make", [
    ("Normalize", lambda m: m.Normalize([0.4, 0.5, 0.6], [0.2, 0.3, 0.4])),
    ("RandomErasing", lambda m: m.RandomErasing(p=1.0, value=(1.0, 2.0, 3.0))),
    ("RandomErasing-random", lambda m: m.RandomErasing(p=0.7, value="random")),
    ("GaussianBlur-batched", lambda m: m.GaussianBlur(3, sigma=(0.5, 1.5))),
])
def test_v2_equals_v1_on_float_batches(name, make):
    t1, t2 = make(T1), make(v2)
    batch = _img((2, 3, 16, 20)).to(ember.float32) / 255
    for seed in range(3):
        ember.manual_seed(seed)
        want = t1(batch)
        ember.manual_seed(seed)
        np.testing.assert_array_equal(_np(t2(batch)), _np(want))


@pytest.mark.parametrize("make", [lambda m: m.FiveCrop(10), lambda m: m.TenCrop((8, 12), vertical_flip=True)])
def test_five_and_ten_crop_match_v1(make):
    img = _img()
    want = make(T1)(img)
    for inpt in (img, tv_tensors.Image(img)):
        got = make(v2)(inpt)
        assert isinstance(got, tuple) and len(got) == len(want)
        assert all(type(g) is type(inpt) for g in got)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(_np(g), _np(w))
    assert len(make(v2)(F1.to_pil_image(img))) == len(want)


def test_auto_augment_takes_one_image_and_refuses_boxes():
    img = tv_tensors.Image(_img())
    out_img, label = v2.RandAugment()(img, 3)
    assert type(out_img) is tv_tensors.Image and label == 3
    with pytest.raises(TypeError, match="not supported by AutoAugment"):
        v2.AutoAugment()(img, _boxes([[1, 2, 3, 4]]))
    with pytest.raises(TypeError, match="single image or video"):
        v2.TrivialAugmentWide()(img, tv_tensors.Image(_img()))
    with pytest.raises(ValueError, match="policy"):
        v2.AutoAugment("imagenet")
    video = v2.AugMix()(tv_tensors.Video(_img((2, 4, 3, 8, 8))))
    assert type(video) is tv_tensors.Video and tuple(video.shape) == (2, 4, 3, 8, 8)


def test_jpeg_and_gaussian_noise():
    img = tv_tensors.Image(_img((3, 16, 16)))
    from embervision.io import decode_jpeg, encode_jpeg

    out = v2.JPEG(60)(img)
    assert type(out) is tv_tensors.Image and out.dtype == ember.uint8
    np.testing.assert_array_equal(_np(out), _np(decode_jpeg(encode_jpeg(_img((3, 16, 16)), quality=60))))
    video = v2.JPEG((40, 80))(tv_tensors.Video(_img((2, 3, 3, 8, 8))))
    assert tuple(video.shape) == (2, 3, 3, 8, 8)
    assert v2.JPEG(30)(F1.to_pil_image(img)).mode == "RGB"
    with pytest.raises(TypeError, match="uint8"):
        F.jpeg(img.to(ember.float32), 50)
    with pytest.raises(ValueError, match="quality"):
        v2.JPEG(0)
    x = ember.full((3, 8, 8), 0.5)
    ember.manual_seed(0)
    noisy = v2.GaussianNoise(sigma=0.2)(x)
    assert 0.1 < float((noisy - x).std()) < 0.3
    assert float(v2.GaussianNoise(mean=2.0)(x).min()) == 1.0  # clipped
    assert float(v2.GaussianNoise(mean=2.0, clip=False)(x).min()) > 1.0
    with pytest.raises(ValueError, match="float"):
        F.gaussian_noise(_img(), sigma=0.1)


def test_to_dtype_scale_matches_convert_image_dtype():
    img = _img()
    want = T1.ConvertImageDtype(ember.float32)(img)
    np.testing.assert_array_equal(_np(v2.ToDtype(ember.float32, scale=True)(img)), _np(want))
    np.testing.assert_array_equal(_np(v2.ConvertImageDtype(ember.float32)(img)), _np(want))
    np.testing.assert_array_equal(_np(v2.ToDtype(ember.float32)(img)), _np(img.to(ember.float32)))
    back = v2.ToDtype(ember.uint8, scale=True)(want)
    np.testing.assert_array_equal(_np(back), _np(img))


def test_classification_pipeline_matches_v1():
    def pipeline(m):
        return m.Compose([m.RandomResizedCrop(16), m.RandomHorizontalFlip(), m.ConvertImageDtype(ember.float32),
                          m.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    img = _img()
    ember.manual_seed(11)
    want = pipeline(T1)(img)
    ember.manual_seed(11)
    got = pipeline(v2)(tv_tensors.Image(img))
    np.testing.assert_array_equal(_np(got), _np(want))


def test_video_is_transformed_frame_by_frame():
    video = tv_tensors.Video(_img((4, 3, 12, 16)))
    out = v2.Resize((6, 8))(video)
    assert type(out) is tv_tensors.Video and tuple(out.shape) == (4, 3, 6, 8)
    np.testing.assert_array_equal(_np(out[2]), _np(F1.resize(video[2], [6, 8])))
    padded = v2.Pad(1, padding_mode="symmetric")(tv_tensors.Video(_img((2, 4, 3, 5, 6))))
    assert tuple(padded.shape) == (2, 4, 3, 7, 8)


# ---- dispatch over samples ----

def test_nested_sample_non_image_items_pass_through():
    img = tv_tensors.Image(_img())
    labels = ember.tensor([3, 4])
    Point = collections.namedtuple("Point", "x y")
    sample = (img, {"boxes": _boxes([[1, 2, 5, 6]]), "labels": labels, "meta": [Point(1, 2), "name", 3.5, None]})
    out = v2.RandomHorizontalFlip(p=1.0)(*sample)
    assert isinstance(out, tuple) and len(out) == 2
    flipped, target = out
    np.testing.assert_array_equal(_np(flipped), _np(img)[..., ::-1])
    assert target["labels"] is labels
    assert target["meta"] == [Point(1, 2), "name", 3.5, None] and type(target["meta"][0]) is Point
    np.testing.assert_array_equal(_np(target["boxes"]), [[27, 2, 31, 6]])
    single = v2.RandomVerticalFlip(p=1.0)([img, "x"])
    assert isinstance(single, list) and single[1] == "x"


def test_plain_tensor_rule():
    a, b = _img(), _img(seed=1)
    out_a, out_b = v2.RandomHorizontalFlip(p=1.0)(a, b)
    np.testing.assert_array_equal(_np(out_a), _np(a)[..., ::-1])
    assert out_b is b  # only the first plain tensor is the image
    image = tv_tensors.Image(_img(seed=2))
    out_a, out_image = v2.RandomHorizontalFlip(p=1.0)(a, image)
    assert out_a is a  # an Image is present: plain tensors are not images
    np.testing.assert_array_equal(_np(out_image), _np(image)[..., ::-1])


def test_one_draw_per_call_shared_by_all_inputs():
    img = tv_tensors.Image(_img())
    mask = tv_tensors.Mask(_img((1, 24, 32)))
    for seed in range(5):
        ember.manual_seed(seed)
        out_img, out_mask = v2.RandomResizedCrop(12, interpolation=T1.InterpolationMode.NEAREST)(img, mask)
        ember.manual_seed(seed)
        same = v2.RandomResizedCrop(12, interpolation=T1.InterpolationMode.NEAREST)(tv_tensors.Image(mask))
        np.testing.assert_array_equal(_np(out_mask), _np(same))


def test_colour_transforms_pass_masks_and_boxes_through():
    boxes = _boxes([[1, 2, 5, 6]])
    mask = tv_tensors.Mask(ember.ones(24, 32, dtype=ember.uint8))
    _, out_boxes, out_mask = v2.ColorJitter(0.5, 0.5)(tv_tensors.Image(_img()), boxes, mask)
    assert out_boxes is boxes and out_mask is mask
    _, out_mask = v2.Normalize([0.5] * 3, [0.5] * 3)(tv_tensors.Image(_img().to(ember.float32)), mask)
    assert out_mask is mask


def test_mismatched_sizes_and_empty_samples_raise():
    with pytest.raises(ValueError, match="multiple HxW"):
        v2.RandomCrop(8)(tv_tensors.Image(_img()), tv_tensors.Mask(ember.zeros(10, 10)))
    with pytest.raises(TypeError, match="No image"):
        v2.RandomCrop(8)({"name": "x"})


def test_custom_transform_subclass():
    class AddOffset(v2.Transform):
        def make_params(self, flat_inputs):
            return {"offset": 2}

        def transform(self, inpt, params):
            return inpt + params["offset"]

    out, label = AddOffset()(ember.zeros(1, 2, 2), 7)
    assert float(out.sum()) == 8.0 and label == 7


# ---- bounding boxes and masks by hand ----

@pytest.mark.parametrize("format,box,hflipped,vflipped", [
    ("XYXY", [2, 3, 10, 7], [22, 3, 30, 7], [2, 17, 10, 21]),
    ("XYWH", [2, 3, 8, 4], [22, 3, 8, 4], [2, 17, 8, 4]),
    ("CXCYWH", [6, 5, 8, 4], [26, 5, 8, 4], [6, 19, 8, 4]),
])
def test_flip_boxes(format, box, hflipped, vflipped):
    boxes = _boxes([box], format=format)
    out = F.horizontal_flip(boxes)
    assert type(out) is tv_tensors.BoundingBoxes and out.format == boxes.format and out.canvas_size == (24, 32)
    np.testing.assert_array_equal(_np(out), [hflipped])
    np.testing.assert_array_equal(_np(F.vertical_flip(boxes)), [vflipped])
    plain = ember.tensor([box], dtype=ember.float32)  # the kernels take plain tensors and explicit metadata
    np.testing.assert_array_equal(_np(F.horizontal_flip_bounding_boxes(plain, format, (24, 32))), [hflipped])


def test_resize_boxes_and_masks():
    boxes = _boxes([[4, 6, 12, 18]], canvas_size=(24, 32))
    out = F.resize(boxes, [12, 64])
    np.testing.assert_allclose(_np(out), [[8, 3, 24, 9]])
    assert out.canvas_size == (12, 64)
    out = v2.Resize(12)(boxes)  # shorter edge (height 24) -> 12, width 32 -> 16
    assert out.canvas_size == (12, 16)
    np.testing.assert_allclose(_np(out), [[2, 3, 6, 9]])
    img, out = v2.Resize(None, max_size=16)(tv_tensors.Image(_img()), boxes)  # longer edge (32) -> 16
    assert tuple(img.shape[-2:]) == (12, 16) and out.canvas_size == (12, 16)
    np.testing.assert_allclose(_np(out), [[2, 3, 6, 9]])
    with pytest.raises(ValueError, match="max_size must be an integer"):
        v2.Resize(None)
    mask = tv_tensors.Mask(ember.tensor([[0, 1], [2, 3]], dtype=ember.int64))
    big = F.resize(mask, [4, 4], interpolation=T1.InterpolationMode.BILINEAR)  # masks are always nearest
    np.testing.assert_array_equal(_np(big), [[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 3, 3], [2, 2, 3, 3]])
    assert type(big) is tv_tensors.Mask and big.dtype == ember.int64


def test_crop_clamps_boxes():
    boxes = _boxes([[2, 3, 10, 12], [20, 5, 28, 18]])
    out = F.crop(boxes, top=4, left=5, height=10, width=12)
    np.testing.assert_array_equal(_np(out), [[0, 0, 5, 8], [12, 1, 12, 10]])
    assert out.canvas_size == (10, 12)
    xywh = F.crop(_boxes([[2, 3, 8, 9]], format="XYWH"), top=4, left=5, height=10, width=12)
    np.testing.assert_array_equal(_np(xywh), [[0, 0, 5, 8]])
    mask = tv_tensors.Mask(ember.arange(24 * 32).reshape(24, 32))
    np.testing.assert_array_equal(_np(F.crop(mask, 4, 5, 10, 12)), _np(mask)[4:14, 5:17])


def test_center_crop_and_resized_crop_boxes():
    boxes = _boxes([[10, 8, 20, 16]], canvas_size=(24, 32))
    out = F.center_crop(boxes, [12, 16])  # top = 6, left = 8
    np.testing.assert_array_equal(_np(out), [[2, 2, 12, 10]])
    out = F.center_crop(boxes, [30, 40])  # larger than the canvas: top = -3, left = -4
    np.testing.assert_array_equal(_np(out), [[14, 11, 24, 19]])
    assert out.canvas_size == (30, 40)
    out = F.resized_crop(boxes, top=8, left=10, height=8, width=10, size=[16, 5])
    np.testing.assert_allclose(_np(out), [[0, 0, 5, 16]])
    assert out.canvas_size == (16, 5)


def test_pad_boxes_and_masks():
    boxes = _boxes([[2, 3, 10, 12]])
    out = F.pad(boxes, [1, 2, 3, 4])
    np.testing.assert_array_equal(_np(out), [[3, 5, 11, 14]])
    assert out.canvas_size == (30, 36)
    np.testing.assert_array_equal(_np(F.pad(_boxes([[2, 3, 8, 9]], format="XYWH"), 2)), [[4, 5, 8, 9]])
    with pytest.raises(ValueError, match="not supported with bounding boxes"):
        F.pad(boxes, 1, padding_mode="reflect")
    img, mask = v2.Pad(1, fill={tv_tensors.Image: 7, tv_tensors.Mask: 255})(
        tv_tensors.Image(ember.zeros(3, 2, 2, dtype=ember.uint8)),
        tv_tensors.Mask(ember.zeros(2, 2, dtype=ember.uint8)))
    assert int(img[0, 0, 0]) == 7 and int(mask[0, 0]) == 255 and tuple(mask.shape) == (4, 4)
    rgb = F.pad(tv_tensors.Image(ember.zeros(3, 1, 1, dtype=ember.uint8)), 1, fill=[1, 2, 3])
    np.testing.assert_array_equal(_np(rgb)[:, 0, 0], [1, 2, 3])
    np.testing.assert_array_equal(_np(rgb)[:, 1, 1], [0, 0, 0])


def test_rotate_boxes_and_masks():
    boxes = _boxes([[1, 2, 5, 6]], canvas_size=(10, 20))
    # 90 degrees counter-clockwise about the centre (10, 5): (x, y) -> (y + 5, 15 - x)
    np.testing.assert_allclose(_np(F.rotate(boxes, 90)), [[7, 10, 11, 10]], atol=1e-5)  # clamped to height 10
    out = F.rotate(boxes, 90, expand=True)  # canvas 20 x 10: (x, y) -> (y, 20 - x)
    assert out.canvas_size == (20, 10)
    np.testing.assert_allclose(_np(out), [[2, 15, 6, 19]], atol=1e-5)
    square = _boxes([[2, 2, 4, 4]], canvas_size=(8, 8))
    np.testing.assert_allclose(_np(F.rotate(square, 180)), [[4, 4, 6, 6]], atol=1e-5)
    mask = tv_tensors.Mask(ember.arange(16).reshape(4, 4))
    np.testing.assert_array_equal(_np(F.rotate(mask, 90)), np.rot90(_np(mask)))
    img = tv_tensors.Image(_img((3, 4, 6)))
    np.testing.assert_array_equal(_np(F.rotate(img, 90, expand=True)), np.rot90(_np(img), axes=(1, 2)))


def test_affine_boxes():
    boxes = _boxes([[2, 3, 10, 12]])
    np.testing.assert_allclose(_np(F.affine(boxes, 0, [3, -2], 1.0, [0, 0])), [[5, 1, 13, 10]], atol=1e-5)
    # scale 2 about the centre (16, 12): x -> 2x - 16, y -> 2y - 12, then clamped
    np.testing.assert_allclose(_np(F.affine(boxes, 0, [0, 0], 2.0, [0, 0])), [[0, 0, 4, 12]], atol=1e-5)
    # 45 degrees: the box around the rotated corners of a centred square
    sq = _boxes([[14, 10, 18, 14]])
    half = 2 * 2 ** 0.5
    np.testing.assert_allclose(_np(F.affine(sq, 45, [0, 0], 1.0, [0, 0])),
                               [[16 - half, 12 - half, 16 + half, 12 + half]], atol=1e-4)
    ints = F.affine(_boxes([[2, 3, 10, 12]], dtype=ember.int64), 0, [1, 1], 1.0, [0, 0])
    assert ints.dtype == ember.int64
    np.testing.assert_array_equal(_np(ints), [[3, 4, 11, 13]])


def test_geometric_transforms_keep_boxes_on_their_objects():
    # a bright rectangle and its box: after any geometric transform the box still frames the bright pixels
    img = ember.zeros(1, 24, 32, dtype=ember.uint8)
    img[..., 6:14, 8:20] = 255
    sample = (tv_tensors.Image(img), _boxes([[8, 6, 20, 14]]), tv_tensors.Mask(img[0] > 0))
    for t in [v2.RandomHorizontalFlip(1.0), v2.RandomVerticalFlip(1.0), v2.Pad((3, 1, 2, 5)), v2.CenterCrop(16),
              v2.RandomCrop(20), v2.Resize((12, 64), interpolation=T1.InterpolationMode.NEAREST),
              v2.RandomRotation((90, 90)), v2.RandomRotation((-90, -90), expand=True),
              v2.RandomZoomOut(p=1.0)]:
        ember.manual_seed(0)
        out_img, out_box, out_mask = t(*sample)
        ys, xs = np.nonzero(_np(out_img)[0])
        np.testing.assert_allclose(_np(out_box)[0], [xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], atol=1e-4,
                                   err_msg=repr(t))
        np.testing.assert_array_equal(_np(out_mask), _np(out_img)[0] > 0)
        assert out_box.canvas_size == tuple(out_img.shape[-2:])


def test_perspective_boxes():
    corners = [[0, 0], [31, 0], [31, 23], [0, 23]]
    boxes = _boxes([[2, 3, 10, 12]])
    same = F.perspective(boxes, corners, corners)
    np.testing.assert_allclose(_np(same), _np(boxes), atol=1e-4)
    moved = F.perspective(boxes, corners, [[x + 2, y + 3] for x, y in corners])
    np.testing.assert_allclose(_np(moved), [[4, 6, 12, 15]], atol=1e-4)
    img = ember.zeros(1, 24, 32, dtype=ember.uint8)
    img[..., 3:12, 2:10] = 255
    out = F.perspective(tv_tensors.Image(img), corners, [[x + 2, y + 3] for x, y in corners],
                        interpolation=T1.InterpolationMode.NEAREST)
    ys, xs = np.nonzero(_np(out)[0])
    np.testing.assert_array_equal([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], [4, 6, 12, 15])
    with pytest.raises(ValueError, match="shouldn't be defined concurrently"):
        F.perspective(boxes, corners, corners, coefficients=[1, 0, 0, 0, 1, 0, 0, 0])


def test_elastic_boxes_follow_the_displacement():
    boxes = _boxes([[2, 3, 10, 12]])
    still = ember.zeros(1, 24, 32, 2)
    np.testing.assert_allclose(_np(F.elastic(boxes, still)), [[2, 3, 10, 12]], atol=1e-4)
    # a uniform displacement of -2 pixels in x samples from x - 2: content (and boxes) move right by 2
    shift = ember.zeros(1, 24, 32, 2)
    shift[..., 0] = -2 * 2 / 32
    np.testing.assert_allclose(_np(F.elastic(boxes, shift)), [[4, 3, 12, 12]], atol=1e-4)
    img = ember.zeros(1, 24, 32)
    img[..., 3:12, 2:10] = 1.0
    moved = F.elastic(tv_tensors.Image(img), shift, interpolation=T1.InterpolationMode.NEAREST)
    ys, xs = np.nonzero(_np(moved)[0])
    np.testing.assert_array_equal([xs.min(), xs.max() + 1], [4, 12])
    with pytest.raises(ValueError, match="displacement shape"):
        F.elastic(boxes, ember.zeros(1, 4, 4, 2))


def test_video_and_matrix_transforms():
    video = tv_tensors.Video(ember.arange(10).reshape(10, 1, 1, 1).expand(10, 3, 2, 2).contiguous())
    out = v2.UniformTemporalSubsample(4)(video)
    assert type(out) is tv_tensors.Video
    np.testing.assert_array_equal(_np(out)[:, 0, 0, 0], [0, 3, 6, 9])
    img = tv_tensors.Image(ember.rand(1, 2, 2))
    same = v2.LinearTransformation(ember.eye(4), ember.zeros(4))(img)
    assert type(same) is tv_tensors.Image
    np.testing.assert_allclose(_np(same), _np(img))
    with pytest.raises(TypeError, match="does not support PIL"):
        v2.LinearTransformation(ember.eye(4), ember.zeros(4))(Image.new("L", (2, 2)))
    with pytest.raises(ValueError, match="square"):
        v2.LinearTransformation(ember.zeros(3, 4), ember.zeros(3))
    arr = np.random.RandomState(0).randint(0, 256, (4, 5, 3)).astype(np.uint8)
    with pytest.warns(UserWarning, match="deprecated"):
        to_tensor = v2.ToTensor()
    np.testing.assert_array_equal(_np(to_tensor(arr)), _np(F1.to_tensor(arr)))
    assert F.get_image_size(tv_tensors.Image(ember.zeros(3, 4, 5))) == [5, 4]
    np.testing.assert_array_equal(_np(F.convert_image_dtype(_img())), _np(F1.convert_image_dtype(_img())))


def _coordinate_image(height, width):
    """A uint8 image whose channels hold each pixel's x and y (so a crop tells where it came from)."""
    ys, xs = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")
    return tv_tensors.Image(ember.from_numpy(np.stack([xs, ys, np.full_like(xs, 255)]).astype(np.uint8)))


def test_random_zoom_out_moves_boxes_with_the_image():
    img = _coordinate_image(24, 32)
    boxes = _boxes([[2, 3, 10, 12]])
    for seed in range(3):
        ember.manual_seed(seed)
        out_img, out_boxes = v2.RandomZoomOut(p=1.0, side_range=(1.5, 2.5))(img, boxes)
        ys, xs = np.nonzero(_np(out_img)[2])  # where the original image landed
        left, top = xs.min(), ys.min()
        assert out_boxes.canvas_size == tuple(out_img.shape[-2:]) and out_img.shape[-1] >= 48
        np.testing.assert_array_equal(_np(out_boxes), [[2 + left, 3 + top, 10 + left, 12 + top]])


def test_random_iou_crop_marks_boxes_outside_the_crop():
    img = _coordinate_image(60, 80)
    boxes = _boxes([[5, 5, 20, 20], [30, 30, 60, 50], [65, 2, 78, 12]], canvas_size=(60, 80))
    labels = ember.tensor([1, 2, 3])
    cropped = 0
    for seed in range(8):
        ember.manual_seed(seed)
        out_img, out_boxes, out_labels = v2.RandomIoUCrop()(img, boxes, labels)
        assert out_labels is labels and out_boxes.canvas_size == tuple(out_img.shape[-2:])
        left, top = int(out_img[0, 0, 0]), int(out_img[1, 0, 0])
        height, width = out_img.shape[-2:]
        cropped += (height, width) != (60, 80)
        for box, out_box in zip(_np(boxes), _np(out_boxes)):
            cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
            if left < cx < left + width and top < cy < top + height:
                want = np.clip(box - [left, top, left, top], 0, [width, height, width, height])
                np.testing.assert_allclose(out_box, want)
            else:
                np.testing.assert_array_equal(out_box, 0)
    assert cropped > 0
    with pytest.raises(TypeError, match="requires input sample"):
        v2.RandomIoUCrop()(img)


@pytest.mark.parametrize("t", [v2.ScaleJitter((24, 32)), v2.RandomShortestSize([12, 16, 30], max_size=40),
                               v2.RandomResize(10, 20)], ids=["ScaleJitter", "RandomShortestSize", "RandomResize"])
def test_random_resizes_scale_boxes_with_the_image(t):
    boxes = _boxes([[2, 3, 10, 12]])
    for seed in range(3):
        ember.manual_seed(seed)
        out_img, out_boxes = t(tv_tensors.Image(_img()), boxes)
        height, width = out_img.shape[-2:]
        assert out_boxes.canvas_size == (height, width)
        np.testing.assert_allclose(_np(out_boxes), [[2 * width / 32, 3 * height / 24, 10 * width / 32,
                                                     12 * height / 24]], rtol=1e-5)
    if isinstance(t, v2.RandomShortestSize):
        assert min(height, width) in (12, 16, 30) or max(height, width) == 40


def test_channel_transforms():
    img = tv_tensors.Image(_img())
    ember.manual_seed(0)
    out = v2.RandomChannelPermutation()(img)
    assert sorted(_np(out)[:, 0, 0].tolist()) == sorted(_np(img)[:, 0, 0].tolist())
    assert any(np.array_equal(_np(out)[0], _np(img)[c]) for c in range(3))
    gray = v2.RGB()(tv_tensors.Image(_img((1, 4, 5))))
    assert tuple(gray.shape) == (3, 4, 5) and np.array_equal(_np(gray)[0], _np(gray)[2])
    assert v2.RGB()(Image.new("L", (4, 4))).mode == "RGB"
    boxes = _boxes([[1, 2, 3, 4]])
    distort = v2.RandomPhotometricDistort(p=1.0)
    ember.manual_seed(4)
    a = distort(img, boxes)
    ember.manual_seed(4)
    b = distort(img, boxes)
    np.testing.assert_array_equal(_np(a[0]), _np(b[0]))
    assert a[1] is boxes and not np.array_equal(_np(a[0]), _np(img))
    assert np.array_equal(_np(v2.RandomPhotometricDistort(p=0.0)(img)), _np(img))


# ---- formats, clamping, sanitising ----

def test_convert_bounding_box_format():
    boxes = _boxes([[2, 3, 10, 7]])
    np.testing.assert_array_equal(_np(F.convert_bounding_box_format(boxes, new_format="XYWH")), [[2, 3, 8, 4]])
    cxcywh = v2.ConvertBoundingBoxFormat("CXCYWH")(boxes)
    assert cxcywh.format == CXCYWH
    np.testing.assert_array_equal(_np(cxcywh), [[6, 5, 8, 4]])
    back = F.convert_bounding_box_format(cxcywh, new_format=XYXY)
    np.testing.assert_array_equal(_np(back), _np(boxes))
    # integer CXCYWH with odd sizes: centre floor((x1 + x2) / 2), corner centre - ceil(w / 2)
    ints = ember.tensor([[1, 1, 4, 6]])
    c = F.convert_bounding_box_format(ints, old_format="XYXY", new_format="CXCYWH")
    np.testing.assert_array_equal(_np(c), [[2, 3, 3, 5]])
    np.testing.assert_array_equal(_np(F.convert_bounding_box_format(c, old_format="CXCYWH", new_format="XYXY")),
                                  [[0, 0, 3, 5]])
    with pytest.raises(ValueError, match="old_format"):
        F.convert_bounding_box_format(ints, new_format="XYWH")
    with pytest.raises(ValueError, match="must not be passed"):
        F.convert_bounding_box_format(boxes, old_format="XYXY", new_format="XYWH")
    with pytest.raises(TypeError, match="new_format"):
        F.convert_bounding_box_format(boxes)


def test_clamp_bounding_boxes():
    boxes = _boxes([[-3, 2, 40, 30]], format="XYXY")
    out = v2.ClampBoundingBoxes()(boxes)
    np.testing.assert_array_equal(_np(out), [[0, 2, 32, 24]])
    np.testing.assert_array_equal(_np(F.clamp_bounding_boxes(ember.tensor([[-3.0, 2, 10, 10]]), format="XYWH",
                                                             canvas_size=(5, 5))), [[0, 2, 5, 3]])
    with pytest.raises(ValueError, match="have to be passed"):
        F.clamp_bounding_boxes(ember.tensor([[0.0, 0, 1, 1]]))
    with pytest.raises(ValueError, match="must not be passed"):
        F.clamp_bounding_boxes(boxes, format="XYXY")


def test_sanitize_bounding_boxes_drops_boxes_labels_and_masks():
    boxes = _boxes([[0, 0, 10, 10], [5, 5, 5.5, 20], [-1, 0, 4, 4], [20, 20, 40, 23], [1, 1, 3, 3]])
    masks = tv_tensors.Mask(ember.arange(5).reshape(5, 1, 1).expand(5, 24, 32).contiguous())
    labels = ember.tensor([10, 11, 12, 13, 14])
    img = tv_tensors.Image(_img())
    out_img, target = v2.SanitizeBoundingBoxes()(img, {"boxes": boxes, "masks": masks, "labels": labels})
    assert out_img is img
    np.testing.assert_array_equal(_np(target["labels"]), [10, 14])
    np.testing.assert_array_equal(_np(target["boxes"]), [[0, 0, 10, 10], [1, 1, 3, 3]])
    np.testing.assert_array_equal(_np(target["masks"])[:, 0, 0], [0, 4])
    assert type(target["boxes"]) is tv_tensors.BoundingBoxes and type(target["masks"]) is tv_tensors.Mask
    out = v2.SanitizeBoundingBoxes(min_size=3, labels_getter=None)({"boxes": boxes})  # [1, 1, 3, 3] goes too
    np.testing.assert_array_equal(_np(out["boxes"]), [[0, 0, 10, 10]])
    kept, valid = F.sanitize_bounding_boxes(boxes, min_area=5)
    np.testing.assert_array_equal(_np(valid), [True, False, False, False, False])
    with pytest.raises(ValueError, match="must match the number of labels"):
        v2.SanitizeBoundingBoxes()({"boxes": boxes, "labels": labels[:2]})
    with pytest.raises(ValueError, match="No bounding boxes"):
        v2.SanitizeBoundingBoxes(labels_getter=None)({"image": img})
    with pytest.raises(ValueError, match="Could not infer where the labels are"):
        v2.SanitizeBoundingBoxes()({"boxes": boxes})
    with pytest.raises(ValueError, match="min_size"):
        v2.SanitizeBoundingBoxes(min_size=0.5)
    with pytest.raises(ValueError, match="labels_getter"):
        v2.SanitizeBoundingBoxes(labels_getter="labels")


# ---- dtype and type conversion ----

def test_to_dtype_dict_and_warnings():
    img = tv_tensors.Image(_img())
    mask = tv_tensors.Mask(ember.ones(24, 32, dtype=ember.uint8))
    boxes = _boxes([[1, 2, 3, 4]])
    out_img, out_mask, out_boxes = v2.ToDtype(ember.float32, scale=True)(img, mask, boxes)
    assert out_img.dtype == ember.float32 and out_mask is mask and out_boxes is boxes
    out_img, out_mask, out_boxes = v2.ToDtype({tv_tensors.Image: ember.float64, tv_tensors.Mask: ember.int64,
                                               "others": None}, scale=True)(img, mask, boxes)
    assert out_img.dtype == ember.float64 and float(out_img.max()) <= 1.0
    assert type(out_mask) is tv_tensors.Mask and out_mask.dtype == ember.int64 and int(out_mask.max()) == 1
    assert out_boxes is boxes
    with pytest.raises(ValueError, match="No dtype was specified"):
        v2.ToDtype({tv_tensors.Image: ember.float32})(img, mask)
    with pytest.raises(ValueError, match="dtype must be"):
        v2.ToDtype("float32")
    with pytest.warns(UserWarning, match="no scaling"):
        v2.ToDtype({tv_tensors.Image: None, "others": None}, scale=True)(img)


def test_to_image_and_to_pure_tensor():
    arr = np.random.RandomState(0).randint(0, 256, (5, 6, 3)).astype(np.uint8)
    from_np = v2.ToImage()(arr)
    assert type(from_np) is tv_tensors.Image and tuple(from_np.shape) == (3, 5, 6)
    np.testing.assert_array_equal(_np(from_np), arr.transpose(2, 0, 1))
    from_pil = v2.ToImage()(Image.fromarray(arr))
    np.testing.assert_array_equal(_np(from_pil), arr.transpose(2, 0, 1))
    gray = F.to_image(np.zeros((4, 5), dtype=np.uint8))
    assert tuple(gray.shape) == (1, 4, 5)
    with pytest.raises(TypeError, match="pure Tensor, a numpy array, or a PIL image"):
        F.to_image([1, 2, 3])
    boxes = _boxes([[1, 2, 3, 4]])
    img, plain_boxes, name = v2.ToPureTensor()(from_np, boxes, "n")
    assert type(img) is ember.Tensor and type(plain_boxes) is ember.Tensor and name == "n"
    pil = v2.ToPILImage()(from_np)
    np.testing.assert_array_equal(np.asarray(pil), arr)
    np.testing.assert_array_equal(_np(v2.PILToTensor()(pil)), arr.transpose(2, 0, 1))


# ---- MixUp and CutMix ----

def test_mixup_blends_images_and_labels_alike():
    images = ember.rand(4, 3, 6, 6)
    labels = ember.tensor([0, 1, 2, 3])
    ember.manual_seed(3)
    out, mixed = v2.MixUp(alpha=0.5, num_classes=5)(images, labels)
    lam = float(mixed[0, 0])
    assert 0.0 <= lam <= 1.0 and tuple(mixed.shape) == (4, 5)
    np.testing.assert_allclose(_np(mixed.sum(-1)), np.ones(4), rtol=1e-6)
    np.testing.assert_allclose(_np(mixed[0, 3]), 1.0 - lam, rtol=1e-6)
    np.testing.assert_allclose(_np(out), lam * _np(images) + (1 - lam) * np.roll(_np(images), 1, 0), rtol=1e-5)
    batch = {"image": tv_tensors.Image(images), "labels": ember.eye(4)}
    out = v2.MixUp()(batch)
    assert type(out["image"]) is tv_tensors.Image and tuple(out["labels"].shape) == (4, 4)


def test_cutmix_pastes_a_box_and_mixes_labels_by_area():
    images = ember.arange(4).to(ember.float32).reshape(4, 1, 1, 1).expand(4, 3, 10, 10).contiguous()
    labels = ember.tensor([0, 1, 2, 3])
    for seed in range(5):
        ember.manual_seed(seed)
        out, mixed = v2.CutMix(num_classes=4)(images, labels)
        pasted = (_np(out)[0, 0] == 3.0).mean()  # sample 0 receives sample 3's pixels
        np.testing.assert_allclose(_np(mixed[0]), [1 - pasted, 0, 0, pasted], atol=1e-6)
        assert set(np.unique(_np(out)[0])) <= {0.0, 3.0}


def test_mixup_cutmix_bad_inputs():
    images, labels = ember.rand(2, 3, 4, 4), ember.tensor([0, 1])
    with pytest.raises(ValueError, match="does not support PIL images, bounding boxes and masks"):
        v2.MixUp(num_classes=2)(images, _boxes([[0, 0, 1, 1]]), labels)
    with pytest.raises(ValueError, match="batched"):
        v2.CutMix(num_classes=2)(images[0], labels)
    with pytest.raises(ValueError, match="labels should be index based"):
        v2.MixUp(num_classes=2)(images, ember.zeros(2, 2, 2))
    with pytest.raises(ValueError, match="num_classes"):
        v2.MixUp()(images, labels)
    with pytest.raises(ValueError, match="alpha"):
        v2.CutMix(alpha=0)


def test_beta_draws_follow_the_distribution():
    from embervision.transforms.v2._augment import _sample_beta

    ember.manual_seed(0)
    for alpha, var in ((1.0, 1 / 12), (0.2, 0.25 / 1.4)):
        draws = np.array([_sample_beta(alpha) for _ in range(1500)])
        assert ((draws >= 0) & (draws <= 1)).all()
        assert abs(draws.mean() - 0.5) < 0.04 and abs(draws.var() - var) < 0.02


# ---- containers ----

def test_containers():
    img = tv_tensors.Image(_img())
    flip = v2.RandomHorizontalFlip(1.0)
    out_img, out_boxes = v2.Compose([flip, flip])(img, _boxes([[1, 2, 3, 4]]))
    np.testing.assert_array_equal(_np(out_img), _np(img))
    np.testing.assert_array_equal(_np(out_boxes), [[1, 2, 3, 4]])
    assert v2.RandomApply([flip], p=0.0)(img) is img
    ember.manual_seed(0)
    picks = {int(np.asarray(_np(v2.RandomChoice([lambda x: 1, lambda x: 2], p=[1, 3])(img)))) for _ in range(30)}
    assert picks == {1, 2}
    order = []
    v2.RandomOrder([lambda x: order.append("a") or x, lambda x: order.append("b") or x])(img)
    assert sorted(order) == ["a", "b"]
    with pytest.raises(ValueError, match="at least one"):
        v2.Compose([])
    with pytest.raises(TypeError):
        v2.Compose(flip)
    with pytest.raises(ValueError, match="interval"):
        v2.RandomApply([flip], p=1.5)
    with pytest.raises(ValueError, match="Length of p"):
        v2.RandomChoice([flip], p=[0.5, 0.5])
    assert "RandomHorizontalFlip(p=1.0)" in repr(v2.Compose([flip]))
    # DataLoader workers receive the pipeline pickled
    pipeline = v2.Compose([v2.RandomResizedCrop(8), v2.Pad(1, fill={tv_tensors.Image: 3, "others": 0}),
                           v2.SanitizeBoundingBoxes(labels_getter=None)])
    ember.manual_seed(1)
    want = pipeline(img, _boxes([[1, 2, 20, 20]]))
    ember.manual_seed(1)
    got = pickle.loads(pickle.dumps(pipeline))(img, _boxes([[1, 2, 20, 20]]))
    for w, g in zip(want, got):
        np.testing.assert_array_equal(_np(g), _np(w))


# ---- tv_tensors ----

def test_tv_tensors():
    boxes = tv_tensors.BoundingBoxes([1, 2, 3, 4], format="xywh", canvas_size=(5, 6))
    assert tuple(boxes.shape) == (1, 4) and boxes.format == XYWH and boxes.canvas_size == (5, 6)
    assert repr(boxes).startswith("BoundingBoxes([[1, 2, 3, 4]]") and "canvas_size=(5, 6)" in repr(boxes)
    assert type(boxes + 1) is ember.Tensor  # ops unwrap, as in TorchVision
    for kept in (boxes.clone(), boxes.to(ember.float32), copy.deepcopy(boxes), pickle.loads(pickle.dumps(boxes))):
        assert type(kept) is tv_tensors.BoundingBoxes and kept.canvas_size == (5, 6) and kept.format == XYWH
    wrapped = tv_tensors.wrap(ember.zeros(1, 4), like=boxes, canvas_size=(7, 8))
    assert wrapped.canvas_size == (7, 8) and wrapped.format == XYWH
    assert tuple(tv_tensors.Image(ember.zeros(4, 5)).shape) == (1, 4, 5)
    assert tuple(tv_tensors.Image(Image.new("RGB", (5, 4))).shape) == (3, 4, 5)
    with pytest.raises(ValueError, match="at least 2"):
        tv_tensors.Image(ember.zeros(3))
    with pytest.raises(ValueError, match="at least 4"):
        tv_tensors.Video(ember.zeros(3, 4, 5))
    with pytest.raises(ValueError, match="1D or 2D"):
        tv_tensors.BoundingBoxes(ember.zeros(1, 1, 4), format="XYXY", canvas_size=(1, 1))
    with pytest.raises(ValueError, match="Unknown bounding box format"):
        tv_tensors.BoundingBoxes(ember.zeros(1, 4), format="XYZ", canvas_size=(1, 1))
    with pytest.raises(ValueError, match="canvas_size"):
        tv_tensors.BoundingBoxes(ember.zeros(1, 4), format="XYXY", canvas_size=5)
    with pytest.raises(TypeError, match="like"):
        tv_tensors.wrap(ember.zeros(1), like=ember.zeros(1))


# ---- functional dispatch and errors ----

def test_functional_errors_and_kernel_registration():
    with pytest.raises(TypeError, match="supports inputs of type"):
        F.normalize(tv_tensors.Mask(ember.zeros(2, 2)), [0.5], [0.5])
    with pytest.raises(TypeError, match="supports inputs of type"):
        F.horizontal_flip("not an image")
    with pytest.raises(TypeError, match="does not support PIL"):
        v2.Normalize([0.5], [0.5])(Image.new("L", (4, 4)))
    with pytest.raises(TypeError, match="float tensor"):
        v2.Normalize([0.5], [0.5])(ember.zeros(1, 2, 2, dtype=ember.uint8))
    with pytest.raises(ValueError, match="size can be None"):
        v2.Resize((1, 2, 3))
    with pytest.raises(ValueError, match="larger than input image size"):
        v2.RandomCrop(30)(tv_tensors.Image(_img()))
    with pytest.raises(ValueError, match="interpolation"):
        v2.Resize(4, interpolation="bilinear")

    class Heatmap(tv_tensors.TVTensor):
        """A user's tv_tensor type: no kernel until one is registered for it."""

    heat = Heatmap._wrap(ember.zeros(1, 4, 4))
    assert v2.RandomHorizontalFlip(1.0)(tv_tensors.Image(_img()), heat)[1] is heat  # no kernel: passes through

    @F.register_kernel(F.horizontal_flip, Heatmap)
    def _flip_heatmap(inpt):
        return Heatmap._wrap(inpt.view_as(inpt).flip(-1) + 1)

    out = v2.RandomHorizontalFlip(1.0)(tv_tensors.Image(_img()), heat)[1]
    assert type(out) is Heatmap and float(out.sum()) == 16.0
    with pytest.raises(ValueError, match="builtin"):
        F.register_kernel(F.horizontal_flip, tv_tensors.Image)
    with pytest.raises(ValueError, match="subclasses of"):
        F.register_kernel(F.horizontal_flip, int)


def test_missing_names_raise_not_implemented():
    with pytest.raises(NotImplementedError, match="README"):
        v2.SanitizeKeyPoints  # noqa: B018
    with pytest.raises(NotImplementedError, match="README"):
        F.clamp_keypoints  # noqa: B018
    with pytest.raises(NotImplementedError, match="README"):
        tv_tensors.KeyPoints  # noqa: B018
    with pytest.raises(AttributeError):
        v2.NoSuchTransform  # noqa: B018
