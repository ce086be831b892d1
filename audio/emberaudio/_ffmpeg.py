"""The FFmpeg binary: where it is, what a source holds (parsed from its header), and its errors.

Stream information comes from `ffprobe` when it is on PATH and otherwise from the header that
`ffmpeg -i SRC` prints; both paths produce the same `SourceStream` dataclasses.
"""
import functools
import json
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass

# ffmpeg's sample formats (packed and planar) -> the NumPy dtype of their raw samples and the raw
# muxer that writes them interleaved; planar formats come out interleaved, as chunks are
# (frames, channels).
AUDIO_SAMPLE_FORMATS = {
    "u8": ("uint8", "u8"), "u8p": ("uint8", "u8"),
    "s16": ("int16", "s16le"), "s16p": ("int16", "s16le"),
    "s32": ("int32", "s32le"), "s32p": ("int32", "s32le"),
    "flt": ("float32", "f32le"), "fltp": ("float32", "f32le"),
    "dbl": ("float64", "f64le"), "dblp": ("float64", "f64le"),
}

# Pixel formats a video chunk can hold -> (channels, planar). yuv420p is widened to yuv444p
# (chroma upsampled) so that every plane has the frame's size, as TorchAudio does.
VIDEO_PIXEL_FORMATS = {
    "rgb24": (3, False), "bgr24": (3, False), "gray": (1, False),
    "rgba": (4, False), "bgra": (4, False), "argb": (4, False), "abgr": (4, False),
    "yuv444p": (3, True),
}
VIDEO_FORMAT_ALIASES = {"yuv420p": "yuv444p", "yuvj420p": "yuv444p", "yuvj444p": "yuv444p", "gray8": "gray"}


@dataclass
class SourceStream:
    """A stream of the source: its media type, codec and the numbers every stream has."""
    media_type: str
    codec: str
    codec_long_name: str
    format: str | None
    bit_rate: int | None
    num_frames: int
    bits_per_sample: int


@dataclass
class SourceAudioStream(SourceStream):
    sample_rate: float
    num_channels: int


@dataclass
class SourceVideoStream(SourceStream):
    width: int
    height: int
    frame_rate: float


@functools.cache
def executable():
    """The system `ffmpeg` if it is on PATH, otherwise the binary the imageio-ffmpeg wheel ships."""
    found = shutil.which("ffmpeg")
    if found:
        return found
    try:
        import imageio_ffmpeg
    except ImportError as error:
        raise RuntimeError("emberaudio needs FFmpeg: put `ffmpeg` on PATH or `pip install imageio-ffmpeg`") from error
    return imageio_ffmpeg.get_ffmpeg_exe()


def base_command(loglevel="error"):
    """The start of every command line; global options go before the inputs."""
    return [executable(), "-hide_banner", "-nostdin", "-nostats", "-loglevel", loglevel]


def error_lines(stderr):
    """FFmpeg's own diagnosis from its stderr: the lines that are neither header nor progress."""
    skipped = ("Input #", "Output #", "  ", "Stream mapping", "Press [q]", "frame=", "size=")
    lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith(skipped)]
    return "\n".join(lines[-8:]) or stderr.strip()[-2000:]


def raise_open_error(src, stderr):
    message = error_lines(stderr)
    if "No such file or directory" in message:
        raise FileNotFoundError(f"FFmpeg cannot open {src!r}: {message}")
    if "Unknown input format" in message or "Invalid argument" in message:
        raise ValueError(f"FFmpeg cannot read {src!r} (check `src`, `format` and `option`): {message}")
    raise RuntimeError(f"FFmpeg cannot open {src!r}: {message}")


@functools.cache
def channel_layouts():
    """Channel layout name -> number of channels, from `ffmpeg -layouts`."""
    out = subprocess.run([executable(), "-hide_banner", "-layouts"], capture_output=True, text=True).stdout
    standard = out.split("Standard channel layouts:", 1)[-1]
    layouts = {}
    for line in standard.splitlines()[2:]:
        parts = line.split()
        if len(parts) == 2:
            layouts[parts[0]] = len(parts[1].split("+"))
    return layouts


def channel_count(layout):
    """Channels of a layout as FFmpeg prints it: "stereo", "5.1(side)", "3 channels"."""
    match = re.match(r"(\d+) channels", layout)
    if match:
        return int(match.group(1))
    name = layout if layout in channel_layouts() else layout.split("(")[0]
    if name not in channel_layouts():
        raise RuntimeError(f"unknown FFmpeg channel layout {layout!r}")
    return channel_layouts()[name]


@functools.cache
def codec_long_name(codec):
    """The decoder's descriptive name ("FLAC (Free Lossless Audio Codec)"); "" when FFmpeg has none."""
    out = subprocess.run([executable(), "-hide_banner", "-h", f"decoder={codec}"], capture_output=True, text=True).stdout
    match = re.match(r"Decoder \S+ \[(.*)\]:", out)
    return match.group(1) if match else ""


def _bits_per_sample(codec, sample_format):
    """Bits of one sample as stored: PCM and lossless codecs have it, lossy codecs do not (0)."""
    if codec in ("pcm_mulaw", "pcm_alaw"):
        return 8
    match = re.match(r"pcm_[suf](\d+)", codec) or re.search(r"\((\d+) bit\)", sample_format)
    if match:
        return int(match.group(1))
    if codec in ("flac", "alac", "wavpack"):
        base = sample_format.split()[0].rstrip("p")
        return {"u8": 8, "s16": 16, "s32": 32}.get(base, 0)
    return 0


def _number(text):
    """FFmpeg's short numbers: "25", "29.97", "1k" (thousands)."""
    return float(text[:-1]) * 1000 if text.endswith("k") else float(text)


def _bit_rate(text):
    match = re.search(r"(\d+) kb/s", text)
    return int(match.group(1)) * 1000 if match else None


_STREAM_LINE = re.compile(r"^  Stream #0:(\d+)\S*: (Audio|Video|Subtitle|Data|Attachment): (.*)$")


def _split_fields(description):
    """Split a stream description at top-level commas (commas inside parentheses stay)."""
    fields, depth, current = [], 0, ""
    for char in description:
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            fields.append(current.strip())
            current = ""
        else:
            current += char
    return fields + [current.strip()]


def _parse_audio(fields, codec, long_name):
    sample_rate = float(re.match(r"(\d+) Hz", fields[1]).group(1))
    sample_format = fields[3] if len(fields) > 3 else ""
    return SourceAudioStream(
        media_type="audio", codec=codec, codec_long_name=long_name, format=sample_format.split()[0] or None,
        bit_rate=_bit_rate(", ".join(fields[4:])), num_frames=0,
        bits_per_sample=_bits_per_sample(codec, sample_format),
        sample_rate=sample_rate, num_channels=channel_count(fields[2]))


def _parse_video(fields, codec, long_name):
    pixel_format = fields[1].split("(")[0] if len(fields) > 1 else None
    size = next(re.match(r"(\d+)x(\d+)", f) for f in fields if re.match(r"\d+x\d+", f))
    rates = [f.split()[0] for f in fields if f.endswith((" fps", " tbr"))]
    frame_rate = _number(rates[0]) if rates else 0.0
    return SourceVideoStream(
        media_type="video", codec=codec, codec_long_name=long_name, format=pixel_format,
        bit_rate=_bit_rate(", ".join(fields[2:])), num_frames=0, bits_per_sample=0,
        width=int(size.group(1)), height=int(size.group(2)), frame_rate=frame_rate)


def parse_stream_line(line):
    """A `Stream #0:i: ...` line of FFmpeg's header -> (index, SourceStream)."""
    index, kind, description = _STREAM_LINE.match(line).groups()
    fields = _split_fields(description)
    codec = fields[0].split()[0]
    long_name = codec_long_name(codec) if kind in ("Audio", "Video") else ""
    if kind == "Audio":
        return int(index), _parse_audio(fields, codec, long_name)
    if kind == "Video":
        return int(index), _parse_video(fields, codec, long_name)
    return int(index), SourceStream(media_type=kind.lower(), codec=codec, codec_long_name=long_name, format=None,
                                    bit_rate=_bit_rate(description), num_frames=0, bits_per_sample=0)


def parse_input_header(stderr):
    """The source streams of input #0, in index order, from `ffmpeg -i`'s stderr."""
    streams = dict(parse_stream_line(line) for line in stderr.splitlines() if _STREAM_LINE.match(line))
    return [streams[i] for i in sorted(streams)]


def parse_ffprobe(report):
    """The source streams from `ffprobe -show_streams -of json` output."""
    streams = []
    for s in json.loads(report)["streams"]:
        common = dict(codec=s.get("codec_name", ""), codec_long_name=s.get("codec_long_name", ""),
                      bit_rate=int(s["bit_rate"]) if s.get("bit_rate") else None,
                      num_frames=int(s.get("nb_frames", 0) or 0))
        if s["codec_type"] == "audio":
            streams.append(SourceAudioStream(
                media_type="audio", format=s.get("sample_fmt"),
                bits_per_sample=int(s.get("bits_per_raw_sample") or s.get("bits_per_sample") or 0),
                sample_rate=float(s["sample_rate"]), num_channels=int(s["channels"]), **common))
        elif s["codec_type"] == "video":
            num, den = (int(x) for x in s.get("avg_frame_rate", "0/1").split("/"))
            streams.append(SourceVideoStream(
                media_type="video", format=s.get("pix_fmt"), bits_per_sample=0, width=int(s["width"]),
                height=int(s["height"]), frame_rate=num / den if den else 0.0, **common))
        else:
            streams.append(SourceStream(media_type=s["codec_type"], format=None, bits_per_sample=0, **common))
    return streams


def input_args(src_arg, format, option):
    """Demuxer arguments: `-f FORMAT`, `-KEY VALUE` per option, then `-i SRC`."""
    args = ["-f", format] if format else []
    for key, value in (option or {}).items():
        args += [f"-{key}", str(value)]
    return args + ["-i", src_arg]


def probe_path(src, format, option):
    """Source streams of a path or URL: ffprobe when present, else FFmpeg's header."""
    ffprobe = shutil.which("ffprobe")
    if ffprobe:
        cmd = [ffprobe, "-hide_banner", "-loglevel", "error", "-show_streams", "-of", "json"]
        done = subprocess.run(cmd + input_args(src, format, option)[:-2] + [src], capture_output=True, text=True)
        if done.returncode != 0:
            raise_open_error(src, done.stderr)
        return parse_ffprobe(done.stdout)
    done = subprocess.run(base_command("info") + input_args(src, format, option), capture_output=True, text=True)
    return _header_or_error(src, done.stderr)


def _header_or_error(src, stderr):
    # `ffmpeg -i SRC` with no output always exits 1; the header says whether the input opened.
    if "Input #0" not in stderr:
        raise_open_error(src, stderr)
    return parse_input_header(stderr)


def probe_bytes(src_name, feed, format, option):
    """Source streams of a file-like source: its bytes are fed to FFmpeg's stdin by `feed(stdin)`."""
    with subprocess.Popen(base_command("info") + input_args("pipe:0", format, option),
                          stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
        writer = threading.Thread(target=feed, args=(proc.stdin,), daemon=True)
        writer.start()
        stderr = proc.stderr.read().decode(errors="replace")
        writer.join()
    return _header_or_error(src_name, stderr)


def hwaccels():
    """The hardware decoders this FFmpeg build was compiled with."""
    out = subprocess.run([executable(), "-hide_banner", "-hwaccels"], capture_output=True, text=True).stdout
    return out.split(":", 1)[-1].split()


_OUTPUT_STREAM_LINE = re.compile(r"^  Stream #(\d+):0\S*: (Audio|Video): (.*)$")


def parse_output_stream_line(line):
    """An `Output #k` section's stream line -> (k, frame geometry): audio channels, or video (width, height)."""
    match = _OUTPUT_STREAM_LINE.match(line)
    if not match:
        return None
    index, kind, description = match.groups()
    fields = _split_fields(description)
    if kind == "Audio":
        return int(index), channel_count(fields[2])
    size = next(re.match(r"(\d+)x(\d+)", f) for f in fields if re.match(r"\d+x\d+", f))
    return int(index), (int(size.group(1)), int(size.group(2)))


def check_hw_device(device_type, ordinal):
    """Open the hardware device once, so that a missing GPU or driver fails here with FFmpeg's words."""
    cmd = base_command() + ["-init_hw_device", f"{device_type}=hw:{ordinal}", "-f", "lavfi", "-i",
                            "anullsrc", "-t", "0", "-f", "null", "-"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"hw_accel={device_type}:{ordinal}: FFmpeg cannot open the device: {error_lines(done.stderr)}")
