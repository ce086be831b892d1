"""Issue 28, resource limits: sizes a decoder's arguments or files claim are checked before any
work, so they raise instead of exhausting memory."""
import pytest

import ember
from emberaudio.models.decoder import ctc_decoder

TOKENS = ["-", "|", "a", "b"]


def test_an_arpa_header_claiming_more_ngrams_than_the_file_holds_is_refused(tmp_path):
    path = tmp_path / "huge.arpa"
    path.write_text("\\data\\\nngram 1=600000000000\n\n\\1-grams:\n-0.5\ta\n-0.5\t</s>\n\n\\end\\\n")
    with pytest.raises((ValueError, RuntimeError), match="600000000000"):
        ctc_decoder(None, TOKENS, lm=str(path))


@pytest.mark.parametrize("option", ["beam_size", "nbest", "beam_size_token"])
def test_a_beam_wider_than_flashlights_int_is_refused(option):
    with pytest.raises(ValueError, match=f"{option} must be at most 2147483647"):
        ctc_decoder(None, TOKENS, **{option: 2**40})
    decoder = ctc_decoder(None, TOKENS, **{option: 2})
    assert len(decoder(ember.randn(1, 5, 4).log_softmax(-1))[0]) >= 1
