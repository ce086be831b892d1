"""TorchAudio's pretrained decoder files (LibriSpeech lexicon, tokens and KenLM models), from the
URLs TorchAudio downloads them from, into Ember's cache."""
import os
from collections import namedtuple

from ember._download import download, ember_home

__all__ = ["download_pretrained_files", "RESOURCES"]

PretrainedFiles = namedtuple("PretrainedFiles", ["lexicon", "tokens", "lm"])

_BASE = "https://download.pytorch.org/torchaudio"
_MODELS = {
    "librispeech-3-gram": ("lexicon.txt", "tokens.txt", "lm.bin"),
    "librispeech-4-gram": ("lexicon.txt", "tokens.txt", "lm.bin"),
    "librispeech": ("lexicon.txt", "tokens.txt", None),
}

# Asset key -> URL: the override point for mirrors and tests.
RESOURCES = {
    f"decoder-assets/{model}/{name}": f"{_BASE}/decoder-assets/{model}/{name}"
    for model, names in _MODELS.items()
    for name in names
    if name is not None
}


def _cache_path(key):
    return os.path.join(ember_home(), "emberaudio", *key.split("/"))


def download_pretrained_files(model: str) -> PretrainedFiles:
    """Download the decoder files of `model` ("librispeech-3-gram", "librispeech-4-gram" or
    "librispeech") once, into `$EMBER_HOME/emberaudio/decoder-assets/<model>/` (`$EMBER_HOME`
    defaults to `~/.cache/ember`; TorchAudio uses torch.hub's folder), and return their paths
    (`lm` is None for "librispeech").

    The `lm` files are KenLM binaries, which `ctc_decoder` cannot read (it raises
    NotImplementedError); use an ARPA text model instead. Downloads show a tqdm bar
    (`TQDM_DISABLE=1` silences it) and resume after an interruption. Without network access the
    error (OSError) names the URL and the path where the file can be placed by hand.
    """
    if model not in _MODELS:
        raise ValueError(f"model must be one of {sorted(_MODELS)}, got {model!r}")
    keys = [None if name is None else f"decoder-assets/{model}/{name}" for name in _MODELS[model]]
    return PretrainedFiles(*(None if key is None else download(RESOURCES[key], _cache_path(key)) for key in keys))
