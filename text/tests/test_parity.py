"""Parity with HuggingFace `tokenizers`' BertWordPieceTokenizer: ids, tokens, offsets, type ids
and masks on edge cases, pairs under every truncation strategy, padding, decoding, and random
Unicode text from hypothesis."""
import itertools
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import embertext

tokenizers = pytest.importorskip("tokenizers")

MODES = [
    dict(lowercase=True, strip_accents=None),
    dict(lowercase=True, strip_accents=False),
    dict(lowercase=False, strip_accents=None),
    dict(lowercase=False, strip_accents=True),
]


def _punctuation_samples():
    """A few characters of every Unicode P* category, across the planes."""
    by_cat = {}
    for cp in itertools.chain(range(0x20, 0x3000), range(0xFE10, 0xFF70), range(0x10100, 0x10200), range(0x1E900, 0x1E960)):
        cat = unicodedata.category(chr(cp))
        if cat.startswith("P"):
            by_cat.setdefault(cat, []).append(chr(cp))
    assert set(by_cat) == {"Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po"}
    return ["".join(chars[::7]) for chars in by_cat.values()] + ["a$b+c<d=e>f^g`h|i~j"]


EDGE_CASES = [
    "",
    " ",
    "   \t\n\r  ",
    "\u3000\u00a0\u2003",
    "Hello World!, how are you?",
    "Hello\x00World\x07\x1b[0m\ufffd\u200b\u200d end",
    "a\x0bb\x0cc\x85d\x1ce",
    "Café crème brûlée naïve résumé Ñandú ÀÉÎÕÜ",
    "e\u0301 a\u0300\u0316 o\u0308\u0304 \u0301lone",
    "\u0130stanbul İİ ǅ ß ẞ Σσς",
    "中文字 日本語 한국어 ひらがな カタカナ 中a文b",
    "𠀀𠀁 𪜀 丽 \uf900\ufa0a",
    "😀 🙂😀 𝔘nicode 👨‍👩‍👧 🇫🇷 \U0001F9D1\u200d\U0001F680",
    "x" * 100,
    "x" * 101,
    "un" + "aff" * 40,
    "unaffable playing runs quickly",
    "def f(x):\n    return x**2 + 1  # comment",
    "http://example.com/a?b=c&d=e#frag user@mail.org",
    "[CLS] hello [SEP] world [MASK][MASK] [mask] [UNK]x",
    "Привет, мир! Γειά σου Κόσμε. مرحبا بالعالم",
    "\ue000 private \U000f0000 use \U0010ffff",
    "\u0378 unassigned \u05ff \U0001FFFE",
    "मनीष 안녕하세요 ‏עברית‎",
    "...!!!???,,,;;;",
    "don't won't I'm you're we've",
] + _punctuation_samples()


def _hf(vocab_path, **mode):
    return tokenizers.BertWordPieceTokenizer(vocab_path, **mode)


def _ember(vocab_path, **mode):
    return embertext.BertWordPieceTokenizer(vocab_path, **mode)


def _fields(enc):
    return (enc.ids, enc.tokens, enc.offsets, enc.type_ids, enc.attention_mask, enc.special_tokens_mask)


@pytest.fixture(scope="module", params=range(len(MODES)), ids=[str(m) for m in MODES])
def pair_of_tokenizers(request, vocab_path):
    mode = MODES[request.param]
    return _hf(vocab_path, **mode), _ember(vocab_path, **mode)


@pytest.mark.parametrize("text", EDGE_CASES)
def test_single_matches_tokenizers(pair_of_tokenizers, text):
    hf, em = pair_of_tokenizers
    assert _fields(em.encode(text)) == _fields(hf.encode(text))
    assert _fields(em.encode(text, add_special_tokens=False)) == _fields(hf.encode(text, add_special_tokens=False))


def test_batch_matches_tokenizers(pair_of_tokenizers):
    hf, em = pair_of_tokenizers
    inputs = EDGE_CASES + list(zip(EDGE_CASES, reversed(EDGE_CASES)))
    for a, b in zip(em.encode_batch(inputs), hf.encode_batch(inputs)):
        assert _fields(a) == _fields(b)


PAIRS = [("hello world how are you", "the quick brown fox"), ("a b c d e f g h", "x"), ("x", "a b c d e f g h"),
         ("one two", "three four five six seven"), ("", "hello"), ("hello", "")]


@pytest.mark.parametrize("strategy", ["longest_first", "only_first", "only_second"])
@pytest.mark.parametrize("max_length", [3, 4, 5, 7, 8, 11, 40])
@pytest.mark.parametrize("direction", ["right", "left"])
def test_truncation_matches_tokenizers(vocab_path, strategy, max_length, direction):
    hf, em = _hf(vocab_path), _ember(vocab_path)
    hf._tokenizer.enable_truncation(max_length, strategy=strategy, direction=direction)
    em.enable_truncation(max_length, strategy=strategy, direction=direction)
    for a, b in PAIRS + [(PAIRS[0][0], None), ("a b c d e f g h i j", None)]:
        try:
            expected = _fields(hf.encode(a, b))
        except Exception:
            with pytest.raises(ValueError, match="truncat"):
                em.encode(a, b)
            continue
        assert _fields(em.encode(a, b)) == expected


@pytest.mark.parametrize("kwargs", [{}, {"length": 12}, {"length": 3}, {"pad_to_multiple_of": 8},
                                    {"direction": "left", "pad_id": 4, "pad_type_id": 1}])
def test_padding_matches_tokenizers(vocab_path, kwargs):
    hf, em = _hf(vocab_path), _ember(vocab_path)
    hf.enable_padding(**kwargs)
    em.enable_padding(**kwargs)
    inputs = ["hello", "hello world how are you", ("a b", "c d e")]
    for a, b in zip(em.encode_batch(inputs), hf.encode_batch(inputs)):
        assert _fields(a) == _fields(b)
    assert _fields(em.encode("hello")) == _fields(hf.encode("hello"))
    assert em.padding == hf.padding


@pytest.mark.parametrize("text", EDGE_CASES)
@pytest.mark.parametrize("skip", [True, False])
def test_decode_matches_tokenizers(vocab_path, text, skip):
    hf, em = _hf(vocab_path), _ember(vocab_path)
    ids = hf.encode(text).ids
    assert em.decode(ids, skip_special_tokens=skip) == hf.decode(ids, skip_special_tokens=skip)


def test_decode_batch_and_unknown_ids(vocab_path):
    hf, em = _hf(vocab_path), _ember(vocab_path)
    seqs = [[2, 50, 51, 3], [10**6, 60, 61]]
    assert em.decode_batch(seqs) == hf.decode_batch(seqs)


def test_vocab_queries_match(vocab_path):
    hf, em = _hf(vocab_path), _ember(vocab_path)
    assert em.get_vocab() == hf.get_vocab()
    assert em.get_vocab_size() == hf.get_vocab_size()
    assert em.token_to_id("hello") == hf.token_to_id("hello")
    assert em.token_to_id("nope") is None
    assert em.id_to_token(7) == hf.id_to_token(7)
    assert em.id_to_token(10**6) is None


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=60), mode=st.sampled_from(MODES))
def test_random_unicode_matches_tokenizers(vocab_path, text, mode):
    hf, em = _cached(vocab_path, **mode)
    assert _fields(em.encode(text)) == _fields(hf.encode(text))


@settings(max_examples=200, deadline=None)
@given(text=st.lists(st.sampled_from(list("abcdefgxyz éü中😀.,!$ \t\n\u0301\u00a0") + ["[MASK]", "un", "##"]),
                    max_size=40).map("".join),
       pair=st.text(max_size=20), max_length=st.integers(3, 20),
       strategy=st.sampled_from(["longest_first", "only_first", "only_second"]))
def test_random_pairs_with_truncation_match(vocab_path, text, pair, max_length, strategy):
    hf, em = _hf(vocab_path), _ember(vocab_path)
    hf.enable_truncation(max_length, strategy=strategy)
    em.enable_truncation(max_length, strategy=strategy)
    try:
        expected = _fields(hf.encode(text, pair))
    except Exception:
        with pytest.raises(ValueError):
            em.encode(text, pair)
        return
    assert _fields(em.encode(text, pair)) == expected


_CACHE = {}


def _cached(vocab_path, **mode):
    key = (vocab_path, tuple(sorted(mode.items())))
    if key not in _CACHE:
        _CACHE[key] = (_hf(vocab_path, **mode), _ember(vocab_path, **mode))
    return _CACHE[key]


@pytest.mark.parametrize("options", [dict(clean_text=False), dict(handle_chinese_chars=False),
                                     dict(clean_text=False, handle_chinese_chars=False, lowercase=False)])
def test_normalizer_switches_match_tokenizers(vocab_path, options):
    hf, em = _hf(vocab_path, **options), _ember(vocab_path, **options)
    for a, b in zip(em.encode_batch(EDGE_CASES), hf.encode_batch(EDGE_CASES)):
        assert _fields(a) == _fields(b)


def test_tokenizer_json_bad_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.json"):
        embertext.BertWordPieceTokenizer.from_tokenizer_json(str(tmp_path / "nope.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="bad.json.*not valid JSON"):
        embertext.BertWordPieceTokenizer.from_tokenizer_json(str(bad))
    bpe = tmp_path / "bpe.json"
    bpe.write_text('{"model": {"type": "BPE", "vocab": {}}}')
    with pytest.raises(ValueError, match="only WordPiece"):
        embertext.BertWordPieceTokenizer.from_tokenizer_json(str(bpe))


def test_tokenizer_json_written_by_tokenizers(vocab_path, tmp_path):
    hf = _hf(vocab_path, lowercase=False)
    hf.enable_truncation(12)
    hf.enable_padding(length=16)
    path = str(tmp_path / "tokenizer.json")
    hf.save(path)
    em = embertext.BertWordPieceTokenizer.from_tokenizer_json(path)
    assert em.truncation == hf.truncation and em.padding == hf.padding
    for a, b in zip(em.encode_batch(EDGE_CASES), hf.encode_batch(EDGE_CASES)):
        assert _fields(a) == _fields(b)
