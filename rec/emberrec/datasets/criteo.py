"""TorchRec's Criteo readers: the Criteo 1TB Click Logs (`criteo_terabyte`) and the Kaggle
Display Advertising Challenge (`criteo_kaggle`) TSV files, row by row, and their binary form
(`BinaryCriteoUtils`: TSV to npy files; `InMemoryBinaryCriteoIterDataPipe`: Batches from them).

A TSV row is a label, 13 integer features and 26 categorical features written as 8 hex digits
(32-bit hashes); any field may be empty. The default row mapper gives {"label": int, "int_0":
int, ..., "cat_25": str}, empty integers as 0 and empty categoricals as "". A row with fewer
fields (the Kaggle test set has no label) fills the columns from the right, as TorchRec.

Unlike TorchRec: categorical hashes are kept as the int32 with the same 32 bits (TorchRec's
`np.array(..., dtype=np.int32)` overflows on hashes from 2**31 up with NumPy 2), taken modulo
`hashes` as non-negative ids; files are opened with `open` (no iopath). Not here:
`BinaryCriteoUtils.sparse_to_contiguous` and `shuffle`."""
import os

import numpy as np

import ember
from emberdata import get_worker_info
from emberdata.datapipes.iter import IterDataPipe, Mapper
from emberdata.dataset import IterableDataset

from emberrec.datasets.utils import Batch, LoadFiles, ReadLinesFromCSV, safe_cast
from emberrec.sparse.jagged_tensor import KeyedJaggedTensor

__all__ = [
    "FREQUENCY_THRESHOLD", "INT_FEATURE_COUNT", "CAT_FEATURE_COUNT", "DAYS", "DEFAULT_LABEL_NAME", "DEFAULT_INT_NAMES",
    "DEFAULT_CAT_NAMES", "DEFAULT_COLUMN_NAMES", "TOTAL_TRAINING_SAMPLES", "CriteoIterDataPipe", "criteo_terabyte",
    "criteo_kaggle", "BinaryCriteoUtils", "InMemoryBinaryCriteoIterDataPipe",
]

FREQUENCY_THRESHOLD = 3
INT_FEATURE_COUNT = 13
CAT_FEATURE_COUNT = 26
DAYS = 24
DEFAULT_LABEL_NAME = "label"
DEFAULT_INT_NAMES = [f"int_{i}" for i in range(INT_FEATURE_COUNT)]
DEFAULT_CAT_NAMES = [f"cat_{i}" for i in range(CAT_FEATURE_COUNT)]
DEFAULT_COLUMN_NAMES = [DEFAULT_LABEL_NAME, *DEFAULT_INT_NAMES, *DEFAULT_CAT_NAMES]
TOTAL_TRAINING_SAMPLES = 4195197692  # rows of days 0-22 of the 1TB logs (day 23 is for validation and test)


def _int_or_zero(field):
    return safe_cast(field, int, 0)


def _column_caster(name):
    return str if name in DEFAULT_CAT_NAMES else _int_or_zero


COLUMN_TYPE_CASTERS = [_column_caster(name) for name in DEFAULT_COLUMN_NAMES]


def _default_row_mapper(example):
    """{column name: value}, matching the fields to the columns from the right."""
    start = len(DEFAULT_COLUMN_NAMES) - len(example)
    if start < 0:
        raise ValueError(f"a Criteo row has at most {len(DEFAULT_COLUMN_NAMES)} fields, got {len(example)}")
    return {DEFAULT_COLUMN_NAMES[start + i]: COLUMN_TYPE_CASTERS[start + i](field) for i, field in enumerate(example)}


class CriteoIterDataPipe(IterDataPipe):
    """The rows of Criteo TSV files (`paths`), each through `row_mapper` (the list of fields
    itself when it is None); `open_kw` goes to `open`. In a DataLoader worker, each worker reads
    every num_workers-th file."""

    def __init__(self, paths, *, row_mapper=_default_row_mapper, **open_kw):
        super().__init__()
        if isinstance(paths, str):
            raise TypeError("paths must be an iterable of paths, not one str (use criteo_kaggle for one file)")
        self.paths = paths
        self.row_mapper = row_mapper
        self.open_kw = open_kw

    def __iter__(self):
        paths = self.paths
        worker = get_worker_info()
        if worker is not None:
            paths = [p for i, p in enumerate(paths) if i % worker.num_workers == worker.id]
        datapipe = ReadLinesFromCSV(LoadFiles(paths, mode="r", **self.open_kw), delimiter="\t")
        if self.row_mapper:
            datapipe = Mapper(datapipe, self.row_mapper)
        yield from datapipe


def criteo_terabyte(paths, *, row_mapper=_default_row_mapper, **open_kw):
    """The Criteo 1TB Click Logs (https://ailab.criteo.com/download-criteo-1tb-click-logs-dataset/)
    from the local day files `paths` (`day_0`, ... as TSV), one mapped row at a time."""
    return CriteoIterDataPipe(paths, row_mapper=row_mapper, **open_kw)


def criteo_kaggle(path, *, row_mapper=_default_row_mapper, **open_kw):
    """The Kaggle Display Advertising Challenge set (https://www.kaggle.com/c/criteo-display-ad-challenge/)
    from a local `train.txt` or `test.txt`, one mapped row at a time."""
    return CriteoIterDataPipe((path,), row_mapper=row_mapper, **open_kw)


def _hash(field):
    return int(field, 16) if field else 0


class BinaryCriteoUtils:
    """Criteo in binary (npy) form: one file each of dense features (float32, log(x + 3)),
    categorical hashes (int32) and labels (int32, (rows, 1)) per TSV file."""

    @staticmethod
    def tsv_to_npys(in_file, out_dense_file, out_sparse_file, out_labels_file, dataset_name="criteo_1tb"):
        """Converts one TSV file into the three npy files. The Kaggle test set (`dataset_name`
        "criteo_kaggle" and "test" in the file name) has no labels: they are written as -1."""
        if dataset_name not in ("criteo_1tb", "criteo_kaggle"):
            raise ValueError(f"dataset_name must be 'criteo_1tb' or 'criteo_kaggle', got {dataset_name!r}")
        unlabeled = dataset_name == "criteo_kaggle" and "test" in os.path.basename(in_file)
        first = 0 if unlabeled else 1

        def row_mapper(row):
            if len(row) != first + INT_FEATURE_COUNT + CAT_FEATURE_COUNT:
                raise ValueError(f"{in_file}: a row has {len(row)} fields, expected {first + INT_FEATURE_COUNT + CAT_FEATURE_COUNT}")
            dense = [_int_or_zero(f) for f in row[first:first + INT_FEATURE_COUNT]]
            sparse = [_hash(f) for f in row[first + INT_FEATURE_COUNT:]]
            return dense, sparse, -1 if unlabeled else _int_or_zero(row[0])

        dense, sparse, labels = [], [], []
        for row_dense, row_sparse, label in CriteoIterDataPipe([in_file], row_mapper=row_mapper):
            dense.append(row_dense)
            sparse.append(row_sparse)
            labels.append(label)
        dense = np.log(np.array(dense, np.int64).reshape(-1, INT_FEATURE_COUNT) + 3, dtype=np.float32)
        sparse = np.array(sparse, np.uint32).reshape(-1, CAT_FEATURE_COUNT).view(np.int32)
        labels = np.array(labels, np.int32).reshape(-1, 1)
        for path, array in ((out_dense_file, dense), (out_sparse_file, sparse), (out_labels_file, labels)):
            with open(path, "wb") as out:
                np.save(out, array)

    @staticmethod
    def get_shape_from_npy(path):
        """The shape of an npy file, from its header alone."""
        with open(path, "rb") as file:
            version = np.lib.format.read_magic(file)
            read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _, _ = read_header(file)
            return shape

    @staticmethod
    def get_file_idx_to_row_range(lengths, rank, world_size):
        """{file index: (first row, last row)} (inclusive) of the rows that `rank` of
        `world_size` reads: the same number of rows each (the remainder is dropped), in long
        runs of consecutive rows."""
        if not 0 <= rank < world_size:
            raise ValueError(f"rank must be in [0, world_size), got rank {rank} and world_size {world_size}")
        per_rank = sum(lengths) // world_size
        first, last = rank * per_rank, (rank + 1) * per_rank - 1
        ranges, file_first = {}, 0
        for index, length in enumerate(lengths):
            file_last = file_first + length - 1
            if first <= file_last and last >= file_first:
                ranges[index] = (max(first, file_first) - file_first, min(last, file_last) - file_first)
            file_first = file_last + 1
        return ranges

    @staticmethod
    def load_npy_range(fname, start_row, num_rows, mmap_mode=False):
        """Rows start_row .. start_row + num_rows - 1 of a 2-D npy file."""
        data = np.load(fname, mmap_mode="r")
        if data.ndim != 2:
            raise ValueError(f"load_npy_range needs a 2-D npy file, {fname} has shape {data.shape}")
        total_rows = data.shape[0]
        if not 0 <= start_row < total_rows:
            raise ValueError(f"start_row ({start_row}) is out of bounds. It must be between 0 and {total_rows - 1}, inclusive.")
        if start_row + num_rows > total_rows:
            raise ValueError(f"num_rows ({num_rows}) exceeds number of available rows ({total_rows}) for the given "
                             f"start_row ({start_row}).")
        rows = data[start_row:start_row + num_rows]
        return rows if mmap_mode else np.array(rows)


class InMemoryBinaryCriteoIterDataPipe(IterableDataset):
    """Batches of `batch_size` rows from the binary Criteo files (lists of paths, one per day),
    all held in memory; rank `rank` of `world_size` reads only its share of the rows. Each
    Batch has dense_features (B, 13) float32, sparse_features a KeyedJaggedTensor with one id
    per sample for each of cat_0 .. cat_25 (taken modulo `hashes[i]` when given), labels (B,).
    A last partial batch is dropped; `shuffle_batches` shuffles the rows within each batch."""

    def __init__(self, dense_paths, sparse_paths, labels_paths, batch_size, rank, world_size, shuffle_batches=False,
                 mmap_mode=False, hashes=None):
        super().__init__()
        if not len(dense_paths) == len(sparse_paths) == len(labels_paths):
            raise ValueError("dense_paths, sparse_paths and labels_paths must name as many files each")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        if hashes is not None and len(hashes) != CAT_FEATURE_COUNT:
            raise ValueError(f"hashes must give {CAT_FEATURE_COUNT} sizes, got {len(hashes)}")
        self.batch_size = batch_size
        self.shuffle_batches = shuffle_batches
        self.hashes = None if hashes is None else np.array(hashes, np.int64).reshape(1, CAT_FEATURE_COUNT)
        ranges = BinaryCriteoUtils.get_file_idx_to_row_range(
            [BinaryCriteoUtils.get_shape_from_npy(p)[0] for p in dense_paths], rank, world_size)
        self.dense, self.sparse, self.labels = (
            [BinaryCriteoUtils.load_npy_range(paths[i], a, b - a + 1, mmap_mode) for i, (a, b) in ranges.items()]
            for paths in (dense_paths, sparse_paths, labels_paths))
        self.num_rows_per_file = [len(a) for a in self.dense]
        self.num_batches = sum(self.num_rows_per_file) // batch_size
        self.keys = DEFAULT_CAT_NAMES
        self.lengths = ember.ones(CAT_FEATURE_COUNT * batch_size, dtype=ember.int32)

    def _batch(self, dense, sparse, labels):
        if self.shuffle_batches:
            order = np.random.permutation(len(dense))
            dense, sparse, labels = dense[order], sparse[order], labels[order]
        ids = sparse.astype(np.int64)
        if self.hashes is not None:
            ids %= self.hashes
        return Batch(dense_features=ember.from_numpy(np.ascontiguousarray(dense, np.float32)),
                     sparse_features=KeyedJaggedTensor(self.keys, ember.from_numpy(np.ascontiguousarray(ids.T).reshape(-1)),
                                                       lengths=self.lengths, stride=self.batch_size),
                     labels=ember.from_numpy(np.ascontiguousarray(labels.reshape(-1))))

    def _rows(self, arrays, start):
        """Rows start .. start + batch_size - 1 of the files' arrays read as one: a batch may
        take the end of one file and the start of the next (copied only then)."""
        pieces, file_start = [], 0
        stop = start + self.batch_size
        for array in arrays:
            file_stop = file_start + len(array)
            if file_start < stop and start < file_stop:
                pieces.append(array[max(start, file_start) - file_start:min(stop, file_stop) - file_start])
            file_start = file_stop
        return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)

    def __iter__(self):
        for b in range(self.num_batches):
            start = b * self.batch_size
            yield self._batch(*(self._rows(arrays, start) for arrays in (self.dense, self.sparse, self.labels)))

    def __len__(self):
        return self.num_batches
