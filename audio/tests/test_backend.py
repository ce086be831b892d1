import io

import numpy as np
import pytest

import ember
import emberaudio
from emberaudio_test_media import SAMPLE_RATE, SECONDS, reference_decode

WAV_FRAMES = SAMPLE_RATE * SECONDS


def test_info_wav(media):
    assert emberaudio.info(media["wav"]) == emberaudio.AudioMetaData(SAMPLE_RATE, WAV_FRAMES, 2, 16, "PCM_S")


@pytest.mark.parametrize("media_file, encoding, bits", [("flac", "FLAC", 16), ("mp3", "MP3", 0)], indirect=["media_file"])
def test_info_compressed(media_file, encoding, bits):
    meta = emberaudio.info(media_file)
    assert (meta.encoding, meta.bits_per_sample, meta.num_channels, meta.sample_rate) == (encoding, bits, 2, SAMPLE_RATE)
    assert meta.num_frames == len(reference_decode(media_file, channels=2))  # exact: counted while decoding


def test_load_normalized_channels_first(media):
    waveform, sample_rate = emberaudio.load(media["wav"])
    assert sample_rate == SAMPLE_RATE and waveform.shape == (2, WAV_FRAMES) and waveform.dtype == ember.float32
    np.testing.assert_array_equal(waveform.numpy(), reference_decode(media["wav"], channels=2).T)


def test_load_slice_native_dtype(media):
    waveform, _ = emberaudio.load(media["wav"], frame_offset=1000, num_frames=500, normalize=False, channels_first=False)
    assert waveform.shape == (500, 2) and waveform.dtype == ember.int16
    expected = reference_decode(media["wav"], fmt="s16le", dtype="int16", channels=2)[1000:1500]
    np.testing.assert_array_equal(waveform.numpy(), expected)


def test_load_file_like(media):
    waveform, _ = emberaudio.load(io.BytesIO(media["flac"].read_bytes()))
    np.testing.assert_array_equal(waveform.numpy(), reference_decode(media["flac"], channels=2).T)


@pytest.mark.parametrize("ext, dtype, kwargs, encoding, bits", [
    ("wav", "int16", {}, "PCM_S", 16), ("wav", "float32", {}, "PCM_F", 32),
    ("wav", "float32", dict(encoding="PCM_S", bits_per_sample=24), "PCM_S", 24),
    ("wav", "int16", dict(encoding="ULAW"), "ULAW", 8), ("flac", "int16", {}, "FLAC", 16),
])
def test_save_round_trip(tmp_path, ext, dtype, kwargs, encoding, bits):
    rng = np.random.default_rng(0)
    samples = (rng.uniform(-0.5, 0.5, (2, 1000)) * (32767 if dtype == "int16" else 1)).astype(dtype)
    path = tmp_path / f"out.{ext}"
    emberaudio.save(path, ember.from_numpy(samples), 16000, **kwargs)
    assert emberaudio.info(path) == emberaudio.AudioMetaData(16000, 1000, 2, bits, encoding)
    if (encoding, dtype) in (("PCM_S", "int16"), ("FLAC", "int16"), ("PCM_F", "float32")):  # lossless
        loaded, _ = emberaudio.load(path, normalize=False)
        np.testing.assert_array_equal(loaded.numpy(), samples if dtype != "int16" or ext == "wav" else samples / 32768)


def test_save_to_file_like_mp3():
    buffer = io.BytesIO()
    emberaudio.save(buffer, ember.zeros(1, 8000), 8000, format="mp3")
    buffer.seek(0)
    assert emberaudio.info(buffer).encoding == "MP3"


def test_save_bad_input(tmp_path):
    with pytest.raises(ValueError, match="2-D"):
        emberaudio.save(tmp_path / "a.wav", ember.zeros(10), 8000)
    with pytest.raises(ValueError, match="bits_per_sample"):
        emberaudio.save(tmp_path / "a.wav", ember.zeros(1, 10), 8000, encoding="PCM_S", bits_per_sample=12)
    with pytest.raises(ValueError, match="format must be given"):
        emberaudio.save(io.BytesIO(), ember.zeros(1, 10), 8000)
    with pytest.raises(RuntimeError, match="xyz"):
        emberaudio.save(tmp_path / "a.xyz", ember.zeros(1, 10), 8000)


def test_load_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        emberaudio.load(tmp_path / "missing.flac")


def test_load_without_audio(media):
    with pytest.raises(ValueError, match="no audio stream"):
        emberaudio.load(media["video_only"])
