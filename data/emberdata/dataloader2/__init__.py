"""DataLoader2 and its reading services (torchdata.dataloader2)."""
from emberdata.dataloader2.dataloader2 import DataLoader2
from emberdata.dataloader2.reading_service import (
    DistributedReadingService,
    MultiProcessingReadingService,
    ReadingServiceInterface,
)
from emberdata.dataloader2.store import FileStore, TCPStore

__all__ = ["DataLoader2", "DistributedReadingService", "FileStore", "MultiProcessingReadingService", "ReadingServiceInterface",
           "TCPStore"]
