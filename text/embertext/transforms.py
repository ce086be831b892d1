"""TorchText's `torchtext.transforms` on Ember: callables that take one sequence or a batch.

Transforms are plain callables with a `forward` method (Ember has no `nn.Module` yet);
`Sequential` chains them.
"""
import ember
from ember._C import text as _text

from embertext import functional as F
from embertext._download import cached_path
from embertext.vocab import Vocab

__all__ = [
    "BERTTokenizer",
    "VocabTransform",
    "ToTensor",
    "LabelToIndex",
    "Truncate",
    "AddToken",
    "PadTransform",
    "StrToIntTransform",
    "Sequential",
]


class _Transform:
    def __call__(self, input):
        return self.forward(input)


class BERTTokenizer(_Transform):
    """BERT's tokenizer (basic tokenisation + WordPiece) from a `vocab.txt` path or URL.

    Input: a `str` or a list of `str`. Output: the WordPiece tokens (`return_tokens=True`) or
    their ids, without `[CLS]`/`[SEP]`. Differences from TorchText 0.13:
    - ids are `int`s (TorchText returns them as strings such as `"7592"`);
    - `strip_accents=False` keeps accents even when lowercasing (TorchText strips them anyway);
      `strip_accents=None` follows `do_lower_case`, as in BERT;
    - a URL is downloaded once (with a progress bar) into `embertext`'s cache.
    `never_split` tokens, when a whole whitespace-separated word, are kept as they are.
    """

    def __init__(self, vocab_path, do_lower_case=True, strip_accents=None, return_tokens=False, never_split=None):
        for value, name in ((do_lower_case, "do_lower_case"), (return_tokens, "return_tokens")):
            if not isinstance(value, bool):
                raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
        if strip_accents is not None and not isinstance(strip_accents, bool):
            raise TypeError(f"strip_accents must be a bool or None, got {type(strip_accents).__name__}")
        never_split = list(never_split or [])
        if not all(isinstance(t, str) for t in never_split):
            raise TypeError("never_split must be a list of str")
        self._tok = _text.BertTokenizer.from_vocab_file(
            cached_path(vocab_path, "vocab_path"), lowercase=do_lower_case, strip_accents=strip_accents,
            match_special_tokens=False, never_split=never_split)
        self._return_tokens = return_tokens
        self.do_lower_case = do_lower_case
        self.strip_accents = strip_accents
        self.never_split = never_split

    def forward(self, input):
        if isinstance(input, str):
            return self._tok.tokenize(input) if self._return_tokens else self._tok.encode_ids(input)
        if isinstance(input, list) and all(isinstance(x, str) for x in input):
            return self._tok.tokenize_batch(input) if self._return_tokens else self._tok.encode_ids_batch(input)
        raise TypeError(f"BERTTokenizer: input must be a str or a list of str, got {type(input).__name__}")


class VocabTransform(_Transform):
    """Tokens → indices through a `Vocab`, for a list of tokens or a batch of lists."""

    def __init__(self, vocab):
        if not isinstance(vocab, Vocab):
            raise TypeError(f"vocab must be an embertext.vocab.Vocab, got {type(vocab).__name__}")
        self.vocab = vocab

    def forward(self, input):
        if isinstance(input, list) and all(isinstance(x, str) for x in input):
            return self.vocab.lookup_indices(input)
        if isinstance(input, list) and all(isinstance(x, list) for x in input):
            return [self.vocab.lookup_indices(x) for x in input]
        raise TypeError("VocabTransform: input must be a list of str or a list of lists of str")


class ToTensor(_Transform):
    """Ids → an ember tensor; a batch is padded with `padding_value` into a 2-D tensor."""

    def __init__(self, padding_value=None, dtype=ember.long):
        if padding_value is not None and (isinstance(padding_value, bool) or not isinstance(padding_value, int)):
            raise TypeError(f"padding_value must be an int or None, got {type(padding_value).__name__}")
        if not isinstance(dtype, ember.dtype):
            raise TypeError(f"dtype must be an ember.dtype, got {type(dtype).__name__}")
        self.padding_value = padding_value
        self.dtype = dtype

    def forward(self, input):
        return F.to_tensor(input, padding_value=self.padding_value, dtype=self.dtype)


class LabelToIndex(_Transform):
    """Label strings → indices, from `label_names` or a file with one label per line."""

    def __init__(self, label_names=None, label_path=None, sort_names=False):
        if not label_names and not label_path:
            raise ValueError("label_names or label_path is required")
        if label_names and label_path:
            raise ValueError("label_names and label_path are mutually exclusive")
        if label_path:
            with open(label_path, encoding="utf-8") as f:
                label_names = [line.strip() for line in f if line.strip()]
        label_names = list(label_names)
        if sort_names:
            label_names = sorted(label_names)
        self._label_vocab = Vocab(label_names)
        self._label_names = self._label_vocab.get_itos()

    def forward(self, input):
        if isinstance(input, str):
            return self._label_vocab[input]
        if isinstance(input, list):
            return self._label_vocab.lookup_indices(input)
        raise TypeError(f"LabelToIndex: input must be a str or a list of str, got {type(input).__name__}")

    @property
    def label_names(self):
        return self._label_names


class Truncate(_Transform):
    """Keeps at most `max_seq_len` items of a sequence (or of each sequence of a batch)."""

    def __init__(self, max_seq_len):
        if isinstance(max_seq_len, bool) or not isinstance(max_seq_len, int):
            raise TypeError(f"max_seq_len must be an int, got {type(max_seq_len).__name__}")
        self.max_seq_len = max_seq_len

    def forward(self, input):
        return F.truncate(input, self.max_seq_len)


class AddToken(_Transform):
    """Adds `token` at the start (`begin=True`) or the end of a sequence or of each of a batch."""

    def __init__(self, token, begin=True):
        if isinstance(token, bool) or not isinstance(token, (int, str)):
            raise TypeError(f"token must be an int or a str, got {type(token).__name__}")
        self.token = token
        self.begin = begin

    def forward(self, input):
        return F.add_token(input, self.token, self.begin)


class PadTransform(_Transform):
    """Pads the last dimension of a tensor up to `max_length` with `pad_value`; longer
    tensors are returned unchanged."""

    def __init__(self, max_length, pad_value):
        if isinstance(max_length, bool) or not isinstance(max_length, int):
            raise TypeError(f"max_length must be an int, got {type(max_length).__name__}")
        self.max_length = max_length
        self.pad_value = pad_value

    def forward(self, x):
        if not isinstance(x, ember.Tensor):
            raise TypeError(f"PadTransform: input must be an ember.Tensor, got {type(x).__name__}")
        length = x.size(-1)
        if length >= self.max_length:
            return x
        out = ember.full((*x.shape[:-1], self.max_length), self.pad_value, dtype=x.dtype)
        out[..., :length] = x
        return out


class StrToIntTransform(_Transform):
    """Strings of digits → ints, for one sequence or a batch."""

    def forward(self, input):
        return F.str_to_int(input)


class Sequential(_Transform):
    """Applies the given transforms in order."""

    def __init__(self, *transforms):
        for i, t in enumerate(transforms):
            if not callable(t):
                raise TypeError(f"Sequential: argument {i} is not callable ({type(t).__name__})")
        self._transforms = list(transforms)

    def forward(self, input):
        for t in self._transforms:
            input = t(input)
        return input

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Sequential(*self._transforms[index])
        return self._transforms[index]

    def __len__(self):
        return len(self._transforms)

    def __iter__(self):
        return iter(self._transforms)
