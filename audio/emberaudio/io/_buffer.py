"""The per-output-stream buffer: raw bytes from FFmpeg in, chunks of whole frames out.

TorchAudio 0.12's rule: at most `frames_per_chunk * buffer_chunk_size` frames stay buffered;
beyond that the oldest go (audio: whole chunks; video: single frames). Ember warns each time,
because silent loss was reported as a bug; `buffer_chunk_size=-1` keeps everything.
"""
import collections
import math
import warnings

import numpy as np


class ChunkBuffer:
    def __init__(self, name, frames_per_chunk, buffer_chunk_size, dtype, drop_whole_chunks):
        self.name = name
        self.frames_per_chunk = frames_per_chunk
        self.buffer_chunk_size = buffer_chunk_size
        self.dtype = np.dtype(dtype)
        self.drop_whole_chunks = drop_whole_chunks
        self.frame_shape = None  # known once FFmpeg reports the output's geometry
        self._pieces = collections.deque()  # arrays of whole frames, oldest first
        self._num_frames = 0
        self._partial = b""  # the start of a frame whose remaining bytes have not arrived yet

    @property
    def frame_bytes(self):
        return math.prod(self.frame_shape) * self.dtype.itemsize

    @property
    def buffered_frames(self):
        return self._num_frames

    @property
    def partial_bytes(self):
        return len(self._partial)

    def push(self, data):
        if self._partial:
            data = self._partial + data
        whole = len(data) - len(data) % self.frame_bytes
        self._partial = data[whole:]
        if whole:
            frames = np.frombuffer(data, self.dtype, count=whole // self.dtype.itemsize)
            self._pieces.append(frames.reshape(-1, *self.frame_shape))
            self._num_frames += len(self._pieces[-1])
            self._drop_overflow()

    def _drop_overflow(self):
        if self.frames_per_chunk < 0 or self.buffer_chunk_size < 0:
            return
        excess = self._num_frames - self.frames_per_chunk * self.buffer_chunk_size
        if excess <= 0:
            return
        if self.drop_whole_chunks:
            excess = min(self._num_frames, math.ceil(excess / self.frames_per_chunk) * self.frames_per_chunk)
        self._take(excess)
        warnings.warn(
            f"{self.name}: the buffer exceeded buffer_chunk_size={self.buffer_chunk_size} chunks of "
            f"{self.frames_per_chunk} frames, so the {excess} oldest frames were dropped; pop chunks more often "
            "or pass a larger buffer_chunk_size (-1: unbounded)", RuntimeWarning, stacklevel=4)

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

    def is_ready(self):
        if self.frames_per_chunk < 0:
            return self._num_frames > 0
        return self._num_frames >= self.frames_per_chunk

    def pop(self):
        """The next chunk as an array, or None when nothing is buffered; a shorter chunk at the end."""
        if self._num_frames == 0:
            return None
        if self.frames_per_chunk < 0:
            return self._take(self._num_frames)
        return self._take(min(self.frames_per_chunk, self._num_frames))

    def check_complete(self):
        if self._partial:
            raise RuntimeError(f"{self.name}: FFmpeg's output ended inside a frame ({len(self._partial)} bytes left over)")

    def clear(self):
        self._pieces.clear()
        self._num_frames = 0
        self._partial = b""
