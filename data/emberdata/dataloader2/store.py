"""FileStore: a key-value store in a shared folder, for ranks on one machine (or a shared filesystem).

It carries what DistributedReadingService must agree on across ranks: each epoch's shuffle seed
(from rank 0) and the fullsync votes. Writes are atomic (write, then rename), so a reader sees a
whole value or nothing. Use a fresh folder per job, as with torch.distributed's FileStore.
"""
import os
import tempfile
import time
import urllib.parse

DEFAULT_TIMEOUT_S = 1800.0


class FileStore:
    def __init__(self, path):
        if not isinstance(path, str) or not path:
            raise TypeError(f"FileStore: path must be a non-empty str, got {path!r}")
        self.path = path
        os.makedirs(path, exist_ok=True)

    @classmethod
    def from_env(cls):
        """The store named by EMBERDATA_STORE ('file:///dir' or a directory path)."""
        url = os.environ.get("EMBERDATA_STORE")
        if not url:
            raise RuntimeError(
                "DistributedReadingService needs a store shared by the ranks: set EMBERDATA_STORE to a "
                "directory (or file:///directory) that every rank can reach, fresh for each job"
            )
        return cls(url[len("file://"):] if url.startswith("file://") else url)

    def _file(self, key):
        return os.path.join(self.path, urllib.parse.quote(key, safe=""))

    def set(self, key, value):
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(value if isinstance(value, bytes) else str(value).encode())
        os.replace(tmp, self._file(key))

    def get(self, key, timeout=DEFAULT_TIMEOUT_S):
        """The value of `key`, waiting up to `timeout` seconds for another rank to set it."""
        path = self._file(key)
        deadline = time.monotonic() + timeout
        delay = 0.0005
        while True:
            try:
                with open(path, "rb") as f:
                    return f.read()
            except FileNotFoundError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"FileStore: key {key!r} was not set within {timeout} s (in {self.path})") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.02)

    def delete_key(self, key):
        try:
            os.remove(self._file(key))
        except FileNotFoundError:
            pass
