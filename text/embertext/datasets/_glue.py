"""The GLUE datasets of TorchText 0.13 (`torchtext.datasets`): CoLA, SST2, MRPC, QQP, STSB, MNLI,
QNLI, RTE and WNLI, with the same files, checksums, rows and label numbers.

`RESOURCES` (file name -> URL and MD5) and `NUM_LINES` (dataset -> split -> rows) are read each
time a dataset is made: point an entry of `RESOURCES` at a mirror (or a local `file://` copy) to
download from there.
"""
import csv

from embertext.datasets._core import DatasetSpec, Resource, SplitSource, load

RESOURCES = {
    "cola_public_1.1.zip": Resource("https://nyu-mll.github.io/CoLA/cola_public_1.1.zip", "9f6d88c3558ec424cd9d66ea03589aba"),
    "SST-2.zip": Resource("https://dl.fbaipublicfiles.com/glue/data/SST-2.zip", "9f81648d4199384278b86e315dac217c"),
    "msr_paraphrase_train.txt": Resource(
        "https://dl.fbaipublicfiles.com/senteval/senteval_data/msr_paraphrase_train.txt", "793daf7b6224281e75fe61c1f80afe35"
    ),
    "msr_paraphrase_test.txt": Resource(
        "https://dl.fbaipublicfiles.com/senteval/senteval_data/msr_paraphrase_test.txt", "e437fdddb92535b820fe8852e2df8a49"
    ),
    "quora_duplicate_questions.tsv": Resource(
        "http://qim.fs.quoracdn.net/quora_duplicate_questions.tsv", "b6d5672bd9dc1e66ab2bb020ebeafb8d"
    ),
    "Stsbenchmark.tar.gz": Resource("http://ixa2.si.ehu.es/stswiki/images/4/48/Stsbenchmark.tar.gz", "4eb0065aba063ef77873d3a9c8088811"),
    "multinli_1.0.zip": Resource("https://cims.nyu.edu/~sbowman/multinli/multinli_1.0.zip", "0f70aaf66293b3c088a864891db51353"),
    "QNLIv2.zip": Resource("https://dl.fbaipublicfiles.com/glue/data/QNLIv2.zip", "b4efd6554440de1712e9b54e14760e82"),
    "RTE.zip": Resource("https://dl.fbaipublicfiles.com/glue/data/RTE.zip", "bef554d0cafd4ab6743488101c638539"),
    "WNLI.zip": Resource("https://dl.fbaipublicfiles.com/glue/data/WNLI.zip", "a1b4bd2861017d302d29e42139657a42"),
}

NUM_LINES = {
    "CoLA": {"train": 8551, "dev": 527, "test": 516},
    "SST2": {"train": 67349, "dev": 872, "test": 1821},
    "MRPC": {"train": 4076, "test": 1725},
    "QQP": {"train": 404290},
    "STSB": {"train": 5749, "dev": 1500, "test": 1379},
    "MNLI": {"train": 392702, "dev_matched": 9815, "dev_mismatched": 9832},
    "QNLI": {"train": 104743, "dev": 5463, "test": 5463},
    # TorchText 0.13 repeats SST2's counts here; these are RTE's (TorchText corrected them later).
    "RTE": {"train": 2490, "dev": 277, "test": 3000},
    "WNLI": {"train": 635, "dev": 71, "test": 146},
}

MNLI_LABELS = {"entailment": 0, "neutral": 1, "contradiction": 2}
NLI_LABELS = {"entailment": 0, "not_entailment": 1}  # QNLI and RTE


# Row builders: a parsed line's fields -> the tuple TorchText yields. Module-level, so DataPipes
# holding them pickle for worker processes.
def _cola_row(fields):  # source, label, original mark (dropped), sentence
    return fields[0], int(fields[1]), fields[3]


def _has_four_fields(fields):
    return len(fields) == 4


def _sst2_row(fields):  # sentence, label
    return fields[0].strip(), int(fields[1])


def _sst2_test_row(fields):  # index, sentence
    return (fields[1].strip(),)


def _mrpc_row(fields):  # Quality, #1 ID, #2 ID, #1 String, #2 String
    return int(fields[0]), fields[3], fields[4]


def _qqp_row(fields):  # id, qid1, qid2, question1, question2, is_duplicate
    return int(fields[-1]), fields[3], fields[4]


def _stsb_row(fields):  # genre, file, year, index, score, sentence1, sentence2[, sources]
    return int(fields[3]), float(fields[4]), fields[5], fields[6]


def _has_mnli_label(fields):  # gold label "-": the annotators did not agree
    return fields[0] in MNLI_LABELS


def _mnli_row(fields):  # gold_label, 2 binary parses, 2 parses, sentence1, sentence2, ...
    return MNLI_LABELS[fields[0]], fields[5], fields[6]


def _nli_row(fields):  # index, question/sentence1, sentence/sentence2, label
    return NLI_LABELS[fields[3]], fields[1], fields[2]


def _wnli_row(fields):  # index, sentence1, sentence2, label
    return int(fields[3]), fields[1], fields[2]


def _unlabelled_pair_row(fields):  # index, sentence1, sentence2 (test splits)
    return fields[1], fields[2]


def _glue_zip_splits(file, folder, row, test_row):
    """The layout of the GLUE archives: `<folder>/{train,dev,test}.tsv`, test without labels."""
    return {
        "train": SplitSource(file, f"{folder}/train.tsv", row),
        "dev": SplitSource(file, f"{folder}/dev.tsv", row),
        "test": SplitSource(file, f"{folder}/test.tsv", test_row),
    }


SPECS = {
    spec.name: spec
    for spec in (
        # The raw CoLA tables have no header: TorchText 0.13 skips their first sentence anyway.
        DatasetSpec(
            "CoLA",
            {
                "train": SplitSource("cola_public_1.1.zip", "cola_public/raw/in_domain_train.tsv", _cola_row),
                "dev": SplitSource("cola_public_1.1.zip", "cola_public/raw/in_domain_dev.tsv", _cola_row),
                "test": SplitSource("cola_public_1.1.zip", "cola_public/raw/out_of_domain_dev.tsv", _cola_row),
            },
            skip_lines=0,
            keep=_has_four_fields,
        ),
        DatasetSpec("SST2", _glue_zip_splits("SST-2.zip", "SST-2", _sst2_row, _sst2_test_row), quoting=csv.QUOTE_MINIMAL),
        DatasetSpec(
            "MRPC",
            {
                "train": SplitSource("msr_paraphrase_train.txt", None, _mrpc_row),
                "test": SplitSource("msr_paraphrase_test.txt", None, _mrpc_row),
            },
        ),
        # Questions hold quoted tabs and line breaks: csv's quoting is needed here.
        DatasetSpec("QQP", {"train": SplitSource("quora_duplicate_questions.tsv", None, _qqp_row)}, quoting=csv.QUOTE_MINIMAL),
        DatasetSpec(
            "STSB",
            {s: SplitSource("Stsbenchmark.tar.gz", f"stsbenchmark/sts-{s}.csv", _stsb_row) for s in ("train", "dev", "test")},
            skip_lines=0,
        ),
        DatasetSpec(
            "MNLI",
            {
                s: SplitSource("multinli_1.0.zip", f"multinli_1.0/multinli_1.0_{s}.txt", _mnli_row)
                for s in ("train", "dev_matched", "dev_mismatched")
            },
            keep=_has_mnli_label,
        ),
        DatasetSpec("QNLI", _glue_zip_splits("QNLIv2.zip", "QNLI", _nli_row, _unlabelled_pair_row)),
        DatasetSpec("RTE", _glue_zip_splits("RTE.zip", "RTE", _nli_row, _unlabelled_pair_row)),
        DatasetSpec("WNLI", _glue_zip_splits("WNLI.zip", "WNLI", _wnli_row, _unlabelled_pair_row), quoting=csv.QUOTE_MINIMAL),
    )
}


def _load(name, root, split):
    return load(SPECS[name], root, split, RESOURCES, NUM_LINES)


_ARGS = """
    Args:
        root: the cache folder; files go to `<root>/datasets/{name}/`. Default: `$EMBERTEXT_CACHE`,
            else `~/.cache/embertext` (TorchText: `~/.cache/torch/text`).
        split: a split name, or a tuple of them for a tuple of DataPipes. Default: all splits.

    Returns an IterDataPipe of rows with `len()` (TorchText's `NUM_LINES`); its shuffle is off
    until a DataLoader turns it on, and it shards across workers. The files are downloaded (with
    an MD5 check) and extracted on first iteration.
"""


def _document(name):
    def decorate(fn):
        fn.__doc__ = fn.__doc__.rstrip() + "\n" + _ARGS.format(name=name)
        return fn

    return decorate


@_document("CoLA")
def CoLA(root=None, split=("train", "dev", "test")):
    """CoLA (grammatical acceptability): rows `(source: str, label: int, sentence: str)`, label 1 =
    acceptable. `test` is the out-of-domain dev set (the real test set has no labels).
    Rows: train 8551, dev 527, test 516. Unlike TorchText 0.13, the first sentence of each split
    is kept (the raw tables have no header line to skip)."""
    return _load("CoLA", root, split)


@_document("SST2")
def SST2(root=None, split=("train", "dev", "test")):
    """SST-2 (sentiment): rows `(text: str, label: int)`, label 1 = positive; `test` rows are
    `(text,)`. Rows: train 67349, dev 872, test 1821."""
    return _load("SST2", root, split)


@_document("MRPC")
def MRPC(root=None, split=("train", "test")):
    """MRPC (paraphrase): rows `(label: int, sentence1: str, sentence2: str)`, label 1 =
    paraphrase. Rows: train 4076, test 1725."""
    return _load("MRPC", root, split)


def QQP(root=None):
    """QQP (duplicate Quora questions): rows `(label: int, question1: str, question2: str)`, label
    1 = duplicate. One split of 404290 rows, so no `split` argument (as in TorchText).

    Args:
        root: the cache folder; files go to `<root>/datasets/QQP/`. Default: `$EMBERTEXT_CACHE`,
            else `~/.cache/embertext` (TorchText: `~/.cache/torch/text`).

    Returns an IterDataPipe of rows with `len()`, shuffle off until a DataLoader turns it on,
    sharded across workers; the file is downloaded (with an MD5 check) on first iteration.
    """
    return _load("QQP", root, "train")


@_document("STSB")
def STSB(root=None, split=("train", "dev", "test")):
    """STS Benchmark (similarity): rows `(index: int, score: float, sentence1: str, sentence2:
    str)`, score from 0 to 5. Rows: train 5749, dev 1500, test 1379."""
    return _load("STSB", root, split)


@_document("MNLI")
def MNLI(root=None, split=("train", "dev_matched", "dev_mismatched")):
    """MultiNLI: rows `(label: int, premise: str, hypothesis: str)` with entailment 0, neutral 1,
    contradiction 2; pairs whose annotators did not agree (gold label "-") are left out.
    Rows: train 392702, dev_matched 9815, dev_mismatched 9832. The archive has no test sets."""
    return _load("MNLI", root, split)


@_document("QNLI")
def QNLI(root=None, split=("train", "dev", "test")):
    """QNLI: rows `(label: int, question: str, sentence: str)`, entailment 0, not_entailment 1;
    `test` rows are `(question, sentence)`. Rows: train 104743, dev 5463, test 5463."""
    return _load("QNLI", root, split)


@_document("RTE")
def RTE(root=None, split=("train", "dev", "test")):
    """RTE: rows `(label: int, sentence1: str, sentence2: str)`, entailment 0, not_entailment 1;
    `test` rows are `(sentence1, sentence2)`. Rows: train 2490, dev 277, test 3000 (TorchText
    0.13's `NUM_LINES` wrongly repeats SST2's)."""
    return _load("RTE", root, split)


@_document("WNLI")
def WNLI(root=None, split=("train", "dev", "test")):
    """WNLI: rows `(label: int, sentence1: str, sentence2: str)`, label 1 = entailment; `test`
    rows are `(sentence1, sentence2)`. Rows: train 635, dev 71, test 146."""
    return _load("WNLI", root, split)
