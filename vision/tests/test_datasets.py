"""embervision.datasets on small files made here in each format; downloads from a loopback server."""
import gzip
import hashlib
import http.server
import io
import os
import pickle
import tarfile
import threading

import numpy as np
import pytest

import ember
import embervision.transforms as T
from embervision import datasets as D
from embervision.datasets.utils import check_integrity, extract_archive, verify_str_arg

Image = pytest.importorskip("PIL.Image")


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("TQDM_DISABLE", "1")


@pytest.fixture
def server(tmp_path):
    """Serves tmp_path/www over HTTP on a free loopback port; yields (folder, base URL)."""
    www = tmp_path / "www"
    www.mkdir()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **k):
            super().__init__(*a, directory=str(www), **k)

        def log_message(self, *a):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield www, f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


def _md5(path):
    return hashlib.md5(open(path, "rb").read()).hexdigest()


def test_fake_data_is_deterministic_and_leaves_the_global_rng():
    ember.manual_seed(0)
    before = ember.rand(3).tolist()
    ember.manual_seed(0)
    d = D.FakeData(size=4, image_size=(3, 10, 12), num_classes=5, transform=T.ToTensor())
    a, ta = d[1]
    b, tb = d[1]
    assert a.shape == (3, 10, 12) and ta == tb and 0 <= ta < 5
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert ember.rand(3).tolist() == before
    assert D.FakeData(size=4, random_offset=3, image_size=(3, 4, 4))[0][1] == D.FakeData(size=9, image_size=(3, 4, 4))[3][1]
    with pytest.raises(IndexError):
        d[4]
    assert repr(d).startswith("Dataset FakeData\n    Number of datapoints: 4\n    StandardTransform\nTransform: ToTensor()")


def _image_tree(root):
    rs = np.random.RandomState(0)
    for cls, n in (("cat", 2), ("dog", 3)):
        os.makedirs(root / cls / "sub", exist_ok=True)
        for i in range(n):
            arr = rs.randint(0, 256, (6, 5, 3)).astype(np.uint8)
            where = root / cls / ("sub" if i == 2 else "") / f"{i}.png"
            Image.fromarray(arr).save(where)
        (root / cls / "notes.txt").write_text("not an image")
    os.makedirs(root / "empty")


def test_image_folder(tmp_path):
    _image_tree(tmp_path)
    with pytest.raises(FileNotFoundError, match="Found no valid file for the classes empty"):
        D.ImageFolder(tmp_path)
    d = D.ImageFolder(tmp_path, transform=T.PILToTensor(), allow_empty=True)
    assert d.classes == ["cat", "dog", "empty"] and d.class_to_idx == {"cat": 0, "dog": 1, "empty": 2}
    assert len(d) == 5 and d.targets == [0, 0, 1, 1, 1]
    img, target = d[4]
    assert img.shape == (3, 6, 5) and img.dtype == ember.uint8 and target == 1
    assert d.imgs[4][0].endswith(os.path.join("dog", "sub", "2.png"))
    custom = D.DatasetFolder(tmp_path, loader=lambda p: open(p).read(), extensions=(".txt",), allow_empty=True)
    assert [s for s, _ in custom] == ["not an image"] * 2
    with pytest.raises(FileNotFoundError, match="Couldn't find any class folder"):
        D.ImageFolder(tmp_path / "cat" / "sub")


def test_image_folder_through_the_dataloader(tmp_path):
    from emberdata import DataLoader

    _image_tree(tmp_path)
    d = D.ImageFolder(tmp_path, transform=T.Compose([T.Resize((4, 4)), T.ToTensor()]), allow_empty=True)
    batches = list(DataLoader(d, batch_size=2, shuffle=False))
    assert batches[0][0].shape == (2, 3, 4, 4) and batches[-1][1].tolist() == [1]


def _idx(arr):
    header = bytes([0, 0, 8, arr.ndim]) + b"".join(int(s).to_bytes(4, "big") for s in arr.shape)
    return header + arr.astype(np.uint8).tobytes()


def _mnist_files(folder, n_train=6, n_test=3):
    rs = np.random.RandomState(1)
    out = {}
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        images = rs.randint(0, 256, (n, 28, 28)).astype(np.uint8)
        labels = rs.randint(0, 10, (n,)).astype(np.uint8)
        for kind, arr in (("images-idx3", images), ("labels-idx1", labels)):
            name = f"{prefix}-{kind}-ubyte.gz"
            with gzip.open(folder / name, "wb") as f:
                f.write(_idx(arr))
            out[name] = arr
    return out


@pytest.mark.parametrize("cls", [D.MNIST, D.FashionMNIST, D.KMNIST])
def test_mnist_family_reads_raw_files(tmp_path, cls):
    raw = tmp_path / cls.__name__ / "raw"
    raw.mkdir(parents=True)
    arrays = _mnist_files(raw)
    for name in arrays:
        extract_archive(raw / name)
    train = cls(tmp_path, train=True)
    test = cls(tmp_path, train=False, transform=T.ToTensor())
    assert len(train) == 6 and len(test) == 3
    np.testing.assert_array_equal(train.data.numpy(), arrays["train-images-idx3-ubyte.gz"])
    assert train.targets.dtype == ember.int64
    img, target = train[2]
    assert img.mode == "L" and target == int(arrays["train-labels-idx1-ubyte.gz"][2])
    x, _ = test[0]
    assert x.shape == (1, 28, 28)
    assert "Split: Test" in repr(test)
    assert len(cls.classes) == 10 and cls.resources[0][0] == "train-images-idx3-ubyte.gz"


def test_mnist_download_from_mirrors(tmp_path, server, monkeypatch):
    www, url = server
    arrays = _mnist_files(www)
    resources = [(name, _md5(www / name)) for name in arrays]
    monkeypatch.setattr(D.MNIST, "mirrors", ["http://127.0.0.1:9/unreachable/", url])
    monkeypatch.setattr(D.MNIST, "resources", resources)
    d = D.MNIST(tmp_path / "data", download=True)
    assert len(d) == 6
    with pytest.raises(RuntimeError, match="Dataset not found"):
        D.MNIST(tmp_path / "other")
    monkeypatch.setattr(D.MNIST, "resources", [(n, "0" * 32) for n, _ in resources])
    with pytest.raises(RuntimeError, match="Error downloading"):
        D.MNIST(tmp_path / "bad", download=True)


def test_mnist_rejects_a_truncated_file(tmp_path):
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for name in _mnist_files(raw):
        extract_archive(raw / name)
    path = raw / "train-images-idx3-ubyte"
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(RuntimeError, match="truncated"):
        D.MNIST(tmp_path)


def _cifar_archive(folder, cls, n=4):
    rs = np.random.RandomState(2)
    base = folder / cls.base_folder
    base.mkdir()
    fine = cls is D.CIFAR100
    label_key = "fine_labels" if fine else "labels"
    arrays = {}
    for name, _ in cls.train_list + cls.test_list:
        data = rs.randint(0, 256, (n, 3072)).astype(np.uint8)
        labels = rs.randint(0, 100 if fine else 10, n).tolist()
        with open(base / name, "wb") as f:
            pickle.dump({"data": data, label_key: labels}, f)
        arrays[name] = (data, labels)
    names = [f"class{i}" for i in range(100 if fine else 10)]
    with open(base / cls.meta["filename"], "wb") as f:
        pickle.dump({cls.meta["key"]: names}, f)
    tgz = folder / cls.filename
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(base, arcname=cls.base_folder)
    md5s = {name: _md5(base / name) for name in arrays}
    meta_md5 = _md5(base / cls.meta["filename"])
    return arrays, md5s, meta_md5, _md5(tgz)


@pytest.mark.parametrize("cls", [D.CIFAR10, D.CIFAR100])
def test_cifar_download_extract_and_read(tmp_path, server, monkeypatch, cls):
    www, url = server
    arrays, md5s, meta_md5, tgz_md5 = _cifar_archive(www, cls)
    monkeypatch.setattr(cls, "url", url + cls.filename)
    monkeypatch.setattr(cls, "tgz_md5", tgz_md5)
    monkeypatch.setattr(cls, "train_list", [[n, md5s[n]] for n, _ in cls.train_list])
    monkeypatch.setattr(cls, "test_list", [[n, md5s[n]] for n, _ in cls.test_list])
    monkeypatch.setattr(cls, "meta", dict(cls.meta, md5=meta_md5))
    root = tmp_path / "data"
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        cls(root)
    train = cls(root, download=True, transform=T.PILToTensor())
    n_train = 4 * len(cls.train_list)
    assert len(train) == n_train and train.data.shape == (n_train, 32, 32, 3)
    img, target = train[1]
    data, labels = arrays[cls.train_list[0][0]]
    np.testing.assert_array_equal(img.numpy(), data[1].reshape(3, 32, 32))
    assert target == labels[1] and train.classes[0] == "class0"
    test = cls(root, train=False)
    assert len(test) == 4 and test[0][0].size == (32, 32)
    # a corrupted batch fails the integrity check
    (root / cls.base_folder / cls.test_list[0][0]).write_bytes(b"junk")
    with pytest.raises(RuntimeError, match="corrupted"):
        cls(root, train=False)


def test_real_urls_and_md5s():
    assert D.EMNIST.url == "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip"
    assert D.EMNIST.md5 == "58c8d27c78d21e728a6bc7b3cc06412e"
    assert D.CIFAR10.url == "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
    assert D.CIFAR10.tgz_md5 == "c58f30108f718f92721af3b95e74349a"
    assert D.CIFAR100.tgz_md5 == "eb9058c3a382ffc7106e4002c42a8d85"
    assert D.MNIST.mirrors[0] == "https://ossci-datasets.s3.amazonaws.com/mnist/"
    assert dict(D.FashionMNIST.resources)["t10k-labels-idx1-ubyte.gz"] == "bb300cfdad3c16e7a12a480ee83cd310"
    assert dict(D.KMNIST.resources)["train-images-idx3-ubyte.gz"] == "bdb82020997e1d708af4cf47b453dcf7"


def test_utils(tmp_path):
    p = tmp_path / "a.bin"
    p.write_bytes(b"abc")
    assert check_integrity(p) and check_integrity(p, hashlib.md5(b"abc").hexdigest())
    assert not check_integrity(p, "0" * 32) and not check_integrity(tmp_path / "missing")
    assert verify_str_arg("train", "split", ("train", "test")) == "train"
    with pytest.raises(ValueError, match="Unknown value 'val' for argument split"):
        verify_str_arg("val", "split", ("train", "test"))


def test_emnist_download_zip(tmp_path, server, monkeypatch):
    import zipfile

    www, url = server
    gz = tmp_path / "gz"
    gz.mkdir()
    rs = np.random.RandomState(3)
    images = rs.randint(0, 256, (5, 28, 28)).astype(np.uint8)
    labels = rs.randint(1, 27, 5).astype(np.uint8)
    for prefix in ("train", "test"):
        for kind, arr in (("images-idx3", images), ("labels-idx1", labels)):
            with gzip.open(gz / f"emnist-letters-{prefix}-{kind}-ubyte.gz", "wb") as f:
                f.write(_idx(arr))
    with zipfile.ZipFile(www / "gzip.zip", "w") as z:
        for p in sorted(gz.iterdir()):
            z.write(p, f"gzip/{p.name}")
    monkeypatch.setattr(D.EMNIST, "url", url + "gzip.zip")
    monkeypatch.setattr(D.EMNIST, "md5", _md5(www / "gzip.zip"))
    d = D.EMNIST(tmp_path / "data", split="letters", download=True)
    assert len(d) == 5 and d.classes[0] == "N/A" and len(d.classes) == 27
    assert d[3][1] == int(labels[3])
    np.testing.assert_array_equal(np.asarray(d[0][0]), images[0])
    assert not (tmp_path / "data" / "EMNIST" / "raw" / "gzip").exists()
    with pytest.raises(ValueError, match="Unknown value 'nope' for argument split"):
        D.EMNIST(tmp_path / "data", split="nope")


def test_svhn_reads_mat_files(tmp_path, monkeypatch):
    sio = pytest.importorskip("scipy.io")
    rs = np.random.RandomState(4)
    x = rs.randint(0, 256, (32, 32, 3, 4)).astype(np.uint8)
    y = np.array([[10], [1], [2], [10]], dtype=np.uint8)
    sio.savemat(tmp_path / "test_32x32.mat", {"X": x, "y": y})
    split = dict(D.SVHN.split_list)
    split["test"] = [split["test"][0], "test_32x32.mat", _md5(tmp_path / "test_32x32.mat")]
    monkeypatch.setattr(D.SVHN, "split_list", split)
    d = D.SVHN(tmp_path, split="test", transform=T.PILToTensor())
    assert len(d) == 4 and d.labels.tolist() == [0, 1, 2, 0]
    img, target = d[1]
    np.testing.assert_array_equal(img.numpy(), x[:, :, :, 1].transpose(2, 0, 1))
    assert "Split: test" in repr(d)
    assert D.SVHN.split_list["train"][2] == "e26dedcc434d2e4c54c9b2d4a06d8373"
    with pytest.raises(RuntimeError, match="not found or corrupted"):
        D.SVHN(tmp_path, split="train")


def test_imagenet_from_local_archives(tmp_path, monkeypatch):
    sio = pytest.importorskip("scipy.io")
    from embervision.datasets import imagenet

    root = tmp_path / "imagenet"
    root.mkdir()
    work = tmp_path / "work"
    # devkit: meta.mat with two leaf synsets and one parent, and the validation ground truth
    devkit = work / "ILSVRC2012_devkit_t12" / "data"
    devkit.mkdir(parents=True)
    dt = [("ILSVRC2012_ID", "O"), ("WNID", "O"), ("words", "O"), ("gloss", "O"), ("num_children", "O"),
          ("children", "O"), ("wordnet_height", "O"), ("num_train_images", "O")]
    synsets = np.array([(1, "n01", "tench, Tinca tinca", "", 0, [], 0, 2),
                        (2, "n02", "goldfish", "", 0, [], 0, 2),
                        (3, "n99", "fish", "", 2, [1, 2], 1, 0)], dtype=dt)
    sio.savemat(devkit / "meta.mat", {"synsets": synsets})
    (devkit / "ILSVRC2012_validation_ground_truth.txt").write_text("2\n1\n2\n")
    with tarfile.open(root / "ILSVRC2012_devkit_t12.tar.gz", "w:gz") as tar:
        tar.add(work / "ILSVRC2012_devkit_t12", arcname="ILSVRC2012_devkit_t12")
    # train: a tar of per-class tars; val: a flat tar of images
    rs = np.random.RandomState(0)

    def png(path):
        Image.fromarray(rs.randint(0, 256, (4, 4, 3)).astype(np.uint8)).save(path, format="JPEG")

    (work / "train").mkdir()
    for wnid in ("n01", "n02"):
        (work / wnid).mkdir()
        for i in range(2):
            png(work / wnid / f"{wnid}_{i}.JPEG")
        with tarfile.open(work / "train" / f"{wnid}.tar", "w") as tar:
            for p in sorted((work / wnid).iterdir()):
                tar.add(p, arcname=p.name)
    with tarfile.open(root / "ILSVRC2012_img_train.tar", "w") as tar:
        for p in sorted((work / "train").iterdir()):
            tar.add(p, arcname=p.name)
    (work / "val").mkdir()
    for i in range(3):
        png(work / "val" / f"ILSVRC2012_val_{i + 1:08d}.JPEG")
    with tarfile.open(root / "ILSVRC2012_img_val.tar", "w") as tar:
        for p in sorted((work / "val").iterdir()):
            tar.add(p, arcname=p.name)
    meta = {k: (name, _md5(root / name)) for k, (name, _) in imagenet.ARCHIVE_META.items()}
    monkeypatch.setattr(imagenet, "ARCHIVE_META", meta)

    train = D.ImageNet(root, split="train")
    assert train.wnids == ["n01", "n02"] and train.classes == [("tench", "Tinca tinca"), ("goldfish",)]
    assert train.class_to_idx == {"tench": 0, "Tinca tinca": 0, "goldfish": 1}
    assert len(train) == 4 and train[3][1] == 1 and train[0][0].size == (4, 4)
    val = D.ImageNet(root, split="val")
    assert [t for _, t in val.samples] == [0, 1, 1]
    assert os.path.basename(val.samples[0][0]) == "ILSVRC2012_val_00000002.JPEG"
    assert "Split: val" in repr(val)
    with pytest.raises(RuntimeError, match="not present in the root directory"):
        D.ImageNet(tmp_path / "empty", split="val")


def test_imagenet_archive_names():
    from embervision.datasets import imagenet

    assert imagenet.ARCHIVE_META["devkit"] == ("ILSVRC2012_devkit_t12.tar.gz", "fa75699e90414af021442c21a62c3abf")
    assert imagenet.ARCHIVE_META["val"][1] == "29b22e2961454d5413ddabcf34fc5622"


def test_worker_processes_run_the_transforms():
    from emberdata import DataLoader

    d = D.FakeData(8, (3, 12, 12), transform=T.Compose([T.RandomResizedCrop(8), T.ToTensor()]))
    batches = list(DataLoader(d, batch_size=4, num_workers=2))
    assert [b[0].shape for b in batches] == [(4, 3, 8, 8)] * 2
    assert sorted(int(t) for b in batches for t in b[1].tolist()) == sorted(d[i][1] for i in range(8))
