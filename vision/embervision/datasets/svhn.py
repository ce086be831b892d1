"""SVHN (cropped digits) from the .mat files (read with scipy.io, as TorchVision does)."""
import os

import numpy as np

from .utils import check_integrity, download_url, verify_str_arg
from .vision import VisionDataset


class SVHN(VisionDataset):
    """`data` is `(N, 3, 32, 32)` uint8, `labels` int64 with the file's label 10 mapped to 0."""

    split_list = {
        "train": ["http://ufldl.stanford.edu/housenumbers/train_32x32.mat", "train_32x32.mat",
                  "e26dedcc434d2e4c54c9b2d4a06d8373"],
        "test": ["http://ufldl.stanford.edu/housenumbers/test_32x32.mat", "test_32x32.mat",
                 "eb5a983be6a315427106f1b164d9cef3"],
        "extra": ["http://ufldl.stanford.edu/housenumbers/extra_32x32.mat", "extra_32x32.mat",
                  "a93ce644f1a588dc4d68dda5feec44a7"],
    }

    def __init__(self, root, split="train", transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.split = verify_str_arg(split, "split", tuple(self.split_list.keys()))
        self.url, self.filename, self.file_md5 = self.split_list[split]
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        try:
            import scipy.io as sio
        except ImportError as e:
            raise ImportError("SVHN reads .mat files with scipy: pip install scipy") from e
        mat = sio.loadmat(os.path.join(self.root, self.filename))
        self.data = np.transpose(mat["X"], (3, 2, 0, 1))
        self.labels = mat["y"].astype(np.int64).squeeze()
        np.place(self.labels, self.labels == 10, 0)

    def __getitem__(self, index):
        from PIL import Image

        img = Image.fromarray(np.transpose(self.data[index], (1, 2, 0)))
        target = int(self.labels[index])
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self):
        return len(self.data)

    def _check_integrity(self):
        return check_integrity(os.path.join(self.root, self.filename), self.split_list[self.split][2])

    def download(self):
        download_url(self.url, self.root, self.filename, self.split_list[self.split][2])

    def extra_repr(self):
        return f"Split: {self.split}"
