"""The per-output-stream buffer: raw bytes from FFmpeg in, chunks of whole frames out.

TorchAudio 0.12's rule: at most `frames_per_chunk * buffer_chunk_size` frames stay buffered;
beyond that the oldest go (audio: whole chunks; video: single frames). Ember warns each time,
because silent loss was reported as a bug; `buffer_chunk_size=-1` keeps everything.
"""
import collections
import math
import os
import warnings

import numpy as np


_UNCHUNKED_BLOCK = 1 << 20  # bytes read at a time when frames_per_chunk=-1


class ChunkBuffer:
    """FFmpeg's bytes are read straight into a chunk-sized bytearray (no copy in Python); a full
    one becomes a chunk, an array view on it."""

    def __init__(self, name, frames_per_chunk, buffer_chunk_size, dtype, drop_whole_chunks):
        self.name = name
        self.frames_per_chunk = frames_per_chunk
        self.buffer_chunk_size = buffer_chunk_size
        self.dtype = np.dtype(dtype)
        self.drop_whole_chunks = drop_whole_chunks
        self.frame_shape = None  # known once FFmpeg reports the output's geometry
        self.clear()

    def clear(self):
        self._pieces = collections.deque()  # arrays of whole frames, oldest first
        self._num_frames = 0
        self._filling = None  # the bytearray being read into, and how much of it holds data
        self._filled = 0

    @property
    def frame_bytes(self):
        return math.prod(self.frame_shape) * self.dtype.itemsize

    def read_from(self, fd):
        """Read what `fd` has, at most what completes the chunk being filled; 0 at end of data."""
        if self._filling is None:
            self._filling = bytearray(self._fill_bytes())
        count = os.readv(fd, [memoryview(self._filling)[self._filled:]])
        self._filled += count
        if self._filled == len(self._filling):
            self._flush()
        self._drop_overflow()
        return count

    def _fill_bytes(self):
        if self.frames_per_chunk < 0:
            return max(1, _UNCHUNKED_BLOCK // self.frame_bytes) * self.frame_bytes
        return self.frames_per_chunk * self.frame_bytes

    def _flush(self):
        """Move the whole frames read so far into the chunks; a trailing part-frame starts the next buffer."""
        whole = self._filled - self._filled % self.frame_bytes
        if whole:
            frames = np.frombuffer(self._filling, self.dtype, count=whole // self.dtype.itemsize)
            self._pieces.append(frames.reshape(-1, *self.frame_shape))
            self._num_frames += len(self._pieces[-1])
        rest = self._filling[whole:self._filled]
        self._filling, self._filled = None, 0
        if rest:
            self._filling = bytearray(self._fill_bytes())
            self._filling[:len(rest)] = rest
            self._filled = len(rest)

    def _frames_in_filling(self):
        return self._filled // self.frame_bytes if self._filling is not None else 0

    def _drop_overflow(self):
        if self.frames_per_chunk < 0 or self.buffer_chunk_size < 0:
            return
        excess = self._num_frames + self._frames_in_filling() - self.frames_per_chunk * self.buffer_chunk_size
        if excess <= 0:
            return
        if self.drop_whole_chunks:
            excess = math.ceil(excess / self.frames_per_chunk) * self.frames_per_chunk
        excess = min(excess, self._num_frames)
        self._take(excess)
        warnings.warn(
            f"{self.name}: the buffer exceeded buffer_chunk_size={self.buffer_chunk_size} chunks of "
            f"{self.frames_per_chunk} frames, so the {excess} oldest frames were dropped; pop chunks more often "
            "or pass a larger buffer_chunk_size (-1: unbounded)", RuntimeWarning, stacklevel=5)

    def _take(self, count):
        """Remove and return the `count` oldest frames (one array; no copy when one piece holds them)."""
        taken = []
        while count > 0:
            piece = self._pieces.popleft()
            if len(piece) > count:
                self._pieces.appendleft(piece[count:])
                piece = piece[:count]
            taken.append(piece)
            count -= len(piece)
            self._num_frames -= len(piece)
        return taken[0] if len(taken) == 1 else np.concatenate(taken)

    def is_full(self):
        """Holding as many frames as `buffer_chunk_size` chunks: one more frame drops the oldest."""
        if self.frames_per_chunk < 0 or self.buffer_chunk_size < 0 or self.frame_shape is None:
            return False
        return self._num_frames + self._frames_in_filling() >= self.frames_per_chunk * self.buffer_chunk_size

    def is_ready(self):
        buffered = self._num_frames + self._frames_in_filling()
        return buffered > 0 if self.frames_per_chunk < 0 else buffered >= self.frames_per_chunk

    def pop(self):
        """The next chunk as an array, or None when nothing is buffered; a shorter chunk at the end."""
        if self._frames_in_filling() and (self.frames_per_chunk < 0 or self._num_frames < self.frames_per_chunk):
            self._flush()
        if self._num_frames == 0:
            return None
        if self.frames_per_chunk < 0:
            return self._take(self._num_frames)
        return self._take(min(self.frames_per_chunk, self._num_frames))

    def check_complete(self):
        """At the end of FFmpeg's output: what is buffered becomes poppable; a part-frame is an error."""
        if self._filling is not None:
            self._flush()
        if self._filled:
            raise RuntimeError(f"{self.name}: FFmpeg's output ended inside a frame ({self._filled} bytes left over)")
