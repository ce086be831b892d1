"""TorchVision's v1 transform classes on ember tensors and PIL images.

Randomness comes from ember's generator (`ember.manual_seed` seeds it); `RandomOrder` and
`RandomChoice` use Python's `random`, as TorchVision's do.
"""
import math
import numbers
import random
import warnings
from collections.abc import Sequence

import ember
from ember import Tensor, nn

from . import functional as F
from .functional import InterpolationMode, _interpolation_modes_from_int

__all__ = [
    "Compose", "ToTensor", "PILToTensor", "ConvertImageDtype", "ToPILImage", "Normalize", "Resize", "CenterCrop",
    "Pad", "Lambda", "RandomApply", "RandomChoice", "RandomOrder", "RandomCrop", "RandomHorizontalFlip",
    "RandomVerticalFlip", "RandomResizedCrop", "FiveCrop", "TenCrop", "LinearTransformation", "ColorJitter",
    "RandomRotation", "RandomAffine", "Grayscale", "RandomGrayscale", "RandomPerspective", "RandomErasing",
    "GaussianBlur", "InterpolationMode", "RandomInvert", "RandomPosterize", "RandomSolarize",
    "RandomAdjustSharpness", "RandomAutocontrast", "RandomEqualize", "ElasticTransform",
]


def _uniform(low, high):
    """One float drawn uniformly from [low, high) with ember's generator."""
    return float(low) + (float(high) - float(low)) * float(ember.rand(1).item())


def _randint(low, high):
    return int(ember.randint(low, high, (1,)).item())


def _coin(p):
    return float(ember.rand(1).item()) < p


def _setup_size(size, error_msg):
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, Sequence) and len(size) == 1:
        return size[0], size[0]
    if len(size) != 2:
        raise ValueError(error_msg)
    return size


def _check_sequence_input(x, name, req_sizes):
    msg = req_sizes[0] if len(req_sizes) < 2 else " or ".join([str(s) for s in req_sizes])
    if not isinstance(x, Sequence):
        raise TypeError(f"{name} should be a sequence of length {msg}.")
    if len(x) not in req_sizes:
        raise ValueError(f"{name} should be a sequence of length {msg}.")


def _setup_angle(x, name, req_sizes=(2,)):
    if isinstance(x, numbers.Number):
        if x < 0:
            raise ValueError(f"If {name} is a single number, it must be positive.")
        x = [-x, x]
    else:
        _check_sequence_input(x, name, req_sizes)
    return [float(d) for d in x]


def _tensor_fill(fill, channels):
    if isinstance(fill, (int, float)):
        return [float(fill)] * channels
    return [float(f) for f in fill]


class Compose:
    """Applies transforms in order."""

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        return self.__class__.__name__ + "(" + "".join(f"\n    {t}" for t in self.transforms) + "\n)"


class ToTensor:
    """PIL image / ndarray (H, W, C) → float tensor (C, H, W) in [0, 1]."""

    def __call__(self, pic):
        return F.to_tensor(pic)

    def __repr__(self):
        return f"{self.__class__.__name__}()"


class PILToTensor:
    """PIL image → tensor (C, H, W) of the same dtype."""

    def __call__(self, pic):
        return F.pil_to_tensor(pic)

    def __repr__(self):
        return f"{self.__class__.__name__}()"


class ConvertImageDtype(nn.Module):
    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype

    def forward(self, image):
        return F.convert_image_dtype(image, self.dtype)

    def __repr__(self):
        return f"{self.__class__.__name__}()"


class ToPILImage:
    def __init__(self, mode=None):
        self.mode = mode

    def __call__(self, pic):
        return F.to_pil_image(pic, self.mode)

    def __repr__(self):
        return self.__class__.__name__ + "(" + (f"mode={self.mode}" if self.mode is not None else "") + ")"


class Normalize(nn.Module):
    def __init__(self, mean, std, inplace=False):
        super().__init__()
        self.mean, self.std, self.inplace = mean, std, inplace

    def forward(self, tensor):
        return F.normalize(tensor, self.mean, self.std, self.inplace)

    def __repr__(self):
        return f"{self.__class__.__name__}(mean={self.mean}, std={self.std})"


class Resize(nn.Module):
    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
        super().__init__()
        if not isinstance(size, (int, Sequence)):
            raise TypeError(f"Size should be int or sequence. Got {type(size)}")
        if isinstance(size, Sequence) and len(size) not in (1, 2):
            raise ValueError("If size is a sequence, it should have 1 or 2 values")
        self.size = size
        self.max_size = max_size
        if isinstance(interpolation, int):
            interpolation = _interpolation_modes_from_int(interpolation)
        self.interpolation = interpolation
        self.antialias = antialias

    def forward(self, img):
        return F.resize(img, self.size, self.interpolation, self.max_size, self.antialias)

    def __repr__(self):
        return (f"{self.__class__.__name__}(size={self.size}, interpolation={self.interpolation.value}, "
                f"max_size={self.max_size}, antialias={self.antialias})")


class CenterCrop(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.size = _setup_size(size, error_msg="Please provide only two dimensions (h, w) for size.")

    def forward(self, img):
        return F.center_crop(img, self.size)

    def __repr__(self):
        return f"{self.__class__.__name__}(size={self.size})"


class Pad(nn.Module):
    def __init__(self, padding, fill=0, padding_mode="constant"):
        super().__init__()
        if not isinstance(padding, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate padding arg")
        if not isinstance(fill, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate fill arg")
        if padding_mode not in ["constant", "edge", "reflect", "symmetric"]:
            raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
        if isinstance(padding, Sequence) and len(padding) not in [1, 2, 4]:
            raise ValueError(
                f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element tuple")
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def forward(self, img):
        return F.pad(img, self.padding, self.fill, self.padding_mode)

    def __repr__(self):
        return f"{self.__class__.__name__}(padding={self.padding}, fill={self.fill}, padding_mode={self.padding_mode})"


class Lambda:
    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {repr(type(lambd).__name__)}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)

    def __repr__(self):
        return f"{self.__class__.__name__}()"


class RandomTransforms:
    def __init__(self, transforms):
        if not isinstance(transforms, Sequence):
            raise TypeError("Argument transforms should be a sequence")
        self.transforms = transforms

    def __call__(self, *args, **kwargs):
        raise NotImplementedError()

    def __repr__(self):
        return self.__class__.__name__ + "(" + "".join(f"\n    {t}" for t in self.transforms) + "\n)"


class RandomApply(nn.Module):
    """Applies the list of transforms with probability p."""

    def __init__(self, transforms, p=0.5):
        super().__init__()
        self.transforms = transforms
        self.p = p

    def forward(self, img):
        if self.p < float(ember.rand(1).item()):
            return img
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        return (self.__class__.__name__ + "(" + f"\n    p={self.p}"
                + "".join(f"\n    {t}" for t in self.transforms) + "\n)")


class RandomOrder(RandomTransforms):
    def __call__(self, img):
        order = list(range(len(self.transforms)))
        random.shuffle(order)
        for i in order:
            img = self.transforms[i](img)
        return img


class RandomChoice(RandomTransforms):
    def __init__(self, transforms, p=None):
        super().__init__(transforms)
        if p is not None and not isinstance(p, Sequence):
            raise TypeError("Argument p should be a sequence")
        self.p = p

    def __call__(self, *args):
        return random.choices(self.transforms, weights=self.p)[0](*args)

    def __repr__(self):
        return f"{super().__repr__()}(p={self.p})"


class RandomCrop(nn.Module):
    @staticmethod
    def get_params(img, output_size):
        _, h, w = F.get_dimensions(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size {(h, w)}")
        if w == tw and h == th:
            return 0, 0, h, w
        return _randint(0, h - th + 1), _randint(0, w - tw + 1), th, tw

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        super().__init__()
        self.size = tuple(_setup_size(size, error_msg="Please provide only two dimensions (h, w) for size."))
        self.padding, self.pad_if_needed, self.fill, self.padding_mode = padding, pad_if_needed, fill, padding_mode

    def forward(self, img):
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        _, height, width = F.get_dimensions(img)
        if self.pad_if_needed and width < self.size[1]:
            img = F.pad(img, [self.size[1] - width, 0], self.fill, self.padding_mode)
        if self.pad_if_needed and height < self.size[0]:
            img = F.pad(img, [0, self.size[0] - height], self.fill, self.padding_mode)
        i, j, h, w = self.get_params(img, self.size)
        return F.crop(img, i, j, h, w)

    def __repr__(self):
        return f"{self.__class__.__name__}(size={self.size}, padding={self.padding})"


class RandomHorizontalFlip(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def forward(self, img):
        return F.hflip(img) if _coin(self.p) else img

    def __repr__(self):
        return f"{self.__class__.__name__}(p={self.p})"


class RandomVerticalFlip(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def forward(self, img):
        return F.vflip(img) if _coin(self.p) else img

    def __repr__(self):
        return f"{self.__class__.__name__}(p={self.p})"


class RandomPerspective(nn.Module):
    def __init__(self, distortion_scale=0.5, p=0.5, interpolation=InterpolationMode.BILINEAR, fill=0):
        super().__init__()
        self.p = p
        if isinstance(interpolation, int):
            interpolation = _interpolation_modes_from_int(interpolation)
        self.interpolation = interpolation
        self.distortion_scale = distortion_scale
        if fill is None:
            fill = 0
        elif not isinstance(fill, (Sequence, numbers.Number)):
            raise TypeError("Fill should be either a sequence or a number.")
        self.fill = fill

    def forward(self, img):
        channels, height, width = F.get_dimensions(img)
        fill = _tensor_fill(self.fill, channels) if isinstance(img, Tensor) else self.fill
        if _coin(self.p):
            startpoints, endpoints = self.get_params(width, height, self.distortion_scale)
            return F.perspective(img, startpoints, endpoints, self.interpolation, fill)
        return img

    @staticmethod
    def get_params(width, height, distortion_scale):
        hh, hw = height // 2, width // 2
        dx, dy = int(distortion_scale * hw), int(distortion_scale * hh)
        topleft = [_randint(0, dx + 1), _randint(0, dy + 1)]
        topright = [_randint(width - dx - 1, width), _randint(0, dy + 1)]
        botright = [_randint(width - dx - 1, width), _randint(height - dy - 1, height)]
        botleft = [_randint(0, dx + 1), _randint(height - dy - 1, height)]
        startpoints = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
        return startpoints, [topleft, topright, botright, botleft]

    def __repr__(self):
        return f"{self.__class__.__name__}(p={self.p})"


class RandomResizedCrop(nn.Module):
    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=True):
        super().__init__()
        self.size = _setup_size(size, error_msg="Please provide only two dimensions (h, w) for size.")
        if not isinstance(scale, Sequence):
            raise TypeError("Scale should be a sequence")
        if not isinstance(ratio, Sequence):
            raise TypeError("Ratio should be a sequence")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            warnings.warn("Scale and ratio should be of kind (min, max)")
        if isinstance(interpolation, int):
            interpolation = _interpolation_modes_from_int(interpolation)
        self.interpolation, self.antialias, self.scale, self.ratio = interpolation, antialias, scale, ratio

    @staticmethod
    def get_params(img, scale, ratio):
        _, height, width = F.get_dimensions(img)
        area = height * width
        log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
        for _ in range(10):
            target_area = area * _uniform(scale[0], scale[1])
            aspect_ratio = math.exp(_uniform(log_ratio[0], log_ratio[1]))
            w = int(round(math.sqrt(target_area * aspect_ratio)))
            h = int(round(math.sqrt(target_area / aspect_ratio)))
            if 0 < w <= width and 0 < h <= height:
                return _randint(0, height - h + 1), _randint(0, width - w + 1), h, w
        in_ratio = float(width) / float(height)
        if in_ratio < min(ratio):
            w = width
            h = int(round(w / min(ratio)))
        elif in_ratio > max(ratio):
            h = height
            w = int(round(h * max(ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def forward(self, img):
        i, j, h, w = self.get_params(img, self.scale, self.ratio)
        return F.resized_crop(img, i, j, h, w, self.size, self.interpolation, antialias=self.antialias)

    def __repr__(self):
        return (self.__class__.__name__ + f"(size={self.size}"
                + f", scale={tuple(round(s, 4) for s in self.scale)}"
                + f", ratio={tuple(round(r, 4) for r in self.ratio)}"
                + f", interpolation={self.interpolation.value}, antialias={self.antialias})")


class FiveCrop(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.size = _setup_size(size, error_msg="Please provide only two dimensions (h, w) for size.")

    def forward(self, img):
        return F.five_crop(img, self.size)

    def __repr__(self):
        return f"{self.__class__.__name__}(size={self.size})"


class TenCrop(nn.Module):
    def __init__(self, size, vertical_flip=False):
        super().__init__()
        self.size = _setup_size(size, error_msg="Please provide only two dimensions (h, w) for size.")
        self.vertical_flip = vertical_flip

    def forward(self, img):
        return F.ten_crop(img, self.size, self.vertical_flip)

    def __repr__(self):
        return f"{self.__class__.__name__}(size={self.size}, vertical_flip={self.vertical_flip})"


class LinearTransformation(nn.Module):
    """Flattens (C, H, W), subtracts `mean_vector` and multiplies by `transformation_matrix` (e.g. ZCA whitening)."""

    def __init__(self, transformation_matrix, mean_vector):
        super().__init__()
        if transformation_matrix.shape[0] != transformation_matrix.shape[1]:
            raise ValueError(
                "transformation_matrix should be square. Got "
                f"{tuple(transformation_matrix.shape)} rectangular matrix.")
        if mean_vector.shape[0] != transformation_matrix.shape[0]:
            raise ValueError(
                f"mean_vector should have the same length {mean_vector.shape[0]}"
                f" as any one of the dimensions of the transformation_matrix [{tuple(transformation_matrix.shape)}]")
        if transformation_matrix.dtype != mean_vector.dtype:
            raise ValueError(
                f"Input tensors should have the same dtype. Got {transformation_matrix.dtype} and {mean_vector.dtype}")
        self.transformation_matrix = transformation_matrix
        self.mean_vector = mean_vector

    def forward(self, tensor):
        shape = tensor.shape
        n = shape[-3] * shape[-2] * shape[-1]
        if n != self.transformation_matrix.shape[0]:
            raise ValueError(
                "Input tensor and transformation matrix have incompatible shape."
                + f"[{shape[-3]} x {shape[-2]} x {shape[-1]}] != "
                + f"{self.transformation_matrix.shape[0]}")
        flat = tensor.reshape(-1, n) - self.mean_vector
        out = ember.mm(flat, self.transformation_matrix.to(flat.dtype))
        return out.reshape(shape)

    def __repr__(self):
        return (f"{self.__class__.__name__}(transformation_matrix={self.transformation_matrix.tolist()}, "
                f"mean_vector={self.mean_vector.tolist()})")


class ColorJitter(nn.Module):
    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__()
        self.brightness = self._check_input(brightness, "brightness")
        self.contrast = self._check_input(contrast, "contrast")
        self.saturation = self._check_input(saturation, "saturation")
        self.hue = self._check_input(hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    def _check_input(self, value, name, center=1, bound=(0, float("inf")), clip_first_on_zero=True):
        if isinstance(value, numbers.Number):
            if value < 0:
                raise ValueError(f"If {name} is a single number, it must be non negative.")
            value = [center - float(value), center + float(value)]
            if clip_first_on_zero:
                value[0] = max(value[0], 0.0)
        elif isinstance(value, (tuple, list)) and len(value) == 2:
            value = [float(value[0]), float(value[1])]
        else:
            raise TypeError(f"{name} should be a single number or a list/tuple with length 2.")
        if not bound[0] <= value[0] <= value[1] <= bound[1]:
            raise ValueError(f"{name} values should be between {bound}, but got {value}.")
        if value[0] == value[1] == center:
            return None
        return tuple(value)

    @staticmethod
    def get_params(brightness, contrast, saturation, hue):
        fn_idx = ember.randperm(4)
        b = None if brightness is None else _uniform(brightness[0], brightness[1])
        c = None if contrast is None else _uniform(contrast[0], contrast[1])
        s = None if saturation is None else _uniform(saturation[0], saturation[1])
        h = None if hue is None else _uniform(hue[0], hue[1])
        return fn_idx, b, c, s, h

    def forward(self, img):
        fn_idx, b, c, s, h = self.get_params(self.brightness, self.contrast, self.saturation, self.hue)
        for fn_id in fn_idx.tolist():
            if fn_id == 0 and b is not None:
                img = F.adjust_brightness(img, b)
            elif fn_id == 1 and c is not None:
                img = F.adjust_contrast(img, c)
            elif fn_id == 2 and s is not None:
                img = F.adjust_saturation(img, s)
            elif fn_id == 3 and h is not None:
                img = F.adjust_hue(img, h)
        return img

    def __repr__(self):
        return (f"{self.__class__.__name__}(brightness={self.brightness}, contrast={self.contrast}, "
                f"saturation={self.saturation}, hue={self.hue})")


class RandomRotation(nn.Module):
    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=0):
        super().__init__()
        if isinstance(interpolation, int):
            interpolation = _interpolation_modes_from_int(interpolation)
        self.degrees = _setup_angle(degrees, name="degrees", req_sizes=(2,))
        if center is not None:
            _check_sequence_input(center, "center", req_sizes=(2,))
        self.center, self.interpolation, self.expand = center, interpolation, expand
        if fill is None:
            fill = 0
        elif not isinstance(fill, (Sequence, numbers.Number)):
            raise TypeError("Fill should be either a sequence or a number.")
        self.fill = fill

    @staticmethod
    def get_params(degrees):
        return _uniform(degrees[0], degrees[1])

    def forward(self, img):
        channels, _, _ = F.get_dimensions(img)
        fill = _tensor_fill(self.fill, channels) if isinstance(img, Tensor) else self.fill
        angle = self.get_params(self.degrees)
        return F.rotate(img, angle, self.interpolation, self.expand, self.center, fill)

    def __repr__(self):
        s = self.__class__.__name__ + f"(degrees={self.degrees}, interpolation={self.interpolation.value}, expand={self.expand}"
        if self.center is not None:
            s += f", center={self.center}"
        if self.fill is not None:
            s += f", fill={self.fill}"
        return s + ")"


class RandomAffine(nn.Module):
    def __init__(self, degrees, translate=None, scale=None, shear=None, interpolation=InterpolationMode.NEAREST,
                 fill=0, center=None):
        super().__init__()
        if isinstance(interpolation, int):
            interpolation = _interpolation_modes_from_int(interpolation)
        self.degrees = _setup_angle(degrees, name="degrees", req_sizes=(2,))
        if translate is not None:
            _check_sequence_input(translate, "translate", req_sizes=(2,))
            for t in translate:
                if not 0.0 <= t <= 1.0:
                    raise ValueError("translation values should be between 0 and 1")
        self.translate = translate
        if scale is not None:
            _check_sequence_input(scale, "scale", req_sizes=(2,))
            for s in scale:
                if s <= 0:
                    raise ValueError("scale values should be positive")
        self.scale = scale
        self.shear = _setup_angle(shear, name="shear", req_sizes=(2, 4)) if shear is not None else None
        self.interpolation = interpolation
        if fill is None:
            fill = 0
        elif not isinstance(fill, (Sequence, numbers.Number)):
            raise TypeError("Fill should be either a sequence or a number.")
        self.fill = fill
        if center is not None:
            _check_sequence_input(center, "center", req_sizes=(2,))
        self.center = center

    @staticmethod
    def get_params(degrees, translate, scale_ranges, shears, img_size):
        angle = _uniform(degrees[0], degrees[1])
        if translate is not None:
            max_dx = float(translate[0] * img_size[0])
            max_dy = float(translate[1] * img_size[1])
            translations = (int(round(_uniform(-max_dx, max_dx))), int(round(_uniform(-max_dy, max_dy))))
        else:
            translations = (0, 0)
        scale = _uniform(scale_ranges[0], scale_ranges[1]) if scale_ranges is not None else 1.0
        shear_x = shear_y = 0.0
        if shears is not None:
            shear_x = _uniform(shears[0], shears[1])
            if len(shears) == 4:
                shear_y = _uniform(shears[2], shears[3])
        return angle, translations, scale, (shear_x, shear_y)

    def forward(self, img):
        channels, height, width = F.get_dimensions(img)
        fill = _tensor_fill(self.fill, channels) if isinstance(img, Tensor) else self.fill
        ret = self.get_params(self.degrees, self.translate, self.scale, self.shear, [width, height])
        return F.affine(img, *ret, interpolation=self.interpolation, fill=fill, center=self.center)

    def __repr__(self):
        s = f"{self.__class__.__name__}(degrees={self.degrees}"
        s += f", translate={self.translate}" if self.translate is not None else ""
        s += f", scale={self.scale}" if self.scale is not None else ""
        s += f", shear={self.shear}" if self.shear is not None else ""
        s += f", interpolation={self.interpolation.value}" if self.interpolation != InterpolationMode.NEAREST else ""
        s += f", fill={self.fill}" if self.fill != 0 else ""
        s += f", center={self.center}" if self.center is not None else ""
        return s + ")"


class Grayscale(nn.Module):
    def __init__(self, num_output_channels=1):
        super().__init__()
        self.num_output_channels = num_output_channels

    def forward(self, img):
        return F.rgb_to_grayscale(img, num_output_channels=self.num_output_channels)

    def __repr__(self):
        return f"{self.__class__.__name__}(num_output_channels={self.num_output_channels})"


class RandomGrayscale(nn.Module):
    def __init__(self, p=0.1):
        super().__init__()
        self.p = p

    def forward(self, img):
        num_output_channels, _, _ = F.get_dimensions(img)
        if _coin(self.p):
            return F.rgb_to_grayscale(img, num_output_channels=num_output_channels)
        return img

    def __repr__(self):
        return f"{self.__class__.__name__}(p={self.p})"


class RandomErasing(nn.Module):
    """Erases a random box of a tensor image with probability p (value: number, per-channel list or 'random')."""

    def __init__(self, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False):
        super().__init__()
        if not isinstance(value, (numbers.Number, str, tuple, list)):
            raise TypeError("Argument value should be either a number or str or a sequence")
        if isinstance(value, str) and value != "random":
            raise ValueError("If value is str, it should be 'random'")
        if not isinstance(scale, Sequence):
            raise TypeError("Scale should be a sequence")
        if not isinstance(ratio, Sequence):
            raise TypeError("Ratio should be a sequence")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            warnings.warn("Scale and ratio should be of kind (min, max)")
        if scale[0] < 0 or scale[1] > 1:
            raise ValueError("Scale should be between 0 and 1")
        if p < 0 or p > 1:
            raise ValueError("Random erasing probability should be between 0 and 1")
        self.p, self.scale, self.ratio, self.value, self.inplace = p, scale, ratio, value, inplace

    @staticmethod
    def get_params(img, scale, ratio, value=None):
        img_c, img_h, img_w = img.shape[-3], img.shape[-2], img.shape[-1]
        area = img_h * img_w
        log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
        for _ in range(10):
            erase_area = area * _uniform(scale[0], scale[1])
            aspect_ratio = math.exp(_uniform(log_ratio[0], log_ratio[1]))
            h = int(round(math.sqrt(erase_area * aspect_ratio)))
            w = int(round(math.sqrt(erase_area / aspect_ratio)))
            if not (h < img_h and w < img_w):
                continue
            if value is None:
                v = ember.randn(img_c, h, w, dtype=ember.float32)
            else:
                v = ember.tensor(value)[:, None, None]
            return _randint(0, img_h - h + 1), _randint(0, img_w - w + 1), h, w, v
        return 0, 0, img_h, img_w, img

    def forward(self, img):
        if _coin(self.p):
            if isinstance(self.value, (int, float)):
                value = [float(self.value)]
            elif isinstance(self.value, str):
                value = None
            else:
                value = [float(v) for v in self.value]
            if value is not None and len(value) not in (1, img.shape[-3]):
                raise ValueError(
                    "If value is a sequence, it should have either a single value or "
                    f"{img.shape[-3]} (number of input channels)")
            x, y, h, w, v = self.get_params(img, scale=self.scale, ratio=self.ratio, value=value)
            if v is not img and v.dtype != img.dtype:
                v = v.to(img.dtype)
            return F.erase(img, x, y, h, w, v, self.inplace)
        return img

    def __repr__(self):
        return (f"{self.__class__.__name__}(p={self.p}, scale={self.scale}, ratio={self.ratio}, "
                f"value={self.value}, inplace={self.inplace})")


class GaussianBlur(nn.Module):
    def __init__(self, kernel_size, sigma=(0.1, 2.0)):
        super().__init__()
        self.kernel_size = _setup_size(kernel_size, "Kernel size should be a tuple/list of two integers")
        for ks in self.kernel_size:
            if ks <= 0 or ks % 2 == 0:
                raise ValueError("Kernel size value should be an odd and positive number.")
        if isinstance(sigma, numbers.Number):
            if sigma <= 0:
                raise ValueError("If sigma is a single number, it must be positive.")
            sigma = (sigma, sigma)
        elif isinstance(sigma, Sequence) and len(sigma) == 2:
            if not 0.0 < sigma[0] <= sigma[1]:
                raise ValueError("sigma values should be positive and of the form (min, max).")
        else:
            raise ValueError("sigma should be a single number or a list/tuple with length 2.")
        self.sigma = sigma

    @staticmethod
    def get_params(sigma_min, sigma_max):
        return _uniform(sigma_min, sigma_max)

    def forward(self, img):
        sigma = self.get_params(self.sigma[0], self.sigma[1])
        return F.gaussian_blur(img, self.kernel_size, [sigma, sigma])

    def __repr__(self):
        return f"{self.__class__.__name__}(kernel_size={self.kernel_size}, sigma={self.sigma})"


class _RandomOp(nn.Module):
    _fn = None
    _arg = None

    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def forward(self, img):
        return self._apply(img) if _coin(self.p) else img

    def __repr__(self):
        arg = f"{self._arg}={getattr(self, self._arg)}," if self._arg else ""
        return f"{self.__class__.__name__}({arg}p={self.p})"


class RandomInvert(_RandomOp):
    def _apply(self, img):
        return F.invert(img)


class RandomPosterize(_RandomOp):
    _arg = "bits"

    def __init__(self, bits, p=0.5):
        super().__init__(p)
        self.bits = bits

    def _apply(self, img):
        return F.posterize(img, self.bits)


class RandomSolarize(_RandomOp):
    _arg = "threshold"

    def __init__(self, threshold, p=0.5):
        super().__init__(p)
        self.threshold = threshold

    def _apply(self, img):
        return F.solarize(img, self.threshold)


class RandomAdjustSharpness(_RandomOp):
    _arg = "sharpness_factor"

    def __init__(self, sharpness_factor, p=0.5):
        super().__init__(p)
        self.sharpness_factor = sharpness_factor

    def _apply(self, img):
        return F.adjust_sharpness(img, self.sharpness_factor)


class RandomAutocontrast(_RandomOp):
    def _apply(self, img):
        return F.autocontrast(img)


class RandomEqualize(_RandomOp):
    def _apply(self, img):
        return F.equalize(img)


class ElasticTransform(nn.Module):
    def __init__(self, alpha=50.0, sigma=5.0, interpolation=InterpolationMode.BILINEAR, fill=0):
        super().__init__()
        self.alpha = [float(alpha)] * 2 if isinstance(alpha, numbers.Number) else [float(a) for a in alpha]
        self.sigma = [float(sigma)] * 2 if isinstance(sigma, numbers.Number) else [float(s) for s in sigma]
        if isinstance(interpolation, int):
            interpolation = _interpolation_modes_from_int(interpolation)
        self.interpolation = interpolation
        self.fill = 0 if fill is None else fill

    @staticmethod
    def get_params(alpha, sigma, size):
        dx = ember.rand([1, 1] + list(size)) * 2 - 1
        if sigma[0] > 0.0:
            kx = int(8 * sigma[0] + 1)
            kx += 1 - kx % 2
            dx = F.gaussian_blur(dx, [kx, kx], sigma[0])
        dx = dx * alpha[0] / size[0]
        dy = ember.rand([1, 1] + list(size)) * 2 - 1
        if sigma[1] > 0.0:
            ky = int(8 * sigma[1] + 1)
            ky += 1 - ky % 2
            dy = F.gaussian_blur(dy, [ky, ky], sigma[1])
        dy = dy * alpha[1] / size[1]
        return ember.cat([dx, dy], 1).permute([0, 2, 3, 1])

    def forward(self, img):
        _, height, width = F.get_dimensions(img)
        displacement = self.get_params(self.alpha, self.sigma, [height, width])
        fill = _tensor_fill(self.fill, F.get_dimensions(img)[0]) if isinstance(img, Tensor) else self.fill
        return F.elastic_transform(img, displacement, self.interpolation, fill)

    def __repr__(self):
        return (f"{self.__class__.__name__}(alpha={self.alpha}, sigma={self.sigma}, "
                f"interpolation={self.interpolation}, fill={self.fill})")
