"""GPT-2's byte-level BPE encoder, the tokenizer ``functional.bpe_tokenize`` takes (TorchArrow's
``torcharrow._torcharrow.GPT2BPEEncoder``, with its constructor and results).

Text is split into words by GPT-2's pattern in RE2 (the engine and the pattern TorchArrow's Velox
function uses, through ``pyarrow.compute`` over the whole column at once); only the distinct words
go through the BPE merges in Python, and their token ids are gathered back with Arrow's ``take``.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["GPT2BPEEncoder", "gpt2_byte_encoder"]

# GPT-2's word pattern as TorchArrow writes it for RE2: RE2 has no look-ahead, so the original
# "\s+(?!\S)" alternative is replaced by the whitespace rule of _attach_spaces, and \v is spelled
# out because RE2's \s leaves it out. Every character matches one alternative, so the words tile
# the text with nothing between them. No capture group: RE2 finds whole matches (\0) far faster.
_WORD = r"'s|'t|'re|'ve|'m|'ll|'d| ?\pL+| ?\pN+| ?[^\s\v\pL\pN]+|[\s\v]+"
_WHITESPACE_BYTES = np.frombuffer(b"\t\n\v\f\r ", dtype=np.uint8)  # C's isspace(), TorchArrow's test
# A byte that never occurs in UTF-8 text: it marks word ends without clashing with any character.
_MARK = b"\xff"


def gpt2_byte_encoder():
    """GPT-2's table from each byte to a printable character: bytes that print as themselves
    (``!``..``~``, ``¡``..``¬``, ``®``..``ÿ``) keep their character, the others take the characters
    from U+0100 on, in byte order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, shifted = {}, 0
    for byte in range(256):
        if byte in printable:
            table[byte] = chr(byte)
        else:
            table[byte] = chr(256 + shifted)
            shifted += 1
    return table


def _check_str_to_int(mapping, name):
    if not isinstance(mapping, dict):
        raise TypeError(f"GPT2BPEEncoder: {name} must be a dict of str -> int, got {type(mapping).__name__}")
    for key, value in mapping.items():
        if not isinstance(key, str) or isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"GPT2BPEEncoder: {name} must map str -> int, got {key!r}: {value!r}")


class GPT2BPEEncoder:
    """GPT-2's byte-level BPE: text to the ids (as strings) of its BPE tokens.

    ``bpe_encoder`` maps each BPE token to its id (GPT-2's ``encoder.json``), ``bpe_merge_ranks``
    maps each merge ``"first" + separator + "second"`` to its rank (the lines of ``vocab.bpe``,
    lowest rank merged first), ``byte_encoder`` maps every byte 0..255 to the string it stands for
    (``gpt2_byte_encoder()``), and ``caching_enabled`` keeps the tokens of every word seen, as in
    TorchArrow. ``from_files`` reads GPT-2's two files.
    """

    def __init__(self, bpe_encoder, bpe_merge_ranks, separator, byte_encoder, caching_enabled=False):
        _check_str_to_int(bpe_encoder, "bpe_encoder")
        _check_str_to_int(bpe_merge_ranks, "bpe_merge_ranks")
        if not isinstance(separator, str) or not separator:
            raise ValueError(f"GPT2BPEEncoder: separator must be a non-empty str, got {separator!r}")
        if not isinstance(byte_encoder, dict) or any(not isinstance(byte_encoder.get(b), str) for b in range(256)):
            raise ValueError("GPT2BPEEncoder: byte_encoder must map every byte 0..255 to a str")
        self._encoder = dict(bpe_encoder)
        self._ranks = {}
        for merge, rank in bpe_merge_ranks.items():
            first, found, second = merge.partition(separator)
            if not found:
                raise ValueError(f"GPT2BPEEncoder: merge {merge!r} does not contain the separator {separator!r}")
            self._ranks[(first, second)] = rank
        self._byte_strings = [byte_encoder[b] for b in range(256)]
        self._cache = {} if caching_enabled else None

    @classmethod
    def from_files(cls, encoder_json_path, vocab_bpe_path, caching_enabled=True):
        """The encoder of GPT-2's ``encoder.json`` (token -> id) and ``vocab.bpe`` (a version line,
        then one merge ``first second`` a line, by rank) with GPT-2's byte table."""
        with open(encoder_json_path, encoding="utf-8") as f:
            encoder = json.load(f)
        with open(vocab_bpe_path, encoding="utf-8") as f:
            lines = f.read().split("\n")[1:]  # the first line is "#version: ..."
        ranks = {}
        for number, line in enumerate(lines, start=2):
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2:
                raise ValueError(f"{vocab_bpe_path}:{number}: expected a merge 'first second', got {line!r}")
            ranks["\u0001".join(parts)] = len(ranks)
        return cls(encoder, ranks, "\u0001", gpt2_byte_encoder(), caching_enabled)

    def encode(self, text):
        """The ids, as strings, of the BPE tokens of one ``text``."""
        if not isinstance(text, str):
            raise TypeError(f"GPT2BPEEncoder.encode: text must be a str, got {type(text).__name__}")
        return self._tokenize(pa.array([text], pa.string())).to_pylist()[0]

    def _tokenize(self, strings):
        """A ``list<string>`` Arrow array of each string's token ids (null for a null string)."""
        offsets, words = _pre_tokenize(strings)
        word_offsets, ids = self._encode_words(words)
        mask = None if strings.null_count == 0 else strings.is_null()
        return pa.ListArray.from_arrays(pa.array(word_offsets[offsets].astype(np.int32)), ids, mask=mask)

    def _encode_words(self, words):
        """(offsets of each word's ids, the ids as strings) of Arrow ``words``, running BPE once a
        distinct word; ids are gathered as integers and written as strings in one cast."""
        encoded = pc.dictionary_encode(words)
        ids = [self._word_ids(word) for word in encoded.dictionary.to_pylist()]
        counts = np.array([len(i) for i in ids], dtype=np.int64)
        flat = np.fromiter((i for word_ids in ids for i in word_ids), dtype=np.int64, count=int(counts.sum()))
        starts = np.cumsum(counts) - counts
        codes = encoded.indices.to_numpy()
        per_word = counts[codes]
        word_offsets = np.concatenate([[0], np.cumsum(per_word)])
        # the positions of each word's ids in ``flat``, word after word
        positions = np.repeat(starts[codes] - word_offsets[:-1], per_word) + np.arange(word_offsets[-1])
        return word_offsets, pa.array(flat[positions]).cast(pa.string())

    def _word_ids(self, word):
        """The ids of one word's BPE tokens."""
        if self._cache is not None and word in self._cache:
            return self._cache[word]
        symbols = [self._byte_strings[b] for b in word.encode("utf-8")]
        ids = []
        for token in self._merge(symbols):
            if token not in self._encoder:
                raise ValueError(f"bpe_tokenize: BPE token {token!r} (of {word!r}) is not in bpe_encoder")
            ids.append(self._encoder[token])
        if self._cache is not None:
            self._cache[word] = ids
        return ids

    def _merge(self, symbols):
        """Merge the adjacent pair of lowest rank, everywhere it occurs, until no pair has a rank."""
        while len(symbols) > 1:
            rank, pair = min((self._ranks.get(pair, math.inf), pair) for pair in zip(symbols, symbols[1:]))
            if rank == math.inf:
                break
            merged, i = [], 0
            while i < len(symbols):
                if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
                    merged.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            symbols = merged
        return symbols


def _pre_tokenize(strings):
    """(each string's offsets into the words, the words) of a string array, GPT-2's way."""
    marked = pc.replace_substring_regex(strings, pattern=_WORD, replacement=b"\\0" + _MARK)
    split = pc.split_pattern(marked.view(pa.binary()), pattern=_MARK)
    offsets = split.offsets.to_numpy().astype(np.int64)
    offsets -= offsets[0]
    pieces = split.values.slice(0, int(offsets[-1]))
    # every word ends in a mark, so each string's last piece is the empty one after its last mark
    lengths = np.diff(offsets)
    keep = np.ones(len(pieces), dtype=bool)
    keep[offsets[1:][lengths > 0] - 1] = False
    words = pieces.filter(pa.array(keep)).cast(pa.string())
    word_offsets = np.concatenate([[0], np.cumsum(lengths - (lengths > 0))])
    return _attach_spaces(word_offsets, words)


def _attach_spaces(offsets, words):
    """TorchArrow's stand-in for GPT-2's "\\s+(?!\\S)": a run of whitespace followed by more text
    gives up its last character, which joins the next word when it is a space and stands alone
    otherwise; a run that ends the text stays whole. Only the runs and the words after them are
    rewritten; the output is gathered from the words and those rewrites in one ``take``."""
    n = len(words)
    ends_text = np.zeros(n, dtype=bool)
    ends_text[offsets[1:][np.diff(offsets) > 0] - 1] = True
    runs = np.flatnonzero(_is_whitespace_run(words) & ~ends_text)
    if not len(runs):
        return offsets, words
    run_words = words.take(pa.array(runs))
    ends_in_space = pc.ends_with(run_words, " ").to_numpy(zero_copy_only=False)
    spaced = runs[ends_in_space] + 1  # the words that take a run's last space
    r, k = len(runs), len(spaced)
    sources = pa.concat_arrays([
        words,
        pc.utf8_slice_codeunits(run_words, 0, -1),  # the run less its last character
        pc.utf8_slice_codeunits(run_words, -1),  # that character, a word of its own unless a space
        pc.binary_join_element_wise(" ", words.take(pa.array(spaced)), ""),
    ])
    slot = np.stack([np.arange(n), np.zeros(n, dtype=np.int64)], axis=1)
    emit = np.zeros((n, 2), dtype=bool)
    emit[:, 0] = True
    slot[runs, 0] = n + np.arange(r)
    emit[runs, 0] = pc.utf8_length(run_words).to_numpy(zero_copy_only=False) > 1
    slot[runs, 1] = n + r + np.arange(r)
    emit[runs, 1] = ~ends_in_space
    slot[spaced, 0] = n + 2 * r + np.arange(k)
    out_offsets = np.concatenate([[0], np.cumsum(emit.sum(axis=1))])[offsets]
    return out_offsets, sources.take(pa.array(slot[emit]))


def _is_whitespace_run(words):
    """True for the words that are runs of whitespace: those whose last byte is one of C's
    isspace() (TorchArrow's test), as no other word ends in whitespace."""
    if not len(words):
        return np.zeros(0, dtype=bool)
    ends = np.frombuffer(words.buffers()[1], dtype=np.int32, count=len(words) + 1, offset=words.offset * 4)[1:]
    last_bytes = np.frombuffer(words.buffers()[2], dtype=np.uint8)[ends - 1]
    return np.isin(last_bytes, _WHITESPACE_BYTES)
