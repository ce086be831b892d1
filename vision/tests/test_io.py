"""embervision.io: decoding against TorchVision's decoders (fixtures/io_expected.npz), round trips, errors."""
import os

import numpy as np
import pytest

import ember
from embervision.io import (ImageReadMode, decode_gif, decode_image, decode_jpeg, decode_png, encode_jpeg,
                            encode_png, read_file, read_image, write_file, write_jpeg, write_png)

Image = pytest.importorskip("PIL.Image")

EXPECTED = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "io_expected.npz"))
MODES = ("UNCHANGED", "GRAY", "GRAY_ALPHA", "RGB", "RGB_ALPHA")


def _t(key):
    return ember.from_numpy(EXPECTED[key].copy())


@pytest.mark.parametrize("key", ["jpeg_bytes", "gray_jpeg_bytes", "palette_png_bytes", "la_png_bytes"])
@pytest.mark.parametrize("mode", MODES)
def test_decode_matches_torchvision(key, mode):
    name = f"{key}_{mode}"
    if key == "palette_png_bytes" and mode == "UNCHANGED":
        # TorchVision's libpng path returns one odd channel here; embervision expands the palette
        out = decode_image(_t(key), ImageReadMode.UNCHANGED)
        assert out.shape == (4, 20, 28)
        return
    if name not in EXPECTED:
        with pytest.raises(RuntimeError, match="not supported for JPEG"):
            decode_image(_t(key), getattr(ImageReadMode, mode))
        return
    out = decode_image(_t(key), getattr(ImageReadMode, mode))
    assert out.dtype == ember.uint8
    got, want = out.numpy(), EXPECTED[name]
    assert got.shape == want.shape
    # colour → gray in libpng rounds differently from Pillow by at most one level
    tol = 1 if (key.endswith("png_bytes") and mode.startswith("GRAY")) else 0
    assert np.abs(got.astype(int) - want).max() <= tol


def test_mode_strings_and_specific_decoders():
    a = decode_jpeg(_t("jpeg_bytes"), mode="rgb")
    np.testing.assert_array_equal(a.numpy(), EXPECTED["jpeg_bytes_RGB"])
    assert isinstance(decode_jpeg([_t("jpeg_bytes"), _t("gray_jpeg_bytes")]), list)
    assert decode_png(_t("la_png_bytes")).shape == (2, 20, 28)
    with pytest.raises(RuntimeError, match="not a PNG"):
        decode_png(_t("jpeg_bytes"))
    with pytest.raises(RuntimeError, match="not a JPEG"):
        decode_jpeg(_t("la_png_bytes"))


def test_round_trips(tmp_path):
    rgb = ember.from_numpy(EXPECTED["rgb"].copy())
    png = encode_png(rgb)
    assert png.dtype == ember.uint8 and png.ndim == 1
    np.testing.assert_array_equal(decode_png(png).numpy(), EXPECTED["rgb"])
    write_png(rgb, tmp_path / "a.png", compression_level=9)
    np.testing.assert_array_equal(read_image(str(tmp_path / "a.png")).numpy(), EXPECTED["rgb"])
    write_jpeg(rgb, str(tmp_path / "a.jpg"), quality=95)
    back = read_image(tmp_path / "a.jpg", ImageReadMode.RGB).numpy().astype(int)
    # the third channel is high-frequency noise, which 4:2:0 chroma subsampling blurs
    assert np.abs(back - EXPECTED["rgb"])[:2].mean() < 8
    gray = rgb[:1]
    assert decode_jpeg(encode_jpeg(gray)).shape == (1, 20, 28)
    assert len(encode_jpeg([rgb, rgb])) == 2
    data = read_file(tmp_path / "a.png")
    write_file(tmp_path / "b.png", data)
    assert (tmp_path / "b.png").read_bytes() == (tmp_path / "a.png").read_bytes()
    # decode_image takes a path too
    assert decode_image(str(tmp_path / "a.png"), ImageReadMode.GRAY).shape == (1, 20, 28)


def test_gif(tmp_path):
    frames = [Image.fromarray(np.full((6, 5, 3), v, np.uint8)) for v in (10, 200)]
    frames[0].save(tmp_path / "a.gif", save_all=True, append_images=frames[1:])
    out = decode_gif(read_file(tmp_path / "a.gif"))
    assert out.shape == (2, 3, 6, 5)


def test_corrupt_and_truncated_data_raise(tmp_path):
    jpeg = EXPECTED["jpeg_bytes"]
    with pytest.raises(RuntimeError, match="could not decode the JPEG"):
        decode_jpeg(ember.from_numpy(jpeg[: len(jpeg) // 2].copy()))
    png = EXPECTED["la_png_bytes"]
    with pytest.raises(RuntimeError, match="could not decode the PNG"):
        decode_png(ember.from_numpy(png[: len(png) - 30].copy()))
    bad = png.copy()
    bad[40:60] = 0
    with pytest.raises(RuntimeError, match="PNG"):
        decode_image(ember.from_numpy(bad))
    with pytest.raises(RuntimeError, match="unsupported image file"):
        decode_image(ember.from_numpy(np.frombuffer(b"hello world, not an image", np.uint8).copy()))
    with pytest.raises(RuntimeError, match="empty"):
        decode_image(ember.zeros(0, dtype=ember.uint8))
    with pytest.raises(RuntimeError, match="uint8"):
        decode_png(ember.zeros(10, dtype=ember.float32))
    with pytest.raises(RuntimeError, match="does not exist"):
        read_image(str(tmp_path / "missing.png"))
    with pytest.raises(ValueError, match="quality"):
        encode_jpeg(ember.zeros(3, 4, 4, dtype=ember.uint8), quality=0)
    with pytest.raises(RuntimeError, match="channels"):
        encode_jpeg(ember.zeros(4, 4, 4, dtype=ember.uint8))


def test_decoded_pixels_outlive_the_decoder():
    import gc

    png = encode_png(ember.from_numpy(EXPECTED["rgb"].copy()))
    images = [decode_png(png) for _ in range(3)] + [decode_png(png, ImageReadMode.RGB_ALPHA),
                                                    decode_png(png, ImageReadMode.GRAY)]
    gc.collect()
    junk = [np.full((20, 28, 3), 7, np.uint8) for _ in range(50)]  # reuse of freed memory would show
    for img in images[:3]:
        np.testing.assert_array_equal(img.numpy(), EXPECTED["rgb"])
    assert images[3].shape == (4, 20, 28) and int(images[3][3].min()) == 255
    images[0][0, 0, 0] = 1  # writable, and private to this tensor
    assert int(images[1][0, 0, 0]) == int(EXPECTED["rgb"][0, 0, 0])
    assert images[4].shape == (1, 20, 28) and len(junk) == 50
