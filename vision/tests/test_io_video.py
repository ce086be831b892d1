"""embervision.io.read_video on a clip made here by FFmpeg, against FFmpeg's own decoding."""
import subprocess

import numpy as np
import pytest

pytest.importorskip("emberaudio")
from emberaudio import _ffmpeg  # noqa: E402

from embervision.io import read_video, read_video_timestamps  # noqa: E402


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    path = tmp_path_factory.mktemp("video") / "clip.avi"
    subprocess.run([_ffmpeg.executable(), "-y", "-loglevel", "error", "-f", "lavfi", "-i",
                    "testsrc=size=32x24:rate=10:duration=2", "-f", "lavfi", "-i",
                    "sine=frequency=440:sample_rate=8000:duration=2", "-c:v", "mpeg4", "-q:v", "2",
                    "-c:a", "pcm_s16le", str(path)], check=True)
    raw = subprocess.run([_ffmpeg.executable(), "-loglevel", "error", "-i", str(path), "-f", "rawvideo",
                          "-pix_fmt", "rgb24", "-"], capture_output=True, check=True).stdout
    return path, np.frombuffer(raw, np.uint8).reshape(-1, 24, 32, 3)


def test_whole_clip(clip):
    path, ref = clip
    with pytest.warns(UserWarning, match="pts_unit 'pts'"):
        video, audio, info = read_video(str(path))
    assert info == {"video_fps": 10.0, "audio_fps": 8000.0}
    assert video.shape == (20, 24, 32, 3) and str(video.dtype) == "ember.uint8"
    np.testing.assert_array_equal(video.numpy(), ref)
    # lavfi sine: amplitude 1/8
    assert audio.shape == (1, 16000) and abs(float(audio.abs().max()) - 0.125) < 1e-3


def test_segment_in_seconds(clip):
    path, ref = clip
    video, audio, _ = read_video(str(path), 0.5, 1.0, pts_unit="sec", output_format="TCHW")
    assert video.shape == (6, 3, 24, 32)
    np.testing.assert_array_equal(video.permute(0, 2, 3, 1).numpy(), ref[5:11])
    assert audio.shape == (1, 4001)
    stamps, fps = read_video_timestamps(str(path), pts_unit="sec")
    assert fps == 10.0 and len(stamps) == 20 and stamps[3] == pytest.approx(0.3)


def test_errors(clip, tmp_path):
    path, _ = clip
    with pytest.raises(ValueError, match="output_format"):
        read_video(str(path), output_format="HWC", pts_unit="sec")
    with pytest.raises(NotImplementedError, match="pts_unit='sec'"):
        read_video(str(path), 3, 10)
    with pytest.raises(ValueError, match="end_pts should be larger"):
        read_video(str(path), 1.0, 0.5, pts_unit="sec")
    with pytest.raises(RuntimeError, match="not found"):
        read_video(str(tmp_path / "missing.mp4"), pts_unit="sec")
