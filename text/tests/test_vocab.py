"""embertext.vocab against TorchText's documented semantics."""
from collections import Counter, OrderedDict

import pytest

from embertext.vocab import Vocab, build_vocab_from_iterator, vocab


def test_vocab_from_ordered_dict_keeps_order_min_freq_and_specials():
    counts = OrderedDict([("b", 3), ("a", 1), ("<unk>", 9), ("c", 2)])
    v = vocab(counts, min_freq=2, specials=["<unk>", "<pad>"])
    assert v.get_itos() == ["<unk>", "<pad>", "b", "c"]
    v = vocab(counts, specials=["<unk>"], special_first=False)
    assert v.get_itos() == ["b", "a", "c", "<unk>"]
    assert v.get_stoi() == {"b": 0, "a": 1, "c": 2, "<unk>": 3}


def test_lookups_and_default_index():
    v = vocab(OrderedDict([("x", 1), ("y", 1)]))
    assert v["y"] == 1 and "x" in v and "z" not in v and len(v) == 2
    with pytest.raises(RuntimeError, match="Token z not found and default index is not set"):
        v["z"]
    v.set_default_index(0)
    assert v.get_default_index() == 0
    assert v(["x", "z", "y"]) == [0, 0, 1]
    assert v.lookup_indices(["y"]) == [1]
    assert v.lookup_token(1) == "y"
    assert v.lookup_tokens([1, 0]) == ["y", "x"]
    with pytest.raises(RuntimeError, match="out of bounds"):
        v.lookup_token(2)
    v.set_default_index(None)
    with pytest.raises(RuntimeError):
        v["z"]


def test_insert_and_append():
    v = Vocab(["a", "b"])
    v.insert_token("c", 1)
    assert v.get_itos() == ["a", "c", "b"] and v["b"] == 2
    v.append_token("d")
    assert v["d"] == 3
    with pytest.raises(RuntimeError, match="already exists"):
        v.append_token("a")
    with pytest.raises(RuntimeError, match="out of bounds"):
        v.insert_token("e", 9)
    with pytest.raises(TypeError, match="token must be a str"):
        v.append_token(3)
    with pytest.raises(TypeError, match="index must be an int"):
        v.lookup_token("a")


def test_build_vocab_from_iterator_orders_by_frequency_then_token():
    data = [["b", "a", "c"], ["a", "b"], ["a", "d"], ["e"]]
    v = build_vocab_from_iterator(data, specials=["<unk>"])
    assert v.get_itos() == ["<unk>", "a", "b", "c", "d", "e"]
    assert build_vocab_from_iterator(data, min_freq=2).get_itos() == ["a", "b"]
    v = build_vocab_from_iterator(data, specials=["<unk>", "<pad>"], max_tokens=4, special_first=False)
    assert v.get_itos() == ["a", "b", "<unk>", "<pad>"]
    with pytest.raises(ValueError, match="entirely special tokens"):
        build_vocab_from_iterator(data, specials=["<unk>"], max_tokens=1)
    with pytest.raises(TypeError, match="lists of tokens"):
        build_vocab_from_iterator(["abc"])


def test_matches_counter_on_a_larger_corpus():
    import random

    rng = random.Random(0)
    data = [[rng.choice("abcdefghij") * rng.randint(1, 3) for _ in range(20)] for _ in range(50)]
    v = build_vocab_from_iterator(data)
    counts = Counter(t for line in data for t in line)
    expected = sorted(counts, key=lambda t: (-counts[t], t))
    assert v.get_itos() == expected


def test_pickle_round_trip():
    import pickle

    v = Vocab(["a", "b"])
    v.set_default_index(1)
    w = pickle.loads(pickle.dumps(v))
    assert w == v and w["zzz"] == 1
