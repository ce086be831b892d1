"""A WordPiece vocabulary written by the tests: specials, single characters of many scripts
(alone and as `##` continuations), and common English words and pieces."""
import pytest

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

WORDS = """the of and to in is was for on that with as by he it at from his an were are which this be
also or had first one their its new after who they has two her she been other when there all during
into school time may years more most only over city some world would where later up such used many can
state about national out known university united then made hello how you un aff able play playing
running run quick brown fox jumps lazy dog don t s re ve m ll d caf resume naive""".split()

PIECES = "##s ##ing ##ed ##er ##ly ##able ##aff ##e ##es ##t ##n ##a ##i ##o ##r ##l".split()

CHARS = (
    [chr(c) for c in range(0x21, 0x7F)]
    + list("éèêëàâäçñöüßøåæœíóúÀÉÑÖÜ")
    + list("αβγδεζηθλμπρστωΑΒΓΔ")
    + list("абвгдежзийклмнопрстуфхцчшщыэюяАБВ")
    + list("中文字日本語한국어ひらがなカタカナ")
    + list("¿¡«»—–…‘’“”•·§¶†‡‰′″")
    + ["😀", "🙂", "𝔘"]
)


def vocab_tokens():
    tokens = list(SPECIALS)
    for t in WORDS + PIECES + CHARS + ["##" + c for c in CHARS if c.isalnum()]:
        if t not in tokens:
            tokens.append(t)
    return tokens


@pytest.fixture(scope="session")
def vocab_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(vocab_tokens()) + "\n", encoding="utf-8")
    return str(path)
