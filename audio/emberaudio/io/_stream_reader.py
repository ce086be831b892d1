"""`StreamReader`: TorchAudio 0.12's streaming decoder, on the FFmpeg binary.

One FFmpeg process decodes every output stream at once (started on the first `process_packet`,
restarted by `seek`); each output's raw frames come through its own pipe into a `ChunkBuffer`.
"""
import os
import re
from dataclasses import dataclass

import ember

from .. import _ffmpeg
from .._ffmpeg import SourceAudioStream, SourceStream, SourceVideoStream
from ._buffer import ChunkBuffer
from ._process import DecodeProcess

__all__ = ["StreamReader", "SourceStream", "SourceAudioStream", "SourceVideoStream", "OutputStream"]


@dataclass
class OutputStream:
    """An output stream: the source stream it decodes and the FFmpeg filter chain applied to it."""
    source_index: int
    filter_description: str


@dataclass
class _Output:
    source_index: int
    media_type: str
    filter_description: str  # as the user sees it (`get_out_stream_info`)
    ffmpeg_filters: str  # the chain FFmpeg runs: the same frames, reached with less conversion work
    raw_format: str  # the sample or pixel format of the frames on the pipe
    decoder: str | None
    decoder_option: dict
    hw_accel: str | None
    buffer: ChunkBuffer


class _FileLikeSource:
    """Feeds a file-like object to FFmpeg's stdin. The bytes read while probing are kept and
    replayed to the decoding process, so sources without `seek` work too."""

    def __init__(self, fileobj, block_size):
        self.fileobj = fileobj
        self.block_size = block_size
        self.origin = fileobj.tell() if hasattr(fileobj, "seek") and hasattr(fileobj, "tell") else None
        self.replay = []
        self.read_past_replay = False

    def probe_feed(self, stdin):
        self._write(stdin, self._blocks(record=True))

    def decode_feed(self, stdin):
        self._write(stdin, self._replay_then_rest())

    def rewind(self):
        """Before a second decoding run (after `seek`): start the source over."""
        if not self.read_past_replay:
            return
        if self.origin is None:
            raise RuntimeError("seek() after decoding started needs a file-like `src` with seek() and tell()")
        self.fileobj.seek(self.origin)
        self.replay, self.read_past_replay = [], False

    def _replay_then_rest(self):
        yield from self.replay
        self.read_past_replay = True
        yield from self._blocks(record=False)

    def _blocks(self, record):
        while block := self.fileobj.read(self.block_size):
            if record:
                self.replay.append(block)
            yield block

    @staticmethod
    def _write(stdin, blocks):
        try:
            for block in blocks:
                stdin.write(block)
        except OSError:
            pass  # FFmpeg stopped reading: it has seen enough (probe) or was stopped (seek, close)
        finally:
            try:
                stdin.close()
            except OSError:
                pass


def _check_chunking(frames_per_chunk, buffer_chunk_size):
    for name, value in (("frames_per_chunk", frames_per_chunk), ("buffer_chunk_size", buffer_chunk_size)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if value != -1 and value < 1:
            raise ValueError(f"{name} must be a positive int or -1, got {value}")


def _last_format(filter_desc, keys):
    """The format a user's filter chain ends in (its last `KEY=FMT`), or None when it picks none."""
    found = re.findall(rf"\b(?:{'|'.join(keys)})=(\w+)", filter_desc or "")
    return found[-1] if found else None


class StreamReader:
    """Decode audio and video from a file, URL, device or file-like object, chunk by chunk.

    Differences from TorchAudio 0.12: chunks are CPU `ember` tensors (also with `hw_accel`);
    `seek` is frame-accurate (FFmpeg decodes from the previous key frame and drops what comes
    before `timestamp`); output streams change only before decoding starts or right after `seek`.
    """

    def __init__(self, src, format=None, option=None, buffer_size=4096):
        if option is not None and not isinstance(option, dict):
            raise TypeError(f"option must be a dict of str to str, got {type(option).__name__}")
        if not isinstance(buffer_size, int) or buffer_size <= 0:
            raise ValueError(f"buffer_size must be a positive int, got {buffer_size!r}")
        self._format, self._option = format, dict(option or {})
        self._process = None
        if isinstance(src, (str, os.PathLike)):
            self._src_arg, self._src_name, self._file = os.fspath(src), os.fspath(src), None
            self._streams = _ffmpeg.probe_path(self._src_arg, format, option)
        elif hasattr(src, "read"):
            self._src_arg, self._src_name = "pipe:0", repr(src)
            self._file = _FileLikeSource(src, buffer_size)
            self._streams = _ffmpeg.probe_bytes(self._src_name, self._file.probe_feed, format, option)
        else:
            raise TypeError(f"src must be a path, a URL or a file-like object with read(), got {type(src).__name__}")
        self._outputs = []
        self._start = None
        self._eof = False

    # -- source and output information ------------------------------------------------------------

    @property
    def num_src_streams(self):
        return len(self._streams)

    @property
    def num_out_streams(self):
        return len(self._outputs)

    @property
    def default_audio_stream(self):
        return self._first_stream("audio")

    @property
    def default_video_stream(self):
        return self._first_stream("video")

    def _first_stream(self, media_type):
        return next((i for i, s in enumerate(self._streams) if s.media_type == media_type), None)

    def get_src_stream_info(self, i):
        if not isinstance(i, int) or not 0 <= i < len(self._streams):
            raise IndexError(f"source stream index must be in [0, {len(self._streams)}), got {i!r}")
        return self._streams[i]

    def get_out_stream_info(self, i):
        if not isinstance(i, int) or not 0 <= i < len(self._outputs):
            raise IndexError(f"output stream index must be in [0, {len(self._outputs)}), got {i!r}")
        out = self._outputs[i]
        return OutputStream(out.source_index, out.filter_description)

    # -- adding and removing output streams -------------------------------------------------------

    def add_basic_audio_stream(self, frames_per_chunk, buffer_chunk_size=3, stream_index=None, decoder=None,
                               decoder_option=None, format="fltp", sample_rate=None):
        if format not in _ffmpeg.AUDIO_SAMPLE_FORMATS:
            raise ValueError(f"format must be one of {sorted(_ffmpeg.AUDIO_SAMPLE_FORMATS)}, got {format!r}")
        if sample_rate is not None and not (isinstance(sample_rate, (int, float)) and sample_rate > 0):
            raise ValueError(f"sample_rate must be a positive number or None, got {sample_rate!r}")
        resample = [f"aresample={int(sample_rate)}"] if sample_rate else []
        described = ",".join(resample + [f"aformat=sample_fmts={format}"])
        # The pipe carries interleaved samples whatever the format, so FFmpeg converts straight to
        # the packed layout: asking for a planar one would add a second pass (e.g. s16 -> fltp -> flt)
        run = ",".join(resample + [f"aformat=sample_fmts={_packed(format)}"])
        self._add_audio(frames_per_chunk, buffer_chunk_size, stream_index, decoder, decoder_option, described, format,
                        run)

    def add_audio_stream(self, frames_per_chunk, buffer_chunk_size=3, stream_index=None, decoder=None,
                         decoder_option=None, filter_desc=None):
        """Chunks have the dtype of the chain's last `sample_fmts=`, else of the source's sample format."""
        filters = filter_desc or "anull"
        self._add_audio(frames_per_chunk, buffer_chunk_size, stream_index, decoder, decoder_option, filters,
                        _last_format(filter_desc, ["sample_fmts"]), filters)

    def add_basic_video_stream(self, frames_per_chunk, buffer_chunk_size=3, stream_index=None, decoder=None,
                               decoder_option=None, hw_accel=None, format="rgb24", frame_rate=None, width=None,
                               height=None):
        if _ffmpeg.VIDEO_FORMAT_ALIASES.get(format, format) not in _ffmpeg.VIDEO_PIXEL_FORMATS:
            raise ValueError(f"format must be one of {sorted(_ffmpeg.VIDEO_PIXEL_FORMATS)}, got {format!r}")
        for name, value in (("frame_rate", frame_rate), ("width", width), ("height", height)):
            if value is not None and not (isinstance(value, (int, float)) and value > 0):
                raise ValueError(f"{name} must be a positive number or None, got {value!r}")
        filters = [f"fps={frame_rate}"] if frame_rate else []
        if width or height:
            filters.append(f"scale={width or -1}:{height or -1}")
        filters.append(f"format=pix_fmts={format}")
        self._add_video(frames_per_chunk, buffer_chunk_size, stream_index, decoder, decoder_option, hw_accel,
                        ",".join(filters), format)

    def add_video_stream(self, frames_per_chunk, buffer_chunk_size=3, stream_index=None, decoder=None,
                         decoder_option=None, hw_accel=None, filter_desc=None):
        """Chunks have the pixel format of the chain's last `format=`, else the source's."""
        self._add_video(frames_per_chunk, buffer_chunk_size, stream_index, decoder, decoder_option, hw_accel,
                        filter_desc or "null", _last_format(filter_desc, ["format=pix_fmts", "pix_fmts", "format"]))

    def remove_stream(self, i):
        self.get_out_stream_info(i)
        self._check_outputs_can_change()
        del self._outputs[i]

    def _add_audio(self, frames_per_chunk, buffer_chunk_size, stream_index, decoder, decoder_option, filters, fmt,
                   ffmpeg_filters):
        index = self._pick_stream(stream_index, "audio")
        fmt = fmt or self._streams[index].format
        if fmt not in _ffmpeg.AUDIO_SAMPLE_FORMATS:
            raise ValueError(f"audio chunks need one of the sample formats {sorted(_ffmpeg.AUDIO_SAMPLE_FORMATS)}; "
                             f"stream {index} decodes to {fmt!r}: add aformat=sample_fmts=... to filter_desc")
        self._add_output(index, "audio", filters, ffmpeg_filters, fmt, _ffmpeg.AUDIO_SAMPLE_FORMATS[fmt][0],
                         frames_per_chunk, buffer_chunk_size, decoder, decoder_option, None)

    def _add_video(self, frames_per_chunk, buffer_chunk_size, stream_index, decoder, decoder_option, hw_accel,
                   filters, fmt):
        index = self._pick_stream(stream_index, "video")
        fmt = fmt or self._streams[index].format
        fmt = _ffmpeg.VIDEO_FORMAT_ALIASES.get(fmt, fmt)
        if fmt not in _ffmpeg.VIDEO_PIXEL_FORMATS:
            raise ValueError(f"video chunks need one of the pixel formats {sorted(_ffmpeg.VIDEO_PIXEL_FORMATS)}; "
                             f"stream {index} decodes to {fmt!r}: add format=pix_fmts=... to filter_desc")
        self._add_output(index, "video", filters, filters, fmt, "uint8", frames_per_chunk, buffer_chunk_size,
                         decoder, decoder_option, _check_hw_accel(hw_accel))

    def _pick_stream(self, stream_index, media_type):
        if stream_index is None:
            stream_index = self._first_stream(media_type)
            if stream_index is None:
                raise ValueError(f"{self._src_name!r} has no {media_type} stream; its streams: "
                                 f"{[s.media_type for s in self._streams]}")
        stream = self.get_src_stream_info(stream_index)
        if stream.media_type != media_type:
            raise ValueError(f"stream_index={stream_index} is a {stream.media_type} stream, expected a {media_type} stream")
        return stream_index

    def _add_output(self, index, media_type, filters, ffmpeg_filters, raw_format, dtype, frames_per_chunk,
                    buffer_chunk_size, decoder, decoder_option, hw_accel):
        _check_chunking(frames_per_chunk, buffer_chunk_size)
        if decoder_option is not None and not isinstance(decoder_option, dict):
            raise TypeError(f"decoder_option must be a dict of str to str, got {type(decoder_option).__name__}")
        self._check_outputs_can_change()
        name = f"output stream {len(self._outputs)} ({media_type} of source stream {index})"
        buffer = ChunkBuffer(name, frames_per_chunk, buffer_chunk_size, dtype, drop_whole_chunks=media_type == "audio")
        self._outputs.append(_Output(index, media_type, filters, ffmpeg_filters, raw_format, decoder,
                                     dict(decoder_option or {}), hw_accel, buffer))

    def _check_outputs_can_change(self):
        if self._process is not None:
            raise RuntimeError("output streams can change only before decoding starts or right after seek()")

    # -- decoding ---------------------------------------------------------------------------------

    def seek(self, timestamp):
        """Start decoding at `timestamp` seconds; buffered chunks are dropped."""
        if not isinstance(timestamp, (int, float)) or isinstance(timestamp, bool) or not timestamp >= 0:
            raise ValueError(f"timestamp must be a non-negative number of seconds, got {timestamp!r}")
        self._stop()
        self._start = timestamp
        self._eof = False

    def process_packet(self, timeout=None, backoff=10.0):
        """Decode a little more into the buffers: 0 while data flows, 1 at the end of the source.

        `timeout` (seconds, None = forever) bounds the wait for FFmpeg; `backoff` is accepted for
        TorchAudio compatibility: FFmpeg does its own retrying here."""
        if not self._outputs:
            raise RuntimeError("no output stream: call add_audio_stream() or add_video_stream() first")
        if timeout is not None and not timeout >= 0:
            raise ValueError(f"timeout must be None or a non-negative number of seconds, got {timeout!r}")
        if self._eof:
            return 1
        if self._process is None:
            self._process = self._start_process()
        if self._process.read_some(timeout, self._learn_frame_shape):
            self._eof = True
            return 1
        return 0

    def process_all_packets(self):
        while self.process_packet() == 0:
            pass

    def is_buffer_ready(self):
        return all(out.buffer.is_ready() for out in self._outputs)

    def pop_chunks(self):
        """One chunk (or None where nothing is buffered) per output stream, in the order added."""
        return tuple(_to_tensor(out, out.buffer.pop()) for out in self._outputs)

    def stream(self, timeout=None, backoff=10.0):
        """Yield tuples of chunks until the source ends, then what is left in the buffers."""
        if not self._outputs:
            raise RuntimeError("no output stream: call add_audio_stream() or add_video_stream() first")
        while True:
            while not self._chunks_to_yield():
                if self.process_packet(timeout, backoff):
                    break
            if self._eof:
                break
            yield self.pop_chunks()
        while True:
            chunks = self.pop_chunks()
            if all(chunk is None for chunk in chunks):
                return
            yield chunks

    def _chunks_to_yield(self):
        """Every output has a chunk, or has ended: FFmpeg's outputs run in threads of their own,
        so one can end while another still has chunks to come (TorchAudio's outputs end together)."""
        ended = [self._process is not None and self._process.has_ended(i) for i in range(len(self._outputs))]
        ready = [out.buffer.is_ready() for out in self._outputs]
        return any(ready) and all(r or e for r, e in zip(ready, ended))

    def _learn_frame_shape(self, i):
        """Set output i's frame shape from what FFmpeg negotiated; False if FFmpeg never said."""
        out = self._outputs[i]
        geometry = self._process.geometry(i)
        if geometry is None:
            return False
        if out.media_type == "audio":
            out.buffer.frame_shape = (geometry,)
            return True
        width, height = geometry
        channels, planar = _ffmpeg.VIDEO_PIXEL_FORMATS[out.raw_format]
        out.buffer.frame_shape = (channels, height, width) if planar else (height, width, channels)
        return True

    def _start_process(self):
        if self._file:
            self._file.rewind()
        for out in self._outputs:
            out.buffer.clear()
            out.buffer.frame_shape = None
        return DecodeProcess(self._command, [out.buffer for out in self._outputs], self._src_name,
                             self._file.decode_feed if self._file else None)

    def _command(self, pipe_names):
        input_options = dict(self._option)
        if self._format:
            input_options["f"] = self._format
        # FFmpeg cannot seek in a pipe: there every output decodes from the start and drops what
        # comes before the timestamp; a path seeks in the demuxer
        start = {"ss": repr(float(self._start))} if self._start else {}
        output_start = start if self._file else {}
        input_options.update({} if self._file else start)
        for out in self._outputs:
            input_options.update(_decoder_options(out))
        # -loglevel info: each output's header tells the channels / size that its filters produced
        command = _ffmpeg.base_command("info") + _options(input_options) + ["-i", self._src_arg]
        for out, pipe in zip(self._outputs, pipe_names):
            command += ["-map", f"0:{out.source_index}", *_options({**_muxer_options(out), **output_start}), pipe]
        return command

    # -- lifetime ---------------------------------------------------------------------------------

    def _stop(self):
        if self._process is not None:
            process, self._process = self._process, None
            process.close()
        for out in self._outputs:
            out.buffer.clear()

    def close(self):
        """Stop and reap the FFmpeg process; the reader can decode again after `seek`."""
        self._stop()
        self._eof = True

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def __del__(self):
        if getattr(self, "_process", None) is not None:
            self._process.close()


def _check_hw_accel(hw_accel):
    if hw_accel is None:
        return None
    match = re.fullmatch(r"cuda(?::(\d+))?", hw_accel) if isinstance(hw_accel, str) else None
    if not match:
        raise ValueError(f"hw_accel must be None, 'cuda' or 'cuda:N', got {hw_accel!r}")
    if "cuda" not in _ffmpeg.hwaccels():
        raise RuntimeError(f"hw_accel={hw_accel!r}: this FFmpeg ({_ffmpeg.executable()}) has no CUDA decoding")
    _ffmpeg.check_hw_device("cuda", int(match.group(1) or 0))
    return hw_accel


def _options(options):
    """`-key value` arguments: `-f` first, then the others by name."""
    return [arg for key in sorted(options, key=lambda key: (key != "f", key)) for arg in (f"-{key}", str(options[key]))]


def _decoder_options(out):
    """Per-source-stream input options: decoder, its options, NVDEC (decoded frames come back to the CPU)."""
    spec = f":{out.source_index}"
    options = {f"{key}{spec}": str(value) for key, value in out.decoder_option.items()}
    if out.decoder:
        options[f"c{spec}"] = out.decoder
    if out.hw_accel:
        options[f"hwaccel{spec}"] = "cuda"
        options[f"hwaccel_device{spec}"] = out.hw_accel.partition(":")[2] or "0"
    return options


def _packed(sample_format):
    return sample_format[:-1] if sample_format.endswith("p") else sample_format


# Decoders produce frames of 1024-4608 samples, and FFmpeg's filter, encoder and muxer threads pay
# a hand-off and a pipe write per frame: regrouping into chunk-sized frames cuts FFmpeg's CPU time
# by a quarter or more. Each regrouped frame is written as soon as it is whole, i.e. when its chunk
# is complete, so no chunk arrives later. Chunks no bigger than a decoded frame gain nothing.
_REGROUP_MIN_FRAMES = 4096


def _audio_filters(out):
    frames = out.buffer.frames_per_chunk
    if frames < _REGROUP_MIN_FRAMES:
        return out.ffmpeg_filters
    return f"{out.ffmpeg_filters},asetnsamples=n={frames}:p=0"  # p=0: the last frame is short, not padded


def _muxer_options(out):
    if out.media_type == "audio":
        return {"f": _ffmpeg.AUDIO_SAMPLE_FORMATS[out.raw_format][1], "af": _audio_filters(out)}
    return {"f": "rawvideo", "pix_fmt": out.raw_format, "vf": out.ffmpeg_filters}


def _to_tensor(out, frames):
    """Audio (frames, channels); video (frames, channels, height, width), a view where FFmpeg packs pixels."""
    if frames is None:
        return None
    tensor = ember.from_numpy(frames)
    if out.media_type == "video" and not _ffmpeg.VIDEO_PIXEL_FORMATS[out.raw_format][1]:
        return tensor.permute(0, 3, 1, 2)
    return tensor

