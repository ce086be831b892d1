"""embertext: TorchText's tokenizer, vocab and transforms on Ember, with BERT's WordPiece
tokenizer in Rust (`crates/ember-text`).

- `embertext.transforms`: `BERTTokenizer` (TorchText's), `VocabTransform`, `ToTensor`,
  `LabelToIndex`, `Truncate`, `AddToken`, `PadTransform`, `StrToIntTransform`, `Sequential`;
- `embertext.functional`: `to_tensor`, `truncate`, `add_token`, `str_to_int`;
- `embertext.vocab`: `Vocab`, `vocab`, `build_vocab_from_iterator`;
- `embertext.BertWordPieceTokenizer`: HuggingFace `tokenizers`' BERT API for models (pairs,
  truncation, padding, offsets, decode, padded ember tensors);
- `embertext.datasets`: the GLUE datasets (CoLA, SST2, MRPC, QQP, STSB, MNLI, QNLI, RTE, WNLI) as
  emberdata DataPipes.
"""
from embertext import functional, transforms, vocab
from embertext._tokenizer import BertWordPieceTokenizer, Encoding

__version__ = "0.1.0"
__all__ = ["BertWordPieceTokenizer", "Encoding", "datasets", "functional", "transforms", "vocab"]


def __getattr__(name):
    # `embertext.datasets` pulls in emberdata: imported on first use, not with every tokenizer.
    if name == "datasets":
        import importlib

        return importlib.import_module("embertext.datasets")
    raise AttributeError(f"module 'embertext' has no attribute {name!r}")
