"""`load`, `info` and `save` (TorchAudio 0.12's signatures and results) on the FFmpeg binary."""
import os
import subprocess
import threading
from dataclasses import dataclass

import numpy as np

import ember

from . import _ffmpeg
from .io import StreamReader

__all__ = ["AudioMetaData", "info", "load", "save"]


@dataclass
class AudioMetaData:
    """What `info` reports. `encoding` is TorchAudio's name ("PCM_S", "FLAC", "MP3", ...)."""
    sample_rate: int
    num_frames: int
    num_channels: int
    bits_per_sample: int
    encoding: str


_ENCODINGS = {"pcm_mulaw": "ULAW", "pcm_alaw": "ALAW", "flac": "FLAC", "mp3": "MP3", "vorbis": "VORBIS",
              "opus": "OPUS", "amr_nb": "AMR_NB", "amr_wb": "AMR_WB", "gsm": "GSM"}
_PCM_ENCODINGS = {"s": "PCM_S", "u": "PCM_U", "f": "PCM_F"}

# (encoding, bits_per_sample) -> the WAV codec that writes it
_WAV_CODECS = {("PCM_S", 16): "pcm_s16le", ("PCM_S", 24): "pcm_s24le", ("PCM_S", 32): "pcm_s32le",
               ("PCM_U", 8): "pcm_u8", ("PCM_F", 32): "pcm_f32le", ("PCM_F", 64): "pcm_f64le",
               ("ULAW", 8): "pcm_mulaw", ("ALAW", 8): "pcm_alaw"}
# dtype of the tensor to save -> (raw input format, default WAV encoding and bits)
_RAW_INPUTS = {"float32": ("f32le", "PCM_F", 32), "float64": ("f64le", "PCM_F", 64), "int32": ("s32le", "PCM_S", 32),
               "int16": ("s16le", "PCM_S", 16), "uint8": ("u8", "PCM_U", 8)}


def _encoding(codec):
    if codec.startswith("pcm_") and codec[4] in _PCM_ENCODINGS:
        return _PCM_ENCODINGS[codec[4]]
    return _ENCODINGS.get(codec, codec.upper())


def _audio_stream(reader, filepath):
    index = reader.default_audio_stream
    if index is None:
        raise ValueError(f"{filepath!r} has no audio stream")
    return index, reader.get_src_stream_info(index)


def info(filepath, format=None):
    """Metadata of the first audio stream. `num_frames` is exact: the stream is decoded and counted."""
    with StreamReader(filepath, format=format) as reader:
        index, stream = _audio_stream(reader, filepath)
        # one byte per frame is the cheapest way to count what the decoder produces
        reader.add_audio_stream(1 << 16, -1, index, filter_desc="aformat=sample_fmts=u8:channel_layouts=mono")
        num_frames = sum(chunk.shape[0] for (chunk,) in reader.stream())
    return AudioMetaData(int(stream.sample_rate), num_frames, stream.num_channels, stream.bits_per_sample,
                         _encoding(stream.codec))


def load(filepath, frame_offset=0, num_frames=-1, normalize=True, channels_first=True, format=None):
    """(waveform, sample_rate) of the first audio stream, frames `[frame_offset, frame_offset + num_frames)`.

    float32 in [-1, 1] when `normalize`; otherwise integer PCM WAV keeps its integer dtype (24-bit as
    int32), as in TorchAudio 0.12, and every other encoding is float32."""
    for name, value, smallest in (("frame_offset", frame_offset, 0), ("num_frames", num_frames, -1)):
        if not isinstance(value, int) or value < smallest or (name == "num_frames" and value == 0):
            raise ValueError(f"{name} must be an int >= {smallest}{' and not 0' if name == 'num_frames' else ''}, got {value!r}")
    with StreamReader(filepath, format=format) as reader:
        index, stream = _audio_stream(reader, filepath)
        sample_format = "flt" if normalize or not stream.codec.startswith(("pcm_s", "pcm_u")) else stream.format
        trim = f"atrim=start_sample={frame_offset}" + (f":end_sample={frame_offset + num_frames}" if num_frames > 0 else "")
        reader.add_audio_stream(-1, -1, index, filter_desc=f"{trim},aformat=sample_fmts={sample_format}")
        reader.process_all_packets()
        (waveform,) = reader.pop_chunks()
    if waveform is None:
        waveform = ember.zeros((0, stream.num_channels), dtype=ember.float32)
    return (waveform.t().contiguous() if channels_first else waveform), int(stream.sample_rate)


def _codec_options(container, raw_encoding, raw_bits, encoding, bits_per_sample):
    """FFmpeg output options for TorchAudio's (encoding, bits_per_sample) choice in `container`."""
    if container == "wav":
        key = (encoding or raw_encoding, bits_per_sample or (raw_bits if encoding in (None, raw_encoding) else
                                                             {"PCM_S": 16, "PCM_U": 8, "PCM_F": 32}.get(encoding, 8)))
        if key not in _WAV_CODECS:
            raise ValueError(f"encoding={encoding!r} with bits_per_sample={bits_per_sample!r} cannot be written to WAV; "
                             f"expected one of {sorted(_WAV_CODECS)}")
        return ["-c:a", _WAV_CODECS[key]]
    if container == "flac":
        bits = bits_per_sample or (16 if raw_bits <= 16 else 24)
        if bits not in (16, 24):
            raise ValueError(f"bits_per_sample for FLAC must be 16 or 24, got {bits_per_sample!r}")
        return ["-c:a", "flac", "-sample_fmt", "s16" if bits == 16 else "s32", "-bits_per_raw_sample", str(bits)]
    return []  # other containers: FFmpeg's default encoder for them


def save(filepath, src, sample_rate, channels_first=True, format=None, encoding=None, bits_per_sample=None):
    """Write a 2-D tensor as audio; the container comes from `format` or the file's extension."""
    if not isinstance(src, ember.Tensor) or src.dim() != 2:
        raise ValueError(f"src must be a 2-D ember.Tensor, got {type(src).__name__}"
                         f"{' of shape ' + str(tuple(src.shape)) if isinstance(src, ember.Tensor) else ''}")
    if not isinstance(sample_rate, int) or sample_rate <= 0:
        raise ValueError(f"sample_rate must be a positive int, got {sample_rate!r}")
    samples = src.numpy()
    dtype_name = str(samples.dtype)
    if dtype_name not in _RAW_INPUTS:
        raise TypeError(f"src dtype must be one of {sorted(_RAW_INPUTS)}, got {dtype_name}")
    interleaved = np.ascontiguousarray(samples.T if channels_first else samples)
    is_file = hasattr(filepath, "write")
    container = (format or ("" if is_file else os.path.splitext(os.fspath(filepath))[1][1:])).lower()
    if not container:
        raise ValueError("format must be given when filepath is a file-like object or has no extension")
    raw_format, raw_encoding, raw_bits = _RAW_INPUTS[dtype_name]
    cmd = _ffmpeg.base_command() + ["-f", raw_format, "-ar", str(sample_rate), "-ac", str(interleaved.shape[1]),
                                    "-i", "pipe:0"] + _codec_options(container, raw_encoding, raw_bits, encoding,
                                                                     bits_per_sample)
    cmd += ["-f", {"mp3": "mp3", "ogg": "ogg", "wav": "wav", "flac": "flac"}.get(container, container)]
    cmd += ["pipe:1"] if is_file else ["-y", os.fspath(filepath)]
    _encode(cmd, interleaved, filepath if is_file else None)


def _encode(cmd, interleaved, fileobj):
    stderr = []
    with subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE if fileobj else subprocess.DEVNULL,
                          stderr=subprocess.PIPE) as proc:
        # stdout (the encoded file) and stderr are drained by threads while stdin is written: no deadlock
        threads = [threading.Thread(target=_copy, args=(proc.stderr, stderr.append), daemon=True)]
        if fileobj:
            threads.append(threading.Thread(target=_copy, args=(proc.stdout, fileobj.write), daemon=True))
        for thread in threads:
            thread.start()
        try:
            proc.stdin.write(interleaved.data)
            proc.stdin.close()
        except BrokenPipeError:
            pass  # FFmpeg refused the options; its stderr says why
        for thread in threads:
            thread.join()
    if proc.returncode != 0:
        raise RuntimeError(f"FFmpeg could not write the audio: {_ffmpeg.error_lines(b''.join(stderr).decode(errors='replace'))}")


def _copy(pipe, write):
    while block := pipe.read(1 << 16):
        write(block)
