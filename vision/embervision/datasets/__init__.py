"""`torchvision.datasets` on ember: FakeData, DatasetFolder/ImageFolder, MNIST, FashionMNIST, KMNIST,
CIFAR10, CIFAR100 (real URLs and MD5s; downloads through `ember._download` with progress bars)."""
from .cifar import CIFAR10, CIFAR100
from .fakedata import FakeData
from .folder import DatasetFolder, ImageFolder, default_loader, find_classes, has_file_allowed_extension, make_dataset
from .mnist import FashionMNIST, KMNIST, MNIST
from .vision import StandardTransform, VisionDataset

__all__ = ["CIFAR10", "CIFAR100", "DatasetFolder", "FakeData", "FashionMNIST", "ImageFolder", "KMNIST", "MNIST",
           "StandardTransform", "VisionDataset", "default_loader", "find_classes", "has_file_allowed_extension",
           "make_dataset"]
