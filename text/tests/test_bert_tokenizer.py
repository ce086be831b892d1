"""TorchText's BERTTokenizer on Ember: inputs, outputs, options, URLs and bad input."""
import http.server
import threading

import pytest

import embertext
from embertext.transforms import BERTTokenizer

tokenizers = pytest.importorskip("tokenizers")


def _hf_ids(vocab_path, text, **mode):
    return tokenizers.BertWordPieceTokenizer(vocab_path, **mode).encode(text, add_special_tokens=False)


def test_str_gives_int_ids_and_list_gives_lists(vocab_path):
    tok = BERTTokenizer(vocab_path)
    text = "Hello World, how are you?"
    expected = _hf_ids(vocab_path, text).ids
    assert tok(text) == expected
    assert all(type(i) is int for i in tok(text))
    assert tok([text, "the dog"]) == [expected, _hf_ids(vocab_path, "the dog").ids]
    assert tok([]) == []


def test_return_tokens(vocab_path):
    tok = BERTTokenizer(vocab_path, return_tokens=True)
    assert tok("Hello World!") == ["hello", "world", "!"]
    assert tok(["unaffable", "Café"]) == [["un", "##aff", "##able"], ["caf", "##e"]]


def test_special_tokens_are_plain_text_as_in_torchtext(vocab_path):
    tok = BERTTokenizer(vocab_path, return_tokens=True)
    assert tok("[CLS]") == ["[", "c", "##l", "##s", "]"]


def test_strip_accents_false_is_honoured(vocab_path):
    kept = BERTTokenizer(vocab_path, strip_accents=False, return_tokens=True)
    stripped = BERTTokenizer(vocab_path, return_tokens=True)
    assert kept("Café") == ["caf", "##é"]
    assert stripped("Café") == ["caf", "##e"]
    cased = BERTTokenizer(vocab_path, do_lower_case=False, return_tokens=True)
    assert cased("Café") == ["C", "##a", "##f", "##é"]


def test_never_split_keeps_whole_words(vocab_path):
    tok = BERTTokenizer(vocab_path, return_tokens=True, never_split=["[MASK]", "Hello"])
    assert tok("the [MASK] Hello x[MASK]") == ["the", "[MASK]", "[UNK]", "x", "[", "m", "##a", "##s", "##k", "]"]


def test_matches_tokenizers_in_every_mode(vocab_path):
    texts = ["Ünïcödé façade", "中文 text", "a\u0301b e\u0308", "İstanbul ǅ"]
    for lower, strip in [(True, None), (True, False), (False, None), (False, True)]:
        tok = BERTTokenizer(vocab_path, do_lower_case=lower, strip_accents=strip)
        for text in texts:
            assert tok(text) == _hf_ids(vocab_path, text, lowercase=lower, strip_accents=strip).ids


def test_bad_inputs(vocab_path, tmp_path):
    with pytest.raises(FileNotFoundError, match="missing_vocab.txt") as e:
        BERTTokenizer(str(tmp_path / "missing_vocab.txt"))
    assert e.value.filename == str(tmp_path / "missing_vocab.txt")
    no_unk = tmp_path / "no_unk.txt"
    no_unk.write_text("a\nb\n")
    with pytest.raises(ValueError, match=r"no_unk.txt.*\[UNK\]"):
        BERTTokenizer(str(no_unk))
    with pytest.raises(TypeError, match="vocab_path"):
        BERTTokenizer(42)
    with pytest.raises(TypeError, match="do_lower_case"):
        BERTTokenizer(vocab_path, do_lower_case="yes")
    with pytest.raises(TypeError, match="strip_accents"):
        BERTTokenizer(vocab_path, strip_accents=1)
    with pytest.raises(TypeError, match="never_split"):
        BERTTokenizer(vocab_path, never_split=[1])
    tok = BERTTokenizer(vocab_path)
    for bad in (3, b"bytes", ["ok", 3], ("a", "b")):
        with pytest.raises(TypeError, match="str or a list of str"):
            tok(bad)


class _Handler(http.server.BaseHTTPRequestHandler):
    body = b""
    requests = 0

    def do_GET(self):
        type(self).requests += 1
        if self.path != "/bert/vocab.txt":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server(vocab_path):
    _Handler.body = open(vocab_path, "rb").read()
    _Handler.requests = 0
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    thread.join()


def test_url_is_downloaded_once_and_cached(server, vocab_path, tmp_path, monkeypatch):
    monkeypatch.setenv("EMBERTEXT_CACHE", str(tmp_path / "cache"))
    url = server + "/bert/vocab.txt"
    first = BERTTokenizer(url)
    second = BERTTokenizer(url)
    assert _Handler.requests == 1
    assert first("hello world") == second("hello world") == BERTTokenizer(vocab_path)("hello world")
    cached = list((tmp_path / "cache").iterdir())
    assert len(cached) == 1 and cached[0].name.endswith("vocab.txt")


def test_failed_download_names_url_and_target(server, tmp_path, monkeypatch):
    monkeypatch.setenv("EMBERTEXT_CACHE", str(tmp_path / "cache"))
    url = server + "/missing/vocab.txt"
    with pytest.raises(OSError, match="missing/vocab.txt.*place it at") as e:
        BERTTokenizer(url)
    assert str(tmp_path / "cache") in str(e.value)
    assert not list((tmp_path / "cache").glob("*.part"))


def test_model_tokenizer_bad_inputs(vocab_path, tmp_path):
    with pytest.raises(FileNotFoundError):
        embertext.BertWordPieceTokenizer(str(tmp_path / "nope.txt"))
    tok = embertext.BertWordPieceTokenizer(vocab_path)
    with pytest.raises(TypeError, match="sequence must be a str"):
        tok.encode(5)
    with pytest.raises(TypeError, match="pair must be a str"):
        tok.encode("a", 5)
    with pytest.raises(TypeError, match=r"inputs\[1\] must be a str or a \(str, str\) pair, got int"):
        tok.encode_batch(["a", 1])
    with pytest.raises(TypeError, match="single str"):
        tok.encode_batch("abc")
    with pytest.raises(ValueError, match="strategy"):
        tok.enable_truncation(8, strategy="shortest")
    with pytest.raises(ValueError, match="direction"):
        tok.enable_truncation(8, direction="up")
    with pytest.raises(ValueError, match="max_length must be >= 0"):
        tok.enable_truncation(-1)
    with pytest.raises(NotImplementedError, match="stride"):
        tok.enable_truncation(8, stride=2)
    with pytest.raises(TypeError, match="ids must be a list of int"):
        tok.decode("abc")
    with pytest.raises(TypeError, match="element of type str"):
        tok.decode([1, "2"])
    tok.enable_truncation(2)
    with pytest.raises(ValueError, match="max_length"):
        tok.encode("a", "b")
