"""TorchAudio's CTC beam-search decoder (Flashlight's algorithm) on `ember._C.audio`.

The search runs in Rust (crate `ember-audio`); this module holds TorchAudio's public surface:
the factory's argument checks, the hypothesis type, and the base classes of Python LMs.
"""
import errno
import os
from typing import Dict, List, NamedTuple, Optional, Tuple, Union

import ember
from ember._C import audio as _audio

__all__ = [
    "CTCHypothesis",
    "CTCDecoder",
    "CTCDecoderLM",
    "CTCDecoderLMState",
    "ctc_decoder",
    "CTCGreedyDecoder",
    "ctc_greedy_decoder",
]

# The first bytes of every KenLM binary model (its header names the format).
_KENLM_BINARY_MAGIC = b"mmap lm "


class CTCHypothesis(NamedTuple):
    """One decoding result.

    tokens: int64 tensor `(L,)` of token indices (repeats collapsed, blanks removed; the search's
    leading and trailing silence included, as in TorchAudio). words: the words, in order (empty
    without a lexicon). score: the hypothesis' total score. timesteps: int32 tensor `(L,)`, for
    each token the step where it starts, counted as TorchAudio counts them (step 0 is the
    search's initial state, so frame `t` of the emissions is step `t + 1`).
    """

    tokens: ember.Tensor
    words: List[str]
    score: float
    timesteps: ember.Tensor


class CTCDecoderLMState:
    """A language-model state, compared by identity (TorchAudio's `CTCDecoderLMState`).

    `child(i)` returns the same state every time for the same index, so a model that walks states
    with `child` gives one state per word history, which is how the decoder merges hypotheses.
    Subclasses and instances may carry whatever the model needs.
    """

    def __init__(self):
        self._children = {}

    @property
    def children(self) -> Dict[int, "CTCDecoderLMState"]:
        """The states made by `child`, by index."""
        return self._children

    def child(self, usr_index: int) -> "CTCDecoderLMState":
        """The state after index `usr_index`, made on first use."""
        state = self._children.get(usr_index)
        if state is None:
            state = self._children[usr_index] = CTCDecoderLMState()
        return state

    def compare(self, state: "CTCDecoderLMState") -> int:
        """0 if `state` is this very state, else -1 or 1 (an arbitrary but fixed order)."""
        if state is self:
            return 0
        return -1 if id(self) < id(state) else 1


class CTCDecoderLM:
    """Base class of language models written in Python (TorchAudio's `CTCDecoderLM`).

    Override `start`, `score` and `finish`. Indices are word indices with a lexicon (the order of
    the words' first lines in the lexicon file, then `<unk>` if the file lacks it) and token
    indices without one. The decoder calls `score` once per distinct (state, index) in an
    utterance and reuses the result, so it must be deterministic. Each call takes the GIL:
    decoding with a Python LM cannot run free of it (the search around the calls still does).
    """

    def start(self, start_with_nothing: bool) -> CTCDecoderLMState:
        """The state before the first word (`start_with_nothing`: without a sentence start)."""
        raise NotImplementedError(f"{type(self).__name__} must implement start(start_with_nothing)")

    def score(self, state: CTCDecoderLMState, usr_token_idx: int) -> Tuple[CTCDecoderLMState, float]:
        """The state after index `usr_token_idx` following `state`, and its score."""
        raise NotImplementedError(f"{type(self).__name__} must implement score(state, usr_token_idx)")

    def finish(self, state: CTCDecoderLMState) -> Tuple[CTCDecoderLMState, float]:
        """The state after the end of the sentence, and the end's score."""
        raise NotImplementedError(f"{type(self).__name__} must implement finish(state)")


def _hypotheses(rows):
    return [[CTCHypothesis(*h) for h in row] for row in rows]


def _index_list(idxs):
    values = idxs.reshape(-1).tolist() if isinstance(idxs, ember.Tensor) else idxs
    return [int(i) for i in values]


class CTCDecoder:
    """CTC beam-search decoder (TorchAudio's `CTCDecoder`); build it with `ctc_decoder`.

    Utterances of a batch are decoded in parallel on Ember's thread pool, with the GIL released.
    """

    def __init__(self, native):
        self._native = native

    def __call__(self, emissions: ember.Tensor, lengths: Optional[ember.Tensor] = None) -> List[List[CTCHypothesis]]:
        """Decode `emissions`, a float32 `(batch, frames, num_tokens)` tensor of log-probabilities
        (any strides); `lengths`, an integer `(batch,)` tensor, gives each utterance's valid frames.

        Returns, per utterance, its `nbest` best hypotheses, best first.
        """
        return _hypotheses(self._native.decode(emissions, lengths))

    def idxs_to_tokens(self, idxs) -> List[str]:
        """The token strings of token indices (a tensor or a sequence of ints)."""
        return self._native.idxs_to_tokens(_index_list(idxs))


def _file(path, name):
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path, got {type(path).__name__}")
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(errno.ENOENT, f"{name}: no such file", path)
    return path


def _tokens(tokens):
    if isinstance(tokens, (str, os.PathLike)):
        return _file(tokens, "tokens")
    if isinstance(tokens, (list, tuple)) and all(isinstance(t, str) for t in tokens):
        return list(tokens)
    raise TypeError(f"tokens must be a path or a list of str, got {type(tokens).__name__}")


def _lm(lm):
    """None, a CTCDecoderLM, or the path of an ARPA file (a KenLM binary cannot be read)."""
    if lm is None or isinstance(lm, CTCDecoderLM):
        return lm
    if not isinstance(lm, (str, os.PathLike)):
        raise TypeError(f"lm must be None, a path to an ARPA file or a CTCDecoderLM, got {type(lm).__name__}")
    path = _file(lm, "lm")
    with open(path, "rb") as f:
        if f.read(len(_KENLM_BINARY_MAGIC)) == _KENLM_BINARY_MAGIC:
            raise NotImplementedError(
                f"lm: {path} is a KenLM binary model, which Ember cannot read; "
                "pass the ARPA text file of the model instead (ARPA files are read natively)"
            )
    return path


def ctc_decoder(
    lexicon: Optional[str],
    tokens: Union[str, List[str]],
    lm: Union[str, CTCDecoderLM, None] = None,
    nbest: int = 1,
    beam_size: int = 50,
    beam_size_token: Optional[int] = None,
    beam_threshold: float = 50,
    lm_weight: float = 2,
    word_score: float = 0,
    unk_score: float = float("-inf"),
    sil_score: float = 0,
    log_add: bool = False,
    blank_token: str = "-",
    sil_token: str = "|",
    unk_word: str = "<unk>",
) -> CTCDecoder:
    """Build a CTC beam-search decoder (TorchAudio 0.12's `ctc_decoder`, Flashlight's search).

    lexicon: a lexicon file (`word tok tok ...` per line), or None for lexicon-free decoding.
    tokens: a tokens file (entries on one line share an index) or a list of str.
    lm: None, the path of a KenLM ARPA file (log10 scores, as KenLM returns them), or a
    `CTCDecoderLM`. KenLM binary files are refused with NotImplementedError.
    nbest: hypotheses returned per utterance. beam_size: hypotheses kept per frame.
    beam_size_token: tokens tried per frame (None: all). beam_threshold: candidates this far
    below the frame's best are dropped. lm_weight, word_score, unk_score, sil_score: added per
    LM score, word, unknown word, silence token. log_add: merge equal hypotheses by log-add
    instead of max. blank_token, sil_token, unk_word: the special entries.

    Without a lexicon and with an ARPA LM, token `i` is scored as the LM word spelled like token
    `i` (TorchAudio's word dictionary there comes out in hash order, so its LM may score another
    token than the one emitted).
    """
    if lexicon is not None:
        lexicon = _file(lexicon, "lexicon")
    native = _audio.CTCDecoder(
        lexicon, _tokens(tokens), _lm(lm), nbest=nbest, beam_size=beam_size, beam_size_token=beam_size_token,
        beam_threshold=beam_threshold, lm_weight=lm_weight, word_score=word_score, unk_score=unk_score,
        sil_score=sil_score, log_add=log_add, blank_token=blank_token, sil_token=sil_token, unk_word=unk_word,
    )
    return CTCDecoder(native)


class CTCGreedyDecoder:
    """Best-path CTC decoding (TorchAudio has no public one; its tutorials define a
    per-utterance `GreedyCTCDecoder` module): the best token of each frame, repeats collapsed,
    blanks removed. Build it with `ctc_greedy_decoder`.
    """

    def __init__(self, native):
        self._native = native

    def __call__(self, emissions: ember.Tensor, lengths: Optional[ember.Tensor] = None) -> List[List[CTCHypothesis]]:
        """Like `CTCDecoder.__call__`, with one hypothesis per utterance: `words` is empty, `score`
        the sum of the chosen log-probabilities, and `timesteps` the frame (from 0) where each
        token starts."""
        return [[CTCHypothesis(tokens, [], score, steps)] for tokens, score, steps in self._native.decode(emissions, lengths)]

    def idxs_to_tokens(self, idxs) -> List[str]:
        """The token strings of token indices (a tensor or a sequence of ints)."""
        return self._native.idxs_to_tokens(_index_list(idxs))


def ctc_greedy_decoder(tokens: Union[str, List[str]], blank_token: str = "-") -> CTCGreedyDecoder:
    """A greedy CTC decoder over `tokens` (a tokens file or a list of str), blank `blank_token`."""
    return CTCGreedyDecoder(_audio.GreedyCTCDecoder(_tokens(tokens), blank_token))
