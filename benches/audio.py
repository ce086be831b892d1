"""emberaudio benchmark: StreamReader decoding throughput and memory.

    python benches/audio.py

Throughput: a generated 10-minute stereo 44.1 kHz file (FLAC, then MP3) decoded to float32 chunks
of 1 s by `emberaudio.io.StreamReader`, against the limit: the FFmpeg CLI (the same binary)
decoding the same file to raw float32 into /dev/null. Best of REPEATS runs each.
Memory: peak RSS of a fresh child process (and, separately, of its FFmpeg) streaming a 1-minute
and a 60-minute FLAC file through StreamReader; streaming memory must not grow with the length.
"""
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "audio"))

from emberaudio import _ffmpeg  # noqa: E402
from emberaudio.io import StreamReader  # noqa: E402

REPEATS = 3
SAMPLE_RATE = 44100


def make_file(folder, minutes, ext):
    path = folder / f"sine_{minutes}min.{ext}"
    source = f"sine=frequency=440:duration={minutes * 60}:sample_rate={SAMPLE_RATE},pan=stereo|c0=c0|c1=0.5*c0"
    codec = {"flac": "flac", "mp3": "libmp3lame"}[ext]
    subprocess.run(_ffmpeg.base_command() + ["-f", "lavfi", "-i", source, "-c:a", codec, "-y", str(path)], check=True)
    return path


def stream_all(path):
    """Frames decoded by StreamReader, in 1-second float32 chunks."""
    with StreamReader(path) as reader:
        reader.add_basic_audio_stream(frames_per_chunk=SAMPLE_RATE)
        return sum(chunk.shape[0] for (chunk,) in reader.stream())


def ffmpeg_cli(path):
    subprocess.run(_ffmpeg.base_command() + ["-i", str(path), "-map", "0:a:0", "-f", "f32le", "-y", "/dev/null"],
                   check=True)


def best_seconds(run, path):
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        run(path)
        times.append(time.perf_counter() - start)
    return min(times)


def peak_rss_in_child(path):
    """(peak RSS of a fresh Python streaming `path`, peak RSS of its FFmpeg), in MB."""
    out = subprocess.run([sys.executable, __file__, "--rss", str(path)], capture_output=True, text=True, check=True)
    own, ffmpeg = out.stdout.split()
    return float(own), float(ffmpeg)


def rss_child_main(path):
    stream_all(path)
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"{own:.1f} {children:.1f}")


def main():
    folder = pathlib.Path(tempfile.mkdtemp(prefix="emberaudio-bench-"))
    print(f"FFmpeg {_ffmpeg.executable()}, {os.cpu_count()} cores; best of {REPEATS} runs\n")
    print("| workload | emberaudio StreamReader | FFmpeg CLI to /dev/null | ratio (CLI time / ember time) |")
    print("|---|---|---|---|")
    for ext in ("flac", "mp3"):
        path = make_file(folder, 10, ext)
        ember_s, cli_s = best_seconds(stream_all, path), best_seconds(ffmpeg_cli, path)
        audio_s = 600
        print(f"| 10 min stereo 44.1 kHz {ext} -> float32 chunks of 1 s | {ember_s:.2f} s ({audio_s / ember_s:.0f}x real time) "
              f"| {cli_s:.2f} s ({audio_s / cli_s:.0f}x) | {cli_s / ember_s:.2f}x |")
    print("\n| file streamed (FLAC, 1 s chunks) | peak RSS, Python process | peak RSS, its FFmpeg |")
    print("|---|---|---|")
    for minutes in (1, 60):
        own, ffmpeg = peak_rss_in_child(make_file(folder, minutes, "flac"))
        print(f"| {minutes} min | {own:.0f} MB | {ffmpeg:.0f} MB |")
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rss"]:
        rss_child_main(sys.argv[2])
    else:
        main()
