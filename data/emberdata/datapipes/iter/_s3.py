"""S3FileLister and S3FileLoader on boto3 (TorchData 0.4's S3 beta, without its C++ extension).

Endpoint, credentials and region come from the usual AWS environment and config files
(`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `~/.aws/config`, ...); `region` overrides the region.
`request_timeout_ms` bounds every request (connect and read) and turns retries off, so a server
that never answers gives a TimeoutError instead of a hang.
"""
import collections
import functools
import io
import os
from concurrent.futures import ThreadPoolExecutor

from emberdata.datapipes._base import IterDataPipe, check_datapipe, check_int, functional_datapipe
from emberdata.datapipes.utils import StreamWrapper

DEFAULT_PART_SIZE = 8 * 1024 * 1024
MAX_PARTS_IN_FLIGHT = 4


def _boto():
    try:
        import boto3
        import botocore
        import botocore.config
        import botocore.exceptions
    except ImportError as e:
        raise ImportError("the S3 DataPipes need `boto3`: pip install 'emberdata[s3]'") from e
    return boto3, botocore


# What decides which server and identity a client talks to: a change in any of them needs a new client.
_CLIENT_ENV = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
               "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "AWS_REGION", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE")


def _client(region, request_timeout_ms):
    return _cached_client(region, request_timeout_ms, tuple(os.environ.get(k) for k in _CLIENT_ENV))


@functools.lru_cache(maxsize=8)
def _cached_client(region, request_timeout_ms, _env):
    """Clients are thread-safe and slow to build (they load service models): one per setting."""
    boto3, botocore = _boto()
    options = {}
    if request_timeout_ms > 0:
        seconds = request_timeout_ms / 1000
        options.update(connect_timeout=seconds, read_timeout=seconds, retries={"total_max_attempts": 1})
    config = botocore.config.Config(**options)
    return boto3.session.Session().client("s3", region_name=region or None, config=config)


def parse_s3_url(url):
    """`s3://bucket/key` -> `(bucket, key)`."""
    if not isinstance(url, str) or not url.startswith("s3://"):
        raise ValueError(f"expected an S3 URL 's3://bucket/key', got {url!r}")
    bucket, _, key = url[len("s3://"):].partition("/")
    if not bucket:
        raise ValueError(f"expected an S3 URL 's3://bucket/key', got {url!r} (no bucket)")
    return bucket, key


def _translate(error, url, request_timeout_ms):
    """boto errors as the Python exceptions a user expects: FileNotFoundError, TimeoutError ..."""
    _, botocore = _boto()
    exc = botocore.exceptions
    if isinstance(error, (exc.ReadTimeoutError, exc.ConnectTimeoutError)):
        return TimeoutError(f"S3 request for {url} got no answer within request_timeout_ms={request_timeout_ms}")
    if isinstance(error, exc.EndpointConnectionError):
        return ConnectionError(f"S3 endpoint unreachable for {url}: {error}")
    if isinstance(error, exc.ClientError):
        code = str(error.response.get("Error", {}).get("Code", ""))
        bucket, _ = parse_s3_url(url)
        if code == "NoSuchBucket":
            return FileNotFoundError(f"S3 bucket {bucket!r} does not exist (while reading {url})")
        if code in ("NoSuchKey", "404", "NotFound"):
            return FileNotFoundError(f"S3 object {url} does not exist")
        if code in ("AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
            return PermissionError(f"S3 access denied for {url}: {code}")
        return OSError(f"S3 request for {url} failed: {code} {error}")
    return error


def _check_timeout(request_timeout_ms, name):
    check_int(request_timeout_ms, f"{name}: request_timeout_ms")
    if request_timeout_ms == 0 or request_timeout_ms < -1:
        raise ValueError(f"{name}: request_timeout_ms must be -1 (default) or > 0, got {request_timeout_ms}")
    return request_timeout_ms


@functional_datapipe("list_files_by_s3")
class S3FileLister(IterDataPipe):
    """The object URLs under each `s3://bucket/prefix`, page by page, skipping 'folder/' keys."""

    def __init__(self, source_datapipe, length=-1, request_timeout_ms=-1, region=""):
        self.source_datapipe = check_datapipe(source_datapipe, "S3FileLister: source_datapipe")
        self.length = check_int(length, "S3FileLister: length", minimum=-1)
        self.request_timeout_ms = _check_timeout(request_timeout_ms, "S3FileLister")
        self.region = region
        _boto()

    def __iter__(self):
        client = _client(self.region, self.request_timeout_ms)
        for url in self.source_datapipe:
            bucket, prefix = parse_s3_url(url)
            pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
            try:
                for page in pages:
                    for obj in page.get("Contents", ()):
                        if not obj["Key"].endswith("/"):
                            yield f"s3://{bucket}/{obj['Key']}"
            except Exception as e:
                raise _translate(e, url, self.request_timeout_ms) from e

    def __len__(self):
        if self.length == -1:
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
        return self.length


class _RangedStream(io.RawIOBase):
    """Reads an object as ranged GETs of `part_size` bytes, at most `max_in_flight` parts at once.

    Memory stays below `max_in_flight * part_size` whatever the object's size.
    """

    def __init__(self, fetch_range, size, part_size, max_in_flight):
        super().__init__()
        self._fetch_range = fetch_range
        self._size, self._part_size, self._max_in_flight = size, part_size, max_in_flight
        self._pool = ThreadPoolExecutor(max_in_flight, thread_name_prefix="emberdata-s3")
        self._pending = collections.deque()
        self._next_offset = 0
        self._current = memoryview(b"")
        self._submit()

    def _submit(self):
        while len(self._pending) < self._max_in_flight and self._next_offset < self._size:
            end = min(self._size, self._next_offset + self._part_size) - 1
            self._pending.append(self._pool.submit(self._fetch_range, self._next_offset, end))
            self._next_offset = end + 1

    def _advance(self):
        """Moves to the next part; False at the end of the object."""
        while not self._current:
            if not self._pending:
                return False
            self._current = memoryview(self._pending.popleft().result())
            self._submit()
        return True

    def readable(self):
        return True

    def readinto(self, buffer):
        if not self._advance():
            return 0
        n = min(len(buffer), len(self._current))
        buffer[:n] = self._current[:n]
        self._current = self._current[n:]
        return n

    def read(self, size=-1):
        if size is None or size < 0:
            chunks = []
            while self._advance():
                chunks.append(bytes(self._current))
                self._current = memoryview(b"")
            return b"".join(chunks)
        return super().read(size)

    def close(self):
        self._pool.shutdown(wait=False, cancel_futures=True)
        super().close()


@functional_datapipe("load_files_by_s3")
class S3FileLoader(IterDataPipe):
    """`(url, stream)` for each `s3://bucket/key`.

    `multi_part_download` (default True) reads through parallel ranged GETs of `buffer_size` bytes
    (default 8 MiB, at most 4 in flight); False reads one GET, streamed (TorchData ignores False;
    Ember honours it).
    """

    def __init__(self, source_datapipe, request_timeout_ms=-1, region="", buffer_size=None, multi_part_download=None):
        self.source_datapipe = check_datapipe(source_datapipe, "S3FileLoader: source_datapipe")
        self.request_timeout_ms = _check_timeout(request_timeout_ms, "S3FileLoader")
        self.region = region
        self.buffer_size = check_int(buffer_size, "S3FileLoader: buffer_size", minimum=1, allow_none=True)
        self.multi_part_download = True if multi_part_download is None else bool(multi_part_download)
        _boto()

    def _open(self, client, url):
        bucket, key = parse_s3_url(url)
        if not key:
            raise ValueError(f"S3FileLoader: {url!r} names a bucket, not an object")
        if not self.multi_part_download:
            return client.get_object(Bucket=bucket, Key=key)["Body"]
        size = client.head_object(Bucket=bucket, Key=key)["ContentLength"]

        def fetch_range(start, end):
            try:
                return client.get_object(Bucket=bucket, Key=key, Range=f"bytes={start}-{end}")["Body"].read()
            except Exception as e:
                raise _translate(e, url, self.request_timeout_ms) from e

        return _RangedStream(fetch_range, size, self.buffer_size or DEFAULT_PART_SIZE, MAX_PARTS_IN_FLIGHT)

    def __iter__(self):
        client = _client(self.region, self.request_timeout_ms)
        for url in self.source_datapipe:
            try:
                stream = self._open(client, url)
            except Exception as e:
                error = _translate(e, url, self.request_timeout_ms)
                if error is e:
                    raise
                raise error from e
            yield url, StreamWrapper(stream)
