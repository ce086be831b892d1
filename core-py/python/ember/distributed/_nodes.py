"""One MPI world out of the MPI jobs of several nodes.

`python -m ember.distributed.run --nnodes N` starts one mpiexec job per node (as torchrun starts
one agent per node), so each node's processes share a COMM_WORLD but not the other nodes'. The
launchers meet first through a TCPStore (the rendezvous endpoint) and pass its address to their
processes as MASTER_ADDR/MASTER_PORT, with GROUP_RANK (this node) and GROUP_WORLD_SIZE (nodes).
Here the nodes' jobs join in node order with MPI's own dynamic-process calls: the nodes joined so
far open a port, publish it in the store, accept the next node and merge with it, so the world's
ranks follow (node, local rank), the numbering the launcher gave in RANK."""
import os
import threading

from ember.distributed._store import TCPStore


def joined_world(MPI, timeout):
    """COMM_WORLD, or the world of every node's job when the launcher started several nodes."""
    local = MPI.COMM_WORLD
    nodes = int(os.environ.get("GROUP_WORLD_SIZE", "1"))
    if nodes <= 1 or os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True":
        return local
    node = int(os.environ["GROUP_RANK"])
    # Each node's local rank 0 talks to the store: it publishes or reads the ports.
    lead = local.Get_rank() == 0
    store = TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), timeout=timeout) if lead else None
    seconds = timeout.total_seconds()
    world = local
    if node > 0:
        port = store.get(f"ember/join/{node}").decode() if lead else None
        with _deadline(seconds, f"joining node {node}'s processes to nodes 0-{node - 1}"):
            world = _merge(local.Connect(port, root=0), after=True)
    for later in range(node + 1, nodes):
        port = MPI.Open_port() if world.Get_rank() == 0 else None  # node 0's lead
        if port is not None:
            store.set(f"ember/join/{later}", port)
        with _deadline(seconds, f"waiting for node {later}'s processes to join"):
            world = _merge(world.Accept(port, root=0), after=False)
        if port is not None:
            MPI.Close_port(port)
    return world


def _merge(intercomm, after):
    world = intercomm.Merge(high=after)
    intercomm.Free()
    return world


class _deadline:
    """Ends the process with a message when an MPI call that has no timeout of its own (accepting
    a node whose processes died) is still blocked after `seconds`."""

    def __init__(self, seconds, what):
        self.timer = threading.Timer(seconds, self._expire, args=(seconds, what))
        self.timer.daemon = True

    def _expire(self, seconds, what):
        os.write(2, f"ember.distributed: init_process_group timed out after {seconds:g} s {what}\n".encode())
        os._exit(1)

    def __enter__(self):
        self.timer.start()

    def __exit__(self, *exc):
        self.timer.cancel()
