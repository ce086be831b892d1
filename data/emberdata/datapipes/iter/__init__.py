"""IterDataPipes (`emberdata.datapipes.iter`), under PyTorch 1.12 / TorchData 0.4 names."""
from emberdata.datapipes._base import IterDataPipe
from emberdata.datapipes.iter._basic import (
    BucketBatcher,
    Batcher,
    Collator,
    Concater,
    Cycler,
    Enumerator,
    Filter,
    Grouper,
    Header,
    InBatchShuffler,
    IterableWrapper,
    LengthSetter,
    Mapper,
    MapToIterConverter,
    Multiplexer,
    Sampler,
    ShardingFilter,
    Shuffler,
    UnBatcher,
    Zipper,
)
from emberdata.datapipes.iter._fileio import (
    CompressionType,
    CSVDictParser,
    CSVParser,
    DataFrameMaker,
    Decompressor,
    FileLister,
    FileOpener,
    FSSpecFileLister,
    FSSpecFileOpener,
    FSSpecSaver,
    HttpReader,
    JsonParser,
    LineReader,
    ParquetDataFrameLoader,
    Saver,
    StreamReader,
    TarArchiveLoader,
    ZipArchiveLoader,
    register_parquet_loader,
)
from emberdata.datapipes.iter._s3 import S3FileLister, S3FileLoader
from emberdata.datapipes.iter._split import Demultiplexer, Forker

# PyTorch 1.12's deprecated name for FileOpener.
FileLoader = FileOpener
