import io
import math
import os
import warnings

import numpy as np
import pytest

from emberaudio_test_media import SAMPLE_RATE, SECONDS, reference_decode, run_ffmpeg
from emberaudio import _ffmpeg
from emberaudio.io import OutputStream, SourceAudioStream, SourceVideoStream, StreamReader, _stream_reader

WAV_FRAMES = SAMPLE_RATE * SECONDS


def chunks_of(reader):
    return [chunk for (chunk,) in reader.stream()]


def joined(chunks):
    return np.concatenate([c.numpy() for c in chunks])


def test_source_stream_info(media):
    reader = StreamReader(media["wav"])
    assert reader.num_src_streams == 1 and reader.default_audio_stream == 0 and reader.default_video_stream is None
    info = reader.get_src_stream_info(0)
    assert isinstance(info, SourceAudioStream)
    assert (info.media_type, info.codec, info.format, info.sample_rate, info.num_channels, info.bits_per_sample) == \
        ("audio", "pcm_s16le", "s16", 44100.0, 2, 16)
    assert info.codec_long_name == "PCM signed 16-bit little-endian"


@pytest.mark.parametrize("media_file", ["mp4"], indirect=True)
def test_video_stream_info(media_file):
    reader = StreamReader(media_file)
    video = reader.get_src_stream_info(reader.default_video_stream)
    assert isinstance(video, SourceVideoStream)
    assert (video.codec, video.width, video.height, video.frame_rate, video.format) == ("h264", 64, 48, 10.0, "yuv420p")


@pytest.mark.parametrize("media_file", ["wav", "flac", "mp3", "mp4", "webm"], indirect=True)
def test_chunks_equal_ffmpeg_decode(media_file):
    expected = reference_decode(media_file, channels=2)
    reader = StreamReader(media_file)
    reader.add_basic_audio_stream(frames_per_chunk=4096)
    chunks = chunks_of(reader)
    assert len(chunks) == math.ceil(len(expected) / 4096)
    assert all(c.shape == (4096, 2) for c in chunks[:-1]) and chunks[-1].shape[0] == len(expected) - 4096 * (len(chunks) - 1)
    np.testing.assert_array_equal(joined(chunks), expected)


@pytest.mark.parametrize("media_file", ["wav", "mp3"], indirect=True)
@pytest.mark.parametrize("fmt, dtype, raw", [("fltp", "float32", "f32le"), ("s16p", "int16", "s16le")])
def test_chunk_sized_ffmpeg_frames_keep_every_sample(media_file, fmt, dtype, raw):
    # chunks of 5000 frames: FFmpeg regroups its frames into chunk-sized ones, and converts to
    # the packed format directly; neither may change a sample or the chunk boundaries
    expected = reference_decode(media_file, fmt=raw, dtype=dtype, channels=2, src_format=("-ss", "0.5"))
    reader = StreamReader(media_file)
    reader.add_basic_audio_stream(frames_per_chunk=5000, format=fmt)
    reader.seek(0.5)
    chunks = chunks_of(reader)
    assert [c.shape[0] for c in chunks[:-1]] == [5000] * (len(chunks) - 1) and 0 < chunks[-1].shape[0] <= 5000
    np.testing.assert_array_equal(joined(chunks), expected)
    assert reader.get_out_stream_info(0).filter_description == f"aformat=sample_fmts={fmt}"


@pytest.mark.parametrize("fmt, dtype, raw", [("u8", "uint8", "u8"), ("s16", "int16", "s16le"), ("s32p", "int32", "s32le"),
                                             ("flt", "float32", "f32le"), ("dbl", "float64", "f64le")])
def test_sample_format_sets_dtype(media, fmt, dtype, raw):
    reader = StreamReader(media["wav"])
    reader.add_basic_audio_stream(-1, format=fmt)
    reader.process_all_packets()
    (chunk,) = reader.pop_chunks()
    assert str(chunk.dtype) == f"ember.{dtype}" and chunk.shape == (WAV_FRAMES, 2)
    np.testing.assert_array_equal(chunk.numpy(), reference_decode(media["wav"], fmt=raw, dtype=dtype, channels=2))


def test_lavfi_source():
    reader = StreamReader("sine=frequency=440:duration=2", format="lavfi")
    reader.add_basic_audio_stream(frames_per_chunk=44100)
    assert [tuple(c.shape) for c in chunks_of(reader)] == [(44100, 1), (44100, 1)]


def test_seek(media):
    reader = StreamReader(media["wav"])
    reader.add_basic_audio_stream(frames_per_chunk=-1)
    reader.seek(1.0)
    reader.process_all_packets()
    (chunk,) = reader.pop_chunks()
    np.testing.assert_array_equal(chunk.numpy(), reference_decode(media["wav"], channels=2)[SAMPLE_RATE:])


def test_seek_after_decoding_restarts(media):
    reader = StreamReader(media["wav"])
    reader.add_basic_audio_stream(frames_per_chunk=1000)
    next(reader.stream())
    reader.seek(2.0)
    assert sum(c.shape[0] for c in chunks_of(reader)) == WAV_FRAMES - 2 * SAMPLE_RATE


@pytest.mark.parametrize("filter_desc", ["lowpass=f=300", "aresample=8000", "volume=0.5,aformat=sample_fmts=s16"])
def test_audio_filters_equal_ffmpeg(media, filter_desc):
    reader = StreamReader(media["flac"])
    reader.add_audio_stream(frames_per_chunk=2048, filter_desc=filter_desc)
    got = joined(chunks_of(reader))
    # FLAC decodes to s16, so chunks are int16 unless the chain names another sample format
    expected = reference_decode(media["flac"], "-af", filter_desc, fmt="s16le", dtype="int16", channels=2)
    np.testing.assert_array_equal(got, expected)
    assert reader.get_out_stream_info(0) == OutputStream(0, filter_desc)


def test_basic_audio_sample_rate(media):
    reader = StreamReader(media["wav"])
    reader.add_basic_audio_stream(frames_per_chunk=-1, sample_rate=8000)
    reader.process_all_packets()
    (chunk,) = reader.pop_chunks()
    assert chunk.shape == (8000 * SECONDS, 2)
    np.testing.assert_array_equal(chunk.numpy(), reference_decode(media["wav"], "-af", "aresample=8000", channels=2))


@pytest.mark.parametrize("media_file", ["mp4"], indirect=True)
def test_video_scale_and_formats(media_file):
    reader = StreamReader(media_file)
    reader.add_basic_video_stream(frames_per_chunk=4, width=32, height=24)
    reader.add_video_stream(frames_per_chunk=-1, filter_desc="scale=16:12,format=pix_fmts=gray")
    rgb, gray = [], []
    for a, b in reader.stream():
        rgb += [a] if a is not None else []
        gray += [b] if b is not None else []
    frames = SECONDS * 10
    assert [c.shape[0] for c in rgb] == [4] * 7 + [2] and rgb[0].shape == (4, 3, 24, 32)
    assert str(rgb[0].dtype) == "ember.uint8" and sum(c.shape[0] for c in gray) == frames and gray[0].shape[1:] == (1, 12, 16)
    raw = run_ffmpeg("-i", str(media_file), "-map", "0:v:0", "-vf", "scale=32:24", "-pix_fmt", "rgb24", "-f", "rawvideo", "-")
    expected = np.frombuffer(raw, np.uint8).reshape(frames, 24, 32, 3).transpose(0, 3, 1, 2)
    np.testing.assert_array_equal(joined(rgb), expected)


@pytest.mark.parametrize("media_file", ["mp4"], indirect=True)
def test_yuv420p_source_is_upsampled_to_three_planes(media_file):
    reader = StreamReader(media_file)
    reader.add_video_stream(frames_per_chunk=1)
    (chunk,) = next(reader.stream())
    assert chunk.shape == (1, 3, 48, 64)
    reader.close()


@pytest.mark.parametrize("media_file", ["mp4"], indirect=True)
def test_audio_and_video_at_once(media_file):
    reader = StreamReader(media_file)
    reader.add_basic_audio_stream(frames_per_chunk=4410, buffer_chunk_size=-1)
    reader.add_basic_video_stream(frames_per_chunk=1, buffer_chunk_size=-1)
    audio, video = [], []
    for a, v in reader.stream():
        audio += [a] if a is not None else []
        video += [v] if v is not None else []
    np.testing.assert_array_equal(joined(audio), reference_decode(media_file, channels=2))
    assert sum(v.shape[0] for v in video) == SECONDS * 10


class ReadOnly:
    """A file-like object with read() and nothing else (a socket, a pipe)."""

    def __init__(self, data):
        self._stream = io.BytesIO(data)

    def read(self, size=-1):
        return self._stream.read(size)


@pytest.mark.parametrize("wrap", [io.BytesIO, ReadOnly])
def test_file_like_sources(media, wrap):
    reader = StreamReader(wrap(media["flac"].read_bytes()), buffer_size=1000)
    assert reader.get_src_stream_info(0).codec == "flac"
    reader.add_basic_audio_stream(frames_per_chunk=10_000)
    np.testing.assert_array_equal(joined(chunks_of(reader)), reference_decode(media["flac"], channels=2))


def test_seek_on_file_like_without_seek_fails_after_decoding(media):
    reader = StreamReader(ReadOnly(media["wav"].read_bytes()))
    reader.add_basic_audio_stream(frames_per_chunk=-1)
    reader.process_all_packets()
    reader.seek(1.0)
    with pytest.raises(RuntimeError, match="seek\\(\\) and tell\\(\\)"):
        reader.process_packet()


def test_file_like_seek(media):
    reader = StreamReader(io.BytesIO(media["wav"].read_bytes()))
    reader.add_basic_audio_stream(frames_per_chunk=-1)
    reader.process_all_packets()
    reader.seek(2.0)
    reader.process_all_packets()
    (chunk,) = reader.pop_chunks()
    assert chunk.shape == (SAMPLE_RATE, 2)


def test_overflow_drops_oldest_chunks_with_a_warning(media):
    reader = StreamReader(media["wav"])
    reader.add_basic_audio_stream(frames_per_chunk=1000, buffer_chunk_size=2)
    with pytest.warns(RuntimeWarning, match="oldest frames were dropped"):
        reader.process_all_packets()
    kept = []
    while (chunk := reader.pop_chunks()[0]) is not None:
        kept.append(chunk)
    assert sum(c.shape[0] for c in kept) <= 2000
    np.testing.assert_array_equal(joined(kept), reference_decode(media["wav"], channels=2)[-len(joined(kept)):])


def test_unbounded_buffer_keeps_everything(media):
    reader = StreamReader(media["wav"])
    reader.add_basic_audio_stream(frames_per_chunk=1000, buffer_chunk_size=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reader.process_all_packets()
    assert reader.is_buffer_ready()
    assert sum(reader.pop_chunks()[0].shape[0] for _ in range(math.ceil(WAV_FRAMES / 1000))) == WAV_FRAMES
    assert reader.pop_chunks() == (None,)


def test_process_packet_returns_one_at_end(media):
    reader = StreamReader(media["wav"])
    reader.add_basic_audio_stream(frames_per_chunk=-1)
    codes = []
    while not codes or codes[-1] == 0:
        codes.append(reader.process_packet(timeout=10))
    assert set(codes[:-1]) == {0} and codes[-1] == 1 and reader.process_packet() == 1


def test_remove_stream(media):
    reader = StreamReader(media["wav"])
    reader.add_basic_audio_stream(100)
    reader.add_basic_audio_stream(200, format="s16")
    reader.remove_stream(0)
    assert reader.num_out_streams == 1 and reader.get_out_stream_info(0).filter_description == "aformat=sample_fmts=s16"


# -- bad input -----------------------------------------------------------------------------------


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="No such file or directory"):
        StreamReader(tmp_path / "missing.wav")


def test_unknown_format(media):
    with pytest.raises(ValueError, match="Unknown input format: 'nosuchformat'"):
        StreamReader(media["wav"], format="nosuchformat")


def test_not_media(tmp_path):
    junk = tmp_path / "junk.wav"
    junk.write_bytes(b"this is not audio" * 10)
    with pytest.raises((ValueError, RuntimeError), match="Invalid data"):
        StreamReader(junk)


def test_no_audio_stream(media):
    reader = StreamReader(media["video_only"])
    with pytest.raises(ValueError, match="has no audio stream"):
        reader.add_basic_audio_stream(1024)


def test_bad_stream_index(media):
    reader = StreamReader(media["wav"])
    with pytest.raises(IndexError, match=r"source stream index must be in \[0, 1\), got 3"):
        reader.add_basic_audio_stream(1024, stream_index=3)
    with pytest.raises(IndexError):
        reader.get_out_stream_info(0)


def test_bad_filter_carries_ffmpeg_message(media):
    reader = StreamReader(media["wav"])
    reader.add_audio_stream(1024, filter_desc="nosuchfilter")
    with pytest.raises(RuntimeError, match="No such filter: 'nosuchfilter'"):
        reader.process_all_packets()


@pytest.mark.parametrize("kwargs, error", [
    (dict(frames_per_chunk=0), ValueError), (dict(frames_per_chunk=1.5), TypeError),
    (dict(frames_per_chunk=10, buffer_chunk_size=0), ValueError), (dict(frames_per_chunk=10, format="s24"), ValueError),
])
def test_bad_arguments(media, kwargs, error):
    with pytest.raises(error):
        StreamReader(media["wav"]).add_basic_audio_stream(**kwargs)


def test_no_output_stream(media):
    with pytest.raises(RuntimeError, match="no output stream"):
        StreamReader(media["wav"]).process_packet()


@pytest.mark.parametrize("media_file", ["mp4"], indirect=True)
def test_hw_accel_cuda_fails_clearly_without_a_gpu(media_file):
    reader = StreamReader(media_file)
    try:
        reader.add_basic_video_stream(1, hw_accel="cuda:0")
    except RuntimeError as error:
        assert "hw_accel" in str(error) and "cuda" in str(error).lower()
    else:
        pytest.skip("this machine decodes with CUDA")
    with pytest.raises(ValueError, match="hw_accel must be"):
        reader.add_basic_video_stream(1, hw_accel="tpu")


# -- processes are always reaped -----------------------------------------------------------------


def _gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_no_orphan_after_early_break(media):
    with StreamReader(media["wav"]) as reader:
        reader.add_basic_audio_stream(frames_per_chunk=100)
        for _ in reader.stream():
            break
        pid = reader._process.proc.pid
    assert _gone(pid)


def test_no_orphan_after_exception(media):
    with pytest.raises(KeyError):
        with StreamReader(media["wav"]) as reader:
            reader.add_basic_audio_stream(frames_per_chunk=100)
            next(reader.stream())
            pid = reader._process.proc.pid
            raise KeyError("user code failed")
    assert _gone(pid)


def test_no_orphan_when_reader_is_dropped(media):
    reader = StreamReader(media["wav"])
    reader.add_basic_audio_stream(frames_per_chunk=100)
    next(reader.stream())
    pid = reader._process.proc.pid
    del reader
    assert _gone(pid)


def test_no_orphan_after_ffmpeg_error(media):
    reader = StreamReader(media["wav"])
    reader.add_audio_stream(1024, filter_desc="nosuchfilter")
    with pytest.raises(RuntimeError):
        reader.process_all_packets()
    pid = reader._process.proc.pid
    reader.close()
    assert _gone(pid)


def test_seek_past_the_end_gives_no_chunks(media):
    reader = StreamReader(media["wav"])
    reader.add_basic_audio_stream(frames_per_chunk=1000)
    reader.seek(60.0)
    assert chunks_of(reader) == []


def command_args(reader):
    """The reader's FFmpeg command line after the global options, its source shown as SRC."""
    command = reader._command([f"pipe:{3 + i}" for i in range(reader.num_out_streams)])
    base = _ffmpeg.base_command("info")
    assert command[:len(base)] == base
    return ["SRC" if arg == reader._src_arg else arg for arg in command[len(base):]]


@pytest.mark.parametrize("media_file", ["mp4"], indirect=True)
def test_command_lines(media_file, monkeypatch):
    """Argument by argument, the command lines that ffmpeg-python built before emberaudio built them itself."""
    monkeypatch.setattr(_stream_reader, "_check_hw_accel", lambda hw_accel: hw_accel)  # no CUDA needed
    reader = StreamReader(media_file)
    reader.add_basic_audio_stream(1024)
    assert command_args(reader) == ["-i", "SRC", "-map", "0:1", "-f", "f32le", "-af", "aformat=sample_fmts=flt",
                                    "pipe:3"]

    reader = StreamReader(media_file)
    reader.add_basic_audio_stream(8192, sample_rate=8000, format="s16p")
    reader.add_basic_video_stream(2, width=32, frame_rate=5)
    reader.seek(0.5)
    assert command_args(reader) == [
        "-ss", "0.5", "-i", "SRC",
        "-map", "0:1", "-f", "s16le", "-af", "aresample=8000,aformat=sample_fmts=s16,asetnsamples=n=8192:p=0", "pipe:3",
        "-map", "0:0", "-f", "rawvideo", "-pix_fmt", "rgb24", "-vf", "fps=5,scale=32:-1,format=pix_fmts=rgb24",
        "pipe:4"]

    reader = StreamReader(media_file, format="mp4", option={"probesize": "32768", "analyzeduration": 0})
    reader.add_audio_stream(4096, filter_desc="aformat=sample_fmts=s16", decoder="aac", decoder_option={"threads": "1"})
    reader.add_video_stream(1, decoder="h264", decoder_option={"threads": 2}, hw_accel="cuda:1")
    assert command_args(reader) == [
        "-f", "mp4", "-analyzeduration", "0", "-c:0", "h264", "-c:1", "aac", "-hwaccel:0", "cuda", "-hwaccel_device:0",
        "1", "-probesize", "32768", "-threads:0", "2", "-threads:1", "1", "-i", "SRC",
        "-map", "0:1", "-f", "s16le", "-af", "aformat=sample_fmts=s16,asetnsamples=n=4096:p=0", "pipe:3",
        "-map", "0:0", "-f", "rawvideo", "-pix_fmt", "yuv444p", "-vf", "null", "pipe:4"]

    with open(media_file, "rb") as file:  # a pipe cannot seek: each output drops what comes before -ss
        reader = StreamReader(file)
        reader.add_basic_video_stream(3, format="gray", hw_accel="cuda")
        reader.add_basic_audio_stream(100)
        reader.seek(1)
        assert command_args(reader) == [
            "-hwaccel:0", "cuda", "-hwaccel_device:0", "0", "-i", "SRC",
            "-map", "0:0", "-f", "rawvideo", "-pix_fmt", "gray", "-ss", "1.0", "-vf", "format=pix_fmts=gray", "pipe:3",
            "-map", "0:1", "-f", "f32le", "-af", "aformat=sample_fmts=flt", "-ss", "1.0", "pipe:4"]
