"""`BertWordPieceTokenizer`: HuggingFace `tokenizers`' BERT tokenizer API on Ember's Rust
tokenizer, plus `encode_batch_tensors` for models (padded ember tensors)."""
from ember._C import text as _text

from embertext._download import cached_path

Encoding = _text.Encoding

_STRATEGIES = ("longest_first", "only_first", "only_second")


def _check_str(value, name):
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")


def _check_bool(value, name):
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")


def _check_optional_bool(value, name):
    if value is not None:
        _check_bool(value, name)


def _check_length(value, name, optional=False):
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")


class BertWordPieceTokenizer:
    """BERT's WordPiece tokenizer with `tokenizers.BertWordPieceTokenizer`'s signature and
    results (ids, tokens, offsets, type ids, masks), computed in Rust.

    `vocab` is the path or URL of a `vocab.txt` (URLs are downloaded once and cached);
    `strip_accents=None` follows `lowercase`. Special tokens that are in the vocabulary are
    recognised in the input text, as in `tokenizers`. Offsets are character offsets into the
    input string. Differences: no training, no `stride`/overflowing tokens, and `vocab` cannot be
    a dict.
    """

    def __init__(self, vocab, unk_token="[UNK]", sep_token="[SEP]", cls_token="[CLS]", pad_token="[PAD]",
                 mask_token="[MASK]", clean_text=True, handle_chinese_chars=True, strip_accents=None,
                 lowercase=True, wordpieces_prefix="##"):
        for value, name in ((unk_token, "unk_token"), (sep_token, "sep_token"), (cls_token, "cls_token"),
                            (pad_token, "pad_token"), (mask_token, "mask_token"),
                            (wordpieces_prefix, "wordpieces_prefix")):
            _check_str(value, name)
        for value, name in ((clean_text, "clean_text"), (handle_chinese_chars, "handle_chinese_chars"),
                            (lowercase, "lowercase")):
            _check_bool(value, name)
        _check_optional_bool(strip_accents, "strip_accents")
        path = cached_path(vocab, "vocab")
        self._tok = _text.BertTokenizer.from_vocab_file(
            path, lowercase=lowercase, strip_accents=strip_accents, clean_text=clean_text,
            handle_chinese_chars=handle_chinese_chars, unk_token=unk_token, sep_token=sep_token,
            cls_token=cls_token, pad_token=pad_token, mask_token=mask_token, wordpieces_prefix=wordpieces_prefix)

    @classmethod
    def from_file(cls, vocab, **kwargs):
        """Same as the constructor (as in `tokenizers`)."""
        return cls(vocab, **kwargs)

    @classmethod
    def from_tokenizer_json(cls, path):
        """From a HuggingFace `tokenizer.json` whose model is WordPiece (its normalizer,
        added tokens, truncation and padding settings included)."""
        path = cached_path(path, "path")
        self = cls.__new__(cls)
        self._tok = _text.BertTokenizer.from_tokenizer_json(path)
        return self

    def encode(self, sequence, pair=None, add_special_tokens=True):
        """One sequence, or a pair (`[CLS] a [SEP] b [SEP]`, type ids 0 then 1)."""
        _check_str(sequence, "sequence")
        if pair is not None:
            _check_str(pair, "pair")
        _check_bool(add_special_tokens, "add_special_tokens")
        return self._tok.encode(sequence, pair, add_special_tokens)

    def encode_batch(self, inputs, add_special_tokens=True):
        """A list of `str` or `(str, str)` pairs, encoded on all cores with the GIL released;
        padding (if enabled) pads to the batch's longest or to the fixed length."""
        _check_bool(add_special_tokens, "add_special_tokens")
        return self._tok.encode_batch(inputs, add_special_tokens)

    def encode_batch_tensors(self, inputs, add_special_tokens=True):
        """What a model takes: a dict of int64 ember tensors `input_ids`, `token_type_ids`,
        `attention_mask` (shape [batch, length]) and `offset_mapping` ([batch, length, 2]).
        Rows are padded to the longest (or to the padding settings' length) with the pad id."""
        _check_bool(add_special_tokens, "add_special_tokens")
        ids, type_ids, mask, offsets = self._tok.encode_batch_tensors(inputs, add_special_tokens)
        return {"input_ids": ids, "token_type_ids": type_ids, "attention_mask": mask, "offset_mapping": offsets}

    def decode(self, ids, skip_special_tokens=True):
        """Ids back to text: `##` pieces joined to the previous token; unknown ids skipped."""
        _check_bool(skip_special_tokens, "skip_special_tokens")
        return self._tok.decode(_id_list(ids, "ids"), skip_special_tokens)

    def decode_batch(self, sequences, skip_special_tokens=True):
        _check_bool(skip_special_tokens, "skip_special_tokens")
        return self._tok.decode_batch([_id_list(s, "sequences[i]") for s in sequences], skip_special_tokens)

    def enable_truncation(self, max_length, stride=0, strategy="longest_first", direction="right"):
        """Truncate encodings to `max_length` tokens, special tokens included."""
        _check_length(max_length, "max_length")
        if stride != 0:
            raise NotImplementedError("enable_truncation(): stride (overflowing tokens) is not supported")
        if strategy not in _STRATEGIES:
            raise ValueError(f"strategy must be one of {', '.join(_STRATEGIES)}, got {strategy!r}")
        self._tok.enable_truncation(max_length, strategy, direction)

    def no_truncation(self):
        self._tok.no_truncation()

    def enable_padding(self, direction="right", pad_id=0, pad_type_id=0, pad_token="[PAD]", length=None,
                       pad_to_multiple_of=None):
        """Pad to the batch's longest encoding (`length=None`) or to `length`."""
        _check_length(pad_id, "pad_id")
        _check_length(pad_type_id, "pad_type_id")
        _check_str(pad_token, "pad_token")
        _check_length(length, "length", optional=True)
        _check_length(pad_to_multiple_of, "pad_to_multiple_of", optional=True)
        self._tok.enable_padding(direction, pad_id, pad_type_id, pad_token, length, pad_to_multiple_of)

    def no_padding(self):
        self._tok.no_padding()

    @property
    def truncation(self):
        return self._tok.truncation

    @property
    def padding(self):
        return self._tok.padding

    def token_to_id(self, token):
        _check_str(token, "token")
        return self._tok.token_to_id(token)

    def id_to_token(self, id):
        _check_length(id, "id")
        return self._tok.id_to_token(id)

    def get_vocab(self, with_added_tokens=True):
        return self._tok.get_vocab()

    def get_vocab_size(self, with_added_tokens=True):
        return self._tok.get_vocab_size()

    def __repr__(self):
        lower, strip, clean, chinese = self._tok.normalizer_settings()
        return (f"BertWordPieceTokenizer(vocab_size={self.get_vocab_size()}, lowercase={lower}, "
                f"strip_accents={strip}, clean_text={clean}, handle_chinese_chars={chinese})")


def _id_list(ids, name):
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
        raise TypeError(f"{name} must be a list of int, got {type(ids).__name__}")
    ids = list(ids)
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, int):
            raise TypeError(f"{name} must be a list of int, got an element of type {type(i).__name__}")
    return ids


__all__ = ["BertWordPieceTokenizer", "Encoding"]
