"""The DataPipe graph (torch.utils.data.graph): `traverse`, and the edits DataLoader2 makes to it.

`traverse(dp)` returns `{dp: {source: {...}, ...}}` (PyTorch 1.12's shape). A DataPipe's sources are
the DataPipes held in its attributes, directly or inside lists, tuples and dicts of DataPipes.
"""
from emberdata.datapipes._base import IterDataPipe, MapDataPipe

_DATAPIPES = (IterDataPipe, MapDataPipe)


def _sources(datapipe):
    found = []

    def visit(value):
        if isinstance(value, _DATAPIPES):
            if not any(value is f for f in found):
                found.append(value)
        elif isinstance(value, (list, tuple)) and value and isinstance(value[0], _DATAPIPES):
            # Only containers of DataPipes (Zipper's inputs ...): a wrapped list of a million
            # samples must not be walked on every epoch.
            for v in value:
                visit(v)
        elif isinstance(value, dict) and value and isinstance(next(iter(value.values())), _DATAPIPES):
            for v in value.values():
                visit(v)

    for value in vars(datapipe).values():
        visit(value)
    return found


def traverse(datapipe, only_datapipe=False):
    """The graph below `datapipe` as nested dicts keyed by DataPipe (each DataPipe appears once per path).

    `only_datapipe` is accepted for PyTorch compatibility: the graph always holds DataPipes only.
    """
    if not isinstance(datapipe, _DATAPIPES):
        raise TypeError(f"traverse(): datapipe must be an IterDataPipe or MapDataPipe, got {type(datapipe).__name__}")
    return {datapipe: _traverse_sources(datapipe, (datapipe,))}


def _traverse_sources(datapipe, path):
    graph = {}
    for src in _sources(datapipe):
        if any(src is p for p in path):  # a cycle (e.g. a Forker child pointing back): stop here
            continue
        graph[src] = _traverse_sources(src, path + (src,))
    return graph


def list_dps(graph):
    """Every DataPipe of `graph` once, parents before their sources, in a deterministic order."""
    seen, out = set(), []

    def walk(g):
        for dp, sub in g.items():
            if id(dp) not in seen:
                seen.add(id(dp))
                out.append(dp)
            walk(sub)

    walk(graph)
    return out


def find_dps(graph, dp_type):
    """The DataPipes of `graph` that are instances of `dp_type`."""
    return [dp for dp in list_dps(graph) if isinstance(dp, dp_type)]


def replace_dp(graph, old_datapipe, new_datapipe):
    """Points every parent of `old_datapipe` at `new_datapipe`; returns the new graph of the root."""
    root = next(iter(graph))
    if root is old_datapipe:
        return traverse(new_datapipe)
    for dp in list_dps(graph):
        for name, value in vars(dp).items():
            setattr(dp, name, _swap(value, old_datapipe, new_datapipe))
    return traverse(root)


def remove_dp(graph, datapipe):
    """Removes a one-source `datapipe` from the graph, linking its parents to its source."""
    sources = _sources(datapipe)
    if len(sources) != 1:
        raise RuntimeError(f"remove_dp(): only a DataPipe with exactly one source can be removed, {datapipe!r} has {len(sources)}")
    return replace_dp(graph, datapipe, sources[0])


def _swap(value, old, new):
    if value is old:
        return new
    if isinstance(value, list):
        return [_swap(v, old, new) for v in value]
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(_swap(v, old, new) for v in value)
    if isinstance(value, dict):
        return {k: _swap(v, old, new) for k, v in value.items()}
    return value
