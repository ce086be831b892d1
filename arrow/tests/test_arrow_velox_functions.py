"""TorchArrow's functions that Velox provided: array_except, rand, lookup_indices, bpe_tokenize."""
import json
import pickle
import random

import pyarrow as pa
import pytest

import emberarrow as ta
import emberarrow.dtypes as dt
from emberarrow import functional as F
from emberarrow.text import GPT2BPEEncoder, gpt2_byte_encoder


# ---- array_except ----

def _except_reference(x, y):
    if x is None or y is None:
        return None
    out = []
    for item in x:
        if item not in y and item not in out:
            out.append(item)
    return out


def test_array_except_torcharrow_example():
    x = ta.column([[1, 2, 3], [1, 2, 3], [1, 2, 2], [1, 2, 2], [1, None, None]])
    y = ta.column([[4, 5, 6], [1, 2], [1, 1, 2], [1, 3, 4], [1, 1, None]])
    out = F.array_except(x, y)
    assert list(out) == [[1, 2, 3], [3], [], [2], []]
    assert out.dtype == dt.List(dt.Int64(True), True)


@pytest.mark.parametrize("make", [
    lambda rng: rng.choice([None, *range(5)]),
    lambda rng: rng.choice([None, "a", "b", "", "ü"]),
])
def test_array_except_matches_a_reference_on_nulls_and_slices(make):
    rng = random.Random(7)

    def lists(n):
        return [None if rng.random() < 0.1 else [make(rng) for _ in range(rng.randint(0, 6))] for _ in range(n)]

    xs, ys = lists(300), lists(300)
    x = ta.from_arrow(pa.array([[make(rng)]] + xs).slice(1))  # sliced: the list offsets do not start at 0
    y = ta.column(ys)
    assert list(F.array_except(x, y)) == [_except_reference(a, b) for a, b in zip(xs, ys)]


def test_array_except_empty_and_errors():
    empty = ta.column([], dtype=dt.List(dt.int64))
    assert list(F.array_except(empty, empty)) == []
    with pytest.raises(TypeError, match="one item dtype"):
        F.array_except(ta.column([[1]]), ta.column([["a"]]))
    with pytest.raises(TypeError, match="equal length"):
        F.array_except(ta.column([[1]]), ta.column([[1], [2]]))
    with pytest.raises(TypeError, match="list columns"):
        F.array_except(ta.column([1]), ta.column([[1]]))
    with pytest.raises(TypeError, match="numbers, booleans or strings"):
        F.array_except(ta.column([[[1]]]), ta.column([[[1]]]))


# ---- rand ----

def test_rand():
    col = F.rand(size=1000)
    assert col.dtype == dt.Float64(True) and len(col) == 1000 and col.null_count == 0
    values = list(col)
    assert all(0.0 <= v < 1.0 for v in values)
    assert len(set(values)) > 990  # drawn, not a constant
    assert len(F.rand(size=0)) == 0
    with pytest.raises(TypeError):
        F.rand(1000)  # size is keyword-only, as in TorchArrow's factory functions
    with pytest.raises(TypeError, match="size"):
        F.rand(size=2.0)
    with pytest.raises(ValueError, match=">= 0"):
        F.rand(size=-1)
    with pytest.raises(ValueError, match="device"):
        F.rand(size=3, device="cuda")


# ---- lookup_indices ----

class _TinyVocab:
    """The protocol lookup_indices needs, as torchtext's and TorchArrow's vocabs have it."""

    def __init__(self, tokens, default_index):
        self._tokens, self._default = tokens, default_index

    def get_itos(self):
        return list(self._tokens)

    def get_default_index(self):
        return self._default


def test_lookup_indices_torcharrow_example():
    vocab = _TinyVocab(["<unk>", "Hello", "world", "How", "are", "you!"], 0)
    out = F.lookup_indices(vocab, ta.column([["Hello", "world"], ["How", "are", "you!", "OOV"]]))
    assert list(out) == [[1, 2], [3, 4, 5, 0]]
    assert out.dtype == dt.List(dt.Int64(True), True)


def test_lookup_indices_with_embertext_vocab_nulls_and_slices():
    vocab_module = pytest.importorskip("embertext.vocab")
    vocab = vocab_module.Vocab(["a", "b", "ü"])
    tokens = ta.from_arrow(pa.array([["zz"], ["ü", "a"], None, ["b", None], [], ["a", "a"]]).slice(1))
    assert list(F.lookup_indices(vocab, tokens)) == [[2, 0], None, None, [], [0, 0]]
    with pytest.raises(RuntimeError, match="Token zz not found and default index is not set"):
        F.lookup_indices(vocab, ta.column([["a"], ["zz"]]))
    vocab.set_default_index(7)
    assert list(F.lookup_indices(vocab, ta.column([["zz", "b"]]))) == [[7, 1]]


def test_lookup_indices_errors():
    vocab = _TinyVocab(["a"], None)
    with pytest.raises(TypeError, match="get_itos"):
        F.lookup_indices({"a": 0}, ta.column([["a"]]))
    with pytest.raises(TypeError, match="string tokens"):
        F.lookup_indices(vocab, ta.column([[1]]))
    with pytest.raises(TypeError, match="string tokens"):
        F.lookup_indices(vocab, ta.column(["a"]))


# ---- bpe_tokenize ----

_MERGES = [("h", "e"), ("l", "l"), ("he", "ll"), ("hell", "o"), ("Ġ", "w"), ("o", "r"), ("Ġw", "or"),
           ("Ġ", "b"), ("Ġ", "'"), ("'", "s"), ("x", "Â")]


def _tiny_encoder(caching_enabled=False):
    """Every byte is its own token, with its value as id; the merges above add ids from 256 on."""
    byte_encoder = gpt2_byte_encoder()
    encoder = {byte_encoder[b]: b for b in range(256)}
    for first, second in _MERGES:
        encoder[first + second] = len(encoder)
    ranks = {f"{first}|{second}": rank for rank, (first, second) in enumerate(_MERGES)}
    return GPT2BPEEncoder(encoder, ranks, "|", byte_encoder, caching_enabled)


def _ids(*values):
    return [str(v) for v in values]


BPE_CASES = [
    ("hello world", _ids(259, 262, ord("l"), ord("d"))),  # merges by rank: hello, Ġwor + l + d
    ("a  b", _ids(97, 32, 263)),  # the run gives its last space to the next word: "a", " ", " b"
    ("a \n b", _ids(97, 32, 10, 263)),
    ("a\t\tb", _ids(97, 9, 9, 98)),
    ("b  ", _ids(98, 32, 32)),  # a run that ends the text stays whole
    (" b", _ids(263)),
    ("it's", _ids(105, 116, 265)),
    ("x  's", _ids(120, 32, 264, 115)),  # TorchArrow's rule: " 's" is one word (GPT-2's regex splits it)
    ("x²3", _ids(120, 194, 178, 51)),  # a letter and a number are separate words: no "x" + "Â" merge
    ("日本", _ids(230, 151, 165, 230, 156, 172)),  # UTF-8 bytes, each its own token
    ("", []),
]


def test_bpe_tokenize_on_a_small_vocab():
    texts = [text for text, _ in BPE_CASES]
    out = F.bpe_tokenize(_tiny_encoder(), ta.column(texts + [None]))
    assert out.dtype == dt.List(dt.String(True), True)
    assert list(out) == [ids for _, ids in BPE_CASES] + [None]


def test_bpe_tokenize_slices_repeats_and_caching():
    texts = ["hello", None, "hello world hello", "a  b", "hello"]
    expected = [_tiny_encoder().encode(t) if t is not None else None for t in texts]
    for caching in (False, True):
        encoder = _tiny_encoder(caching)
        sliced = ta.from_arrow(pa.array(["skipped"] + texts).slice(1))
        assert list(F.bpe_tokenize(encoder, sliced)) == expected
        assert list(F.bpe_tokenize(encoder, sliced)) == expected  # a second call, from the cache
        # the encoder travels to DataLoader workers with the functions that use it
        assert list(F.bpe_tokenize(pickle.loads(pickle.dumps(encoder)), sliced)) == expected
    assert expected[2] == _ids(259, 262, ord("l"), ord("d"), 32, 259)  # " hello": Ġ has no merge with hello


def test_gpt2_bpe_encoder_from_files(tmp_path):
    byte_encoder = gpt2_byte_encoder()
    encoder = {byte_encoder[b]: b for b in range(256)}
    for first, second in _MERGES:
        encoder[first + second] = len(encoder)
    (tmp_path / "encoder.json").write_text(json.dumps(encoder), encoding="utf-8")
    (tmp_path / "vocab.bpe").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in _MERGES), encoding="utf-8")
    loaded = GPT2BPEEncoder.from_files(tmp_path / "encoder.json", tmp_path / "vocab.bpe")
    assert [loaded.encode(text) for text, _ in BPE_CASES] == [ids for _, ids in BPE_CASES]
    (tmp_path / "bad.bpe").write_text("#version: 0.2\nh e\nl l l\n", encoding="utf-8")
    with pytest.raises(ValueError, match="bad.bpe:3"):
        GPT2BPEEncoder.from_files(tmp_path / "encoder.json", tmp_path / "bad.bpe")
    with pytest.raises(FileNotFoundError):
        GPT2BPEEncoder.from_files(tmp_path / "missing.json", tmp_path / "vocab.bpe")


def test_gpt2_byte_encoder():
    table = gpt2_byte_encoder()
    assert len(table) == 256 and len(set(table.values())) == 256
    assert table[ord("a")] == "a" and table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ" and table[0] == "Ā"


def test_bpe_tokenize_errors():
    encoder = _tiny_encoder()
    with pytest.raises(TypeError, match="GPT2BPEEncoder"):
        F.bpe_tokenize(object(), ta.column(["a"]))
    with pytest.raises(TypeError, match="string column"):
        F.bpe_tokenize(encoder, ta.column([1]))
    with pytest.raises(TypeError, match="str"):
        encoder.encode(b"a")
    partial = GPT2BPEEncoder({"a": 0}, {}, "|", gpt2_byte_encoder())
    with pytest.raises(ValueError, match="not in bpe_encoder"):
        F.bpe_tokenize(partial, ta.column(["ab"]))
    byte_encoder = gpt2_byte_encoder()
    del byte_encoder[255]
    with pytest.raises(ValueError, match="every byte"):
        GPT2BPEEncoder({"a": 0}, {}, "|", byte_encoder)
    with pytest.raises(ValueError, match="separator"):
        GPT2BPEEncoder({"a": 0}, {"a b": 0}, "|", gpt2_byte_encoder())
    with pytest.raises(ValueError, match="separator"):
        GPT2BPEEncoder({"a": 0}, {}, "", gpt2_byte_encoder())
    with pytest.raises(TypeError, match="bpe_encoder"):
        GPT2BPEEncoder({"a": "0"}, {}, "|", gpt2_byte_encoder())
