"""VisionDataset: the base of every embervision dataset (an emberdata map-style Dataset)."""
import os

from emberdata import Dataset


class VisionDataset(Dataset):
    """Holds `root` and the transforms; `transforms` (on the pair) or `transform`/`target_transform`."""

    _repr_indent = 4

    def __init__(self, root=None, transforms=None, transform=None, target_transform=None):
        if isinstance(root, str):
            root = os.path.expanduser(root)
        self.root = root
        has_transforms = transforms is not None
        has_separate = transform is not None or target_transform is not None
        if has_transforms and has_separate:
            raise ValueError("Only transforms or transform/target_transform can be passed as argument")
        self.transform = transform
        self.target_transform = target_transform
        if has_separate:
            transforms = StandardTransform(transform, target_transform)
        self.transforms = transforms

    def __getitem__(self, index):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def __repr__(self):
        body = [f"Number of datapoints: {self.__len__()}"]
        if self.root is not None:
            body.append(f"Root location: {self.root}")
        body += self.extra_repr().splitlines()
        if getattr(self, "transforms", None) is not None:
            body += [repr(self.transforms)]
        return "\n".join(["Dataset " + self.__class__.__name__] + [" " * self._repr_indent + line for line in body])

    def extra_repr(self):
        return ""


def _format_transform_repr(transform, head):
    lines = repr(transform).splitlines()
    return [f"{head}{lines[0]}"] + [" " * len(head) + line for line in lines[1:]]


class StandardTransform:
    def __init__(self, transform=None, target_transform=None):
        self.transform = transform
        self.target_transform = target_transform

    def __call__(self, input, target):
        if self.transform is not None:
            input = self.transform(input)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return input, target

    def __repr__(self):
        body = [self.__class__.__name__]
        if self.transform is not None:
            body += _format_transform_repr(self.transform, "Transform: ")
        if self.target_transform is not None:
            body += _format_transform_repr(self.target_transform, "Target transform: ")
        return "\n".join(body)
