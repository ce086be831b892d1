"""ImageNet 2012 classification from the archives placed by hand in `root` (they cannot be
downloaded without an account): parsed once into `root/train`, `root/val` and `root/meta.bin`."""
import os
import shutil
import tempfile

import ember

from .folder import ImageFolder
from .utils import check_integrity, extract_archive, verify_str_arg

ARCHIVE_META = {
    "train": ("ILSVRC2012_img_train.tar", "1d675b47d978889d74fa0da5fadfb00e"),
    "val": ("ILSVRC2012_img_val.tar", "29b22e2961454d5413ddabcf34fc5622"),
    "devkit": ("ILSVRC2012_devkit_t12.tar.gz", "fa75699e90414af021442c21a62c3abf"),
}
META_FILE = "meta.bin"


class ImageNet(ImageFolder):
    """`classes` are tuples of names per WordNet id (`wnids`); `class_to_idx` maps every name."""

    def __init__(self, root, split="train", **kwargs):
        root = self.root = os.path.expanduser(root)
        self.split = verify_str_arg(split, "split", ("train", "val"))
        self.parse_archives()
        wnid_to_classes = load_meta_file(self.root)[0]
        super().__init__(self.split_folder, **kwargs)
        self.root = root
        self.wnids = self.classes
        self.wnid_to_idx = self.class_to_idx
        self.classes = [wnid_to_classes[wnid] for wnid in self.wnids]
        self.class_to_idx = {cls: idx for idx, clss in enumerate(self.classes) for cls in clss}

    def parse_archives(self):
        if not check_integrity(os.path.join(self.root, META_FILE)):
            parse_devkit_archive(self.root)
        if not os.path.isdir(self.split_folder):
            if self.split == "train":
                parse_train_archive(self.root)
            else:
                parse_val_archive(self.root)

    @property
    def split_folder(self):
        return os.path.join(self.root, self.split)

    def extra_repr(self):
        return f"Split: {self.split}"


def load_meta_file(root, file=None):
    """(wnid → class names, validation wnids in file order) from `meta.bin` (TorchVision's own
    meta.bin loads too: it is a weights-only pickle)."""
    file = os.path.join(root, file or META_FILE)
    if check_integrity(file):
        return ember.load(file, weights_only=True)
    raise RuntimeError(
        f"The meta file {file} is not present in the root directory or is corrupted. "
        "This file is automatically created by the ImageNet dataset.")


def _verify_archive(root, file, md5):
    if not check_integrity(os.path.join(root, file), md5):
        raise RuntimeError(
            f"The archive {file} is not present in the root directory or is corrupted. "
            f"You need to download it externally and place it in {root}.")


def parse_devkit_archive(root, file=None):
    """Reads the devkit's meta.mat (leaf synsets) and validation ground truth into meta.bin."""
    try:
        import scipy.io as sio
    except ImportError as e:
        raise ImportError("ImageNet reads the devkit's meta.mat with scipy: pip install scipy") from e
    name, md5 = ARCHIVE_META["devkit"]
    file = file or name
    _verify_archive(root, file, md5)
    tmp_dir = tempfile.mkdtemp()
    try:
        extract_archive(os.path.join(root, file), tmp_dir)
        devkit = os.path.join(tmp_dir, "ILSVRC2012_devkit_t12")
        synsets = sio.loadmat(os.path.join(devkit, "data", "meta.mat"), squeeze_me=True)["synsets"]
        leaves = [s for s in synsets if s[4] == 0]  # num_children == 0: the 1000 classes
        idx_to_wnid = {s[0]: s[1] for s in leaves}
        wnid_to_classes = {s[1]: tuple(s[2].split(", ")) for s in leaves}
        with open(os.path.join(devkit, "data", "ILSVRC2012_validation_ground_truth.txt")) as f:
            val_idcs = [int(line) for line in f]
        val_wnids = [idx_to_wnid[i] for i in val_idcs]
        ember.save((wnid_to_classes, val_wnids), os.path.join(root, META_FILE))
    finally:
        shutil.rmtree(tmp_dir)


def parse_train_archive(root, file=None, folder="train"):
    """Extracts the train tar and each class's inner tar into `root/train/<wnid>/`."""
    name, md5 = ARCHIVE_META["train"]
    file = file or name
    _verify_archive(root, file, md5)
    train_root = os.path.join(root, folder)
    extract_archive(os.path.join(root, file), train_root)
    for archive in [os.path.join(train_root, a) for a in os.listdir(train_root)]:
        extract_archive(archive, os.path.splitext(archive)[0], remove_finished=True)


def parse_val_archive(root, file=None, wnids=None, folder="val"):
    """Extracts the validation images and sorts them into `root/val/<wnid>/` by the devkit's labels."""
    name, md5 = ARCHIVE_META["val"]
    file = file or name
    if wnids is None:
        wnids = load_meta_file(root)[1]
    _verify_archive(root, file, md5)
    val_root = os.path.join(root, folder)
    extract_archive(os.path.join(root, file), val_root)
    images = sorted(os.path.join(val_root, image) for image in os.listdir(val_root))
    for wnid in set(wnids):
        os.mkdir(os.path.join(val_root, wnid))
    for wnid, img_file in zip(wnids, images):
        shutil.move(img_file, os.path.join(val_root, wnid, os.path.basename(img_file)))
