"""Shared by the emberaudio tests: the test media's parameters and FFmpeg's CLI as the reference
decoder. (A uniquely named module, not conftest: every package's tests share one `conftest` name.)"""
import subprocess

import numpy as np

from emberaudio import _ffmpeg

SAMPLE_RATE = 44100
SECONDS = 3


def run_ffmpeg(*args):
    return subprocess.run([_ffmpeg.executable(), "-hide_banner", "-nostdin", "-loglevel", "error", *args],
                          capture_output=True, check=True).stdout


def reference_decode(path, *options, fmt="f32le", dtype="float32", channels=None, src_format=()):
    """What `ffmpeg -i path [options] -f fmt -` writes, as a (frames, channels) array."""
    raw = run_ffmpeg(*src_format, "-i", str(path), "-map", "0:a:0", *options, "-f", fmt, "-")
    samples = np.frombuffer(raw, dtype=dtype)
    return samples.reshape(-1, channels) if channels else samples
