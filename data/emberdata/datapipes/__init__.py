"""DataPipes: `emberdata.datapipes.iter` and `emberdata.datapipes.map`."""
from emberdata.datapipes._base import DataChunk, IterDataPipe, MapDataPipe, functional_datapipe
from emberdata.datapipes import iter, map  # noqa: A004  (the submodule names are PyTorch's)
from emberdata.datapipes import graph_settings, utils

__all__ = ["DataChunk", "IterDataPipe", "MapDataPipe", "functional_datapipe", "graph_settings", "iter", "map", "utils"]
