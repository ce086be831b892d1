"""DataLoader2 and its reading services (torchdata.dataloader2)."""
from emberdata.dataloader2.dataloader2 import DataLoader2
from emberdata.dataloader2.reading_service import (
    DistributedReadingService,
    MultiProcessingReadingService,
    ReadingServiceInterface,
)

__all__ = ["DataLoader2", "DistributedReadingService", "FileStore", "MultiProcessingReadingService", "ReadingServiceInterface",
           "TCPStore"]


def __getattr__(name):
    # FileStore and TCPStore are ember.distributed's: imported on first use, as importing
    # ember.distributed takes ~0.1 s that most users of emberdata never need.
    if name in ("FileStore", "TCPStore"):
        from emberdata.dataloader2 import store

        return getattr(store, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
