"""Rendezvous with torch.distributed's rules: an `init_method` URL names a handler by its scheme
("tcp://host:port", "file:///path", "env://"), and the handler yields (store, rank, world_size).

init_process_group runs the tcp:// and file:// handlers (and any registered with
`register_rendezvous_handler`) to build the group's store; MPI has already started and numbered
the processes, so it checks that the ranks agree (see distributed_c10d.init_process_group)."""
import numbers
import os
from urllib.parse import urlparse, urlunparse

from ember.distributed._store import FileStore, TCPStore
from ember.distributed.constants import default_pg_timeout

_handlers = {}

__all__ = ["register_rendezvous_handler", "rendezvous"]


def register_rendezvous_handler(scheme, handler):
    """Registers `handler`, a generator function `handler(url, **kwargs)` yielding
    (store, rank, world_size), for URLs of `scheme`."""
    if scheme in _handlers:
        raise RuntimeError(f"Rendezvous handler for {scheme}:// already registered")
    _handlers[scheme] = handler


def query_dict(query):
    """"rank=0&world_size=2" -> {"rank": "0", "world_size": "2"}."""
    pairs = [pair.split("=", 1) for pair in query.split("&") if pair]
    if any(len(pair) != 2 for pair in pairs):
        raise ValueError(f"Error initializing ember.distributed: malformed URL query {query!r} (expected key=value pairs)")
    return dict(pairs)


def _with_node_arguments(url, rank, world_size):
    """`url` with `rank` and `world_size` (when not -1) added to its query, which must not hold them already."""
    if rank == -1 and world_size == -1:
        return url
    result = urlparse(url)
    query = query_dict(result.query)
    if "rank" in query or "world_size" in query:
        raise ValueError(f"The url: {url} has node-specific arguments(rank, world_size) already.")
    if rank != -1:
        query["rank"] = str(rank)
    if world_size != -1:
        query["world_size"] = str(world_size)
    return urlunparse(result._replace(query="&".join(f"{k}={v}" for k, v in query.items())))


def rendezvous(url, rank=-1, world_size=-1, **kwargs):
    """The rendezvous iterator of `url`'s handler: `next()` of it gives (store, rank, world_size).
    `rank`/`world_size`, when given, are added to the URL's query; keyword arguments (`timeout`)
    go to the handler."""
    if not isinstance(url, str):
        raise RuntimeError(f"`url` must be a string. {type(url)}: {url}")
    for name, value in (("rank", rank), ("world_size", world_size)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise RuntimeError(f"`{name}` must be an integer. {value}")
    url = _with_node_arguments(url, rank, world_size)
    scheme = urlparse(url).scheme
    if scheme not in _handlers:
        raise RuntimeError(f"No rendezvous handler for {scheme}://")
    return _handlers[scheme](url, **kwargs)


def _error(method, message):
    return ValueError(f"Error initializing ember.distributed using {method} rendezvous: {message}")


def _int_argument(method, query, name, missing):
    if name not in query:
        raise _error(method, missing)
    try:
        return int(query[name])
    except ValueError:
        raise _error(method, f"{name} must be an integer, but got {query[name]!r}") from None


def _node_arguments(method, query):
    return (_int_argument(method, query, "rank", "rank parameter missing"),
            _int_argument(method, query, "world_size", "world size parameter missing"))


def _use_libuv(query):
    """torch's rule: the URL's use_libuv=1|0, else USE_LIBUV (default "1"); see TCPStore."""
    return query.get("use_libuv", os.environ.get("USE_LIBUV", "1")) == "1"


def _tcp_store(host, port, rank, world_size, timeout, query):
    """Rank 0 serves the store (multi-tenant, as torch: other stores of the process may share it)."""
    if not 0 <= port < 2 ** 16:
        raise ValueError(f"port must have value from 0 to 65535 but was {port}.")
    return TCPStore(host, port, world_size, rank == 0, timeout, multi_tenant=True, use_libuv=_use_libuv(query))


def _file_rendezvous_handler(url, **kwargs):
    result = urlparse(url)
    if not result.path:
        raise _error("file://", "path missing")
    rank, world_size = _node_arguments("file://", query_dict(result.query))
    yield FileStore(result.path, world_size), rank, world_size
    raise RuntimeError("Unable to perform rerendezvous using file:// method")


def _tcp_rendezvous_handler(url, timeout=default_pg_timeout, **kwargs):
    result = urlparse(url)
    if not result.port:
        raise _error("tcp://", "port number missing")
    query = query_dict(result.query)
    rank, world_size = _node_arguments("tcp://", query)
    yield _tcp_store(result.hostname, result.port, rank, world_size, timeout, query), rank, world_size
    raise RuntimeError("Unable to perform re-rendezvous using tcp:// method")


def _env_rendezvous_handler(url, timeout=default_pg_timeout, **kwargs):
    """RANK, WORLD_SIZE (unless in the URL), MASTER_ADDR and MASTER_PORT from the environment;
    rank 0 serves a TCPStore there. (init_process_group's env:// does not come here: MPI has done
    that rendezvous, so it opens no store.)"""
    def from_env(name):
        value = os.environ.get(name)
        if not value:
            raise _error("env://", f"environment variable {name} expected, but not set")
        return value

    query = query_dict(urlparse(url).query)
    rank = int(query["rank"]) if "rank" in query else int(from_env("RANK"))
    world_size = int(query["world_size"]) if "world_size" in query else int(from_env("WORLD_SIZE"))
    host, port = from_env("MASTER_ADDR"), int(from_env("MASTER_PORT"))
    yield _tcp_store(host, port, rank, world_size, timeout, query), rank, world_size
    raise RuntimeError("Unable to perform re-rendezvous using env:// method")


register_rendezvous_handler("tcp", _tcp_rendezvous_handler)
register_rendezvous_handler("env", _env_rendezvous_handler)
register_rendezvous_handler("file", _file_rendezvous_handler)
