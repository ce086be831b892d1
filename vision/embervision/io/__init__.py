"""`torchvision.io` image functions on ember tensors, decoding and encoding through Pillow
(libjpeg-turbo, libpng, libwebp).

Decoded images are uint8 `(C, H, W)` ember tensors; encoded data is a 1-d uint8 tensor.
Corrupt or truncated data raises `RuntimeError` naming the format and Pillow's reason. `read_video`
decodes through emberaudio's FFmpeg StreamReader.
"""
from .image import (
    ImageReadMode,
    decode_image,
    decode_jpeg,
    decode_png,
    decode_webp,
    decode_gif,
    encode_jpeg,
    encode_png,
    read_file,
    read_image,
    write_file,
    write_jpeg,
    write_png,
)
from .video import read_video, read_video_timestamps

__all__ = [
    "ImageReadMode", "decode_image", "decode_jpeg", "decode_png", "decode_webp", "decode_gif", "encode_jpeg",
    "encode_png", "read_file", "read_image", "read_video", "read_video_timestamps", "write_file", "write_jpeg",
    "write_png",
]
