"""S3 DataPipes against a real S3-compatible server: moto in server mode, on 127.0.0.1 only."""
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("boto3")
pytest.importorskip("moto.server")

import boto3  # noqa: E402

from emberdata.datapipes.iter import IterableWrapper, S3FileLister, S3FileLoader  # noqa: E402

NUM_KEYS = 2100  # more than two listing pages of 1000
BIG = 5 * 1024 * 1024 + 123


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_up(url, proc):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"moto server exited early with code {proc.returncode}")
        try:
            urllib.request.urlopen(url + "/moto-api/", timeout=1)
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("moto server did not start within 60 s")


@pytest.fixture(scope="module")
def s3_env():
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    env = {
        "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        _wait_up(endpoint, proc)
        client = boto3.client("s3")
        client.create_bucket(Bucket="many")
        client.put_object(Bucket="many", Key="folder/", Body=b"")
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda i: client.put_object(Bucket="many", Key=f"k/{i:05d}", Body=str(i).encode()), range(NUM_KEYS)))
        client.put_object(Bucket="many", Key="other/x", Body=b"x")
        client.create_bucket(Bucket="big")
        client.put_object(Bucket="big", Key="blob", Body=bytes(range(256)) * (BIG // 256) + b"t" * (BIG % 256))
        yield client
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_lists_thousands_of_keys_across_pages(s3_env):
    urls = list(IterableWrapper(["s3://many/k/"]).list_files_by_s3())
    assert len(urls) == NUM_KEYS and urls[0] == "s3://many/k/00000" and urls[-1] == f"s3://many/k/{NUM_KEYS - 1:05d}"
    everything = list(S3FileLister(IterableWrapper(["s3://many"])))
    assert "s3://many/folder/" not in everything and len(everything) == NUM_KEYS + 1
    assert list(S3FileLister(IterableWrapper(["s3://many/other"]), length=1)) == ["s3://many/other/x"]
    assert len(S3FileLister(IterableWrapper([]), length=4)) == 4


def test_loads_objects(s3_env):
    urls = ["s3://many/k/00007", "s3://many/k/00123"]
    for multi in (None, False):
        got = [(u, s.read()) for u, s in IterableWrapper(urls).load_files_by_s3(multi_part_download=multi)]
        assert got == [(urls[0], b"7"), (urls[1], b"123")]


@pytest.mark.parametrize("multi_part", [True, False])
def test_large_object_in_parts(s3_env, multi_part):
    expected = s3_env.get_object(Bucket="big", Key="blob")["Body"].read()
    (url, stream), = S3FileLoader(IterableWrapper(["s3://big/blob"]), buffer_size=1024 * 1024, multi_part_download=multi_part)
    head = stream.read(10)
    data = head + stream.read()
    assert len(data) == BIG and data == expected


def test_multi_part_keeps_a_bounded_number_of_parts(s3_env, monkeypatch):
    from emberdata.datapipes.iter import _s3

    peak, lock = [0], threading.Lock()
    real = _s3._RangedStream._submit

    def counting_submit(self):
        real(self)
        with lock:
            peak[0] = max(peak[0], len(self._pending))

    monkeypatch.setattr(_s3._RangedStream, "_submit", counting_submit)
    (_, stream), = S3FileLoader(IterableWrapper(["s3://big/blob"]), buffer_size=256 * 1024)
    assert len(stream.read()) == BIG
    assert 1 < peak[0] <= _s3.MAX_PARTS_IN_FLIGHT


def test_missing_bucket_and_key_are_clear(s3_env):
    with pytest.raises(FileNotFoundError, match="bucket 'nope' does not exist"):
        list(IterableWrapper(["s3://nope/x"]).list_files_by_s3())
    with pytest.raises(FileNotFoundError, match="s3://many/absent does not exist"):
        list(IterableWrapper(["s3://many/absent"]).load_files_by_s3())
    with pytest.raises(FileNotFoundError, match="s3://many/absent does not exist"):
        list(IterableWrapper(["s3://many/absent"]).load_files_by_s3(multi_part_download=False))
    with pytest.raises(ValueError, match="expected an S3 URL"):
        list(IterableWrapper(["http://x/y"]).list_files_by_s3())
    with pytest.raises(ValueError, match="names a bucket"):
        list(IterableWrapper(["s3://many"]).load_files_by_s3())
    with pytest.raises(ValueError, match="request_timeout_ms"):
        S3FileLister(IterableWrapper([]), request_timeout_ms=0)


@pytest.fixture
def silent_server(monkeypatch):
    """A loopback socket that accepts connections and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    accepted = []
    stop = threading.Event()

    def accept():
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(sock.accept()[0])
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    for k, v in {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{sock.getsockname()[1]}", "AWS_ACCESS_KEY_ID": "t",
                 "AWS_SECRET_ACCESS_KEY": "t", "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
                 "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull}.items():
        monkeypatch.setenv(k, v)
    yield
    stop.set()
    thread.join()
    for c in accepted:
        c.close()
    sock.close()


def test_timeout_against_a_server_that_never_answers(silent_server):
    with pytest.raises(TimeoutError, match="request_timeout_ms=300"):
        list(IterableWrapper(["s3://b/p"]).list_files_by_s3(request_timeout_ms=300))
    with pytest.raises(TimeoutError, match="no answer"):
        list(IterableWrapper(["s3://b/k"]).load_files_by_s3(request_timeout_ms=300))
