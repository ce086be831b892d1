"""ember.hub against a loopback HTTP server serving a state dict saved by ember.save."""
import hashlib
import http.server
import io
import os
import socket
import threading

import pytest

import ember
from ember import hub


def _state_dict():
    ember.manual_seed(0)
    return {"weight": ember.randn(4, 3), "bias": ember.arange(4, dtype=ember.float32)}


def _payload():
    buf = io.BytesIO()
    ember.save(_state_dict(), buf)
    return buf.getvalue()


class _Handler(http.server.BaseHTTPRequestHandler):
    files = {}  # path -> bytes
    truncate = set()  # paths sent with a Content-Length larger than the bytes sent
    hits = []

    def do_GET(self):  # noqa: N802
        type(self).hits.append(self.path)
        data = self.files.get(self.path)
        if data is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.path in self.truncate:
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    payload = _payload()
    digest = hashlib.sha256(payload).hexdigest()
    _Handler.files = {
        f"/good-{digest[:8]}.pth": payload,
        "/wrong-deadbeef.pth": payload,
        f"/trunc-{digest[:8]}.pth": payload,
        "/plain.pth": payload,
    }
    _Handler.truncate = {f"/trunc-{digest[:8]}.pth"}
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", digest
    httpd.shutdown()
    httpd.server_close()


def _same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        assert ember.equal(a[k], b[k])


def test_good_download_then_cached(server, tmp_path):
    base, digest = server
    url = f"{base}/good-{digest[:8]}.pth"
    sd = hub.load_state_dict_from_url(url, model_dir=tmp_path, progress=False)
    _same(sd, _state_dict())
    assert (tmp_path / f"good-{digest[:8]}.pth").is_file()
    assert not list(tmp_path.glob("*.part"))
    _Handler.hits.clear()
    sd = hub.load_state_dict_from_url(url, model_dir=tmp_path, progress=False)
    _same(sd, _state_dict())
    assert _Handler.hits == []  # served from the cache


def test_wrong_hash(server, tmp_path):
    base, _ = server
    url = f"{base}/wrong-deadbeef.pth"
    with pytest.raises(RuntimeError, match="invalid hash value.*deadbeef"):
        hub.load_state_dict_from_url(url, model_dir=tmp_path, progress=False)
    assert not (tmp_path / "wrong-deadbeef.pth").exists()
    # check_hash=False checks nothing, as in PyTorch
    sd = hub.load_state_dict_from_url(url, model_dir=tmp_path, progress=False, check_hash=False)
    _same(sd, _state_dict())


def test_download_url_to_file(server, tmp_path):
    base, digest = server
    dst = tmp_path / "sub" / "x.pth"
    hub.download_url_to_file(f"{base}/plain.pth", dst, hash_prefix=digest[:10], progress=False)
    assert hashlib.sha256(dst.read_bytes()).hexdigest() == digest
    with pytest.raises(RuntimeError, match="invalid hash value"):
        hub.download_url_to_file(f"{base}/plain.pth", tmp_path / "y.pth", hash_prefix="0000000000", progress=False)
    assert not (tmp_path / "y.pth").exists()


def test_truncated_download(server, tmp_path):
    base, digest = server
    name = f"trunc-{digest[:8]}.pth"
    with pytest.raises(OSError, match="could not download") as info:
        hub.load_state_dict_from_url(f"{base}/{name}", model_dir=tmp_path, progress=False)
    assert str(tmp_path / name) in str(info.value)
    assert not (tmp_path / name).exists()


def test_offline_names_url_and_path(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/resnet-0123abcd.pth"
    with pytest.raises(OSError) as info:
        hub.load_state_dict_from_url(url, model_dir=tmp_path, progress=False)
    message = str(info.value)
    assert url in message and str(tmp_path / "resnet-0123abcd.pth") in message and "by hand" in message


def test_corrupted_cache_is_downloaded_again(server, tmp_path):
    base, digest = server
    name = f"good-{digest[:8]}.pth"
    (tmp_path / name).write_bytes(b"garbage")
    with pytest.warns(UserWarning, match="downloading .* again"):
        sd = hub.load_state_dict_from_url(f"{base}/{name}", model_dir=tmp_path, progress=False)
    _same(sd, _state_dict())
    # opting out loads the cached file as it is
    (tmp_path / name).write_bytes(b"garbage")
    with pytest.raises(Exception):
        hub.load_state_dict_from_url(f"{base}/{name}", model_dir=tmp_path, progress=False, check_hash=False)


def test_placed_by_hand_is_used_offline(tmp_path):
    buf = _payload()
    name = f"manual-{hashlib.sha256(buf).hexdigest()[:8]}.pth"
    (tmp_path / name).write_bytes(buf)
    sd = hub.load_state_dict_from_url(f"http://127.0.0.1:9/{name}", model_dir=tmp_path, progress=False)
    _same(sd, _state_dict())


def test_dirs(tmp_path, monkeypatch):
    monkeypatch.setattr(hub, "_hub_dir", None)
    monkeypatch.delenv("EMBER_HOME", raising=False)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    assert hub.get_dir() == str(tmp_path / "torch" / "hub")
    monkeypatch.setenv("EMBER_HOME", str(tmp_path / "ember"))
    assert hub.get_dir() == str(tmp_path / "ember" / "hub")
    hub.set_dir(tmp_path / "mine")
    assert hub.get_dir() == str(tmp_path / "mine")


def test_default_model_dir(server, tmp_path, monkeypatch):
    base, digest = server
    monkeypatch.setattr(hub, "_hub_dir", str(tmp_path / "h"))
    hub.load_state_dict_from_url(f"{base}/good-{digest[:8]}.pth", progress=False, file_name="renamed.pth")
    assert (tmp_path / "h" / "checkpoints" / "renamed.pth").is_file()
    assert hasattr(ember, "hub")
