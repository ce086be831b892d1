"""The store shared by the ranks of a DistributedReadingService job that runs without a process
group: it carries each epoch's shuffle seed (from rank 0), the fullsync votes and the end-of-job
barrier. The stores are ember.distributed's (torch.distributed's TCPStore and FileStore, pure
Python: no MPI needed); `store_from_env` picks one from the environment as torch's `env://`:

- EMBERDATA_STORE (a folder, or file:///folder): a FileStore in the file `emberdata-store` of
  that folder, which every rank can reach (one machine, or a shared filesystem). The last rank to
  end removes the file.
- else MASTER_ADDR / MASTER_PORT: a TCPStore that rank 0 serves on MASTER_PORT; works across machines.
"""
import os

from ember.distributed import FileStore, TCPStore

__all__ = ["FileStore", "TCPStore", "store_from_env"]

STORE_FILE = "emberdata-store"

_STORES = {}  # one per location in a process, as a process group has one


def store_from_env(rank, world_size, timeout):
    """This rank's store for the job named by the environment (see the module's doc); `timeout`
    (a timedelta) bounds connecting and waiting for the other ranks."""
    folder = os.environ.get("EMBERDATA_STORE")
    if folder:
        return _file_store(folder.removeprefix("file://"), world_size, timeout)
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
    key = ("tcp", host, port)
    if key not in _STORES:
        _STORES[key] = TCPStore(host, port, world_size, is_master=rank == 0, timeout=timeout)
    return _STORES[key]


def _file_store(folder, world_size, timeout):
    # The FileStore counts the ranks that are done with the file by the FileStores that are gone:
    # so one per rank, kept for the process's life.
    path = os.path.join(folder, STORE_FILE)
    key = ("file", os.path.abspath(path))
    if key not in _STORES:
        os.makedirs(folder, exist_ok=True)
        store = FileStore(path, world_size)
        store.set_timeout(timeout)
        _STORES[key] = store
    return _STORES[key]
