"""emberrec.datasets on small files written here in the datasets' real formats: Criteo TSV
(label, 13 ints, 26 hex hashes, any field empty), its binary npy form, MovieLens CSV (quoted
titles with commas), and RandomRecDataset."""
import numpy as np
import pytest

import ember
from emberdata import DataLoader
from emberrec.datasets.criteo import (
    CAT_FEATURE_COUNT, DEFAULT_CAT_NAMES, DEFAULT_COLUMN_NAMES, DEFAULT_INT_NAMES, DEFAULT_LABEL_NAME, INT_FEATURE_COUNT,
    BinaryCriteoUtils, InMemoryBinaryCriteoIterDataPipe, criteo_kaggle, criteo_terabyte)
from emberrec.datasets.movielens import movielens_20m, movielens_25m
from emberrec.datasets.random import RandomRecDataset
from emberrec.datasets.utils import Limit


def criteo_rows(rng, n, labeled=True):
    """Rows as Criteo writes them: missing ints and hashes are empty fields; hashes use the
    whole 32 bits."""
    rows = []
    for _ in range(n):
        ints = [str(v) if rng.random() > 0.2 else "" for v in rng.integers(-2, 1000, INT_FEATURE_COUNT)]
        cats = [f"{v:08x}" if rng.random() > 0.2 else "" for v in rng.integers(0, 2**32, CAT_FEATURE_COUNT, dtype=np.uint64)]
        rows.append(([str(rng.integers(0, 2))] if labeled else []) + ints + cats)
    return rows


def write_tsv(path, rows):
    path.write_text("".join("\t".join(row) + "\n" for row in rows))
    return str(path)


def test_criteo_column_names():
    assert (INT_FEATURE_COUNT, CAT_FEATURE_COUNT, DEFAULT_LABEL_NAME) == (13, 26, "label")
    assert DEFAULT_INT_NAMES[0] == "int_0" and DEFAULT_CAT_NAMES[-1] == "cat_25"
    assert DEFAULT_COLUMN_NAMES == ["label", *DEFAULT_INT_NAMES, *DEFAULT_CAT_NAMES]


def test_criteo_terabyte_reads_every_row_of_every_file(tmp_path):
    rng = np.random.default_rng(0)
    days = [criteo_rows(rng, 5), criteo_rows(rng, 3)]
    paths = [write_tsv(tmp_path / f"day_{i}", rows) for i, rows in enumerate(days)]
    read = list(criteo_terabyte(paths))
    assert len(read) == 8
    for got, row in zip(read, days[0] + days[1]):
        assert list(got) == DEFAULT_COLUMN_NAMES
        assert got["label"] == int(row[0])
        assert [got[n] for n in DEFAULT_INT_NAMES] == [int(v) if v else 0 for v in row[1:14]]
        assert [got[n] for n in DEFAULT_CAT_NAMES] == row[14:]
    raw = next(iter(criteo_terabyte(paths, row_mapper=None)))
    assert raw == days[0][0]


def test_criteo_kaggle_test_set_without_labels(tmp_path):
    rows = criteo_rows(np.random.default_rng(1), 4, labeled=False)
    first = next(iter(criteo_kaggle(write_tsv(tmp_path / "test.txt", rows))))
    assert "label" not in first and first["cat_25"] == rows[0][-1]
    assert len(list(Limit(criteo_kaggle(str(tmp_path / "test.txt")), 3))) == 3
    with pytest.raises(TypeError, match="iterable of paths"):
        criteo_terabyte(str(tmp_path / "test.txt"))
    with pytest.raises(FileNotFoundError):
        list(criteo_kaggle(str(tmp_path / "missing.tsv")))


def test_criteo_rows_split_among_dataloader_workers(tmp_path):
    rng = np.random.default_rng(2)
    paths = [write_tsv(tmp_path / f"day_{i}", criteo_rows(rng, 2)) for i in range(4)]
    labels = sorted(row["int_0"] for row in criteo_terabyte(paths))
    loader = DataLoader(criteo_terabyte(paths), batch_size=None, num_workers=2)
    assert sorted(row["int_0"] for row in loader) == labels


def test_binary_criteo_round_trip(tmp_path):
    rng = np.random.default_rng(3)
    rows = criteo_rows(rng, 7)
    npys = [str(tmp_path / f"day_0_{kind}.npy") for kind in ("dense", "sparse", "labels")]
    BinaryCriteoUtils.tsv_to_npys(write_tsv(tmp_path / "day_0.tsv", rows), *npys)
    dense, sparse, labels = (np.load(p) for p in npys)
    ints = np.array([[int(v) if v else 0 for v in row[1:14]] for row in rows])
    np.testing.assert_allclose(dense, np.log(ints + 3), rtol=1e-6)
    hashes = np.array([[int(v, 16) if v else 0 for v in row[14:]] for row in rows], np.uint64)
    np.testing.assert_array_equal(sparse.view(np.uint32), hashes)  # the 32 bits, kept as int32
    np.testing.assert_array_equal(labels, np.array([[int(row[0])] for row in rows]))
    assert BinaryCriteoUtils.get_shape_from_npy(npys[0]) == (7, 13)
    np.testing.assert_array_equal(BinaryCriteoUtils.load_npy_range(npys[1], 2, 3), sparse[2:5])
    with pytest.raises(ValueError, match="exceeds"):
        BinaryCriteoUtils.load_npy_range(npys[1], 5, 3)


def test_file_idx_to_row_range():
    assert BinaryCriteoUtils.get_file_idx_to_row_range([5, 3, 4], 0, 3) == {0: (0, 3)}
    assert BinaryCriteoUtils.get_file_idx_to_row_range([5, 3, 4], 1, 3) == {0: (4, 4), 1: (0, 2)}
    assert BinaryCriteoUtils.get_file_idx_to_row_range([5, 3, 4], 2, 3) == {2: (0, 3)}


def test_in_memory_binary_criteo_batches(tmp_path):
    rng = np.random.default_rng(4)
    files = {"dense": [], "sparse": [], "labels": []}
    for day, n in enumerate((5, 6)):
        paths = [str(tmp_path / f"day_{day}_{kind}.npy") for kind in files]
        BinaryCriteoUtils.tsv_to_npys(write_tsv(tmp_path / f"day_{day}.tsv", criteo_rows(rng, n)), *paths)
        for kind, path in zip(files, paths):
            files[kind].append(path)
    hashes = [10 + i for i in range(CAT_FEATURE_COUNT)]
    pipe = InMemoryBinaryCriteoIterDataPipe(files["dense"], files["sparse"], files["labels"], batch_size=4, rank=0,
                                            world_size=1, hashes=hashes)
    batches = list(pipe)
    assert len(pipe) == len(batches) == 2  # 11 rows: the last 3 are dropped
    sparse = np.concatenate([np.load(p) for p in files["sparse"]]).astype(np.int64) % np.array(hashes)
    second = batches[1]  # rows 4..7 cross from day 0 into day 1
    np.testing.assert_allclose(second.dense_features.numpy(), np.concatenate([np.load(p) for p in files["dense"]])[4:8])
    assert second.sparse_features.keys() == DEFAULT_CAT_NAMES and second.sparse_features.stride() == 4
    np.testing.assert_array_equal(second.sparse_features["cat_3"].values().numpy(), sparse[4:8, 3])
    assert second.labels.shape == (4,)
    halves = [list(InMemoryBinaryCriteoIterDataPipe(files["dense"], files["sparse"], files["labels"], 2, rank, 2))
              for rank in (0, 1)]
    assert [len(h) for h in halves] == [2, 2]


def write_movielens(root):
    root.mkdir()
    (root / "ratings.csv").write_text("userId,movieId,rating,timestamp\n1,2,3.5,1112486027\n1,29,4.0,1112484676\n7,2,,5\n")
    (root / "movies.csv").write_text('movieId,title,genres\n2,Jumanji (1995),Adventure|Children|Fantasy\n'
                                     '29,"City of Lost Children, The (Cité des enfants perdus, La) (1995)",Adventure|Drama\n',
                                     encoding="utf-8")
    return str(root)


def test_movielens(tmp_path):
    root = write_movielens(tmp_path / "ml-20m")
    rows = list(movielens_20m(root))
    assert rows[0] == {"userId": 1, "movieId": 2, "rating": 3.5, "timestamp": 1112486027}
    assert rows[2]["rating"] == 0.0  # an empty field
    joined = list(movielens_25m(root, include_movies_data=True, encoding="utf-8"))
    assert joined[1]["title"] == "City of Lost Children, The (Cité des enfants perdus, La) (1995)"
    assert joined[1]["genres"] == "Adventure|Drama"
    assert list(movielens_20m(root, row_mapper=None))[0] == ["1", "2", "3.5", "1112486027"]
    with pytest.raises(FileNotFoundError, match="ratings.csv"):
        movielens_20m(str(tmp_path))


def test_random_rec_dataset():
    dataset = RandomRecDataset(keys=["a", "b"], batch_size=3, hash_sizes=[5, 1000], ids_per_feature=4, num_dense=6,
                               manual_seed=0, num_batches=4, num_generated_batches=2)
    batches = list(dataset)
    assert len(batches) == 4 and batches[2] is batches[0] and batches[1] is not batches[0]
    kjt = batches[0].sparse_features
    assert kjt.keys() == ["a", "b"] and kjt.stride() == 3
    assert kjt.lengths().numpy().tolist() == [4] * 6  # exactly ids_per_feature by default
    assert kjt["a"].values().numpy().max() < 5
    assert batches[0].dense_features.shape == (3, 6) and set(batches[0].labels.numpy()) <= {0, 1}
    again = next(iter(RandomRecDataset(["a", "b"], 3, hash_sizes=[5, 1000], ids_per_feature=4, num_dense=6, manual_seed=0)))
    np.testing.assert_array_equal(again.sparse_features.values().numpy(), kjt.values().numpy())
    ragged = next(iter(RandomRecDataset(["a"], 50, ids_per_feature=3, min_ids_per_feature=0, num_generated_batches=-1)))
    assert set(ragged.sparse_features.lengths().numpy()) <= {0, 1, 2, 3} and ragged.sparse_features.lengths().dtype == ember.int32
    with pytest.raises(ValueError, match="hash_sizes"):
        RandomRecDataset(["a", "b"], 3, hash_sizes=[5])
    with pytest.raises(ValueError, match="min ids"):
        RandomRecDataset(["a"], 3, ids_per_feature=1, min_ids_per_feature=2)
