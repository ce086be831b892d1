"""Shared by the CTC decoder tests and `benches/audio.py`: small decoder assets (tokens, lexicon,
an ARPA LM) written to a folder, random emissions, and the reference: flashlight-text's decoders
built the way TorchAudio 0.12 builds them, with hypotheses derived the way TorchAudio derives them.
"""
import itertools
import math

import numpy as np

LETTERS = list("abcdefgh")
TOKENS = ["-", "|", *LETTERS]  # blank, silence (the word boundary), letters


def make_words(rng, count, max_len=5, letters=LETTERS):
    """`count` distinct words over `letters` (no two share a spelling)."""
    words = {}  # a dict keeps the drawing order (a set's order varies with PYTHONHASHSEED)
    while len(words) < count:
        words["".join(rng.choice(letters, size=rng.integers(1, max_len + 1)))] = None
    return list(words)


def write_tokens(path, tokens=TOKENS):
    path.write_text("".join(f"{t}\n" for t in tokens))
    return str(path)


def write_lexicon(path, words):
    path.write_text("".join(f"{w} {' '.join(w)} |\n" for w in words))
    return str(path)


def write_arpa(path, words, rng, order=3, successors=8):
    """A back-off model of `order` over `words`, `<s>`, `</s>`, `<unk>`, with random log10
    probabilities and back-offs. Each context gets up to `successors` next words; an n-gram's
    context and its suffix are themselves (n-1)-grams, as KenLM wants."""
    vocab = ["<s>", "</s>", "<unk>", *words]
    grams = [[(w,) for w in vocab]]
    after = {(): [w for w in vocab if w != "<s>"]}  # context -> words that may follow it
    for _ in range(1, order):
        level = {}
        for context in grams[-1]:
            if context[-1] == "</s>":
                continue
            options = after.get(context[1:], [])
            if options:
                picked = rng.choice(len(options), size=min(successors, len(options)), replace=False)
                level[context] = [options[i] for i in sorted(picked)]
        grams.append([c + (w,) for c, nexts in level.items() for w in nexts])
        after = level
    lines = ["\\data\\", *[f"ngram {n + 1}={len(g)}" for n, g in enumerate(grams)], ""]
    for n, table in enumerate(grams):
        lines.append(f"\\{n + 1}-grams:")
        for gram in table:
            prob = -99.0 if gram == ("<s>",) else round(float(rng.uniform(-3.0, -0.1)), 4)
            backoff = f"\t{round(float(rng.uniform(-1.0, 0.0)), 4)}" if n + 1 < order and gram[-1] != "</s>" else ""
            lines.append(f"{prob}\t{' '.join(gram)}{backoff}")
        lines.append("")
    lines.append("\\end\\")
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def random_emissions(rng, batch, frames, num_tokens, sharpness=3.0):
    """log_softmax of Gaussian logits: float32 `(batch, frames, num_tokens)`."""
    logits = rng.standard_normal((batch, frames, num_tokens)) * sharpness
    logits -= logits.max(axis=-1, keepdims=True)
    return (logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))).astype(np.float32)


def spoken_emissions(rng, words, frames, tokens=TOKENS, peak=6.0, noise=1.5):
    """Emissions as an acoustic model gives them for speech made of `words`: each letter for 1-3
    frames, sometimes a blank after it (always between a doubled letter), the silence token
    after each word, blanks after the last word that fits; Gaussian noise on every logit.
    float32 `(frames, len(tokens))` log-probabilities, and the words spoken."""
    path, spoken = [], []
    while True:
        word = words[rng.integers(len(words))]
        said = []
        for i, letter in enumerate(word):
            doubled = i + 1 < len(word) and word[i + 1] == letter
            said += [tokens.index(letter)] * int(rng.integers(1, 4)) + [0] * max(int(rng.integers(0, 2)), doubled)
        if len(path) + len(said) + 1 > frames:
            break
        path += said + [1]
        spoken.append(word)
    path += [0] * (frames - len(path))
    logits = rng.standard_normal((frames, len(tokens))) * noise
    logits[np.arange(frames), path] += peak
    logits -= logits.max(axis=-1, keepdims=True)
    return (logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))).astype(np.float32), spoken


class FlashlightReference:
    """flashlight-text's decoder as TorchAudio 0.12's `ctc_decoder` builds it. Without a lexicon
    and with an ARPA LM, the LM's word dictionary is the tokens then `<unk>`, in token order
    (TorchAudio's comes out in hash order; Ember documents token order)."""

    def __init__(self, lexicon, tokens, lm=None, nbest=1, beam_size=50, beam_size_token=None, beam_threshold=50,
                 lm_weight=2, word_score=0, unk_score=float("-inf"), sil_score=0, log_add=False, blank_token="-",
                 sil_token="|", unk_word="<unk>", python_lm=None):
        from flashlight.lib.text import decoder as fl
        from flashlight.lib.text.dictionary import Dictionary, create_word_dict, load_words

        self.tokens = Dictionary(tokens)
        self.nbest = nbest
        self.blank = self.tokens.get_index(blank_token)
        silence = self.tokens.get_index(sil_token)
        size = self.tokens.index_size()
        common = dict(beam_size=beam_size, beam_size_token=beam_size_token or size, beam_threshold=beam_threshold,
                      lm_weight=lm_weight, sil_score=sil_score, log_add=log_add, criterion_type=fl.CriterionType.CTC)
        lexicon = load_words(lexicon) if lexicon else None
        if lexicon:
            self.words = create_word_dict(lexicon)
        elif isinstance(lm, str):
            self.words = Dictionary([self.tokens.get_entry(i) for i in range(size)] + [unk_word])
        else:
            self.words = None
        self.lm = self._lm(fl, lm, python_lm)
        if lexicon:
            trie = self._trie(fl, lexicon, silence)
            options = fl.LexiconDecoderOptions(word_score=word_score, unk_score=unk_score, **common)
            unk = self.words.get_index(unk_word)
            self.decoder = fl.LexiconDecoder(options, trie, self.lm, silence, self.blank, unk, [], False)
        else:
            options = fl.LexiconFreeDecoderOptions(**common)
            self.decoder = fl.LexiconFreeDecoder(options, self.lm, silence, self.blank, [])

    def word_list(self):
        """The LM's word strings by index (flashlight's lexicon word dictionary is in hash order)."""
        return [self.words.get_entry(i) for i in range(self.words.index_size())]

    def _lm(self, fl, lm, python_lm):
        if python_lm is not None:
            return python_lm
        if isinstance(lm, str):
            from flashlight.lib.text.decoder.kenlm import KenLM

            return KenLM(lm, self.words)
        return fl.ZeroLM()

    def _trie(self, fl, lexicon, silence):
        trie = fl.Trie(self.tokens.index_size(), silence)
        start = self.lm.start(False)
        for word, spellings in lexicon.items():
            index = self.words.get_index(word)
            _, score = self.lm.score(start, index)
            for spelling in spellings:
                trie.insert([self.tokens.get_index(t) for t in spelling], index, score)
        trie.smear(fl.SmearingMode.MAX)
        return trie

    def __call__(self, emissions, lengths=None):
        """`List[List[(tokens, words, score, timesteps)]]` for float32 `(batch, frames, tokens)`."""
        emissions = np.ascontiguousarray(emissions, dtype=np.float32)
        batch, frames, size = emissions.shape
        out = []
        for b in range(batch):
            length = frames if lengths is None else int(lengths[b])
            results = self.decoder.decode(emissions.ctypes.data + b * emissions.strides[0], length, size)
            out.append([self._hypothesis(r) for r in results[: self.nbest]])
        return out

    def _hypothesis(self, result):
        raw = list(result.tokens)
        tokens = [t for t, _ in itertools.groupby(raw) if t != self.blank]
        steps = [i for i, t in enumerate(raw) if t != self.blank and (i == 0 or t != raw[i - 1])]
        words = [self.words.get_entry(w) for w in result.words if w >= 0] if self.words is not None else []
        return tokens, words, result.score, steps


def unigram_lm_classes(lm_base, state_base):
    """A unigram LM over word strings, on either library's base classes: `score` gives the word's
    log-probability (`<unk>` and unlisted words: `unk`), `finish` the end score."""

    class UnigramLM(lm_base):
        def __init__(self, words_by_index, scores, end_score, unk=-5.0):
            lm_base.__init__(self)
            self.table = [scores.get(w, unk) for w in words_by_index]
            self.end_score = end_score

        def start(self, start_with_nothing):
            return state_base()

        def score(self, state, usr_token_idx):
            return state.child(usr_token_idx), self.table[usr_token_idx]

        def finish(self, state):
            return state.child(-1), self.end_score

    return UnigramLM


def unigram_scores(rng, words):
    return {w: math.log(p) for w, p in zip(words, rng.dirichlet(np.ones(len(words))))}
