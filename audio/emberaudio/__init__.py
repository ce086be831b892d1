"""emberaudio: TorchAudio's media I/O on Ember tensors, decoded and encoded by FFmpeg.

`emberaudio.io.StreamReader` streams audio and video chunk by chunk; `load`, `info` and `save` read
and write whole audio files; `emberaudio.models.decoder.ctc_decoder` is TorchAudio's CTC beam-search
decoder; `emberaudio.functional` / `emberaudio.transforms` are TorchAudio's audio front end
(spectrograms, mel filter banks, MFCC, dB, resampling) and multi-channel MVDR beamforming (PSD,
Souden / RTF weights, RTF estimation) on differentiable ember ops.
"""
from . import functional, io, models, transforms
from ._backend import AudioMetaData, info, load, save

__version__ = "0.1.0"
__all__ = ["functional", "io", "models", "transforms", "AudioMetaData", "info", "load", "save"]
