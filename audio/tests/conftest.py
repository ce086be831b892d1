"""Media made once per session with the same FFmpeg binary."""
import subprocess

import pytest

from emberaudio_test_media import SAMPLE_RATE, SECONDS, run_ffmpeg


def _make(path, encoder_args, video=False):
    stereo = f"sine=frequency=440:duration={SECONDS}:sample_rate={SAMPLE_RATE},pan=stereo|c0=c0|c1=0.5*c0"
    args = ["-y", "-f", "lavfi", "-i", stereo]
    if video:
        args += ["-f", "lavfi", "-i", f"testsrc=size=64x48:rate=10:duration={SECONDS}"]
    try:
        run_ffmpeg(*args, *encoder_args, str(path))
    except subprocess.CalledProcessError as error:
        return error.stderr.decode(errors="replace").strip().splitlines()[-1]
    return None


MEDIA = {
    "wav": ([], False),
    "flac": (["-c:a", "flac"], False),
    "mp3": (["-c:a", "libmp3lame"], False),
    "mp4": (["-c:a", "aac", "-c:v", "libx264", "-pix_fmt", "yuv420p"], True),
    "webm": (["-c:a", "libopus", "-c:v", "libvpx-vp9"], True),
}


@pytest.fixture(scope="session")
def media(tmp_path_factory):
    """Extension -> path, or -> the reason this FFmpeg cannot make it."""
    folder = tmp_path_factory.mktemp("media")
    made = {}
    for ext, (encoder_args, video) in MEDIA.items():
        path = folder / f"sine.{ext}"
        made[ext] = _make(path, encoder_args, video) or path
    video_only = folder / "video_only.mp4"
    run_ffmpeg("-y", "-f", "lavfi", "-i", f"testsrc=size=64x48:rate=10:duration={SECONDS}", "-c:v", "libx264",
               str(video_only))
    made["video_only"] = video_only
    return made


@pytest.fixture
def media_file(media, request):
    """The file for the test's `ext` parameter; skips where this FFmpeg lacks the encoder."""
    found = media[request.param]
    if isinstance(found, str):
        pytest.skip(f"this FFmpeg cannot write .{request.param}: {found}")
    return found
