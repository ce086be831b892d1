"""emberaudio.models.decoder: parity with flashlight-text (the search TorchAudio 0.12 wraps) on
random emissions with small assets written here, the Python LM interface, the greedy decoder,
the pretrained-file download from a local server, and bad input."""
import http.server
import math
import socket
import threading
import zlib

import numpy as np
import pytest

import ember
from emberaudio.models import decoder as dec
from emberaudio.models.decoder import (
    CTCDecoderLM,
    CTCDecoderLMState,
    CTCHypothesis,
    ctc_decoder,
    ctc_greedy_decoder,
    download_pretrained_files,
)
from emberaudio_test_decoder import (
    TOKENS,
    FlashlightReference,
    make_words,
    random_emissions,
    spoken_emissions,
    unigram_lm_classes,
    unigram_scores,
    write_arpa,
    write_lexicon,
    write_tokens,
)

N = len(TOKENS)


@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    """A tokens file, a 40-word lexicon, and a trigram ARPA LM over its words."""
    folder = tmp_path_factory.mktemp("decoder-assets")
    rng = np.random.default_rng(7)
    words = make_words(rng, 40)
    return {
        "words": words,
        "tokens": write_tokens(folder / "tokens.txt"),
        "lexicon": write_lexicon(folder / "lexicon.txt", words),
        "lm": write_arpa(folder / "lm.arpa", words, rng),
        "folder": folder,
    }


@pytest.fixture
def flashlight():
    return pytest.importorskip("flashlight.lib.text.decoder")


def plain(hyps):
    """Hypotheses as comparable Python values."""
    return [[(h.tokens.tolist(), h.words, h.score, h.timesteps.tolist()) for h in row] for row in hyps]


def assert_same(got, want):
    assert len(got) == len(want)
    for got_row, want_row in zip(plain(got), want):
        assert len(got_row) == len(want_row)
        for g, w in zip(got_row, want_row):
            assert (g[0], g[1], g[3]) == (w[0], w[1], w[3])
            assert g[2] == pytest.approx(w[2], abs=1e-4)


def check_parity(lexicon, tokens, emissions, lengths=None, **options):
    want = FlashlightReference(lexicon, tokens, **options)(emissions, lengths)
    got = ctc_decoder(lexicon, tokens, **options)(ember.from_numpy(emissions),
                                                    None if lengths is None else ember.tensor(lengths))
    assert_same(got, want)
    return got


OPTIONS = {
    "defaults": {},
    "nbest": {"nbest": 5},
    "log_add": {"log_add": True, "nbest": 3},
    "tight_beam": {"beam_size": 6, "beam_size_token": 4, "beam_threshold": 4.0, "nbest": 3},
    "scores": {"word_score": -0.7, "sil_score": 0.4, "lm_weight": 1.3, "nbest": 2},
    "unk": {"unk_score": -3.0, "word_score": -0.7, "nbest": 2},
    "wide_beam": {"beam_size": 500, "nbest": 4},
}


@pytest.mark.parametrize("with_lm", [True, False], ids=["arpa", "no_lm"])
@pytest.mark.parametrize("with_lexicon", [True, False], ids=["lexicon", "lexicon_free"])
@pytest.mark.parametrize("name", list(OPTIONS))
def test_parity_with_flashlight(flashlight, assets, with_lexicon, with_lm, name):
    if name == "unk" and with_lexicon and not with_lm:
        # Without an LM, splitting letters into unknown words in different places gives exactly
        # equal scores; which of the tied hypotheses a beam keeps is arbitrary in both libraries.
        pytest.skip("exact ties between <unk> segmentations: no single right answer to compare")
    rng = np.random.default_rng(zlib.crc32(f"{with_lexicon}-{with_lm}-{name}".encode()))
    emissions = random_emissions(rng, 3, 45, N)
    lexicon = assets["lexicon"] if with_lexicon else None
    lm = assets["lm"] if with_lm else None
    got = check_parity(lexicon, assets["tokens"], emissions, lm=lm, **OPTIONS[name])
    assert all(len(row) >= 1 for row in got)


def test_parity_with_lengths_and_token_list(flashlight, assets):
    rng = np.random.default_rng(1)
    emissions = random_emissions(rng, 4, 30, N)
    check_parity(assets["lexicon"], list(TOKENS), emissions, lengths=[30, 12, 1, 0], lm=assets["lm"], nbest=2)


def test_parity_on_spoken_emissions(flashlight, assets):
    """Emissions that spell lexicon words, as an acoustic model's would: the words come out."""
    emissions, spoken = spoken_emissions(np.random.default_rng(3), assets["words"], 60, noise=0.5)
    got = check_parity(assets["lexicon"], assets["tokens"], emissions[None], lm=assets["lm"], lm_weight=0.5)
    assert got[0][0].words == spoken and len(spoken) >= 3


def test_hypothesis_fields_and_types(assets):
    emissions = ember.from_numpy(random_emissions(np.random.default_rng(2), 2, 20, N))
    hyps = ctc_decoder(assets["lexicon"], assets["tokens"], lm=assets["lm"], nbest=3)(emissions)
    assert len(hyps) == 2 and all(1 <= len(row) <= 3 for row in hyps)
    best = hyps[0][0]
    assert isinstance(best, CTCHypothesis)
    assert best.tokens.dtype == ember.int64 and best.timesteps.dtype == ember.int32
    assert best.tokens.shape == best.timesteps.shape
    assert isinstance(best.score, float) and all(isinstance(w, str) for w in best.words)
    assert [h.score for h in hyps[0]] == sorted((h.score for h in hyps[0]), reverse=True)


def test_strided_emissions_decode_like_contiguous(assets):
    emissions = random_emissions(np.random.default_rng(4), 3, 25, N)
    decoder = ctc_decoder(assets["lexicon"], assets["tokens"], lm=assets["lm"], nbest=2)
    transposed = ember.from_numpy(np.ascontiguousarray(emissions.transpose(1, 0, 2))).transpose(0, 1)
    assert not transposed.is_contiguous()
    every_other = ember.from_numpy(np.repeat(emissions, 2, axis=1))[:, ::2]
    want = plain(decoder(ember.from_numpy(emissions)))
    assert plain(decoder(transposed)) == want
    assert plain(decoder(every_other)) == want


def test_batch_equals_one_by_one_and_threads_agree(assets):
    emissions = ember.from_numpy(random_emissions(np.random.default_rng(5), 6, 30, N))
    decoder = ctc_decoder(assets["lexicon"], assets["tokens"], lm=assets["lm"])
    batch = plain(decoder(emissions))
    assert batch == [plain(decoder(emissions[b : b + 1]))[0] for b in range(6)]
    results = [None] * 4

    def run(i):
        results[i] = plain(decoder(emissions))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [batch] * 4


def test_idxs_to_tokens(assets):
    decoder = ctc_decoder(None, assets["tokens"])
    assert decoder.idxs_to_tokens(ember.tensor([2, 0, 1])) == ["a", "-", "|"]
    assert decoder.idxs_to_tokens([3, 4]) == ["b", "c"]
    hyp = decoder(ember.from_numpy(random_emissions(np.random.default_rng(6), 1, 10, N)))[0][0]
    assert decoder.idxs_to_tokens(hyp.tokens) == [TOKENS[i] for i in hyp.tokens.tolist()]
    with pytest.raises(IndexError, match="token index 99 is out of range for 10 tokens"):
        decoder.idxs_to_tokens([99])


def test_tokens_file_lines_share_an_index(tmp_path):
    tokens = tmp_path / "tokens.txt"
    tokens.write_text("-\n| <space>\na A\nb\n")
    decoder = ctc_decoder(None, str(tokens))
    assert decoder.idxs_to_tokens([0, 1, 2, 3]) == ["-", "|", "a", "b"]
    assert ctc_decoder(None, str(tokens), sil_token="<space>", blank_token="-")


# Python language models


def ember_words(words):
    """Ember's word indices with a lexicon: the lexicon's order, then `<unk>`."""
    return [*words, "<unk>"]


@pytest.mark.parametrize("with_lexicon", [True, False], ids=["lexicon", "lexicon_free"])
def test_python_lm_matches_flashlight_python_lm(flashlight, assets, with_lexicon):
    rng = np.random.default_rng(8)
    emissions = random_emissions(rng, 2, 35, N)
    vocabulary = assets["words"] if with_lexicon else TOKENS
    scores = unigram_scores(rng, vocabulary)
    lexicon = assets["lexicon"] if with_lexicon else None
    options = {"nbest": 3, "lm_weight": 1.5, "word_score": -0.2}

    fl_lm_class = unigram_lm_classes(flashlight.LM, flashlight.LMState)
    reference = FlashlightReference(lexicon, assets["tokens"], **options)
    fl_words = reference.word_list() if with_lexicon else TOKENS
    reference = FlashlightReference(lexicon, assets["tokens"], python_lm=fl_lm_class(fl_words, scores, -1.25),
                                    **options)
    want = reference(emissions)

    lm_class = unigram_lm_classes(CTCDecoderLM, CTCDecoderLMState)
    words = ember_words(assets["words"]) if with_lexicon else TOKENS
    got = ctc_decoder(lexicon, assets["tokens"], lm=lm_class(words, scores, -1.25), **options)(
        ember.from_numpy(emissions))
    assert_same(got, want)


class ZeroLM(CTCDecoderLM):
    def start(self, start_with_nothing):
        return CTCDecoderLMState()

    def score(self, state, usr_token_idx):
        return state.child(usr_token_idx), 0.0

    def finish(self, state):
        return state, 0.0


@pytest.mark.parametrize("with_lexicon", [True, False], ids=["lexicon", "lexicon_free"])
def test_python_zero_lm_equals_no_lm(assets, with_lexicon):
    lexicon = assets["lexicon"] if with_lexicon else None
    emissions = ember.from_numpy(random_emissions(np.random.default_rng(9), 2, 30, N))
    want = plain(ctc_decoder(lexicon, assets["tokens"], nbest=3)(emissions))
    assert plain(ctc_decoder(lexicon, assets["tokens"], lm=ZeroLM(), nbest=3)(emissions)) == want


def test_lm_state_children_and_compare():
    state = CTCDecoderLMState()
    child = state.child(4)
    assert state.child(4) is child and state.children == {4: child}
    assert state.compare(state) == 0
    assert state.compare(child) == -child.compare(state) != 0


def test_lm_errors_propagate(assets):
    class Broken(ZeroLM):
        def score(self, state, usr_token_idx):
            if usr_token_idx == 3:
                raise KeyError("no score for 3")
            return state.child(usr_token_idx), 0.0

    emissions = ember.from_numpy(random_emissions(np.random.default_rng(10), 2, 20, N))
    with pytest.raises(KeyError, match="no score for 3"):
        ctc_decoder(None, assets["tokens"], lm=Broken())(emissions)

    class WrongReturn(ZeroLM):
        def finish(self, state):
            return 0.5

    with pytest.raises(TypeError, match=r"CTCDecoderLM.finish must return a \(state, float\) pair, got 0.5"):
        ctc_decoder(None, assets["tokens"], lm=WrongReturn())(emissions)

    with pytest.raises(NotImplementedError, match="CTCDecoderLM must implement start"):
        ctc_decoder(assets["lexicon"], assets["tokens"], lm=CTCDecoderLM())


# Greedy decoding


def test_greedy_decoder_is_the_best_path(assets):
    emissions = random_emissions(np.random.default_rng(11), 3, 40, N)
    lengths = [40, 17, 0]
    decoder = ctc_greedy_decoder(assets["tokens"])
    hyps = decoder(ember.from_numpy(emissions), ember.tensor(lengths))
    for b, (hyp,) in enumerate(hyps):
        best = emissions[b, : lengths[b]].argmax(-1)
        starts = [t for t in range(lengths[b]) if best[t] != 0 and (t == 0 or best[t] != best[t - 1])]
        assert hyp.tokens.tolist() == [int(best[t]) for t in starts]
        assert hyp.timesteps.tolist() == starts
        assert hyp.score == pytest.approx(float(emissions[b, np.arange(lengths[b]), best].sum()), abs=1e-4)
        assert hyp.words == []
    assert decoder.idxs_to_tokens([2, 3]) == ["a", "b"]


def test_greedy_equals_lexicon_free_beam_of_one_without_lm(assets):
    emissions = ember.from_numpy(random_emissions(np.random.default_rng(12), 2, 30, N))
    greedy = ctc_greedy_decoder(TOKENS)(emissions)
    beam = ctc_decoder(None, TOKENS, beam_size=1)(emissions)
    for (g,), (b,) in zip(greedy, beam):
        # The beam search's tokens are framed by the silence it starts and ends with.
        assert b.tokens.tolist() == [1, *g.tokens.tolist(), 1]
        assert b.score == pytest.approx(g.score, abs=1e-4)


# Bad input


def test_emissions_errors(assets):
    decoder = ctc_decoder(assets["lexicon"], assets["tokens"])
    good = random_emissions(np.random.default_rng(13), 2, 10, N)
    with pytest.raises(TypeError, match="emissions must be an ember.Tensor, got ndarray"):
        decoder(good)
    with pytest.raises(ValueError, match="emissions must be float32, got float64"):
        decoder(ember.from_numpy(good.astype(np.float64)))
    with pytest.raises(RuntimeError, match=r"emissions must be 3-D \(batch, frames, num_tokens\), got shape \[10, 10\]"):
        decoder(ember.from_numpy(good[0]))
    with pytest.raises(RuntimeError, match=r"expected 10 \(the decoder's tokens\), got shape \[2, 10, 9\]"):
        decoder(ember.from_numpy(np.ascontiguousarray(good[..., :9])))
    with pytest.raises(ValueError, match=r"lengths\[1\] must be between 0 and the emissions' 10 frames, got 11"):
        decoder(ember.from_numpy(good), ember.tensor([10, 11]))
    with pytest.raises(ValueError, match=r"lengths\[0\] must be between 0 and the emissions' 10 frames, got -1"):
        decoder(ember.from_numpy(good), ember.tensor([-1, 3]))
    with pytest.raises(RuntimeError, match=r"lengths must have shape \(2,\), one entry per utterance, got shape \[3\]"):
        decoder(ember.from_numpy(good), ember.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="lengths must be an integer tensor, got float32"):
        decoder(ember.from_numpy(good), ember.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="lengths must be an ember.Tensor, got list"):
        decoder(ember.from_numpy(good), [10, 10])
    greedy = ctc_greedy_decoder(assets["tokens"])
    with pytest.raises(ValueError, match="emissions must be float32, got int64"):
        greedy(ember.zeros(1, 2, N, dtype=ember.int64))


def test_file_errors(assets, tmp_path):
    missing = str(tmp_path / "missing.txt")
    with pytest.raises(FileNotFoundError, match="lexicon: no such file") as error:
        ctc_decoder(missing, assets["tokens"])
    assert error.value.filename == missing
    with pytest.raises(FileNotFoundError, match="tokens: no such file"):
        ctc_decoder(None, missing)
    with pytest.raises(FileNotFoundError, match="lm: no such file"):
        ctc_decoder(None, assets["tokens"], lm=missing)
    binary = tmp_path / "lm.bin"
    binary.write_bytes(b"mmap lm http://kheafield.com/code format version 5\n\0\0\0")
    with pytest.raises(NotImplementedError, match=r"lm: .*lm.bin is a KenLM binary model.*ARPA"):
        ctc_decoder(assets["lexicon"], assets["tokens"], lm=str(binary))
    broken = tmp_path / "broken.arpa"
    broken.write_text("\\data\\\nngram 1=2\n\n\\1-grams:\n-1.0\t<s>\n\\end\\\n")
    with pytest.raises(ValueError, match="announces 2 1-grams, the file has 1"):
        ctc_decoder(assets["lexicon"], assets["tokens"], lm=str(broken))
    lexicon = tmp_path / "bad_lexicon.txt"
    lexicon.write_text("ab a b |\nzz z z |\n")
    with pytest.raises(ValueError, match="lexicon word 'zz' uses unknown token 'z'"):
        ctc_decoder(str(lexicon), assets["tokens"])


def test_argument_errors(assets):
    tokens = assets["tokens"]
    with pytest.raises(ValueError, match=r"blank_token must be one of the tokens \['-', '\|', 'a'.*got '<b>'"):
        ctc_decoder(None, tokens, blank_token="<b>")
    with pytest.raises(ValueError, match="sil_token must be one of the tokens .* got ' '"):
        ctc_decoder(None, tokens, sil_token=" ")
    with pytest.raises(ValueError, match="blank_token must be one of the tokens"):
        ctc_greedy_decoder(["a", "b"])
    with pytest.raises(ValueError, match="nbest must be a positive int, got 0"):
        ctc_decoder(None, tokens, nbest=0)
    with pytest.raises(ValueError, match="beam_size_token must be a positive int, got -2"):
        ctc_decoder(None, tokens, beam_size_token=-2)
    with pytest.raises(TypeError, match="tokens must be a path or a list of str, got int"):
        ctc_decoder(None, 5)
    with pytest.raises(TypeError, match="lm must be None, a path to an ARPA file or a CTCDecoderLM, got object"):
        ctc_decoder(None, tokens, lm=object())
    with pytest.raises(ValueError, match="tokens: duplicate dictionary entry 'a'"):
        ctc_decoder(None, ["-", "|", "a", "a"])


# download_pretrained_files


class _Server(http.server.BaseHTTPRequestHandler):
    files = {}

    def do_GET(self):  # noqa: N802 (the handler API's name)
        data = self.files.get(self.path)
        if data is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def mirror(monkeypatch, tmp_path):
    """A 127.0.0.1 server holding every pretrained file, RESOURCES pointed at it, and the cache
    in tmp_path."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    _Server.files = {}
    for key in dec._pretrained.RESOURCES:
        _Server.files[f"/{key}"] = f"contents of {key}\n".encode()
        monkeypatch.setitem(dec._pretrained.RESOURCES, key, f"{base}/{key}")
    monkeypatch.setenv("EMBER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TQDM_DISABLE", "1")
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield tmp_path / "home"
    httpd.shutdown()
    httpd.server_close()


def test_pretrained_urls_are_torchaudios():
    base = "https://download.pytorch.org/torchaudio/decoder-assets"
    resources = dec._pretrained.RESOURCES
    assert resources["decoder-assets/librispeech-4-gram/lm.bin"] == f"{base}/librispeech-4-gram/lm.bin"
    assert resources["decoder-assets/librispeech/tokens.txt"] == f"{base}/librispeech/tokens.txt"
    assert len(resources) == 8


@pytest.mark.parametrize("model", ["librispeech-4-gram", "librispeech-3-gram", "librispeech"])
def test_download_pretrained_files(mirror, model):
    files = download_pretrained_files(model)
    folder = mirror / "emberaudio" / "decoder-assets" / model
    assert files.lexicon == str(folder / "lexicon.txt") and files.tokens == str(folder / "tokens.txt")
    assert open(files.tokens).read() == f"contents of decoder-assets/{model}/tokens.txt\n"
    if model == "librispeech":
        assert files.lm is None
    else:
        assert files.lm == str(folder / "lm.bin")
    _Server.files.clear()  # cached now: nothing is fetched again
    assert download_pretrained_files(model) == files


def test_download_pretrained_files_offline(monkeypatch, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    url = f"http://127.0.0.1:{port}/decoder-assets/librispeech/lexicon.txt"
    monkeypatch.setitem(dec._pretrained.RESOURCES, "decoder-assets/librispeech/lexicon.txt", url)
    monkeypatch.setenv("EMBER_HOME", str(tmp_path))
    target = tmp_path / "emberaudio" / "decoder-assets" / "librispeech" / "lexicon.txt"
    with pytest.raises(OSError, match=f"could not download {url} .*place it at {target}"):
        download_pretrained_files("librispeech")


def test_download_pretrained_files_unknown_model():
    with pytest.raises(ValueError, match=r"model must be one of \['librispeech', 'librispeech-3-gram', "):
        download_pretrained_files("librispeech-5-gram")


def test_readme_example_runs(tmp_path, monkeypatch):
    """The example of audio/README.md, as written there."""
    import pathlib
    import re

    readme = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    example = re.search(r"## CTC decoding\n.*?```python\n(.*?)```", readme, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(example, "README.md", "exec"), {})


def test_unk_scores_are_finite_only_when_asked(assets):
    """With unk_score=-inf no `<unk>` appears; with a generous one, out-of-lexicon spellings do."""
    emissions = ember.from_numpy(random_emissions(np.random.default_rng(14), 2, 30, N))
    closed = ctc_decoder(assets["lexicon"], assets["tokens"])(emissions)
    assert all("<unk>" not in h.words for row in closed for h in row)
    opened = ctc_decoder(assets["lexicon"], assets["tokens"], unk_score=5.0)(emissions)
    assert any("<unk>" in h.words for row in opened for h in row)
    assert math.isfinite(opened[0][0].score)
