"""GLUE datasets end to end: small archives with the real names and layouts, served over HTTP from
127.0.0.1, through the real download, MD5 check, resume, extraction and parsing code."""
import hashlib
import http.server
import io
import os
import socket
import tarfile
import threading
import zipfile

import pytest

import emberdata
from emberdata.datapipes.graph_settings import apply_sharding, apply_shuffle_seed, apply_shuffle_settings
from embertext import datasets
from embertext.datasets import NUM_LINES, RESOURCES, Resource

# ---------------------------------------------------------------------------------------------
# A file server that counts what it serves and honours `Range: bytes=N-` like a real one.


class _FileHandler(http.server.BaseHTTPRequestHandler):
    files = {}  # URL path -> bytes; each fixture makes its own subclass, so tests share no state
    log = []  # (path, Range header or None, bytes sent)
    supports_ranges = True
    cut_after = None  # send only this many body bytes, then hang up (an interrupted transfer)

    def do_GET(self):
        body = self.files.get(self.path)
        requested = self.headers.get("Range")
        if body is None:
            self.log.append((self.path, requested, 0))
            self.send_error(404)
            return
        start = int(requested[len("bytes=") : -1]) if requested and self.supports_ranges else 0
        if start >= len(body) and start:
            self.log.append((self.path, requested, 0))
            self.send_error(416)
            return
        self._send(body, start, requested)

    def _send(self, body, start, requested):
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        payload = body[start:] if self.cut_after is None else body[start : start + self.cut_after]
        self.log.append((self.path, requested, len(payload)))  # before the write: the client may finish first
        self.wfile.write(payload)
        if self.cut_after is not None:
            self.close_connection = True

    def log_message(self, *args):
        pass


class Mirror:
    """The test server, and `RESOURCES` pointed at it for the files it publishes."""

    def __init__(self, base, handler, monkeypatch):
        self.base, self.handler, self.monkeypatch = base, handler, monkeypatch

    def publish(self, name, data, md5=None):
        self.handler.files[f"/glue/{name}"] = data
        self.monkeypatch.setitem(RESOURCES, name, Resource(f"{self.base}/glue/{name}", md5 or _md5(data)))

    def url(self, name):
        return f"{self.base}/glue/{name}"

    @property
    def log(self):
        return self.handler.log

    def bytes_sent(self):
        return sum(n for _, _, n in self.handler.log)


@pytest.fixture
def mirror(monkeypatch):
    handler = type("Handler", (_FileHandler,), {"files": {}, "log": []})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("TQDM_DISABLE", "1")
    yield Mirror(f"http://127.0.0.1:{httpd.server_address[1]}", handler, monkeypatch)
    httpd.shutdown()
    thread.join()


def _md5(data):
    return hashlib.md5(data).hexdigest()


def _zip(files):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def _tar_gz(files):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


# ---------------------------------------------------------------------------------------------
# Each dataset's files as the real ones are laid out, and the rows TorchText yields from them.

def cola_files():
    archive = _zip(
        {
            "cola_public/README": "CoLA\n",
            "cola_public/raw/in_domain_train.tsv": "gj04\t1\t\tOur friends won't buy this analysis.\ngj04\t0\t*\tThey drank the pub.\n",
            "cola_public/raw/in_domain_dev.tsv": "bc01\t1\t\tThe sailors rode the breeze.\n",
            "cola_public/raw/out_of_domain_dev.tsv": "clc95\t0\t*\tSomebody just left - guess who.\n",
            # Same file names, other content: only the raw tables may be read.
            "cola_public/tokenized/in_domain_train.tsv": "gj04\t1\t\tour friends wo n't buy\n",
            "cola_public/tokenized/in_domain_dev.tsv": "bc01\t1\t\tthe sailors rode\n",
        }
    )
    expected = {
        # The first sentence is kept: the raw tables have no header (TorchText 0.13 drops it).
        "train": [("gj04", 1, "Our friends won't buy this analysis."), ("gj04", 0, "They drank the pub.")],
        "dev": [("bc01", 1, "The sailors rode the breeze.")],
        "test": [("clc95", 0, "Somebody just left - guess who.")],
    }
    return {"cola_public_1.1.zip": archive}, expected


def sst2_files():
    archive = _zip(
        {
            "SST-2/train.tsv": 'sentence\tlabel\nhide new secretions \t0\nit \'s a " cool " movie \t1\n',
            "SST-2/dev.tsv": "sentence\tlabel\na charming journey . \t1\n",
            "SST-2/test.tsv": "index\tsentence\n0\tuneasy mishmash .\n1\tactual tension \n",
            "SST-2/original/README.txt": "Stanford Sentiment Treebank\n",
        }
    )
    expected = {
        "train": [("hide new secretions", 0), ('it \'s a " cool " movie', 1)],
        "dev": [("a charming journey .", 1)],
        "test": [("uneasy mishmash .",), ("actual tension",)],
    }
    return {"SST-2.zip": archive}, expected


def mrpc_files():
    header = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"  # the real files start with a BOM
    train = header + '1\t702876\t702977\the called " the witness " .\tas only " the witness " .\n0\t2108705\t2108831\tA .\tB .\n'
    test = header + "1\t1089874\t1089925\tPCCW 's chief .\tThe chief .\n"
    expected = {
        "train": [(1, 'he called " the witness " .', 'as only " the witness " .'), (0, "A .", "B .")],
        "test": [(1, "PCCW 's chief .", "The chief .")],
    }
    return {"msr_paraphrase_train.txt": train.encode(), "msr_paraphrase_test.txt": test.encode()}, expected


def qqp_files():
    table = (
        "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
        "0\t1\t2\tHow to invest in share market in india?\tHow to invest in share market?\t0\n"
        '1\t3\t4\t"How do I say ""hi""\nin French?"\tHow can I greet someone in French?\t1\n'  # quoted, on two lines
    )
    expected = {
        "train": [
            (0, "How to invest in share market in india?", "How to invest in share market?"),
            (1, 'How do I say "hi"\nin French?', "How can I greet someone in French?"),
        ]
    }
    return {"quora_duplicate_questions.tsv": table.encode()}, expected


def stsb_files():
    archive = _tar_gz(
        {
            "stsbenchmark/readme.txt": "STS Benchmark\n",
            "stsbenchmark/sts-train.csv": "main-captions\tMSRvid\t2012test\t0001\t5.000\tA plane takes off.\tAn air plane takes off.\n",
            "stsbenchmark/sts-dev.csv": "main-captions\tMSRvid\t2012test\t0000\t5.000\tA man dances.\tA man is dancing.\n",
            "stsbenchmark/sts-test.csv": (
                "main-captions\tMSRvid\t2012test\t0024\t2.500\tA girl styles her hair.\tA girl brushes her hair.\n"
                'main-news\theadlines\t2013\t0056\t0.400\tObama signs "budget" bill\tSenate passes bill\tsrc-a\tsrc-b\n'
            ),
        }
    )
    expected = {
        "train": [(1, 5.0, "A plane takes off.", "An air plane takes off.")],
        "dev": [(0, 5.0, "A man dances.", "A man is dancing.")],
        "test": [(24, 2.5, "A girl styles her hair.", "A girl brushes her hair."), (56, 0.4, 'Obama signs "budget" bill', "Senate passes bill")],
    }
    return {"Stsbenchmark.tar.gz": archive}, expected


MNLI_HEADER = (
    "gold_label\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\tsentence2_parse\tsentence1\tsentence2"
    "\tpromptID\tpairID\tgenre\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\n"
)


def _mnli_line(label, premise, hypothesis):
    parses = f"( {premise} )\t( {hypothesis} )\t(ROOT {premise})\t(ROOT {hypothesis})"
    return f"{label}\t{parses}\t{premise}\t{hypothesis}\t31193\t31193n\tfiction\t{label}\t\t\t\t\n"


def mnli_files():
    tables = {
        "train": [("neutral", "Cream skimming has two dimensions.", "Geography makes it work."),
                  ("entailment", "you know during the season", "You lose things."),
                  ("contradiction", "One of us will do it.", "Nobody will do it.")],
        "dev_matched": [("-", "The new rights are nice", "Everyone likes them"), ("contradiction", "It lists the winners.", "It has no list.")],
        "dev_mismatched": [("entailment", "Your gift helped.", "Your gift was of help."), ("-", "It is unclear.", "Nobody knows.")],
    }
    files = {f"multinli_1.0/multinli_1.0_{s}.txt": MNLI_HEADER + "".join(_mnli_line(*r) for r in rows) for s, rows in tables.items()}
    files.update({f"multinli_1.0/multinli_1.0_{split}.jsonl": "{}\n" for split in tables})
    files["__MACOSX/multinli_1.0/._multinli_1.0_train.txt"] = "resource fork junk\n"
    expected = {  # gold label "-" (no agreement) is left out
        "train": [(1, "Cream skimming has two dimensions.", "Geography makes it work."),
                  (0, "you know during the season", "You lose things."),
                  (2, "One of us will do it.", "Nobody will do it.")],
        "dev_matched": [(2, "It lists the winners.", "It has no list.")],
        "dev_mismatched": [(0, "Your gift helped.", "Your gift was of help.")],
    }
    return {"multinli_1.0.zip": _zip(files)}, expected


def _glue_zip(folder, header, rows):
    """A GLUE archive: `<folder>/{train,dev,test}.tsv`, each with a header; test has no label column."""
    test_header = "\t".join(header.split("\t")[:3]) + "\n"
    return _zip({f"{folder}/{split}.tsv": (test_header if split == "test" else header) + text for split, text in rows.items()})


def qnli_files():
    rows = {
        "train": "0\tWhen did the series begin?\tIt was darker.\tnot_entailment\n1\tWhich batteries have launchers?\tMANPADS do.\tentailment\n",
        "dev": "0\tWhat came into force?\tThe new constitution came into force.\tentailment\n",
        "test": "0\tWho is devoted to it?\tFor some decades prior to 1987...\n",
    }
    expected = {
        "train": [(1, "When did the series begin?", "It was darker."), (0, "Which batteries have launchers?", "MANPADS do.")],
        "dev": [(0, "What came into force?", "The new constitution came into force.")],
        "test": [("Who is devoted to it?", "For some decades prior to 1987...")],
    }
    return {"QNLIv2.zip": _glue_zip("QNLI", "index\tquestion\tsentence\tlabel\n", rows)}, expected


def rte_files():
    rows = {
        "train": "0\tNo weapons found in Iraq yet.\tWeapons found in Iraq.\tnot_entailment\n1\tA place of sorrow became one of joy.\tIt is joyful.\tentailment\n",
        "dev": "0\tDana Reeve has died at age 44.\tChristopher Reeve had an accident.\tnot_entailment\n",
        "test": "0\tMangla was summoned after a complaint.\tShukla is related to Mangla.\n",
    }
    expected = {
        "train": [(1, "No weapons found in Iraq yet.", "Weapons found in Iraq."), (0, "A place of sorrow became one of joy.", "It is joyful.")],
        "dev": [(1, "Dana Reeve has died at age 44.", "Christopher Reeve had an accident.")],
        "test": [("Mangla was summoned after a complaint.", "Shukla is related to Mangla.")],
    }
    return {"RTE.zip": _glue_zip("RTE", "index\tsentence1\tsentence2\tlabel\n", rows)}, expected


def wnli_files():
    rows = {
        "train": "0\tI pulled the pin out; it had a hole.\tThe carrot had a hole.\t1\n1\tThe police arrested the gang.\tThe police stopped trade.\t0\n",
        "dev": "0\tThe drain is clogged with hair. It has to be cleaned.\tThe hair has to be cleaned.\t0\n",
        "test": "0\tMaude had seen the trains.\tHorses ran away.\n",
    }
    expected = {
        "train": [(1, "I pulled the pin out; it had a hole.", "The carrot had a hole."), (0, "The police arrested the gang.", "The police stopped trade.")],
        "dev": [(0, "The drain is clogged with hair. It has to be cleaned.", "The hair has to be cleaned.")],
        "test": [("Maude had seen the trains.", "Horses ran away.")],
    }
    return {"WNLI.zip": _glue_zip("WNLI", "index\tsentence1\tsentence2\tlabel\n", rows)}, expected


BUILDERS = {
    "CoLA": cola_files, "SST2": sst2_files, "MRPC": mrpc_files, "QQP": qqp_files, "STSB": stsb_files,
    "MNLI": mnli_files, "QNLI": qnli_files, "RTE": rte_files, "WNLI": wnli_files,
}


def publish(mirror, name):
    """Serves the dataset's files and sizes `len()` to them; returns the rows expected per split."""
    files, expected = BUILDERS[name]()
    for file_name, data in files.items():
        mirror.publish(file_name, data)
    mirror.monkeypatch.setitem(NUM_LINES, name, {split: len(rows) for split, rows in expected.items()})
    return expected


def load(name, root, split=None):
    if name == "QQP":
        return datasets.QQP(root=root)
    fn = getattr(datasets, name)
    return fn(root=root) if split is None else fn(root=root, split=split)


# ---------------------------------------------------------------------------------------------
# Rows, labels, splits and lengths.


@pytest.mark.parametrize("name", list(BUILDERS))
def test_rows_and_labels_of_every_split(mirror, tmp_path, name):
    expected = publish(mirror, name)
    pipes = load(name, tmp_path)  # every split, in TorchText's order
    pipes = (pipes,) if name == "QQP" else pipes
    assert len(pipes) == len(expected)
    for split, dp in zip(expected, pipes):
        rows = list(dp)
        assert rows == expected[split], split
        assert len(dp) == len(rows)
        assert all(type(a) is type(b) for row, want in zip(rows, expected[split]) for a, b in zip(row, want))


@pytest.mark.parametrize("name", [n for n in BUILDERS if n != "QQP"])
def test_a_split_name_gives_one_datapipe_and_a_tuple_gives_a_tuple(mirror, tmp_path, name):
    expected = publish(mirror, name)
    splits = tuple(expected)
    single = load(name, tmp_path, splits[-1])
    assert isinstance(single, emberdata.datapipes.IterDataPipe)
    assert list(single) == expected[splits[-1]]
    (one,) = load(name, tmp_path, (splits[0],))
    assert list(one) == expected[splits[0]]
    reversed_pair = load(name, tmp_path, (splits[-1], splits[0]))
    assert [list(dp) for dp in reversed_pair] == [expected[splits[-1]], expected[splits[0]]]


REAL_NUM_LINES = {
    "CoLA": {"train": 8551, "dev": 527, "test": 516},
    "SST2": {"train": 67349, "dev": 872, "test": 1821},
    "MRPC": {"train": 4076, "test": 1725},
    "QQP": {"train": 404290},
    "STSB": {"train": 5749, "dev": 1500, "test": 1379},
    "MNLI": {"train": 392702, "dev_matched": 9815, "dev_mismatched": 9832},
    "QNLI": {"train": 104743, "dev": 5463, "test": 5463},
    "RTE": {"train": 2490, "dev": 277, "test": 3000},
    "WNLI": {"train": 635, "dev": 71, "test": 146},
}


@pytest.mark.parametrize("name", list(REAL_NUM_LINES))
def test_len_is_the_real_row_count_without_downloading(tmp_path, name):
    assert NUM_LINES[name] == REAL_NUM_LINES[name]
    pipes = load(name, tmp_path)
    pipes = (pipes,) if name == "QQP" else pipes
    assert [len(dp) for dp in pipes] == list(REAL_NUM_LINES[name].values())
    assert not (tmp_path / "datasets").exists()  # files come on first iteration, not before


def test_real_urls_and_checksums_are_torchtexts():
    assert RESOURCES["SST-2.zip"] == Resource("https://dl.fbaipublicfiles.com/glue/data/SST-2.zip", "9f81648d4199384278b86e315dac217c")
    assert RESOURCES["multinli_1.0.zip"].md5 == "0f70aaf66293b3c088a864891db51353"
    assert RESOURCES["Stsbenchmark.tar.gz"].url.endswith("/Stsbenchmark.tar.gz")
    assert len(RESOURCES) == 10 and all(len(r.md5) == 32 for r in RESOURCES.values())


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match=r"CoLA: split must be one of 'train', 'dev', 'test'; got 'valid'"):
        datasets.CoLA(root=tmp_path, split="valid")
    with pytest.raises(ValueError, match=r"'train', 'dev_matched', 'dev_mismatched'; got 'test_matched'"):
        datasets.MNLI(root=tmp_path, split=("train", "test_matched"))
    with pytest.raises(TypeError, match="split must be a str or a tuple of str"):
        datasets.SST2(root=tmp_path, split=3)
    with pytest.raises(TypeError, match="root must be a str or os.PathLike folder, got int"):
        datasets.RTE(root=3)
    with pytest.raises(TypeError):
        datasets.QQP(root=tmp_path, split="train")  # TorchText's QQP has no split argument


def test_default_root_is_the_embertext_cache(mirror, tmp_path, monkeypatch):
    monkeypatch.setenv("EMBERTEXT_CACHE", str(tmp_path / "cache"))
    expected = publish(mirror, "WNLI")
    assert list(datasets.WNLI(split="dev")) == expected["dev"]
    assert (tmp_path / "cache" / "datasets" / "WNLI" / "WNLI.zip").is_file()
    assert (tmp_path / "cache" / "datasets" / "WNLI" / "WNLI" / "dev.tsv").is_file()


def test_shuffle_is_off_until_turned_on_and_shards_split_the_rows(mirror, tmp_path):
    publish(mirror, "MNLI")
    dp = datasets.MNLI(root=tmp_path, split="train")
    in_order = list(dp)
    assert list(dp) == in_order
    apply_shuffle_settings(dp, shuffle=True)
    orders = set()
    for seed in range(8):
        apply_shuffle_seed(dp, seed)
        rows = list(dp)
        assert sorted(rows) == sorted(in_order)
        orders.add(tuple(rows))
    assert len(orders) > 1
    apply_shuffle_settings(dp, shuffle=False)
    shards = []
    for i in range(2):
        shard = apply_sharding(datasets.MNLI(root=tmp_path, split="train"), 2, i)
        shards.append(list(shard))
        assert len(shard) == len(shards[-1])
    assert shards[0] + shards[1] == [in_order[0], in_order[2], in_order[1]]


def test_dataloader_workers_share_one_download(mirror, tmp_path):
    expected = publish(mirror, "SST2")
    loader = emberdata.DataLoader(datasets.SST2(root=tmp_path, split="test"), batch_size=None, num_workers=2)
    assert sorted(tuple(row) for row in loader) == sorted(expected["test"])  # collate makes tuples lists
    assert [path for path, _, _ in mirror.log] == ["/glue/SST-2.zip"]


# ---------------------------------------------------------------------------------------------
# The cache: never fetched twice, checked by MD5, resumed after an interruption.


def _archive_path(root, name="SST2", file_name="SST-2.zip"):
    return root / "datasets" / name / file_name


def test_nothing_is_downloaded_again_once_cached(mirror, tmp_path):
    expected = publish(mirror, "SST2")
    assert list(datasets.SST2(root=tmp_path, split="train")) == expected["train"]
    assert len(mirror.log) == 1
    mirror.log.clear()
    assert [list(dp) for dp in datasets.SST2(root=tmp_path)] == list(expected.values())
    os.remove(tmp_path / "datasets" / "SST2" / "SST-2" / "train.tsv")  # extracted again from the valid archive
    assert list(datasets.SST2(root=tmp_path, split="train")) == expected["train"]
    assert mirror.log == []


def test_plain_table_is_checked_and_not_downloaded_again(mirror, tmp_path):
    expected = publish(mirror, "MRPC")
    train, test = datasets.MRPC(root=tmp_path)
    assert list(train) == expected["train"] and list(test) == expected["test"]
    mirror.log.clear()
    assert list(train) == expected["train"]
    assert mirror.log == []


def test_download_with_a_wrong_md5_is_refused_and_deleted(mirror, tmp_path):
    expected = publish(mirror, "RTE")
    url = mirror.url("RTE.zip")
    mirror.monkeypatch.setitem(RESOURCES, "RTE.zip", Resource(url, "0" * 32))
    with pytest.raises(RuntimeError, match=f"{url} has MD5 [0-9a-f]{{32}}, expected {'0' * 32}") as e:
        list(datasets.RTE(root=tmp_path, split="train"))
    assert str(_archive_path(tmp_path, "RTE", "RTE.zip")) in str(e.value)
    assert sorted(p.name for p in (tmp_path / "datasets" / "RTE").iterdir()) == [".lock"]
    mirror.monkeypatch.setitem(RESOURCES, "RTE.zip", Resource(url, _md5(mirror.handler.files["/glue/RTE.zip"])))
    assert list(datasets.RTE(root=tmp_path, split="train")) == expected["train"]


def test_cached_file_with_a_wrong_md5_is_downloaded_again(mirror, tmp_path):
    expected = publish(mirror, "SST2")
    archive = _archive_path(tmp_path)
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"an older, different SST-2.zip")
    with pytest.warns(UserWarning, match="has MD5 .* downloading .*SST-2.zip again"):
        rows = list(datasets.SST2(root=tmp_path, split="dev"))
    assert rows == expected["dev"]
    assert _md5(archive.read_bytes()) == RESOURCES["SST-2.zip"].md5
    assert len(mirror.log) == 1


def test_a_kept_part_file_is_resumed_with_a_range_request(mirror, tmp_path):
    expected = publish(mirror, "STSB")
    data = mirror.handler.files["/glue/Stsbenchmark.tar.gz"]
    part = tmp_path / "datasets" / "STSB" / "Stsbenchmark.tar.gz.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(data[:100])
    assert list(datasets.STSB(root=tmp_path, split="test")) == expected["test"]
    assert mirror.log == [("/glue/Stsbenchmark.tar.gz", "bytes=100-", len(data) - 100)]
    assert not part.exists()


def test_an_interrupted_download_resumes_where_it_stopped(mirror, tmp_path):
    expected = publish(mirror, "SST2")
    data = mirror.handler.files["/glue/SST-2.zip"]
    mirror.handler.cut_after = 150
    with pytest.raises(OSError, match="could not download .*SST-2.zip"):
        list(datasets.SST2(root=tmp_path, split="train"))
    part = tmp_path / "datasets" / "SST2" / "SST-2.zip.part"
    assert part.read_bytes() == data[:150]
    mirror.handler.cut_after = None
    assert list(datasets.SST2(root=tmp_path, split="train")) == expected["train"]
    assert [r for _, r, _ in mirror.log] == [None, "bytes=150-"]
    assert mirror.bytes_sent() == len(data)


def test_a_server_without_ranges_restarts_the_download(mirror, tmp_path):
    expected = publish(mirror, "WNLI")
    mirror.handler.supports_ranges = False
    part = _archive_path(tmp_path, "WNLI", "WNLI.zip.part")
    part.parent.mkdir(parents=True)
    part.write_bytes(b"stale bytes from elsewhere")
    assert list(datasets.WNLI(root=tmp_path, split="train")) == expected["train"]
    assert mirror.bytes_sent() == len(mirror.handler.files["/glue/WNLI.zip"])


@pytest.mark.parametrize("kept", [b"x" * 10, b"y" * 100_000], ids=["wrong bytes", "longer than the file"])
def test_a_part_file_that_does_not_fit_starts_over(mirror, tmp_path, kept):
    expected = publish(mirror, "QNLI")
    part = _archive_path(tmp_path, "QNLI", "QNLIv2.zip.part")
    part.parent.mkdir(parents=True)
    part.write_bytes(kept)
    assert list(datasets.QNLI(root=tmp_path, split="dev")) == expected["dev"]
    assert mirror.log[-1] == ("/glue/QNLIv2.zip", None, len(mirror.handler.files["/glue/QNLIv2.zip"]))


def test_no_network_names_the_url_and_where_to_put_the_file(monkeypatch, tmp_path):
    with socket.socket() as s:  # a port nothing listens on: the connection is refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/glue/data/CoLA.zip"
    monkeypatch.setitem(RESOURCES, "cola_public_1.1.zip", Resource(url, "0" * 32))
    with pytest.raises(OSError) as e:
        list(datasets.CoLA(root=tmp_path, split="dev"))
    message = str(e.value)
    assert url in message and "refused" in message.lower()
    assert f"place it at {_archive_path(tmp_path, 'CoLA', 'cola_public_1.1.zip')}" in message
    assert not list((tmp_path / "datasets" / "CoLA").glob("*.part"))


def test_a_missing_member_is_a_clear_error(mirror, tmp_path):
    mirror.publish("SST-2.zip", _zip({"SST-2/train.tsv": "sentence\tlabel\n"}))
    with pytest.raises(RuntimeError, match="SST-2.zip holds no SST-2/dev.tsv"):
        list(datasets.SST2(root=tmp_path, split="dev"))


def test_file_urls_work_as_mirrors(monkeypatch, tmp_path):
    files, expected = sst2_files()
    local = tmp_path / "mirror" / "SST-2.zip"
    local.parent.mkdir()
    local.write_bytes(files["SST-2.zip"])
    monkeypatch.setitem(RESOURCES, "SST-2.zip", Resource(local.as_uri(), _md5(files["SST-2.zip"])))
    assert list(datasets.SST2(root=tmp_path / "root", split="test")) == expected["test"]


def test_downloads_show_a_progress_bar_that_tqdm_disable_silences(mirror, tmp_path, capsys):
    publish(mirror, "SST2")
    mirror.monkeypatch.delenv("TQDM_DISABLE")
    list(datasets.SST2(root=tmp_path / "shown", split="dev"))
    assert "SST-2.zip" in capsys.readouterr().err
    mirror.monkeypatch.setenv("TQDM_DISABLE", "1")
    list(datasets.SST2(root=tmp_path / "silent", split="dev"))
    assert "SST-2.zip" not in capsys.readouterr().err
