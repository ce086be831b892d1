"""Key-value stores shared by the ranks of a DistributedReadingService job.

They carry what the ranks must agree on: each epoch's shuffle seed (from rank 0), the fullsync
votes, and the end-of-job barrier. Two kinds, chosen from the environment by `store_from_env`:

- `TCPStore` (MASTER_ADDR / MASTER_PORT, as torch.distributed's `env://`): rank 0 serves the keys
  over TCP; works across machines.
- `FileStore` (EMBERDATA_STORE): a folder every rank can reach (one machine, or a shared filesystem).

Both answer `set`, `get` (waiting for another rank to set the key), `wait` and `delete_key`;
TCPStore also has torch's `add` and `compare_set`. Gloo/MPI transport comes with Ember's
distributed work; until then the store is the channel.
"""
import os
import socket
import struct
import tempfile
import threading
import time
import urllib.parse
from datetime import timedelta

DEFAULT_TIMEOUT_S = 1800.0  # DistributedReadingService's default (TorchData's default_timeout_in_s)
_STORE_DEFAULT_TIMEOUT = timedelta(seconds=300)  # torch.distributed's stores' default


def _seconds(timeout, owner):
    if isinstance(timeout, timedelta):
        timeout = timeout.total_seconds()
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"{owner}: timeout must be a number of seconds or a timedelta, got {type(timeout).__name__}")
    if timeout < 0:
        raise ValueError(f"{owner}: timeout must be >= 0, got {timeout}")
    return float(timeout)


def _as_bytes(value, owner):
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode()
    raise TypeError(f"{owner}: value must be bytes or str, got {type(value).__name__}")


def _check_key(key, owner):
    if not isinstance(key, str) or not key:
        raise TypeError(f"{owner}: key must be a non-empty str, got {key!r}")
    return key


class FileStore:
    """Keys as files in the folder `path`; writes are atomic (write, then rename), so a reader sees a
    whole value or nothing. Use a fresh folder per job, as with torch.distributed's FileStore."""

    def __init__(self, path, timeout=_STORE_DEFAULT_TIMEOUT):
        if not isinstance(path, str) or not path:
            raise TypeError(f"FileStore: path must be a non-empty str, got {path!r}")
        self.path = path
        self.timeout = _seconds(timeout, "FileStore")
        os.makedirs(path, exist_ok=True)

    def _file(self, key):
        return os.path.join(self.path, urllib.parse.quote(_check_key(key, "FileStore"), safe=""))

    def set(self, key, value):
        data = _as_bytes(value, "FileStore.set")
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, self._file(key))

    def get(self, key, timeout=None):
        """The value of `key`, waiting up to `timeout` seconds (default: the store's) for a rank to set it."""
        timeout = self.timeout if timeout is None else _seconds(timeout, "FileStore.get")
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
                # Nothing to block on in a folder: back off, up to 20 ms between looks.
                time.sleep(delay)
                delay = min(delay * 2, 0.02)

    def wait(self, keys, timeout=None):
        """Returns once every key of `keys` is set; TimeoutError names the first one missing."""
        timeout = self.timeout if timeout is None else _seconds(timeout, "FileStore.wait")
        deadline = time.monotonic() + timeout
        for key in keys:
            self.get(key, max(0.0, deadline - time.monotonic()))

    def delete_key(self, key):
        try:
            os.remove(self._file(key))
        except FileNotFoundError:
            return False
        return True


# TCPStore wire format: a message is a list of byte strings, sent as its length then each string
# with its own length (network order). Requests are [op, *args]; answers [status, *values]. No
# pickle: a store must not run code that a peer sends.
_COUNT = struct.Struct("!I")
_OK, _TIMEOUT = b"ok", b"timeout"
_WORKERS_KEY = "__emberdata_tcpstore_workers"


def _pack(fields):
    parts = [_COUNT.pack(len(fields))]
    for f in fields:
        parts += [_COUNT.pack(len(f)), f]
    return b"".join(parts)


def _recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by the peer")
        buf += chunk
    return bytes(buf)


def _recv_fields(sock):
    (count,) = _COUNT.unpack(_recv_exact(sock, _COUNT.size))
    fields = []
    for _ in range(count):
        (size,) = _COUNT.unpack(_recv_exact(sock, _COUNT.size))
        fields.append(_recv_exact(sock, size))
    return fields


def _ms(seconds):
    return str(int(seconds * 1000)).encode()


class _StoreServer:
    """The keys of a TCPStore, served by rank 0: one thread per connected rank."""

    def __init__(self, port):
        try:
            if socket.has_dualstack_ipv6():
                self._listener = socket.create_server(("", port), family=socket.AF_INET6, dualstack_ipv6=True)
            else:
                self._listener = socket.create_server(("", port))
        except OSError as e:
            raise OSError(e.errno, f"TCPStore: cannot listen on port {port}: {e.strerror} (is another job using it?)") from e
        self.port = self._listener.getsockname()[1]
        self._data = {}
        self._changed = threading.Condition()
        self._connections = []
        self._ops = {b"set": self._set, b"get": self._get, b"add": self._add, b"cas": self._compare_set,
                     b"wait": self._wait, b"delete": self._delete}
        threading.Thread(target=self._accept_loop, name=f"TCPStore-server-{self.port}", daemon=True).start()

    def _accept_loop(self):
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:  # the listener was shut down: the store is closed
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._connections.append(conn)
            threading.Thread(target=self._serve, args=(conn,), name="TCPStore-connection", daemon=True).start()

    def _serve(self, conn):
        with conn:
            while True:
                try:
                    op, *args = _recv_fields(conn)
                    conn.sendall(_pack(self._ops[op](*args)))
                except (OSError, ValueError, KeyError, TypeError):  # the rank left, or spoke another protocol
                    return

    def wait_until(self, predicate, timeout):
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self._data), timeout)

    def _set(self, key, value):
        with self._changed:
            self._data[key] = value
            self._changed.notify_all()
        return [_OK]

    def _get(self, key, timeout_ms):
        with self._changed:
            if not self._changed.wait_for(lambda: key in self._data, int(timeout_ms) / 1000):
                return [_TIMEOUT]
            return [_OK, self._data[key]]

    def _add(self, key, amount):
        with self._changed:
            value = int(self._data.get(key, b"0")) + int(amount)
            self._data[key] = str(value).encode()
            self._changed.notify_all()
        return [_OK, self._data[key]]

    def _compare_set(self, key, expected, desired):
        with self._changed:
            current = self._data.get(key)
            if (current is None and expected == b"") or current == expected:
                self._data[key] = desired
                self._changed.notify_all()
            return [_OK, self._data.get(key, expected)]

    def _wait(self, timeout_ms, *keys):
        with self._changed:
            if self._changed.wait_for(lambda: all(k in self._data for k in keys), int(timeout_ms) / 1000):
                return [_OK]
            return [_TIMEOUT, next(k for k in keys if k not in self._data)]

    def _delete(self, key):
        with self._changed:
            return [_OK, b"1" if self._data.pop(key, None) is not None else b"0"]

    def close(self):
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() blocked in its thread
        except OSError:
            pass
        self._listener.close()
        for conn in self._connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _connect(host, port, timeout):
    deadline = time.monotonic() + timeout
    while True:
        try:
            sock = socket.create_connection((host, port), timeout=max(0.1, deadline - time.monotonic()))
        except OSError as e:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"TCPStore: could not connect to {host}:{port} within {timeout} s ({e}); "
                    "is rank 0 running with MASTER_ADDR/MASTER_PORT pointing at it?"
                ) from None
            time.sleep(0.05)  # rank 0 may not be listening yet: retry until the deadline
            continue
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # small requests: no Nagle delay
        return sock


class TCPStore:
    """torch.distributed.TCPStore's API on a small threaded server: the master (`is_master=True`)
    serves the keys on `port` (all interfaces) and every store, the master's included, is a client.

    With `world_size` and `wait_for_workers`, the master's constructor returns once `world_size`
    stores (itself included) have connected, or raises TimeoutError after `timeout`. `get` and
    `wait` block until the keys are set, up to `timeout` (the store's, or the one given).
    """

    def __init__(self, host_name, port, world_size=None, is_master=False, timeout=_STORE_DEFAULT_TIMEOUT, wait_for_workers=True):
        if not isinstance(host_name, str) or not host_name:
            raise TypeError(f"TCPStore: host_name must be a non-empty str, got {host_name!r}")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port < 65536:
            raise ValueError(f"TCPStore: port must be an int in [0, 65536), got {port!r}")
        if world_size is not None and (isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1):
            raise ValueError(f"TCPStore: world_size must be None or an int >= 1, got {world_size!r}")
        self.host = host_name
        self.timeout = _seconds(timeout, "TCPStore")
        self._server = _StoreServer(port) if is_master else None
        self.port = self._server.port if is_master else port  # port 0: the master picked a free one
        self._lock = threading.Lock()
        try:
            self._sock = _connect(host_name, self.port, self.timeout)
            if world_size is not None and wait_for_workers:
                self.add(_WORKERS_KEY, 1)
                if is_master:
                    self._wait_for_workers(world_size)
        except BaseException:
            self.close()
            raise

    def _wait_for_workers(self, world_size):
        def all_joined(data):
            return int(data.get(_WORKERS_KEY.encode(), b"0")) >= world_size  # the server keeps keys as bytes

        if not self._server.wait_until(all_joined, self.timeout):
            joined = self.add(_WORKERS_KEY, 0)
            raise TimeoutError(
                f"TCPStore: only {joined} of world_size={world_size} ranks connected to port {self.port} "
                f"within {self.timeout} s"
            )

    def _call(self, *fields, wait_s=0.0):
        """Sends one request and returns the answer; `wait_s` is how long the server may wait first."""
        with self._lock:
            try:
                self._sock.settimeout(self.timeout + wait_s)
                self._sock.sendall(_pack([f if isinstance(f, bytes) else f.encode() for f in fields]))
                return _recv_fields(self._sock)
            except socket.timeout:
                raise TimeoutError(f"TCPStore: no answer from {self.host}:{self.port} within {self.timeout + wait_s} s") from None
            except OSError as e:
                raise ConnectionError(
                    f"TCPStore: lost the connection to the store at {self.host}:{self.port} ({e}); has rank 0 exited?"
                ) from None

    def _wait_s(self, timeout, method):
        return self.timeout if timeout is None else _seconds(timeout, f"TCPStore.{method}")

    def set(self, key, value):
        self._call(b"set", _check_key(key, "TCPStore.set"), _as_bytes(value, "TCPStore.set"))

    def get(self, key, timeout=None):
        """The value of `key`, waiting up to `timeout` seconds (default: the store's) for a rank to set it."""
        wait_s = self._wait_s(timeout, "get")
        status, *value = self._call(b"get", _check_key(key, "TCPStore.get"), _ms(wait_s), wait_s=wait_s)
        if status == _TIMEOUT:
            raise TimeoutError(f"TCPStore: key {key!r} was not set within {wait_s} s (store at {self.host}:{self.port})")
        return value[0]

    def add(self, key, amount):
        """Adds `amount` to the integer at `key` (0 when unset) and returns the new value."""
        if isinstance(amount, bool) or not isinstance(amount, int):
            raise TypeError(f"TCPStore.add: amount must be an int, got {type(amount).__name__}")
        return int(self._call(b"add", _check_key(key, "TCPStore.add"), str(amount).encode())[1])

    def compare_set(self, key, expected_value, desired_value):
        """Sets `desired_value` if the key holds `expected_value` (or is unset and `expected_value` is
        empty); returns the value the key holds afterwards."""
        expected = _as_bytes(expected_value, "TCPStore.compare_set")
        desired = _as_bytes(desired_value, "TCPStore.compare_set")
        return self._call(b"cas", _check_key(key, "TCPStore.compare_set"), expected, desired)[1]

    def wait(self, keys, timeout=None):
        """Returns once every key of `keys` is set; TimeoutError names one still missing."""
        keys = [_check_key(k, "TCPStore.wait") for k in keys]
        wait_s = self._wait_s(timeout, "wait")
        status, *missing = self._call(b"wait", _ms(wait_s), *keys, wait_s=wait_s)
        if status == _TIMEOUT:
            raise TimeoutError(f"TCPStore: key {missing[0].decode()!r} was not set within {wait_s} s (store at {self.host}:{self.port})")

    def delete_key(self, key):
        return self._call(b"delete", _check_key(key, "TCPStore.delete_key"))[1] == b"1"

    def close(self):
        """Disconnects; the master also stops serving (other ranks then get ConnectionError)."""
        sock = getattr(self, "_sock", None)
        if sock is not None:
            sock.close()
        if self._server is not None:
            self._server.close()


_TCP_STORES = {}  # one per address in a process, as a process group has one


def store_from_env(rank, world_size, timeout):
    """The store named by the environment: EMBERDATA_STORE (a folder, or file:///folder) if set,
    else a TCPStore at MASTER_ADDR:MASTER_PORT that rank 0 serves."""
    folder = os.environ.get("EMBERDATA_STORE")
    if folder:
        return FileStore(folder[len("file://"):] if folder.startswith("file://") else folder, timeout)
    host, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    if not host or not port:
        raise RuntimeError(
            "DistributedReadingService needs a store shared by the ranks: set MASTER_ADDR and MASTER_PORT "
            "(rank 0 serves a TCPStore there), or EMBERDATA_STORE to a folder every rank can reach, fresh for each job"
        )
    try:
        port = int(port)
    except ValueError:
        raise ValueError(f"MASTER_PORT must be a port number, got {port!r}") from None
    key = (host, port)
    if key not in _TCP_STORES:
        _TCP_STORES[key] = TCPStore(host, port, world_size, is_master=rank == 0, timeout=timeout)
    return _TCP_STORES[key]
