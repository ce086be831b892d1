"""TorchAudio's `torchaudio.models`: so far the CTC decoders (`emberaudio.models.decoder`)."""
from . import decoder

__all__ = ["decoder"]
