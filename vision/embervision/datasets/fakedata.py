"""FakeData: random images as PIL images, the same image for the same index every time."""
import ember

from .. import transforms
from .vision import VisionDataset


class FakeData(VisionDataset):
    """`size` random `image_size` (C, H, W) images with targets in [0, num_classes); item `i` is drawn
    from a generator seeded with `i + random_offset`, so it does not touch the global RNG."""

    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None, target_transform=None,
                 random_offset=0):
        super().__init__(transform=transform, target_transform=target_transform)
        self.size = size
        self.num_classes = num_classes
        self.image_size = image_size
        self.random_offset = random_offset

    def __getitem__(self, index):
        if index >= len(self):
            raise IndexError(f"{self.__class__.__name__} index out of range")
        g = ember.Generator().manual_seed(index + self.random_offset)
        img = ember.randn(*self.image_size, generator=g)
        target = int(ember.randint(0, self.num_classes, (1,), generator=g).item())
        img = transforms.ToPILImage()(img)
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self):
        return self.size
