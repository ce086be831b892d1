"""TorchRec's dataset helpers: `Batch` (one training batch of a recommendation model),
`safe_cast`, and the DataPipes the dataset readers are built from (`LoadFiles`,
`ReadLinesFromCSV`, `Limit`), on emberdata's IterDataPipe (Ember's torch.utils.data).

Unlike TorchRec, files are opened with Python's `open` (TorchRec goes through iopath's
PathManager; `path_manager_key` is not taken), so paths are local."""
import csv
from dataclasses import dataclass

import ember
from emberdata.datapipes.iter import IterDataPipe

from emberrec.sparse.jagged_tensor import KeyedJaggedTensor

__all__ = ["Batch", "safe_cast", "LoadFiles", "ReadLinesFromCSV", "Limit"]


@dataclass
class Batch:
    dense_features: ember.Tensor
    sparse_features: KeyedJaggedTensor
    labels: ember.Tensor

    def to(self, device, non_blocking=False):
        return Batch(self.dense_features.to(device), self.sparse_features.to(device, non_blocking),
                     self.labels.to(device))

    def pin_memory(self):
        """`self`: a CPU-only build has no accelerator to pin memory for."""
        return self


def safe_cast(val, dest_type, default):
    """`dest_type(val)`, or `default` where `val` does not parse (an empty field, say)."""
    try:
        return dest_type(val)
    except ValueError:
        return default


class LoadFiles(IterDataPipe):
    """(path, open file) for each path of `datapipe`, opened in `mode` ("b", "t", "r", "rb" or
    "rt") with `open_kw` (encoding, newline, ...)."""

    def __init__(self, datapipe, mode="b", length=-1, **open_kw):
        super().__init__()
        if mode not in ("b", "t", "rb", "rt", "r"):
            raise ValueError(f"Invalid mode {mode}")
        self.datapipe = datapipe
        self.mode = "r" + mode if mode in ("b", "t") else mode
        self.length = length
        self.open_kw = open_kw

    def __iter__(self):
        for path in self.datapipe:
            if not isinstance(path, str):
                raise TypeError(f"Expected string type for pathname, but got {type(path)}")
            yield path, open(path, self.mode, **self.open_kw)

    def __len__(self):
        if self.length == -1:
            raise TypeError(f"{type(self).__name__} has no length unless one is given (length=)")
        return self.length


class ReadLinesFromCSV(IterDataPipe):
    """Each row (a list of str) of each (path, text file) of `datapipe`, by `csv.reader(file,
    **kw)` (`delimiter="\\t"` for TSV); the first line of each file is skipped with
    `skip_first_line=True`. Each file is closed once read."""

    def __init__(self, datapipe, skip_first_line=False, **kw):
        super().__init__()
        self.datapipe = datapipe
        self.skip_first_line = skip_first_line
        self.kw = kw

    def __iter__(self):
        for _, file in self.datapipe:
            with file:
                reader = csv.reader(file, **self.kw)
                if self.skip_first_line:
                    next(reader, None)
                yield from reader


class Limit(IterDataPipe):
    """The first `limit` items of `datapipe`."""

    def __init__(self, datapipe, limit):
        super().__init__()
        if not isinstance(limit, int) or limit < 0:
            raise ValueError(f"limit must be a non-negative int, got {limit!r}")
        self.datapipe = datapipe
        self.limit = limit

    def __iter__(self):
        if self.limit == 0:
            return
        for index, item in enumerate(self.datapipe):
            yield item
            if index + 1 >= self.limit:
                return
