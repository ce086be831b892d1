"""`torchvision.datasets` on ember: FakeData, DatasetFolder/ImageFolder, MNIST, FashionMNIST, KMNIST,
EMNIST, CIFAR10, CIFAR100, SVHN, ImageNet (from local archives) (real URLs and MD5s; downloads through `ember._download` with progress bars)."""
from .cifar import CIFAR10, CIFAR100
from .fakedata import FakeData
from .imagenet import ImageNet
from .folder import DatasetFolder, ImageFolder, default_loader, find_classes, has_file_allowed_extension, make_dataset
from .mnist import EMNIST, FashionMNIST, KMNIST, MNIST
from .svhn import SVHN
from .vision import StandardTransform, VisionDataset

__all__ = ["CIFAR10", "CIFAR100", "DatasetFolder", "EMNIST", "FakeData", "FashionMNIST", "ImageFolder", "ImageNet", "KMNIST",
           "MNIST", "SVHN", "StandardTransform", "VisionDataset", "default_loader", "find_classes", "has_file_allowed_extension",
           "make_dataset"]
