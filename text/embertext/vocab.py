"""TorchText's `torchtext.vocab`: `Vocab`, `vocab()` and `build_vocab_from_iterator`."""
from collections import Counter, OrderedDict


def _check_token(token, name="token"):
    if not isinstance(token, str):
        raise TypeError(f"{name} must be a str, got {type(token).__name__}")


def _check_index(index, name="index"):
    if isinstance(index, bool) or not isinstance(index, int):
        raise TypeError(f"{name} must be an int, got {type(index).__name__}")


class Vocab:
    """Maps tokens to indices and back, as `torchtext.vocab.Vocab` does.

    Looking up a token that is absent returns the default index when one is set, and raises
    `RuntimeError` otherwise. Calling the vocab on a list of tokens returns their indices.
    """

    def __init__(self, tokens=()):
        self._itos = []
        self._stoi = {}
        self._default_index = None
        for token in tokens:
            self.append_token(token)

    def __len__(self):
        return len(self._itos)

    def __contains__(self, token):
        return token in self._stoi

    def __getitem__(self, token):
        _check_token(token)
        index = self._stoi.get(token, self._default_index)
        if index is None:
            raise RuntimeError(f"Token {token} not found and default index is not set")
        return index

    def __call__(self, tokens):
        return self.forward(tokens)

    def forward(self, tokens):
        """Indices of `tokens` (a list of str)."""
        return self.lookup_indices(tokens)

    def __repr__(self):
        return f"Vocab(num_tokens={len(self)}, default_index={self._default_index})"

    def __eq__(self, other):
        return isinstance(other, Vocab) and self._itos == other._itos and self._default_index == other._default_index

    def set_default_index(self, index):
        """Index returned for tokens not in the vocab; `None` makes them an error again."""
        if index is not None:
            _check_index(index)
        self._default_index = index

    def get_default_index(self):
        return self._default_index

    def insert_token(self, token, index):
        """Inserts `token` at `index` (0 <= index <= len), shifting later tokens by one."""
        _check_token(token)
        _check_index(index)
        if token in self._stoi:
            raise RuntimeError(f"Token {token} already exists in the Vocab with index: {self._stoi[token]}")
        if not 0 <= index <= len(self._itos):
            raise RuntimeError(
                f"Specified index {index} is out of bounds for vocab of size {len(self._itos)}")
        self._itos.insert(index, token)
        for i in range(index, len(self._itos)):
            self._stoi[self._itos[i]] = i

    def append_token(self, token):
        _check_token(token)
        if token in self._stoi:
            raise RuntimeError(f"Token {token} already exists in the Vocab with index: {self._stoi[token]}")
        self._stoi[token] = len(self._itos)
        self._itos.append(token)

    def lookup_token(self, index):
        _check_index(index)
        if not 0 <= index < len(self._itos):
            raise RuntimeError(
                f"Specified index {index} is out of bounds of the size of itos dictionary: {len(self._itos)}.")
        return self._itos[index]

    def lookup_tokens(self, indices):
        return [self.lookup_token(i) for i in indices]

    def lookup_indices(self, tokens):
        if isinstance(tokens, str):
            raise TypeError("lookup_indices(): tokens must be a list of str, got a str")
        return [self[t] for t in tokens]

    def get_stoi(self):
        return dict(self._stoi)

    def get_itos(self):
        return list(self._itos)


def vocab(ordered_dict, min_freq=1, specials=None, special_first=True):
    """A `Vocab` of the keys of `ordered_dict` (token → frequency), in its order, keeping
    tokens seen at least `min_freq` times; `specials` go first (or last) whatever their count."""
    if not hasattr(ordered_dict, "items"):
        raise TypeError(f"ordered_dict must be a dict of token -> frequency, got {type(ordered_dict).__name__}")
    _check_index(min_freq, "min_freq")
    specials = list(specials or [])
    counts = OrderedDict(ordered_dict)
    for token in specials:
        counts.pop(token, None)
    tokens = [token for token, freq in counts.items() if freq >= min_freq]
    tokens = specials + tokens if special_first else tokens + specials
    return Vocab(tokens)


def build_vocab_from_iterator(iterator, min_freq=1, specials=None, special_first=True, max_tokens=None):
    """A `Vocab` from an iterator of token lists, most frequent first (ties in lexicographic
    order), at most `max_tokens` entries including `specials`."""
    counter = Counter()
    for tokens in iterator:
        if isinstance(tokens, str):
            raise TypeError("build_vocab_from_iterator(): the iterator must yield lists of tokens, got a str")
        counter.update(tokens)
    by_freq = sorted(counter.items(), key=lambda kv: kv[0])
    by_freq.sort(key=lambda kv: kv[1], reverse=True)
    if max_tokens is not None:
        _check_index(max_tokens, "max_tokens")
        n_specials = len(specials or [])
        if n_specials >= max_tokens:
            raise ValueError("len(specials) >= max_tokens, so the vocab will be entirely special tokens.")
        by_freq = by_freq[: max_tokens - n_specials]
    return vocab(OrderedDict(by_freq), min_freq=min_freq, specials=specials, special_first=special_first)


__all__ = ["Vocab", "vocab", "build_vocab_from_iterator"]
