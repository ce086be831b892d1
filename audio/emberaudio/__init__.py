"""emberaudio: TorchAudio's media I/O on Ember tensors, decoded and encoded by FFmpeg.

`emberaudio.io.StreamReader` streams audio and video chunk by chunk; `load`, `info` and `save` read
and write whole audio files; `emberaudio.models.decoder.ctc_decoder` is TorchAudio's CTC beam-search
decoder. Beamforming is not implemented yet (README.md).
"""
from . import io, models
from ._backend import AudioMetaData, info, load, save

__version__ = "0.1.0"
__all__ = ["io", "models", "AudioMetaData", "info", "load", "save"]
