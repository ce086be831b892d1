"""S3 DataPipes against a real S3-compatible server: moto in server mode, on 127.0.0.1 only."""
import os
import socket
import threading

import pytest

pytest.importorskip("boto3")
pytest.importorskip("moto.server")

import boto3  # noqa: E402

from emberdata.datapipes.iter import IterableWrapper, S3FileLister, S3FileLoader  # noqa: E402

NUM_KEYS = 2100  # more than two listing pages of 1000
BIG = 5 * 1024 * 1024 + 123


@pytest.fixture(scope="module")
def s3_env():
    """moto's S3 server on 127.0.0.1, started for this module and stopped after it."""
    import logging

    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {
        "AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        client = boto3.client("s3")
        client.create_bucket(Bucket="many")
        # Thousands of keys straight into the server's store: PUTting each over HTTP would take
        # most of the suite's time; listing them (what is under test) still goes over HTTP.
        backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
        for i in range(NUM_KEYS):
            backend.put_object("many", f"k/{i:05d}", str(i).encode())
        client.create_bucket(Bucket="small")
        for key in ("folder/", "folder/a", "other/x", "other/y/z"):
            client.put_object(Bucket="small", Key=key, Body=key.encode())
        client.create_bucket(Bucket="big")
        client.put_object(Bucket="big", Key="blob", Body=bytes(range(256)) * (BIG // 256) + b"t" * (BIG % 256))
        yield client
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_lists_thousands_of_keys_across_pages(s3_env):
    urls = list(IterableWrapper(["s3://many/k/"]).list_files_by_s3())
    assert urls == [f"s3://many/k/{i:05d}" for i in range(NUM_KEYS)]


def test_lists_by_prefix_skipping_folder_keys(s3_env):
    everything = list(S3FileLister(IterableWrapper(["s3://small"])))
    assert everything == ["s3://small/folder/a", "s3://small/other/x", "s3://small/other/y/z"]
    assert list(S3FileLister(IterableWrapper(["s3://small/other/y", "s3://small/folder"]), length=2)) == [
        "s3://small/other/y/z", "s3://small/folder/a"]
    assert len(S3FileLister(IterableWrapper([]), length=4)) == 4


def test_loads_objects(s3_env):
    urls = ["s3://many/k/00007", "s3://small/other/x"]
    for multi in (None, False):
        got = [(u, s.read()) for u, s in IterableWrapper(urls).load_files_by_s3(multi_part_download=multi)]
        assert got == [(urls[0], b"7"), (urls[1], b"other/x")]


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
