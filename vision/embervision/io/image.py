"""Image file I/O (see the package docstring)."""
import ctypes
import io
import os
from enum import Enum

import numpy as np

import ember
from ember import Tensor


class ImageReadMode(Enum):
    """Channels to decode to: UNCHANGED keeps the file's own (1, 2, 3 or 4)."""

    UNCHANGED = 0
    GRAY = 1
    GRAY_ALPHA = 2
    RGB = 3
    RGB_ALPHA = 4
    RGBA = RGB_ALPHA


def _pil():
    try:
        from PIL import Image
    except ImportError as e:  # pragma: no cover
        raise RuntimeError("embervision.io needs Pillow: pip install pillow") from e
    return Image


def _mode(mode):
    if isinstance(mode, str):
        mode = ImageReadMode[mode.upper()]
    if not isinstance(mode, ImageReadMode):
        raise TypeError(f"mode should be an ImageReadMode, got {type(mode).__name__}")
    return mode


def read_file(path):
    """The bytes of a file as a 1-d uint8 tensor."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise RuntimeError(f"File '{path}' does not exist")
    with open(path, "rb") as f:
        data = f.read()
    if not data:
        raise RuntimeError(f"File '{path}' is empty")
    return ember.from_numpy(np.frombuffer(data, dtype=np.uint8).copy())


def _bytes(data, fn):
    if not isinstance(data, Tensor):
        raise TypeError(f"{fn}: expected an ember tensor of encoded bytes, got {type(data).__name__}")
    if data.dtype != ember.uint8:
        raise RuntimeError(f"{fn}: expected a uint8 tensor, got {data.dtype}")
    if data.ndim != 1:
        raise RuntimeError(f"{fn}: expected a 1-d tensor of encoded bytes, got {data.ndim} dimensions")
    if data.numel() == 0:
        raise RuntimeError(f"{fn}: empty input")
    return data.contiguous().numpy().tobytes()


def write_file(filename, data):
    """Writes a 1-d uint8 tensor's bytes to `filename`."""
    raw = _bytes(data, "write_file")
    with open(os.fspath(filename), "wb") as f:
        f.write(raw)


_SIGNATURES = {
    "JPEG": (b"\xff\xd8\xff",),
    "PNG": (b"\x89PNG\r\n\x1a\n",),
    "GIF": (b"GIF87a", b"GIF89a"),
    "WEBP": (b"RIFF",),
}


def _sniff(raw):
    for fmt, sigs in _SIGNATURES.items():
        if any(raw.startswith(s) for s in sigs) and (fmt != "WEBP" or raw[8:12] == b"WEBP"):
            return fmt
    return None


def _to_tensor(img, mode, apply_exif_orientation):
    Image = _pil()
    if apply_exif_orientation:
        from PIL import ImageOps
        img = ImageOps.exif_transpose(img)
    if mode == ImageReadMode.UNCHANGED:
        if img.mode == "P":
            target = "RGBA" if "transparency" in img.info else "RGB"
        elif img.mode in ("L", "LA", "RGB", "RGBA"):
            target = img.mode
        elif img.mode in ("1",):
            target = "L"
        elif img.mode in ("I;16", "I;16B", "I;16L", "I"):
            target = None
        else:  # CMYK, YCbCr, PA, ... → RGB(A)
            target = "RGBA" if "A" in img.getbands() else "RGB"
    else:
        target = {ImageReadMode.GRAY: "L", ImageReadMode.GRAY_ALPHA: "LA", ImageReadMode.RGB: "RGB",
                  ImageReadMode.RGB_ALPHA: "RGBA"}[mode]
        if img.mode.startswith("I;16") or img.mode == "I":
            # 16-bit → 8-bit the way libpng's strip does (keep the high byte)
            arr = np.asarray(img).astype(np.uint32) >> 8
            img = Image.fromarray(arr.astype(np.uint8), "L")
    if target is None:
        # 16-bit grayscale: ember has no uint16, so values come back as int32 (0..65535)
        arr = np.asarray(img).astype(np.int32)[None]
        return ember.from_numpy(np.ascontiguousarray(arr))
    if img.mode != target:
        img = img.convert(target)
    # The tensor is a (C, H, W) view of the pixels, as TorchVision's decoders return a permuted
    # view: no copy to go channel-first. Pillow's own pixel memory when it exports it (Arrow),
    # else a copy of it.
    arr = _shared_pixels(img)
    if arr is None:
        arr = np.asarray(img, dtype=np.uint8)
    if arr.ndim == 2:
        return ember.from_numpy(arr).unsqueeze(0)
    channels = {"RGB": 3, "RGBA": 4}.get(img.mode, arr.shape[2])
    return ember.from_numpy(arr)[:, :, :channels].permute(2, 0, 1)


class _ArrowSchema(ctypes.Structure):
    """Arrow C data interface schema; fields set below (the struct points to itself)."""


_ArrowSchema._fields_ = [("format", ctypes.c_char_p), ("name", ctypes.c_char_p), ("metadata", ctypes.c_char_p),
                         ("flags", ctypes.c_int64), ("n_children", ctypes.c_int64),
                         ("children", ctypes.POINTER(ctypes.POINTER(_ArrowSchema))), ("dictionary", ctypes.c_void_p),
                         ("release", ctypes.c_void_p), ("private_data", ctypes.c_void_p)]


class _ArrowArray(ctypes.Structure):
    """Arrow C data interface array; fields set below (the struct points to itself)."""


_ArrowArray._fields_ = [("length", ctypes.c_int64), ("null_count", ctypes.c_int64), ("offset", ctypes.c_int64),
                        ("n_buffers", ctypes.c_int64), ("n_children", ctypes.c_int64),
                        ("buffers", ctypes.POINTER(ctypes.c_void_p)),
                        ("children", ctypes.POINTER(ctypes.POINTER(_ArrowArray))), ("dictionary", ctypes.c_void_p),
                        ("release", ctypes.c_void_p), ("private_data", ctypes.c_void_p)]

_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class _PixelOwner:
    """Keeps a decoded image and its Arrow export alive for as long as an array views its pixels
    (the Arrow C data interface keeps the memory valid until the array capsule is released)."""

    def __init__(self, img, capsules, address, shape):
        self.img, self.capsules = img, capsules
        self.__array_interface__ = {"shape": shape, "typestr": "|u1", "data": (address, False), "version": 3}


def _shared_pixels(img):
    """Pillow's own pixel memory as an (H, W) or (H, W, 4) uint8 array, through its Arrow export
    (Pillow >= 11.2, images held in one block), or None. RGB pixels are stored RGBX."""
    if img.mode not in ("L", "RGB", "RGBA") or not hasattr(img, "__arrow_c_array__"):
        return None
    try:
        capsules = img.__arrow_c_array__()
        schema = _ArrowSchema.from_address(_capsule_pointer(capsules[0], b"arrow_schema"))
        array = _ArrowArray.from_address(_capsule_pointer(capsules[1], b"arrow_array"))
    except Exception:  # older Pillow, or an image in several blocks
        return None
    w, h = img.size
    if array.length != w * h or array.offset != 0 or array.null_count != 0:
        return None
    if schema.format == b"C" and img.mode == "L" and array.n_buffers == 2:
        address, shape = array.buffers[1], (h, w)
    elif schema.format == b"+w:4" and array.n_children == 1:
        child = array.children[0].contents
        if child.offset != 0 or child.n_buffers != 2 or child.length != 4 * w * h:
            return None
        address, shape = child.buffers[1], (h, w, 4)
    else:
        return None
    if not address:
        return None
    return np.asarray(_PixelOwner(img, capsules, address, shape))


def _decode(data, mode, apply_exif_orientation, fn, expect=None):
    mode = _mode(mode)
    raw = _bytes(data, fn)
    fmt = _sniff(raw)
    if expect is not None and fmt != expect:
        raise RuntimeError(f"{fn}: the data is not a {expect} image (its first bytes are {raw[:8]!r})")
    if (fmt == "JPEG" and mode in (ImageReadMode.GRAY_ALPHA, ImageReadMode.RGB_ALPHA)):
        raise RuntimeError(f"{fn}: The provided mode is not supported for JPEG files")
    Image = _pil()
    try:
        img = Image.open(io.BytesIO(raw))
        if expect is not None and img.format != expect:
            raise RuntimeError(f"{fn}: the data is not a {expect} image")
        if img.format == "JPEG" and mode == ImageReadMode.GRAY and img.mode != "L":
            # libjpeg's own colour conversion (the luma plane), as TorchVision's decoder asks for
            img.draft("L", img.size)
        img.load()
    except RuntimeError:
        raise
    except Exception as e:  # Pillow raises OSError, SyntaxError, ValueError, struct.error, ...
        what = fmt or "image"
        raise RuntimeError(f"{fn}: could not decode the {what} data ({len(raw)} bytes): {e}") from None
    return _to_tensor(img, mode, apply_exif_orientation)


def decode_jpeg(input, mode=ImageReadMode.UNCHANGED, device="cpu", apply_exif_orientation=False):
    """Decodes JPEG bytes (or a list of them) to uint8 `(C, H, W)` tensors."""
    if isinstance(input, list):
        if len(input) == 0:
            raise ValueError("Input list must contain at least one element")
        if not all(isinstance(t, Tensor) for t in input):
            raise ValueError("All elements of the input list must be tensors.")
        return [decode_jpeg(t, mode, device, apply_exif_orientation) for t in input]
    out = _decode(input, mode, apply_exif_orientation, "decode_jpeg", "JPEG")
    return out if str(device) == "cpu" else out.to(device)


def decode_png(input, mode=ImageReadMode.UNCHANGED, apply_exif_orientation=False):
    """Decodes PNG bytes to a uint8 `(C, H, W)` tensor (16-bit PNGs: int32, as ember has no uint16)."""
    return _decode(input, mode, apply_exif_orientation, "decode_png", "PNG")


def decode_webp(input, mode=ImageReadMode.UNCHANGED):
    return _decode(input, mode, False, "decode_webp", "WEBP")


def decode_gif(input):
    """Decodes a GIF: `(C, H, W)` for one frame, `(N, C, H, W)` for an animation."""
    raw = _bytes(input, "decode_gif")
    if _sniff(raw) != "GIF":
        raise RuntimeError("decode_gif: the data is not a GIF image")
    Image = _pil()
    try:
        img = Image.open(io.BytesIO(raw))
        frames = []
        for i in range(getattr(img, "n_frames", 1)):
            img.seek(i)
            frames.append(np.asarray(img.convert("RGB"), dtype=np.uint8).transpose(2, 0, 1))
    except Exception as e:
        raise RuntimeError(f"decode_gif: could not decode the GIF data ({len(raw)} bytes): {e}") from None
    arr = frames[0] if len(frames) == 1 else np.stack(frames)
    return ember.from_numpy(np.ascontiguousarray(arr))


def decode_image(input, mode=ImageReadMode.UNCHANGED, apply_exif_orientation=False):
    """Decodes JPEG, PNG, GIF or WebP bytes (or reads a path first) to a uint8 `(C, H, W)` tensor."""
    if not isinstance(input, Tensor):
        input = read_file(str(input))
    raw_head = _bytes(input[:16] if input.ndim == 1 else input, "decode_image")
    if _sniff(raw_head) is None:
        raise RuntimeError(
            "decode_image: unsupported image file. Only jpeg, png, gif and webp are currently supported "
            f"(the data starts with {raw_head[:8]!r})")
    return _decode(input, mode, apply_exif_orientation, "decode_image")


def read_image(path, mode=ImageReadMode.UNCHANGED, apply_exif_orientation=False):
    """Reads and decodes an image file to a uint8 `(C, H, W)` tensor."""
    return decode_image(read_file(path), mode, apply_exif_orientation=apply_exif_orientation)


def _image_array(input, fn):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}: expected an ember tensor, got {type(input).__name__}")
    if input.dtype != ember.uint8:
        raise RuntimeError(f"{fn}: input tensor dtype should be uint8, got {input.dtype}")
    if input.ndim != 3:
        raise RuntimeError(f"{fn}: input data should be a 3-dimensional tensor (C, H, W), got {input.ndim} dimensions")
    c = input.shape[0]
    if c not in (1, 3) and not (fn == "encode_png" and c in (2, 4)):
        raise RuntimeError(f"{fn}: the number of channels should be 1 or 3, got {c}")
    arr = input.contiguous().numpy().transpose(1, 2, 0)
    return np.ascontiguousarray(arr[:, :, 0] if c == 1 else arr)


def _encoded(buf):
    return ember.from_numpy(np.frombuffer(buf.getvalue(), dtype=np.uint8).copy())


def encode_jpeg(input, quality=75):
    """Encodes uint8 `(C, H, W)` (C = 1 or 3), or a list of them, to JPEG bytes."""
    if quality < 1 or quality > 100:
        raise ValueError("Image quality should be a positive number between 1 and 100")
    if isinstance(input, list):
        if not input:
            raise ValueError("encode_jpeg requires at least one input tensor when a list is passed")
        return [encode_jpeg(t, quality) for t in input]
    Image = _pil()
    buf = io.BytesIO()
    Image.fromarray(_image_array(input, "encode_jpeg")).save(buf, format="JPEG", quality=quality)
    return _encoded(buf)


def encode_png(input, compression_level=6):
    """Encodes uint8 `(C, H, W)` (C = 1 to 4) to PNG bytes."""
    if compression_level < 0 or compression_level > 9:
        raise ValueError("Compression level should be between 0 and 9")
    Image = _pil()
    buf = io.BytesIO()
    Image.fromarray(_image_array(input, "encode_png")).save(buf, format="PNG", compress_level=compression_level)
    return _encoded(buf)


def write_jpeg(input, filename, quality=75):
    write_file(filename, encode_jpeg(input, quality))


def write_png(input, filename, compression_level=6):
    write_file(filename, encode_png(input, compression_level))
