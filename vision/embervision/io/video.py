"""`read_video` and `read_video_timestamps` on emberaudio's FFmpeg StreamReader."""
import math
import os
import warnings

import ember


def _stream_reader(filename):
    try:
        from emberaudio.io import StreamReader
    except ImportError as e:
        raise ImportError("embervision.io.read_video decodes through emberaudio's StreamReader: "
                          "pip install emberaudio") from e
    if not os.path.exists(filename):
        raise RuntimeError(f"File not found: {filename}")
    return StreamReader(os.fspath(filename))


def _seconds(start_pts, end_pts, pts_unit):
    if pts_unit not in ("pts", "sec"):
        raise ValueError(f"pts_unit should be 'pts' or 'sec', got {pts_unit!r}")
    if pts_unit == "pts":
        if start_pts != 0 or end_pts is not None:
            raise NotImplementedError(
                "read_video: timestamps in stream time-base units (pts_unit='pts') are not supported; "
                "pass them in seconds with pts_unit='sec'")
        warnings.warn("The pts_unit 'pts' gives wrong results. Please use pts_unit 'sec'.")
    end = math.inf if end_pts is None else float(end_pts)
    if end < start_pts:
        raise ValueError(f"end_pts should be larger than start_pts, got start_pts={start_pts} and end_pts={end_pts}")
    return float(start_pts), end


def read_video(filename, start_pts=0, end_pts=None, pts_unit="pts", output_format="THWC"):
    """Decodes the frames (uint8 `(T, H, W, C)`, or `(T, C, H, W)` with output_format='TCHW') and
    audio (float32 `(channels, samples)`) between `start_pts` and `end_pts` (inclusive; seconds
    with pts_unit='sec'), and returns (video, audio, {'video_fps', 'audio_fps'})."""
    output_format = output_format.upper()
    if output_format not in ("THWC", "TCHW"):
        raise ValueError(f"output_format should be either 'THWC' or 'TCHW', got {output_format}.")
    start, end = _seconds(start_pts, end_pts, pts_unit)
    reader = _stream_reader(filename)
    info = {}
    video_index, audio_index = reader.default_video_stream, reader.default_audio_stream
    if video_index is not None:
        info["video_fps"] = float(reader.get_src_stream_info(video_index).frame_rate)
        reader.add_basic_video_stream(frames_per_chunk=32, buffer_chunk_size=-1, format="rgb24")
    if audio_index is not None:
        info["audio_fps"] = float(reader.get_src_stream_info(audio_index).sample_rate)
        reader.add_basic_audio_stream(frames_per_chunk=4096, buffer_chunk_size=-1, format="fltp")
    if video_index is None and audio_index is None:
        raise RuntimeError(f"{filename} has no video or audio stream")
    if start > 0:
        reader.seek(start)
    frames, samples = [], []
    for chunks in reader.stream():
        chunks = list(chunks)
        if video_index is not None:
            v = chunks.pop(0)
            if v is not None:
                frames.append(v)
        if audio_index is not None and chunks[0] is not None:
            samples.append(chunks[0])
    if frames:
        video = ember.cat(frames, 0)
        if end != math.inf:
            # frame k is shown at start + k / fps: keep those at or before end_pts
            video = video[: int(math.floor((end - start) * info["video_fps"] + 1e-6)) + 1]
    else:
        video = ember.zeros((0, 3, 1, 1), dtype=ember.uint8)
    if output_format == "THWC":
        video = video.permute(0, 2, 3, 1)
    if samples:
        audio = ember.cat(samples, 0)
        if end != math.inf:
            audio = audio[: int(math.floor((end - start) * info["audio_fps"])) + 1]
        audio = audio.permute(1, 0).contiguous()
    else:
        audio = ember.zeros((1, 0), dtype=ember.float32)
    return video, audio, info


def read_video_timestamps(filename, pts_unit="pts"):
    """The frames' presentation times (seconds, whatever `pts_unit`, from the frame rate) and the fps."""
    reader = _stream_reader(filename)
    index = reader.default_video_stream
    if index is None:
        return [], None
    fps = float(reader.get_src_stream_info(index).frame_rate)
    reader.add_basic_video_stream(frames_per_chunk=64, buffer_chunk_size=-1, format="gray")
    count = sum(chunk[0].shape[0] for chunk in reader.stream() if chunk[0] is not None)
    return [k / fps for k in range(count)], fps
