"""Streaming media I/O (TorchAudio 0.12's `torchaudio.io`)."""
from ._stream_reader import OutputStream, SourceAudioStream, SourceStream, SourceVideoStream, StreamReader

__all__ = ["StreamReader", "SourceStream", "SourceAudioStream", "SourceVideoStream", "OutputStream"]
