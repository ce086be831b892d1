"""`torchvision.utils`: image grids, saving, and drawing boxes, masks and keypoints on ember tensors.

Drawing goes through Pillow's ImageDraw, as TorchVision's does, so results are pixel-identical.
"""
import math
import warnings

import numpy as np

import ember
from ember import Tensor

__all__ = ["make_grid", "save_image", "draw_bounding_boxes", "draw_segmentation_masks", "draw_keypoints",
           "flow_to_image"]


def make_grid(tensor, nrow=8, padding=2, normalize=False, value_range=None, scale_each=False, pad_value=0.0):
    """Tiles a `(B, C, H, W)` tensor (or a list of `(C, H, W)`) into one `(3 or C, H', W')` image,
    `nrow` images per row, `padding` pixels of `pad_value` around each."""
    if not isinstance(tensor, Tensor):
        if isinstance(tensor, list):
            for t in tensor:
                if not isinstance(t, Tensor):
                    raise TypeError(f"tensor or list of tensors expected, got a list containing {type(t)}")
        else:
            raise TypeError(f"tensor or list of tensors expected, got {type(tensor)}")
    if isinstance(tensor, list):
        tensor = ember.stack(tensor, dim=0)
    if tensor.dim() == 2:
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 3:
        if tensor.shape[0] == 1:
            tensor = ember.cat((tensor, tensor, tensor), 0)
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 4 and tensor.shape[1] == 1:
        tensor = ember.cat((tensor, tensor, tensor), 1)
    if normalize is True:
        if value_range is not None and not isinstance(value_range, tuple):
            raise TypeError("value_range has to be a tuple (min, max) if specified. min and max are numbers")

        def norm(img):
            low, high = value_range if value_range is not None else (float(img.min()), float(img.max()))
            return (img.clamp(min=low, max=high) - low) / max(high - low, 1e-5)

        tensor = ember.stack([norm(t) for t in tensor]) if scale_each is True else norm(tensor)
    if tensor.shape[0] == 1:
        return tensor.squeeze(0)
    nmaps = tensor.shape[0]
    xmaps = min(nrow, nmaps)
    ymaps = int(math.ceil(float(nmaps) / xmaps))
    height, width = int(tensor.shape[2] + padding), int(tensor.shape[3] + padding)
    num_channels = tensor.shape[1]
    grid = ember.full((num_channels, height * ymaps + padding, width * xmaps + padding), pad_value,
                      dtype=tensor.dtype)
    k = 0
    for y in range(ymaps):
        for x in range(xmaps):
            if k >= nmaps:
                break
            top, left = y * height + padding, x * width + padding
            grid[:, top:top + height - padding, left:left + width - padding] = tensor[k]
            k += 1
    return grid


def save_image(tensor, fp, format=None, **kwargs):
    """Saves a tensor (or a grid of them, `make_grid`'s keyword arguments) as an image file;
    float values in [0, 1] are scaled to 0..255 and rounded."""
    from PIL import Image

    grid = make_grid(tensor, **kwargs)
    ndarr = (grid * 255 + 0.5).clamp(0, 255).permute(1, 2, 0).to(ember.uint8).contiguous().numpy()
    Image.fromarray(ndarr).save(fp, format=format)


def _generate_color_palette(num_objects):
    palette = [2**25 - 1, 2**15 - 1, 2**21 - 1]
    return [tuple(i * p % 255 for p in palette) for i in range(num_objects)]


def _parse_colors(colors, *, num_objects, dtype=ember.uint8):
    from PIL import ImageColor

    if colors is None:
        colors = _generate_color_palette(num_objects)
    elif isinstance(colors, list):
        if len(colors) < num_objects:
            raise ValueError(
                f"Number of colors must be equal or larger than the number of objects, but got {len(colors)} < {num_objects}.")
    elif not isinstance(colors, (tuple, str)):
        raise ValueError(f"colors must be a tuple or a string, or a list thereof, but got {colors}.")
    elif isinstance(colors, tuple) and len(colors) != 3:
        raise ValueError(f"If passed as tuple, colors should be an RGB triplet, but got {colors}.")
    else:
        colors = [colors] * num_objects
    colors = [ImageColor.getrgb(c) if isinstance(c, str) else tuple(c) for c in colors]
    if dtype.is_floating_point:
        colors = [tuple(v / 255 for v in c) for c in colors]
    return colors


def _float_to_uint8(image):
    return image.mul(255 + 1.0 - 1e-3).to(ember.uint8)


def _uint8_to_float(image, dtype):
    return image.to(dtype) * (1.0 / 255)


def _to_pil(image):
    from PIL import Image

    return Image.fromarray(np.ascontiguousarray(image.permute(1, 2, 0).contiguous().numpy()))


def _from_pil(img):
    arr = np.asarray(img, dtype=np.uint8)
    return ember.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))


def _check_image(image, channels):
    if not isinstance(image, Tensor):
        raise TypeError(f"The image must be a tensor, got {type(image)}")
    if not (image.dtype == ember.uint8 or image.is_floating_point()):
        raise ValueError(f"The image dtype must be uint8 or float, got {image.dtype}")
    if image.dim() != 3:
        raise ValueError("Pass individual images, not batches")


def draw_bounding_boxes(image, boxes, labels=None, colors=None, fill=False, width=1, font=None, font_size=None,
                        label_colors=None, label_background_colors=None, fill_labels=False):
    """Draws `(N, 4)` xyxy boxes (outlines, optional 100/255-alpha fill and text labels) on a
    `(C, H, W)` uint8 or float image; returns a new image of the same dtype."""
    from PIL import ImageDraw, ImageFont

    if not isinstance(image, Tensor):
        raise TypeError(f"Tensor expected, got {type(image)}")
    if not (image.dtype == ember.uint8 or image.is_floating_point()):
        raise ValueError(f"The image dtype must be uint8 or float, got {image.dtype}")
    if image.dim() != 3:
        raise ValueError("Pass individual images, not batches")
    if image.shape[0] not in {1, 3}:
        raise ValueError("Only grayscale and RGB images are supported")
    if boxes.shape[-1] == 4 and bool(((boxes[:, 0] > boxes[:, 2]).any() | (boxes[:, 1] > boxes[:, 3]).any())):
        raise ValueError(
            "Boxes need to be in (xmin, ymin, xmax, ymax) format. Use torchvision.ops.box_convert to convert them")
    num_boxes = boxes.shape[0]
    if num_boxes == 0:
        warnings.warn("boxes doesn't contain any box. No box was drawn")
        return image
    if labels is None:
        labels = [None] * num_boxes
    elif len(labels) != num_boxes:
        raise ValueError(
            f"Number of boxes ({num_boxes}) and labels ({len(labels)}) mismatch. Please specify labels for each box.")
    colors = _parse_colors(colors, num_objects=num_boxes)
    if label_colors or fill_labels:
        label_colors = _parse_colors(label_colors if label_colors else "black", num_objects=num_boxes)
    else:
        label_colors = colors.copy()
    if fill_labels and label_background_colors:
        label_background_colors = _parse_colors(label_background_colors, num_objects=num_boxes)
    else:
        label_background_colors = colors.copy()
    if font is None:
        if font_size is not None:
            warnings.warn("Argument 'font_size' will be ignored since 'font' is not set.")
        txt_font = ImageFont.load_default()
    else:
        txt_font = ImageFont.truetype(font=font, size=font_size or 10)
    if image.shape[0] == 1:
        image = image.repeat(3, 1, 1)
    original_dtype = image.dtype
    if original_dtype.is_floating_point:
        image = _float_to_uint8(image)
    img_to_draw = _to_pil(image)
    img_boxes = boxes.to(ember.int64).tolist()
    draw = _draw_class()(img_to_draw, "RGBA" if fill else None)
    for bbox, color, label, label_color, label_bg in zip(img_boxes, colors, labels, label_colors,
                                                        label_background_colors):
        fill_color = color + (100,) if fill else None
        # (x1, y1, ..., x4, y4) is a rotated box, its first edge dashed to show the orientation
        method = draw.oriented_rectangle if len(bbox) > 4 else draw.rectangle
        method(bbox, width=width, outline=color, fill=fill_color)
        if label is not None:
            margin = width + 1
            if fill_labels:
                left, top, right, bottom = draw.textbbox((bbox[0] + margin, bbox[1] + margin), label, font=txt_font)
                draw.rectangle((left - 1, top - 1, right + 1, bottom + 1), fill=label_bg)
            draw.text((bbox[0] + margin, bbox[1] + margin), label, fill=label_color, font=txt_font)
    out = _from_pil(img_to_draw)
    if original_dtype.is_floating_point:
        out = _uint8_to_float(out, original_dtype)
    return out


def _draw_class():
    from PIL import ImageDraw

    class _Draw(ImageDraw.ImageDraw):
        def oriented_rectangle(self, xy, fill=None, outline=None, width=1):
            self.dashed_line(((xy[0], xy[1]), (xy[2], xy[3])), width=width, fill=outline)
            for i in range(2, len(xy), 2):
                self.line(((xy[i], xy[i + 1]), (xy[(i + 2) % len(xy)], xy[(i + 3) % len(xy)])), width=width,
                          fill=outline)
            self.polygon(xy, fill=fill, outline=None, width=0)

        def dashed_line(self, xy, fill=None, width=0, joint=None, dash_length=5, space_length=5):
            dash = True
            for (x1, y1), (x2, y2) in zip(xy[:-1], xy[1:]):
                remaining = math.hypot(x2 - x1, y2 - y1)
                angle = math.atan2(y2 - y1, x2 - x1)
                while remaining > 0:
                    step = min(remaining, dash_length if dash else space_length)
                    end_x, end_y = x1 + math.cos(angle) * step, y1 + math.sin(angle) * step
                    if dash:
                        self.line([(x1, y1), (end_x, end_y)], fill, width, joint)
                    remaining -= step
                    x1, y1 = end_x, end_y
                    dash = not dash

    return _Draw


def draw_segmentation_masks(image, masks, alpha=0.8, colors=None):
    """Blends boolean masks `(N, H, W)` (or `(H, W)`) in their colours over an RGB image;
    pixels covered by more than one mask are blended with black."""
    _check_image(image, 3)
    if image.shape[0] != 3:
        raise ValueError("Pass an RGB image. Other Image formats are not supported")
    if masks.ndim == 2:
        masks = masks[None, :, :]
    if masks.ndim != 3:
        raise ValueError("masks must be of shape (H, W) or (batch_size, H, W)")
    if masks.dtype != ember.bool:
        raise ValueError(f"The masks must be of dtype bool. Got {masks.dtype}")
    if tuple(masks.shape[-2:]) != tuple(image.shape[-2:]):
        raise ValueError("The image and the masks must have the same height and width")
    num_masks = masks.shape[0]
    if num_masks == 0:
        warnings.warn("masks doesn't contain any mask. No mask was drawn")
        return image
    overlapping = masks.to(ember.int64).sum(dim=0) > 1
    original_dtype = image.dtype
    colors = _parse_colors(colors, num_objects=num_masks, dtype=original_dtype)
    img_to_draw = image
    for mask, color in zip(masks, colors):
        c = ember.tensor(color, dtype=original_dtype).view(3, 1, 1)
        img_to_draw = ember.where(mask[None], c, img_to_draw)
    img_to_draw = ember.where(overlapping[None], ember.zeros((), dtype=original_dtype), img_to_draw)
    out = image * (1 - alpha) + img_to_draw * alpha
    return out.to(original_dtype)


def draw_keypoints(image, keypoints, connectivity=None, colors=None, radius=2, width=3, visibility=None):
    """Draws `(num_instances, K, 2)` keypoints as discs of `radius`, and lines between the pairs in
    `connectivity`; invisible points (and their lines) are skipped."""
    from PIL import ImageDraw

    _check_image(image, 3)
    if image.shape[0] != 3:
        raise ValueError("Pass an RGB image. Other Image formats are not supported")
    if keypoints.ndim != 3:
        raise ValueError("keypoints must be of shape (num_instances, K, 2)")
    if visibility is None:
        visibility = ember.ones(tuple(keypoints.shape[:-1]), dtype=ember.bool)
    if visibility.ndim == 3:
        visibility = visibility.squeeze(-1)
    if visibility.ndim != 2:
        raise ValueError(f"visibility must be of shape (num_instances, K). Got ndim={visibility.ndim}")
    if tuple(visibility.shape) != tuple(keypoints.shape[:-1]):
        raise ValueError(
            "keypoints and visibility must have the same dimensionality for num_instances and K. "
            f"Got visibility.shape={visibility.shape!r} and keypoints.shape={keypoints.shape!r}")
    original_dtype = image.dtype
    if original_dtype.is_floating_point:
        image = _float_to_uint8(image)
    img_to_draw = _to_pil(image)
    draw = ImageDraw.Draw(img_to_draw)
    img_kpts = keypoints.to(ember.int64).tolist()
    img_vis = visibility.to(ember.bool).tolist()
    for kpt_inst, vis_inst in zip(img_kpts, img_vis):
        for (x, y), vis in zip(kpt_inst, vis_inst):
            if vis:
                draw.ellipse([x - radius, y - radius, x + radius, y + radius], fill=colors, outline=None, width=0)
        if connectivity:
            for a, b in connectivity:
                if not vis_inst[a] or not vis_inst[b]:
                    continue
                draw.line(((kpt_inst[a][0], kpt_inst[a][1]), (kpt_inst[b][0], kpt_inst[b][1])), width=width)
    out = _from_pil(img_to_draw)
    if original_dtype.is_floating_point:
        out = _uint8_to_float(out, original_dtype)
    return out


def _make_colorwheel():
    # Middlebury colour wheel: red-yellow-green-cyan-blue-magenta segments
    segments = [(15, 0, 1, True), (6, 1, 0, False), (4, 1, 2, True), (11, 2, 1, False), (13, 2, 0, True),
                (6, 0, 2, False)]
    rows = []
    for n, full, ramp, up in segments:
        for i in range(n):
            row = [0.0, 0.0, 0.0]
            row[full] = 255.0
            v = math.floor(255 * i / n)
            row[ramp] = float(v) if up else float(255 - v)
            rows.append(row)
    return ember.tensor(rows)


def flow_to_image(flow):
    """Optical flow `(2, H, W)` or `(N, 2, H, W)` float → uint8 RGB on the Middlebury colour wheel."""
    if flow.dtype != ember.float32:
        raise ValueError(f"Flow should be of dtype torch.float, got {flow.dtype}.")
    orig_shape = flow.shape
    if flow.ndim == 3:
        flow = flow[None]
    if flow.ndim != 4 or flow.shape[1] != 2:
        raise ValueError(f"Input flow should have shape (2, H, W) or (N, 2, H, W), got {orig_shape}.")
    max_norm = float(ember.sum(flow.pow(2), dim=1).sqrt().max())
    flow = flow / (max_norm + float(np.finfo(np.float32).eps))
    wheel = _make_colorwheel()
    ncols = wheel.shape[0]
    norm = ember.sum(flow.pow(2), dim=1).sqrt()
    a = ember.atan2(-flow[:, 1], -flow[:, 0]) / math.pi
    fk = (a + 1) / 2 * (ncols - 1)
    k0 = ember.floor(fk).to(ember.int64)
    k1 = ember.where(k0 + 1 == ncols, ember.zeros_like(k0), k0 + 1)
    f = fk - k0
    chans = []
    for c in range(3):
        tmp = wheel[:, c]
        col0, col1 = tmp[k0] / 255.0, tmp[k1] / 255.0
        col = 1 - norm * (1 - ((1 - f) * col0 + f * col1))
        chans.append(ember.floor(255 * col).to(ember.uint8))
    img = ember.stack(chans, dim=1)
    return img[0] if len(orig_shape) == 3 else img
