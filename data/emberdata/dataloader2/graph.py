"""torchdata.dataloader2.graph: the graph utilities, defined in `emberdata.graph`."""
from emberdata.graph import find_dps, list_dps, remove_dp, replace_dp, traverse

__all__ = ["find_dps", "list_dps", "remove_dp", "replace_dp", "traverse"]
