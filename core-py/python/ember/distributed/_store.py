"""Key-value stores with torch.distributed's names and semantics, in pure Python (no MPI needed):
`HashStore` (one process), `TCPStore` (a server thread in the master process, every store a
client), `FileStore` (a file every process can reach, locked with flock) and `PrefixStore`.

Ranks use them to find each other and to agree on small values (init_process_group's
rendezvous); tensors travel over MPI. Keys are strings, values bytes (a str is stored as UTF-8);
`get` and `wait` block until the keys are set, up to the store's timeout, then raise
DistStoreError.

Queues (`queue_push`/`queue_pop`/`queue_len`) live beside the keys, as in torch: HashStore,
TCPStore and PrefixStore (over either) have them; FileStore raises NotImplementedError, as
torch's does."""
import collections
import contextlib
import datetime
import fcntl
import os
import socket
import struct
import threading
import time
import weakref

from ember.distributed._work import DistNetworkError, DistStoreError, QueueEmptyError

DEFAULT_TIMEOUT = datetime.timedelta(seconds=300)  # torch's Store::kDefaultTimeout


def _check_key(key, what):
    if not isinstance(key, str):
        raise TypeError(f"{what}: key must be a str, but got {type(key).__name__}")
    return key


def _check_keys(keys, what):
    if isinstance(keys, str) or not isinstance(keys, (list, tuple)):
        raise TypeError(f"{what}: keys must be a list of str, but got {type(keys).__name__}")
    return [_check_key(k, what) for k in keys]


def _as_bytes(value, what):
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode()
    raise TypeError(f"{what}: value must be a str or bytes, but got {type(value).__name__}")


def _check_timeout(timeout, what):
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"{what}: timeout must be a datetime.timedelta, but got {type(timeout).__name__}")
    if timeout < datetime.timedelta(0):
        raise ValueError(f"{what}: timeout must not be negative, but got {timeout}")
    return timeout


def _check_block(block):
    if not isinstance(block, bool):
        raise TypeError(f"queue_pop: block must be a bool, but got {type(block).__name__}")
    return block


def _check_amount(amount):
    if isinstance(amount, bool) or not isinstance(amount, int):
        raise TypeError(f"add: amount must be an int, but got {type(amount).__name__}")
    return amount


def _check_world_size(world_size, what):
    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise ValueError(f"{what}: world_size must be a positive int, but got {world_size!r}")
    return world_size


def _timeout_error(keys, timeout):
    ms = int(timeout.total_seconds() * 1000)
    return DistStoreError(f"wait timeout after {ms}ms, keys: {', '.join(keys)}")


class Store:
    """The base of every store (torch.distributed.Store). Subclasses implement set, get, add,
    compare_set, wait, check, delete_key, num_keys and clone; append, multi_get, multi_set and
    barrier are built on them. The queue operations and list_keys raise NotImplementedError unless
    a subclass provides them, as torch's."""

    def __init__(self, timeout=DEFAULT_TIMEOUT):
        self._timeout = _check_timeout(timeout, type(self).__name__)

    @property
    def timeout(self):
        """How long get and wait block (a timedelta)."""
        return self._timeout

    def set_timeout(self, timeout):
        self._timeout = _check_timeout(timeout, "set_timeout")

    def _wait_timeout(self, timeout):
        return self.timeout if timeout is None else _check_timeout(timeout, "wait")

    def set(self, key, value):
        """Sets `key` to `value` (overwriting)."""
        raise NotImplementedError(f"{type(self).__name__} must implement set")

    def get(self, key):
        """The value of `key` (bytes), waiting up to the timeout for another process to set it."""
        raise NotImplementedError(f"{type(self).__name__} must implement get")

    def add(self, key, amount):
        """Adds `amount` to the integer counter at `key` (created as `amount`); returns the new value."""
        raise NotImplementedError(f"{type(self).__name__} must implement add")

    def compare_set(self, key, expected_value, desired_value):
        """Sets `desired_value` if `key` holds `expected_value` (or is unset and `expected_value`
        is empty); returns the key's value afterwards."""
        raise NotImplementedError(f"{type(self).__name__} must implement compare_set")

    def wait(self, keys, timeout=None):
        """Returns once every key of `keys` is set; raises DistStoreError after `timeout`
        (default: the store's)."""
        raise NotImplementedError(f"{type(self).__name__} must implement wait")

    def check(self, keys):
        """Whether every key of `keys` is set (without waiting)."""
        raise NotImplementedError(f"{type(self).__name__} must implement check")

    def delete_key(self, key):
        """Deletes `key`; True if it was set."""
        raise NotImplementedError(f"{type(self).__name__} must implement delete_key")

    def num_keys(self):
        """The number of keys set."""
        raise NotImplementedError(f"{type(self).__name__} must implement num_keys")

    def clone(self):
        """Another handle on the same store, safe to use from another thread."""
        raise NotImplementedError(f"{type(self).__name__} must implement clone")

    def queue_push(self, key, value):
        """Appends `value` to the queue `key` (queues are apart from the keys of set/get, but
        `wait` and `check` see a queue that is not empty)."""
        raise NotImplementedError("queue support is not implemented.")

    def queue_pop(self, key, block=True):
        """Takes the oldest value of the queue `key`. With `block`, waits up to the store's
        timeout for one (then DistStoreError); else raises QueueEmptyError at once."""
        raise NotImplementedError("queue support is not implemented.")

    def queue_len(self, key):
        """How many values the queue `key` holds (0 for a queue never pushed to)."""
        raise NotImplementedError("queue support is not implemented.")

    def list_keys(self):
        """The keys set (not the queues)."""
        raise NotImplementedError("listKeys support is not implemented.")

    def barrier(self, key, world_size, timeout=None):
        """Returns once `world_size` callers have reached the barrier `key` (each key serves one
        barrier); raises DistStoreError after `timeout` (default: the store's)."""
        _check_key(key, "barrier")
        _check_world_size(world_size, "barrier")
        timeout = self._wait_timeout(timeout)
        if self.add(f"{key}/num_members", 1) == world_size:
            self.set(f"{key}/last_member", b"1")
        self.wait([f"{key}/last_member"], timeout)

    def append(self, key, value):
        """Appends `value` to the value of `key` (set to `value` when unset). This fallback, built
        on compare_set as torch's, cannot tell an unset key from one already holding exactly
        `value`; the stores here override it with one atomic step."""
        value = _as_bytes(value, "append")
        expected = value
        current = self.compare_set(key, b"", expected)
        while current != expected:
            expected = current + value
            current = self.compare_set(key, current, expected)

    def multi_get(self, keys):
        """The values of `keys`, waiting for every one to be set."""
        keys = _check_keys(keys, "multi_get")
        self.wait(keys)
        return [self.get(k) for k in keys]

    def multi_set(self, keys, values):
        """Sets each key of `keys` to the matching value of `values`."""
        keys = _check_keys(keys, "multi_set")
        if len(keys) != len(values):
            raise ValueError(f"multi_set: got {len(keys)} keys but {len(values)} values")
        for key, value in zip(keys, values):
            self.set(key, value)

    def has_extended_api(self):
        """Whether append, multi_get and multi_set are the store's own (atomic, one step) rather
        than the fallbacks above (False here, as torch's base)."""
        return False


class _Table:
    """The semantics every store shares, on a dict of bytes; `changed` lists the keys written."""

    def __init__(self, data=None):
        self.data = {} if data is None else data
        self.changed = set()

    def set(self, key, value):
        self.data[key] = value
        self.changed.add(key)

    def add(self, key, amount):
        current = self.data.get(key)
        if current is None:
            total = amount
        else:
            try:
                total = int(current) + amount
            except ValueError:
                raise ValueError(f"add: the value of key '{key}' is not an integer ({current[:40]!r})") from None
        self.set(key, str(total).encode())
        return total

    def compare_set(self, key, expected, desired):
        current = self.data.get(key)
        if current is None:
            if expected:  # as torch: an unset key answers the expected value, and stays unset
                return expected
            self.set(key, desired)
            return desired
        if current == expected:
            self.set(key, desired)
            return desired
        return current

    def append(self, key, value):
        self.set(key, self.data.get(key, b"") + value)

    def delete(self, key):
        if key not in self.data:
            return False
        del self.data[key]
        self.changed.add(key)
        return True

    def missing(self, keys):
        return [k for k in keys if k not in self.data]


class HashStore(Store):
    """A store in this process's memory, shared by its threads (torch.distributed.HashStore)."""

    def __init__(self):
        super().__init__()
        self._table = _Table()
        self._queues = collections.defaultdict(collections.deque)
        self._changed = threading.Condition()

    def _update(self, operation, *args):
        with self._changed:
            result = operation(*args)
            self._changed.notify_all()
        return result

    def _missing(self, keys):
        """The keys of `keys` neither set nor naming a queue that holds a value (torch's rule)."""
        return [k for k in self._table.missing(keys) if not self._queues.get(k)]

    def _wait_locked(self, keys, timeout):
        if not self._changed.wait_for(lambda: not self._missing(keys), timeout.total_seconds()):
            raise _timeout_error(self._missing(keys), timeout)

    def set(self, key, value):
        self._update(self._table.set, _check_key(key, "set"), _as_bytes(value, "set"))

    def get(self, key):
        return self._get(_check_key(key, "get"), self.timeout)

    def _get(self, key, timeout):
        with self._changed:
            self._wait_locked([key], timeout)
            return self._table.data[key]

    def add(self, key, amount):
        return self._update(self._table.add, _check_key(key, "add"), _check_amount(amount))

    def compare_set(self, key, expected_value, desired_value):
        return self._update(self._table.compare_set, _check_key(key, "compare_set"),
                            _as_bytes(expected_value, "compare_set"), _as_bytes(desired_value, "compare_set"))

    def append(self, key, value):
        self._update(self._table.append, _check_key(key, "append"), _as_bytes(value, "append"))

    def wait(self, keys, timeout=None):
        keys = _check_keys(keys, "wait")
        with self._changed:
            self._wait_locked(keys, self._wait_timeout(timeout))

    def check(self, keys):
        keys = _check_keys(keys, "check")
        with self._changed:
            return not self._missing(keys)

    def delete_key(self, key):
        return self._update(self._table.delete, _check_key(key, "delete_key"))

    def num_keys(self):
        with self._changed:
            return len(self._table.data)

    def list_keys(self):
        with self._changed:
            return list(self._table.data)

    def clone(self):
        return self  # one object in one process: every thread may share it

    def queue_push(self, key, value):
        key, value = _check_key(key, "queue_push"), _as_bytes(value, "queue_push")
        with self._changed:  # the queue is looked up under the lock: a pop may drop an emptied one
            self._queues[key].append(value)
            self._changed.notify_all()

    def queue_pop(self, key, block=True):
        return self._queue_pop(_check_key(key, "queue_pop"), _check_block(block), self.timeout)

    def _queue_pop(self, key, block, timeout):
        # Waiting and taking under one lock: a value another waiter took first is never
        # reported as an empty queue.
        with self._changed:
            if block:
                self._wait_locked([key], timeout)
            queue = self._queues.get(key)
            if not queue:
                raise QueueEmptyError("queue is empty")
            value = queue.popleft()
            if not queue:
                del self._queues[key]
            return value

    def queue_len(self, key):
        key = _check_key(key, "queue_len")
        with self._changed:
            return len(self._queues.get(key, ()))

    def has_extended_api(self):
        return True


# ---- TCPStore ----
# Wire format: a message is a list of byte strings, sent as its count, then each string with its
# length (network order). Requests are [command, *arguments]; answers [status, *values]. No
# pickle: a store must never run code that a peer sends.
_COUNT = struct.Struct("!I")
_OK, _ERROR = b"ok", b"error"
_INIT_KEY = "init/"   # counts the stores that joined (torch's name; user keys start with "/")
_REPLY_SLACK_S = 10.0  # how much longer than the server's own wait a client waits for an answer


def _pack(fields):
    parts = [_COUNT.pack(len(fields))]
    for field in fields:
        parts += [_COUNT.pack(len(field)), field]
    return b"".join(parts)


def _recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the peer closed the connection")
        buf += chunk
    return bytes(buf)


def _recv_fields(sock):
    (count,) = _COUNT.unpack(_recv_exact(sock, _COUNT.size))
    fields = []
    for _ in range(count):
        (size,) = _COUNT.unpack(_recv_exact(sock, _COUNT.size))
        fields.append(_recv_exact(sock, size))
    return fields


def _ms(timeout):
    return str(int(timeout.total_seconds() * 1000)).encode()


def _from_ms(field):
    return datetime.timedelta(milliseconds=int(field))


class _Server:
    """The master's side of a TCPStore: a HashStore served over TCP on every interface, one thread
    per connected client. Shared by the multi-tenant stores of a process that name its port."""

    _by_port = {}
    _lock = threading.RLock()  # reentrant: a TCPStore's finalizer may run (GC) while acquire holds it

    def __init__(self, listener):
        self._listener = listener
        self.port = listener.getsockname()[1]
        self.keys = HashStore()
        self._connections = []
        self._users = 0
        self._commands = {
            b"set": lambda k, v: self.keys.set(k.decode(), v),
            b"get": lambda k, ms: [self.keys._get(k.decode(), _from_ms(ms))],
            b"add": lambda k, n: [str(self.keys.add(k.decode(), int(n))).encode()],
            b"cas": lambda k, e, d: [self.keys.compare_set(k.decode(), e, d)],
            b"append": lambda k, v: self.keys.append(k.decode(), v),
            b"wait": lambda ms, *ks: self.keys.wait([k.decode() for k in ks], _from_ms(ms)),
            b"check": lambda *ks: [b"1" if self.keys.check([k.decode() for k in ks]) else b"0"],
            b"delete": lambda k: [b"1" if self.keys.delete_key(k.decode()) else b"0"],
            b"num_keys": lambda: [str(self.keys.num_keys()).encode()],
            b"list_keys": lambda: [k.encode() for k in self.keys.list_keys()],
            b"queue_push": lambda k, v: self.keys.queue_push(k.decode(), v),
            b"queue_pop": lambda k, block, ms: [self.keys._queue_pop(k.decode(), block == b"1", _from_ms(ms))],
            b"queue_len": lambda k: [str(self.keys.queue_len(k.decode())).encode()],
        }
        threading.Thread(target=self._accept_loop, name=f"TCPStore-server-{self.port}", daemon=True).start()

    @classmethod
    def acquire(cls, port, multi_tenant, listen_fd):
        """The server for `port`: this process's existing one when multi-tenant, else a new one."""
        with cls._lock:
            server = cls._by_port.get(port) if multi_tenant and port else None
            if server is None:
                server = cls(cls._listen(port, listen_fd))
                if multi_tenant:
                    cls._by_port[server.port] = server
            server._users += 1
            return server

    @staticmethod
    def _listen(port, listen_fd):
        if listen_fd is not None:
            return socket.socket(fileno=os.dup(listen_fd))
        try:
            if socket.has_dualstack_ipv6():
                return socket.create_server(("", port), family=socket.AF_INET6, dualstack_ipv6=True)
            return socket.create_server(("", port))
        except OSError as error:
            raise DistNetworkError(f"The server socket has failed to listen on any local network address. "
                                   f"port: {port}, {error.strerror} (is another job using it?)") from None

    def release(self):
        with self._lock:
            self._users -= 1
            if self._users:
                return
            if self._by_port.get(self.port) is self:
                del self._by_port[self.port]
        self._close()

    def _accept_loop(self):
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:  # the listener was closed: the store is gone
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._connections.append(conn)
            threading.Thread(target=self._serve, args=(conn,), name="TCPStore-connection", daemon=True).start()

    def _serve(self, conn):
        with conn:
            answering = True
            while answering:
                answering = self._answer(conn)
        self._connections.remove(conn)

    def _answer(self, conn):
        """Answers one request; False once the client has left (or spoke another protocol)."""
        try:
            command, *args = _recv_fields(conn)
        except (OSError, ValueError, struct.error):
            return False
        try:
            answer = [_OK] + (self._commands[command](*args) or [])
        except (DistStoreError, ValueError, TypeError, KeyError) as error:
            answer = [_ERROR, type(error).__name__.encode(), str(error).encode()]
        try:
            conn.sendall(_pack(answer))
        except OSError:
            return False
        return True

    def _close(self):
        with contextlib.suppress(OSError):  # already closed by the peer
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() blocked in its thread
        self._listener.close()
        for conn in list(self._connections):
            with contextlib.suppress(OSError):  # already closed by the client
                conn.shutdown(socket.SHUT_RDWR)


_REMOTE_ERRORS = {b"DistStoreError": DistStoreError, b"QueueEmptyError": QueueEmptyError, b"ValueError": ValueError,
                  b"TypeError": TypeError}


class TCPStore(Store):
    """A store served over TCP by the master (torch.distributed.TCPStore): `is_master=True` starts
    the server on `port` (0 picks a free one: read `.port`), on every interface, in a thread of
    this process; every TCPStore, the master's included, is a client that connects to
    `host_name:port`, retrying until `timeout`.

    With `world_size` and `wait_for_workers`, every store counts itself in the key "init/" and the
    master's constructor returns once `world_size` stores joined (so `num_keys` is one more than
    the keys you set, as in torch; a negative `world_size` means none, as torch's). `multi_tenant=True`
    lets the TCPStores of one process share the server of a port. `master_listen_fd` is an already
    listening socket for the master.

    `use_libuv`: torch has two servers, the libuv one (its default) and the legacy one, which
    lacks the queue operations. Ember has neither: its server is one Python thread per client,
    with the libuv server's whole protocol. So `use_libuv` picks which of torch's behaviours the
    store presents: True (the default) serves everything; False behaves as torch's legacy server,
    whose queue operations raise NotImplementedError. `libuvBackend` reports the choice, as
    torch's reports the option it was given (a client trusts its own option there too); it never
    means that libuv runs. rendezvous' tcp:// and env:// read it from the URL's `use_libuv=0|1`,
    else the USE_LIBUV environment variable (default 1), as torch."""

    def __init__(self, host_name, port, world_size=None, is_master=False, timeout=DEFAULT_TIMEOUT,
                 wait_for_workers=True, multi_tenant=False, master_listen_fd=None, use_libuv=True):
        super().__init__(timeout)
        if not isinstance(host_name, str) or not host_name:
            raise TypeError(f"TCPStore: host_name must be a non-empty str, but got {host_name!r}")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port < 2 ** 16:
            raise ValueError(f"port must have value from 0 to 65535 but was {port!r}.")
        if world_size is not None and (isinstance(world_size, bool) or not isinstance(world_size, int)):
            raise TypeError(f"TCPStore: world_size must be None or an int, but got {world_size!r}")
        if world_size == 0:
            raise ValueError("TCPStore world size cannot be 0")
        if not is_master and port == 0:
            raise ValueError("TCPStore: a client needs the master's port (port 0 only lets the master pick one)")
        if not isinstance(use_libuv, bool):
            raise TypeError(f"TCPStore: use_libuv must be a bool, but got {type(use_libuv).__name__}")
        world_size = world_size if world_size is None or world_size > 0 else None
        self.host = host_name
        self._use_libuv = use_libuv
        self._lock = threading.Lock()
        self._sock = None
        self._server = _Server.acquire(port, multi_tenant, master_listen_fd) if is_master else None
        self.port = self._server.port if is_master else port
        if self._server is not None:
            weakref.finalize(self, self._server.release)
        self._sock = self._connect()
        weakref.finalize(self, self._sock.close)
        if world_size is not None and wait_for_workers:
            self._call(b"add", _INIT_KEY.encode(), b"1")
            if is_master:
                self._wait_for_workers(world_size)

    def _connect(self):
        deadline = time.monotonic() + self.timeout.total_seconds()
        delay = 0.01
        while True:
            try:
                sock = socket.create_connection((self.host, self.port), timeout=max(0.1, deadline - time.monotonic()))
            except OSError:
                if time.monotonic() > deadline:
                    ms = int(self.timeout.total_seconds() * 1000)
                    raise DistNetworkError(f"The client socket has timed out after {ms}ms while trying to connect "
                                           f"to ({self.host}, {self.port}).") from None
                time.sleep(delay)  # the master may not be listening yet
                delay = min(delay * 2, 0.5)
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # small requests: no Nagle delay
            return sock

    def _wait_for_workers(self, world_size):
        deadline = time.monotonic() + self.timeout.total_seconds()
        while True:
            joined = int(self._call(b"add", _INIT_KEY.encode(), b"0")[0])
            if joined >= world_size:
                return
            if time.monotonic() > deadline:
                raise DistStoreError(f"Timed out after {self.timeout.total_seconds():g} seconds waiting for clients. "
                                     f"{joined}/{world_size} clients joined.")
            time.sleep(0.01)

    def _call(self, *fields, server_wait=None):
        """Sends one request; returns the answer's values. `server_wait` is how long the server
        may block on it."""
        wait_s = _REPLY_SLACK_S + (server_wait.total_seconds() if server_wait is not None else 0.0)
        with self._lock:
            try:
                self._sock.settimeout(wait_s)
                self._sock.sendall(_pack(list(fields)))
                status, *values = _recv_fields(self._sock)
            except socket.timeout:
                raise DistNetworkError(f"TCPStore: no answer from the store at ({self.host}, {self.port}) "
                                       f"within {wait_s:g} s") from None
            except OSError as error:
                raise DistNetworkError(f"TCPStore: lost the connection to the store at ({self.host}, {self.port}) "
                                       f"({error}); has the master's process ended?") from None
        if status == _ERROR:
            raise _REMOTE_ERRORS.get(values[0], DistStoreError)(values[1].decode())
        return values

    @staticmethod
    def _wire(key, what):
        return ("/" + _check_key(key, what)).encode()  # torch's prefix: user keys never meet "init/"

    def set(self, key, value):
        self._call(b"set", self._wire(key, "set"), _as_bytes(value, "set"))

    def get(self, key):
        return self._call(b"get", self._wire(key, "get"), _ms(self.timeout), server_wait=self.timeout)[0]

    def add(self, key, amount):
        return int(self._call(b"add", self._wire(key, "add"), str(_check_amount(amount)).encode())[0])

    def compare_set(self, key, expected_value, desired_value):
        return self._call(b"cas", self._wire(key, "compare_set"), _as_bytes(expected_value, "compare_set"),
                          _as_bytes(desired_value, "compare_set"))[0]

    def append(self, key, value):
        self._call(b"append", self._wire(key, "append"), _as_bytes(value, "append"))

    def wait(self, keys, timeout=None):
        keys = [self._wire(k, "wait") for k in _check_keys(keys, "wait")]
        timeout = self._wait_timeout(timeout)
        self._call(b"wait", _ms(timeout), *keys, server_wait=timeout)

    def check(self, keys):
        return self._call(b"check", *[self._wire(k, "check") for k in _check_keys(keys, "check")])[0] == b"1"

    def delete_key(self, key):
        return self._call(b"delete", self._wire(key, "delete_key"))[0] == b"1"

    def num_keys(self):
        return int(self._call(b"num_keys")[0])

    @property
    def libuvBackend(self):  # noqa: N802 (torch's name)
        """Whether the store presents torch's libuv server (see the class's docstring: the
        `use_libuv` it was made with; Ember runs no libuv)."""
        return self._use_libuv

    def has_extended_api(self):
        return True

    def list_keys(self):
        # Keys set through TCPStores carry the "/" prefix; "init/" (the join counter) is not listed.
        return [k[1:].decode() for k in self._call(b"list_keys") if k.startswith(b"/")]

    def clone(self):
        """A new client of the same server (its own connection), as torch's."""
        return TCPStore(self.host, self.port, is_master=False, timeout=self.timeout, wait_for_workers=False,
                        use_libuv=self._use_libuv)

    def _check_queues(self):
        if not self._use_libuv:
            raise NotImplementedError("queues not implemented on legacy TCPStore backend")

    def queue_push(self, key, value):
        self._check_queues()
        self._call(b"queue_push", self._wire(key, "queue_push"), _as_bytes(value, "queue_push"))

    def queue_pop(self, key, block=True):
        self._check_queues()
        key, block = self._wire(key, "queue_pop"), _check_block(block)
        # The server waits and takes in one step, so the reply may take up to the timeout.
        return self._call(b"queue_pop", key, b"1" if block else b"0", _ms(self.timeout),
                          server_wait=self.timeout if block else None)[0]

    def queue_len(self, key):
        self._check_queues()
        return int(self._call(b"queue_len", self._wire(key, "queue_len"))[0])


# ---- FileStore ----
# The file is a log of records, appended under an exclusive flock: b"S" key value (set) or b"D"
# key (delete), each string with its length. Each FileStore keeps the keys it has read and where
# it stopped, and replays only the records appended since.
_LENGTH = struct.Struct("!Q")
_USERS_KEY, _DONE_KEY = "\0users", "\0done"  # bookkeeping; user keys start with "/"


def _record(kind, key, value=None):
    parts = [kind, _LENGTH.pack(len(key)), key]
    if value is not None:
        parts += [_LENGTH.pack(len(value)), value]
    return b"".join(parts)


def _replay(raw, data):
    """Applies the records of `raw` to the dict `data`."""
    at = 0
    while at < len(raw):
        kind = raw[at:at + 1]
        (size,) = _LENGTH.unpack_from(raw, at + 1)
        key = raw[at + 9:at + 9 + size].decode()
        at += 9 + size
        if kind == b"S":
            (size,) = _LENGTH.unpack_from(raw, at)
            data[key] = raw[at + 8:at + 8 + size]
            at += 8 + size
        else:
            data.pop(key, None)


class _Replayed:
    """The keys of a FileStore's file as far as `position`, where the next reading starts."""

    def __init__(self):
        self.data, self.position = {}, 0


@contextlib.contextmanager
def _locked_table(path, replayed=None, create=True, patience=None):
    """The file's keys as a _Table, under an exclusive lock (waiting for it at most `patience`
    seconds when given, else TimeoutError); what the block changes is appended. `replayed`
    (updated here) saves reading the records it has already seen."""
    replayed = replayed or _Replayed()
    fd = os.open(path, os.O_RDWR | (os.O_CREAT if create else 0), 0o644)
    try:
        _flock(fd, patience)
        with os.fdopen(os.dup(fd), "r+b") as file:
            end = file.seek(0, os.SEEK_END)
            if end < replayed.position:  # the file was removed and made again: start over
                replayed.data, replayed.position = {}, 0
            file.seek(replayed.position)
            _replay(file.read(), replayed.data)
            table = _Table(replayed.data)
            try:
                yield table
            except BaseException:
                replayed.data, replayed.position = {}, 0  # the block may have changed keys it did not write
                raise
            log = b"".join(_record(b"S", k.encode(), table.data[k]) if k in table.data else _record(b"D", k.encode())
                           for k in sorted(table.changed))
            file.seek(0, os.SEEK_END)
            file.write(log)
            file.flush()
            replayed.position = file.tell()
    finally:
        os.close(fd)  # also releases the lock


def _flock(fd, patience):
    if patience is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return
    deadline = time.monotonic() + patience
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise TimeoutError("the file stayed locked") from None
            time.sleep(0.01)


def _leave_file_store(path, world_size):
    """One user of the file is done; the last of `world_size` users removes it (as torch). Runs
    as a finalizer, maybe while this very thread holds the file's lock (a FileStore collected in
    the middle of another's operation): so it waits for the lock a little only, and otherwise
    leaves the file as it is."""
    # Gone already (another user removed it) or locked too long: the file stays as it is.
    with contextlib.suppress(FileNotFoundError, TimeoutError):
        with _locked_table(path, create=False, patience=1.0) as table:
            done = table.add(_DONE_KEY, 1)
            users = table.add(_USERS_KEY, -1)
        if users == 0 and world_size >= 0 and done >= world_size:
            os.remove(path)


class FileStore(Store):
    """A store in the file `file_name`, shared by the processes that can reach it (one machine, or
    a shared filesystem) (torch.distributed.FileStore). With `world_size` (default -1: unknown),
    the file is removed once that many FileStores of it are gone; else it stays, and a new
    FileStore of the same file sees its keys. Use a fresh file per job."""

    _FIRST_POLL_S, _POLL_S = 0.0005, 0.01

    def __init__(self, file_name, world_size=-1):
        super().__init__()
        if not isinstance(file_name, str) or not file_name:
            raise TypeError(f"FileStore: file_name must be a non-empty str, but got {file_name!r}")
        if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size == 0 or world_size < -1:
            raise ValueError(f"FileStore: world_size must be a positive int or -1, but got {world_size!r}")
        self.path = file_name
        self.world_size = world_size
        self._replayed = _Replayed()
        with self._table() as table:
            table.add(_USERS_KEY, 1)
        weakref.finalize(self, _leave_file_store, file_name, world_size)

    def _table(self):
        return _locked_table(self.path, self._replayed)

    def _update(self, operation, *args):
        with self._table() as table:
            return getattr(table, operation)(*args)

    def _read(self):
        with self._table() as table:
            return table.data

    def _wait_for(self, keys, timeout):
        deadline = time.monotonic() + timeout.total_seconds()
        pause = self._FIRST_POLL_S
        while True:
            data = self._read()
            missing = [k for k in keys if k not in data]
            if not missing:
                return data
            if time.monotonic() > deadline:
                raise _timeout_error(missing, timeout)
            # Nothing to block on in a file: look again, soon at first (a peer is often about
            # to write the key), then every _POLL_S as torch's FileStore.
            time.sleep(pause)
            pause = min(2 * pause, self._POLL_S)

    @staticmethod
    def _user(key, what):
        return "/" + _check_key(key, what)

    def set(self, key, value):
        self._update("set", self._user(key, "set"), _as_bytes(value, "set"))

    def get(self, key):
        key = self._user(key, "get")
        return self._wait_for([key], self.timeout)[key]

    def add(self, key, amount):
        return self._update("add", self._user(key, "add"), _check_amount(amount))

    def compare_set(self, key, expected_value, desired_value):
        return self._update("compare_set", self._user(key, "compare_set"), _as_bytes(expected_value, "compare_set"),
                            _as_bytes(desired_value, "compare_set"))

    def append(self, key, value):
        self._update("append", self._user(key, "append"), _as_bytes(value, "append"))

    def wait(self, keys, timeout=None):
        self._wait_for([self._user(k, "wait") for k in _check_keys(keys, "wait")], self._wait_timeout(timeout))

    def check(self, keys):
        data = self._read()
        return all(self._user(k, "check") in data for k in _check_keys(keys, "check"))

    def delete_key(self, key):
        return self._update("delete", self._user(key, "delete_key"))

    def num_keys(self):
        return sum(1 for k in self._read() if k.startswith("/"))

    def clone(self):
        """Another FileStore of the same file (one more user of it, as torch's)."""
        return FileStore(self.path, self.world_size)


class PrefixStore(Store):
    """`store` with every key put under "`prefix`/" (torch.distributed.PrefixStore), so that
    several users of one store cannot overwrite each other's keys."""

    def __init__(self, prefix, store):
        if not isinstance(prefix, str):
            raise TypeError(f"PrefixStore: prefix must be a str, but got {type(prefix).__name__}")
        if not isinstance(store, Store):
            raise TypeError(f"PrefixStore: store must be a Store, but got {type(store).__name__}")
        self._prefix = prefix
        self._store = store

    @property
    def underlying_store(self):
        return self._store

    @property
    def _underlying_non_prefix_store(self):
        """The store under every layer of PrefixStore (torch's private helper, used by its users)."""
        store = self._store
        while isinstance(store, PrefixStore):
            store = store.underlying_store
        return store

    @property
    def timeout(self):
        return self._store.timeout

    def set_timeout(self, timeout):
        self._store.set_timeout(timeout)

    def _key(self, key, what):
        return f"{self._prefix}/{_check_key(key, what)}"

    def set(self, key, value):
        self._store.set(self._key(key, "set"), value)

    def get(self, key):
        return self._store.get(self._key(key, "get"))

    def add(self, key, amount):
        return self._store.add(self._key(key, "add"), amount)

    def compare_set(self, key, expected_value, desired_value):
        return self._store.compare_set(self._key(key, "compare_set"), expected_value, desired_value)

    def append(self, key, value):
        self._store.append(self._key(key, "append"), value)

    def wait(self, keys, timeout=None):
        self._store.wait([self._key(k, "wait") for k in _check_keys(keys, "wait")], timeout)

    def check(self, keys):
        return self._store.check([self._key(k, "check") for k in _check_keys(keys, "check")])

    def delete_key(self, key):
        return self._store.delete_key(self._key(key, "delete_key"))

    def num_keys(self):
        return self._store.num_keys()

    def list_keys(self):
        start = f"{self._prefix}/"
        return [k[len(start):] for k in self._store.list_keys() if k.startswith(start)]

    def clone(self):
        return PrefixStore(self._prefix, self._store.clone())

    def has_extended_api(self):
        return self._store.has_extended_api()

    def queue_push(self, key, value):
        self._store.queue_push(self._key(key, "queue_push"), value)

    def queue_pop(self, key, block=True):
        return self._store.queue_pop(self._key(key, "queue_pop"), block)

    def queue_len(self, key):
        return self._store.queue_len(self._key(key, "queue_len"))
