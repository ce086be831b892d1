"""MNIST, FashionMNIST, KMNIST and EMNIST from their IDX files (`root/<Class>/raw`)."""
import os
import shutil
import string
import warnings

import numpy as np

import ember

from .utils import check_integrity, download_and_extract_archive, extract_archive, verify_str_arg
from .vision import VisionDataset


class MNIST(VisionDataset):
    """Images are `(N, 28, 28)` uint8 (`data`), labels int64 (`targets`); items are (PIL 'L' image, int)."""

    mirrors = ["https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
        ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
        ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"),
    ]
    training_file = "training.pt"
    test_file = "test.pt"
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven",
               "8 - eight", "9 - nine"]

    @property
    def train_labels(self):
        warnings.warn("train_labels has been renamed targets")
        return self.targets

    @property
    def test_labels(self):
        warnings.warn("test_labels has been renamed targets")
        return self.targets

    @property
    def train_data(self):
        warnings.warn("train_data has been renamed data")
        return self.data

    @property
    def test_data(self):
        warnings.warn("test_data has been renamed data")
        return self.data

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        self.data, self.targets = self._load_data()

    def _load_data(self):
        prefix = "train" if self.train else "t10k"
        data = read_image_file(os.path.join(self.raw_folder, f"{prefix}-images-idx3-ubyte"))
        targets = read_label_file(os.path.join(self.raw_folder, f"{prefix}-labels-idx1-ubyte"))
        return data, targets

    def __getitem__(self, index):
        from PIL import Image

        img, target = self.data[index], int(self.targets[index])
        img = Image.fromarray(img.numpy(), mode="L")
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self):
        return len(self.data)

    @property
    def raw_folder(self):
        return os.path.join(self.root, self.__class__.__name__, "raw")

    @property
    def processed_folder(self):
        return os.path.join(self.root, self.__class__.__name__, "processed")

    @property
    def class_to_idx(self):
        return {c: i for i, c in enumerate(self.classes)}

    def _check_exists(self):
        return all(check_integrity(os.path.join(self.raw_folder, os.path.splitext(os.path.basename(url))[0]))
                   for url, _ in self.resources)

    def download(self):
        """Downloads (trying each mirror) and decompresses the four IDX files, MD5-checked."""
        if self._check_exists():
            return
        os.makedirs(self.raw_folder, exist_ok=True)
        for filename, md5 in self.resources:
            errors = []
            for mirror in self.mirrors:
                url = f"{mirror}{filename}"
                try:
                    download_and_extract_archive(url, download_root=self.raw_folder, filename=filename, md5=md5)
                except (RuntimeError, OSError) as e:
                    errors.append(e)
                    continue
                break
            else:
                s = f"Error downloading {filename}:\n"
                for mirror, err in zip(self.mirrors, errors):
                    s += f"Tried {mirror}, got:\n{err}\n"
                raise RuntimeError(s)

    def extra_repr(self):
        return f"Split: {'Train' if self.train is True else 'Test'}"


class FashionMNIST(MNIST):
    mirrors = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
        ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"),
        ("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
        ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310"),
    ]
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]


class KMNIST(MNIST):
    mirrors = ["http://codh.rois.ac.jp/kmnist/dataset/kmnist/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "bdb82020997e1d708af4cf47b453dcf7"),
        ("train-labels-idx1-ubyte.gz", "e144d726b3acfaa3e44228e80efcd344"),
        ("t10k-images-idx3-ubyte.gz", "5c965bf0a639b31b8f53240b1b52f4d7"),
        ("t10k-labels-idx1-ubyte.gz", "7320c461ea6c1c855c0b718fb2a4b134"),
    ]
    classes = ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"]


# IDX ("SN3 PascalVincent") type codes → big-endian numpy dtypes
_IDX_TYPES = {8: np.uint8, 9: np.int8, 11: ">i2", 12: ">i4", 13: ">f4", 14: ">f8"}


def read_sn3_pascalvincent_tensor(path, strict=True):
    """Reads an IDX file: magic (0, 0, type, ndim), ndim big-endian int32 sizes, then the data."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise RuntimeError(f"{path} is not an IDX file (bad magic number)")
    ty, nd = data[2], data[3]
    if ty not in _IDX_TYPES or not 1 <= nd <= 3:
        raise RuntimeError(f"{path}: unsupported IDX type {ty} or rank {nd}")
    sizes = [int.from_bytes(data[4 * (i + 1):4 * (i + 2)], "big") for i in range(nd)]
    parsed = np.frombuffer(data, dtype=_IDX_TYPES[ty], offset=4 * (nd + 1))
    if strict and parsed.size != int(np.prod(sizes)):
        raise RuntimeError(f"{path}: expected {int(np.prod(sizes))} values, found {parsed.size}")
    if parsed.size < int(np.prod(sizes)):
        raise RuntimeError(f"{path} is truncated: expected {int(np.prod(sizes))} values, found {parsed.size}")
    parsed = parsed[: int(np.prod(sizes))].astype(np.dtype(_IDX_TYPES[ty]).newbyteorder("="))
    return ember.from_numpy(np.ascontiguousarray(parsed.reshape(sizes)))


def read_label_file(path):
    x = read_sn3_pascalvincent_tensor(path, strict=False)
    if x.dtype != ember.uint8:
        raise TypeError(f"x should be of dtype torch.uint8 instead of {x.dtype}")
    if x.ndim != 1:
        raise ValueError(f"x should have 1 dimension instead of {x.ndim}")
    return x.to(ember.int64)


def read_image_file(path):
    x = read_sn3_pascalvincent_tensor(path, strict=False)
    if x.dtype != ember.uint8:
        raise TypeError(f"x should be of dtype torch.uint8 instead of {x.dtype}")
    if x.ndim != 3:
        raise ValueError(f"x should have 3 dimension instead of {x.ndim}")
    return x


class EMNIST(MNIST):
    """EMNIST (`split` in byclass, bymerge, balanced, letters, digits, mnist) from NIST's gzip.zip."""

    url = "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip"
    md5 = "58c8d27c78d21e728a6bc7b3cc06412e"
    splits = ("byclass", "bymerge", "balanced", "letters", "digits", "mnist")
    # lower-case letters merged into their upper-case class in bymerge/balanced
    _merged_classes = {"c", "i", "j", "k", "l", "m", "o", "p", "s", "u", "v", "w", "x", "y", "z"}
    _all_classes = set(string.digits + string.ascii_letters)
    classes_split_dict = {
        "byclass": sorted(_all_classes),
        "bymerge": sorted(_all_classes - _merged_classes),
        "balanced": sorted(_all_classes - _merged_classes),
        "letters": ["N/A"] + list(string.ascii_lowercase),
        "digits": list(string.digits),
        "mnist": list(string.digits),
    }

    def __init__(self, root, split, **kwargs):
        self.split = verify_str_arg(split, "split", self.splits)
        self.training_file = f"training_{split}.pt"
        self.test_file = f"test_{split}.pt"
        super().__init__(root, **kwargs)
        self.classes = self.classes_split_dict[self.split]

    @property
    def _file_prefix(self):
        return f"emnist-{self.split}-{'train' if self.train else 'test'}"

    @property
    def images_file(self):
        return os.path.join(self.raw_folder, f"{self._file_prefix}-images-idx3-ubyte")

    @property
    def labels_file(self):
        return os.path.join(self.raw_folder, f"{self._file_prefix}-labels-idx1-ubyte")

    def _load_data(self):
        return read_image_file(self.images_file), read_label_file(self.labels_file)

    def _check_exists(self):
        return all(check_integrity(f) for f in (self.images_file, self.labels_file))

    def download(self):
        if self._check_exists():
            return
        os.makedirs(self.raw_folder, exist_ok=True)
        download_and_extract_archive(self.url, download_root=self.raw_folder, md5=self.md5)
        gzip_folder = os.path.join(self.raw_folder, "gzip")
        for name in os.listdir(gzip_folder):
            if name.endswith(".gz"):
                extract_archive(os.path.join(gzip_folder, name), self.raw_folder)
        shutil.rmtree(gzip_folder)
