"""emberdata: TorchData 0.4 / torch.utils.data (PyTorch 1.12) on ember tensors.

`DataLoader` and its samplers and datasets, `DataLoader2` with reading services, and DataPipes
(`emberdata.datapipes.iter`, `emberdata.datapipes.map`) including S3 on boto3. See README.md.
"""
from emberdata._collate import default_collate, default_convert
from emberdata._worker import WorkerInfo, get_worker_info
from emberdata.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)
from emberdata.datapipes import DataChunk, IterDataPipe, MapDataPipe, functional_datapipe
from emberdata import datapipes
from emberdata.sampler import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from emberdata.dataloader import DataLoader
from emberdata.dataloader2 import DataLoader2, DistributedReadingService, MultiProcessingReadingService

__version__ = "0.1.0"
