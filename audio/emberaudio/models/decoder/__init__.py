"""CTC decoders (TorchAudio's `torchaudio.models.decoder`): Flashlight's beam search with a
lexicon and an ARPA or Python language model, a greedy decoder, and the pretrained LibriSpeech
decoder files."""
from ._ctc_decoder import (
    CTCDecoder,
    CTCDecoderLM,
    CTCDecoderLMState,
    CTCGreedyDecoder,
    CTCHypothesis,
    ctc_decoder,
    ctc_greedy_decoder,
)
from ._pretrained import download_pretrained_files

__all__ = [
    "CTCHypothesis",
    "CTCDecoder",
    "CTCDecoderLM",
    "CTCDecoderLMState",
    "ctc_decoder",
    "CTCGreedyDecoder",
    "ctc_greedy_decoder",
    "download_pretrained_files",
]
