import bz2
import gzip
import http.server
import io
import json
import lzma
import os
import tarfile
import threading
import zipfile

import pytest

from emberdata.datapipes.iter import (
    CompressionType,
    Decompressor,
    FileLister,
    FileOpener,
    IterableWrapper,
    StreamReader,
    register_parquet_loader,
)
from emberdata.datapipes.iter import _fileio


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_text("line1\nline2\n")
    (tmp_path / "b.csv").write_text("x,y\n1,2\n3,4\n")
    (tmp_path / "c.json").write_text(json.dumps({"k": [1, 2]}))
    (tmp_path / "sub" / "d.txt").write_text("deep\n")
    return tmp_path


def test_file_lister(tree):
    root = str(tree)
    assert [os.path.basename(p) for p in FileLister(root)] == ["a.txt", "b.csv", "c.json"]
    assert [os.path.basename(p) for p in FileLister(root, "*.txt", recursive=True)] == ["a.txt", "d.txt"]
    assert [os.path.basename(p) for p in FileLister([root], ["*.csv", "*.json"])] == ["b.csv", "c.json"]
    assert list(IterableWrapper([root]).list_files(masks="*.csv")) == [os.path.join(root, "b.csv")]
    assert list(FileLister(str(tree / "a.txt"))) == [str(tree / "a.txt")]
    with pytest.raises(FileNotFoundError, match="neither a file nor a directory"):
        list(FileLister(str(tree / "missing")))
    with pytest.raises(TypeError, match="root must be"):
        FileLister(3)
    assert len(FileLister(root, length=3)) == 3
    with pytest.raises(TypeError):
        len(FileLister(root))


def test_open_readlines_csv_json(tree):
    files = FileLister(str(tree), "*.txt").open_files()
    assert [line for _, line in files.readlines()] == ["line1", "line2"]
    raw = FileLister(str(tree), "*.txt").open_files(mode="rb").readlines(decode=True, return_path=False, skip_lines=1)
    assert list(raw) == ["line2"]
    csv_rows = FileLister(str(tree), "*.csv").open_files().parse_csv(skip_lines=1)
    assert list(csv_rows) == [["1", "2"], ["3", "4"]]
    dict_rows = FileLister(str(tree), "*.csv").open_files(mode="rb").parse_csv_as_dict(return_path=True)
    assert [row for _, row in dict_rows] == [{"x": "1", "y": "2"}, {"x": "3", "y": "4"}]
    (path, obj), = FileLister(str(tree), "*.json").open_files().parse_json_files()
    assert obj == {"k": [1, 2]} and path.endswith("c.json")
    with pytest.raises(ValueError, match="mode"):
        FileOpener(IterableWrapper([]), mode="w")
    with pytest.raises(ValueError, match="encoding"):
        FileOpener(IterableWrapper([]), mode="rb", encoding="utf-8")


def test_decompressor_all_types(tmp_path):
    payload = b"hello world"
    (tmp_path / "f.gz").write_bytes(gzip.compress(payload))
    (tmp_path / "f.xz").write_bytes(lzma.compress(payload))
    (tmp_path / "f.bz2").write_bytes(bz2.compress(payload))
    paths = [str(tmp_path / n) for n in ("f.gz", "f.xz", "f.bz2")]
    out = [s.read() for _, s in FileOpener(IterableWrapper(paths), mode="rb").decompress()]
    assert out == [payload] * 3
    (tmp_path / "noext").write_bytes(gzip.compress(payload))
    one = FileOpener(IterableWrapper([str(tmp_path / "noext")]), mode="rb")
    assert next(iter(Decompressor(one, file_type="gzip")))[1].read() == payload
    with pytest.raises(RuntimeError, match="pass file_type"):
        list(Decompressor(FileOpener(IterableWrapper([str(tmp_path / "noext")]), mode="rb")))
    assert next(iter(Decompressor(one, file_type=CompressionType.GZIP)))[1].read() == payload
    assert CompressionType("bz2") is CompressionType.BZIP2
    with pytest.raises(ValueError, match="file_type must be a CompressionType"):
        Decompressor(one, file_type="rar")


def test_open_modes_b_and_t_and_stream_reader(tmp_path):
    (tmp_path / "f.txt").write_text("abcde")
    path = str(tmp_path / "f.txt")
    (_, binary), = FileOpener(IterableWrapper([path]), mode="b")
    (_, text), = FileOpener(IterableWrapper([path]), mode="t")
    assert binary.read() == b"abcde" and text.read() == "abcde"
    chunks = [c for _, c in FileOpener(IterableWrapper([path]), mode="b").read_from_stream(chunk=2)]
    assert chunks == [b"ab", b"cd", b"e"]
    assert [c for _, c in StreamReader(FileOpener(IterableWrapper([path]), mode="b"))] == [b"abcde"]


def test_zip_and_tar_loaders(tmp_path):
    zpath = tmp_path / "a.zip"
    with zipfile.ZipFile(zpath, "w") as z:
        z.writestr("dir/", "")
        z.writestr("dir/x.txt", "X")
        z.writestr("y.txt", "Y")
    tpath = tmp_path / "a.tar.gz"
    with tarfile.open(tpath, "w:gz") as t:
        info = tarfile.TarInfo("m.txt")
        info.size = 1
        t.addfile(info, io.BytesIO(b"M"))
    zips = FileOpener(IterableWrapper([str(zpath)]), mode="rb").load_from_zip()
    assert [(os.path.relpath(p, str(zpath)), s.read()) for p, s in zips] == [("dir/x.txt", b"X"), ("y.txt", b"Y")]
    tars = FileOpener(IterableWrapper([str(tpath)]), mode="rb").load_from_tar()
    assert [(os.path.basename(p), s.read()) for p, s in tars] == [("m.txt", b"M")]
    bad = FileOpener(IterableWrapper([str(zpath)]), mode="rb")
    with pytest.raises(ValueError, match="not a tar archive"):
        list(bad.load_from_tar())


def test_saver(tmp_path):
    pairs = IterableWrapper([("a.txt", "A"), ("sub/b.txt", "B")])
    written = list(pairs.save_to_disk(filepath_fn=lambda name: str(tmp_path / name)))
    assert [open(p).read() for p in written] == ["A", "B"]
    with pytest.raises(ValueError, match="mode"):
        pairs.save_to_disk(mode="r")


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/echo"):
            body = f"{self.path} {self.headers.get('X-Test')} {self.headers.get('Authorization')}".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path == "/ok":
            body = b"served"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_error(404)

    def log_message(self, *args):
        pass


def test_http_reader():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        (url, stream), = IterableWrapper([base + "/ok"]).read_from_http(timeout=5)
        assert url.endswith("/ok") and stream.read() == b"served"
        with pytest.raises(RuntimeError, match="HTTP 404"):
            list(IterableWrapper([base + "/missing"]).read_from_http(timeout=5))
        options = dict(headers={"X-Test": "yes"}, params={"q": "1"}, auth=("u", "p"))
        (_, stream), = IterableWrapper([base + "/echo"]).read_from_http(timeout=5, **options)
        assert stream.read() == b"/echo?q=1 yes Basic dTpw"
        with pytest.raises(TypeError, match=r"unsupported request options \['verify'\]"):
            IterableWrapper([base]).read_from_http(verify=False)
    finally:
        server.shutdown()
        server.server_close()


def test_fsspec_lister_and_opener(tree):
    pytest.importorskip("fsspec")
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.pipe("/emberdata-test/x.txt", b"mem-x\n")
    fs.pipe("/emberdata-test/y.bin", b"mem-y")
    listed = list(IterableWrapper(["memory://emberdata-test"]).list_files_by_fsspec(masks="*.txt"))
    assert len(listed) == 1 and listed[0].startswith("memory://") and listed[0].endswith("/emberdata-test/x.txt")
    (path, stream), = IterableWrapper(listed).open_files_by_fsspec(mode="rb")
    assert stream.read() == b"mem-x\n"
    (path, stream), = IterableWrapper(listed).open_file_by_fsspec(mode="b")  # TorchData 0.4's older name
    assert stream.read() == b"mem-x\n"
    saved = list(IterableWrapper([("memory://emberdata-test/z.txt", "Z")]).save_by_fsspec())
    assert fs.cat("/emberdata-test/z.txt") == b"Z" and saved == ["memory://emberdata-test/z.txt"]
    local = [os.path.basename(p) for p in IterableWrapper([str(tree)]).list_files_by_fsspec(masks="*.csv")]
    assert local == ["b.csv"]


def test_parquet_hook(monkeypatch):
    monkeypatch.setattr(_fileio, "_PARQUET_LOADER", None)
    register_parquet_loader(lambda path, dtype, columns, device, use_threads: [(path, columns), (path, dtype)])
    assert list(IterableWrapper(["a.parquet"]).load_parquet_as_df(columns=["c"])) == [("a.parquet", ["c"]), ("a.parquet", None)]
    with pytest.raises(TypeError, match="callable"):
        register_parquet_loader(3)
