"""Tensor kernels of `embervision.transforms.functional` (images are `[..., C, H, W]` ember tensors).

Behaviour (formulas, rounding, dtype handling, error texts) follows TorchVision's v1 tensor
backend. Ember has no `grid_sample` and no `bincount`, so both are built here from ember ops
(`_grid_sample`, `_histogram256`).
"""
import math
import numbers
import warnings

import ember
from ember import Tensor
from ember.nn.functional import conv2d, interpolate, pad as _nn_pad


def _is_tensor_image(x):
    return x.ndim >= 2


def _assert_image_tensor(img):
    if not _is_tensor_image(img):
        raise TypeError("Tensor is not a torch image.")


def get_dimensions(img):
    _assert_image_tensor(img)
    channels = 1 if img.ndim == 2 else img.shape[-3]
    return [channels, img.shape[-2], img.shape[-1]]


def get_image_size(img):
    _assert_image_tensor(img)
    return [img.shape[-1], img.shape[-2]]


def get_image_num_channels(img):
    _assert_image_tensor(img)
    if img.ndim == 2:
        return 1
    return img.shape[-3]


_MAX = {"uint8": 255, "int8": 127, "int16": 32767, "uint16": 65535, "int32": 2147483647, "int64": 9223372036854775807}


def _max_value(dtype):
    return _MAX.get(str(dtype).rsplit(".", 1)[-1], 1)


def _is_float(dtype):
    return dtype.is_floating_point


def _assert_channels(img, permitted):
    c = get_dimensions(img)[0]
    if c not in permitted:
        raise TypeError(f"Input image tensor permitted channel values are {permitted}, but found {c}")


def convert_image_dtype(image, dtype=ember.float32):
    if image.dtype == dtype:
        return image
    if image.is_floating_point():
        if _is_float(dtype):
            return image.to(dtype)
        if (image.dtype == ember.float32 and dtype in (ember.int32, ember.int64)) or (
            image.dtype == ember.float64 and dtype == ember.int64
        ):
            raise RuntimeError(f"The cast from {image.dtype} to {dtype} cannot be performed safely.")
        # Scale by max + 1 - eps so that 1.0 lands on max and each bucket is equally wide.
        return image.mul(float(_max_value(dtype)) + 1.0 - 1e-3).to(dtype)
    input_max = float(_max_value(image.dtype))
    if _is_float(dtype):
        return image.to(dtype) / input_max
    output_max = float(_max_value(dtype))
    if input_max > output_max:
        factor = int((input_max + 1) // (output_max + 1))
        return ember.div(image, factor, rounding_mode="floor").to(dtype)
    factor = int((output_max + 1) // (input_max + 1))
    return image.to(dtype) * factor


def vflip(img):
    _assert_image_tensor(img)
    return img.flip(-2)


def hflip(img):
    _assert_image_tensor(img)
    return img.flip(-1)


def crop(img, top, left, height, width):
    _assert_image_tensor(img)
    _, h, w = get_dimensions(img)
    right, bottom = left + width, top + height
    if left < 0 or top < 0 or right > w or bottom > h:
        padding_ltrb = [
            max(-left + min(0, right), 0),
            max(-top + min(0, bottom), 0),
            max(right - max(w, left), 0),
            max(bottom - max(h, top), 0),
        ]
        return pad(img[..., max(top, 0):bottom, max(left, 0):right], padding_ltrb, fill=0)
    return img[..., top:bottom, left:right]


def rgb_to_grayscale(img, num_output_channels=1):
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    _assert_channels(img, [1, 3])
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    if img.shape[-3] == 3:
        r, g, b = img.unbind(dim=-3)
        # ITU-R 601-2 luma, the weights PIL uses; integer images truncate as TorchVision's do.
        l_img = (0.2989 * r + 0.587 * g + 0.114 * b).to(img.dtype).unsqueeze(dim=-3)
    else:
        l_img = img.clone()
    if num_output_channels == 3:
        return l_img.expand(img.shape)
    return l_img


def _blend(img1, img2, ratio):
    ratio = float(ratio)
    bound = _max_value(img1.dtype)
    return (ratio * img1 + (1.0 - ratio) * img2).clamp(0, bound).to(img1.dtype)


def adjust_brightness(img, brightness_factor):
    if brightness_factor < 0:
        raise ValueError(f"brightness_factor ({brightness_factor}) is not non-negative.")
    _assert_image_tensor(img)
    _assert_channels(img, [1, 3])
    return _blend(img, ember.zeros_like(img), brightness_factor)


def adjust_contrast(img, contrast_factor):
    if contrast_factor < 0:
        raise ValueError(f"contrast_factor ({contrast_factor}) is not non-negative.")
    _assert_image_tensor(img)
    _assert_channels(img, [3, 1])
    c = get_dimensions(img)[0]
    dtype = img.dtype if img.is_floating_point() else ember.float32
    gray = rgb_to_grayscale(img) if c == 3 else img
    mean = ember.mean(gray.to(dtype), dim=(-3, -2, -1), keepdim=True)
    return _blend(img, mean, contrast_factor)


def _rgb2hsv(img):
    r, g, b = img.unbind(dim=-3)
    # amax/amin: ember.max(x, dim).values is wrong when dim is not the innermost (ember bug)
    maxc = img.amax(dim=-3)
    minc = img.amin(dim=-3)
    eqc = maxc == minc
    cr = maxc - minc
    ones = ember.ones_like(maxc)
    s = cr / ember.where(eqc, ones, maxc)
    cr_divisor = ember.where(eqc, ones, cr)
    rc = (maxc - r) / cr_divisor
    gc = (maxc - g) / cr_divisor
    bc = (maxc - b) / cr_divisor
    hr = (maxc == r) * (bc - gc)
    hg = ((maxc == g) & (maxc != r)) * (2.0 + rc - bc)
    hb = ((maxc != g) & (maxc != r)) * (4.0 + gc - rc)
    h = ember.fmod((hr + hg + hb) / 6.0 + 1.0, 1.0)
    return ember.stack((h, s, maxc), dim=-3)


def _hsv2rgb(img):
    h, s, v = img.unbind(dim=-3)
    i = ember.floor(h * 6.0)
    f = h * 6.0 - i
    i = i.to(ember.int32) % 6
    p = ember.clamp(v * (1.0 - s), 0.0, 1.0)
    q = ember.clamp(v * (1.0 - s * f), 0.0, 1.0)
    t = ember.clamp(v * (1.0 - s * (1.0 - f)), 0.0, 1.0)
    mask = (i.unsqueeze(dim=-3) == ember.arange(6).view(-1, 1, 1)).to(img.dtype)
    a1 = ember.stack((v, q, p, p, t, v), dim=-3)
    a2 = ember.stack((t, v, v, q, p, p), dim=-3)
    a3 = ember.stack((p, p, t, v, v, q), dim=-3)
    a4 = ember.stack((a1, a2, a3), dim=-4)
    # (ember.einsum mis-evaluates "...ijk, ...xijk -> ...xjk": spelled out as a product and sum)
    return (mask.unsqueeze(-4) * a4).sum(dim=-3)


def adjust_hue(img, hue_factor):
    if not (-0.5 <= hue_factor <= 0.5):
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    if not isinstance(img, Tensor):
        raise TypeError("Input img should be Tensor image")
    _assert_image_tensor(img)
    _assert_channels(img, [1, 3])
    if get_dimensions(img)[0] == 1:
        return img
    orig_dtype = img.dtype
    hsv = _rgb2hsv(convert_image_dtype(img, ember.float32))
    h, s, v = hsv.unbind(dim=-3)
    h = (h + hue_factor) % 1.0
    return convert_image_dtype(_hsv2rgb(ember.stack((h, s, v), dim=-3)), orig_dtype)


def adjust_saturation(img, saturation_factor):
    if saturation_factor < 0:
        raise ValueError(f"saturation_factor ({saturation_factor}) is not non-negative.")
    _assert_image_tensor(img)
    _assert_channels(img, [1, 3])
    if get_dimensions(img)[0] == 1:
        return img
    return _blend(img, rgb_to_grayscale(img), saturation_factor)


def adjust_gamma(img, gamma, gain=1):
    if not isinstance(img, Tensor):
        raise TypeError("Input img should be a Tensor.")
    _assert_channels(img, [1, 3])
    if gamma < 0:
        raise ValueError("Gamma should be a non-negative real number")
    dtype = img.dtype
    result = img if img.is_floating_point() else convert_image_dtype(img, ember.float32)
    result = (gain * result.pow(gamma)).clamp(0, 1)
    return convert_image_dtype(result, dtype)


def _parse_pad_padding(padding):
    if isinstance(padding, int):
        return [padding] * 4
    if len(padding) == 1:
        return [padding[0]] * 4
    if len(padding) == 2:
        return [padding[0], padding[0], padding[1], padding[1]]
    return [padding[0], padding[2], padding[1], padding[3]]  # ltrb -> left, right, top, bottom


def _pad_symmetric(img, padding):
    if min(padding) < 0:
        cl, cr, ct, cb = [-min(x, 0) for x in padding]
        img = img[..., ct:img.shape[-2] - cb, cl:img.shape[-1] - cr]
        padding = [max(x, 0) for x in padding]
    h, w = img.shape[-2], img.shape[-1]
    xs = list(range(padding[0] - 1, -1, -1)) + list(range(w)) + [w - 1 - i for i in range(padding[1])]
    ys = list(range(padding[2] - 1, -1, -1)) + list(range(h)) + [h - 1 - i for i in range(padding[3])]
    if img.ndim not in (3, 4):
        raise RuntimeError("Symmetric padding of N-D tensors are not supported yet")
    return img.index_select(-2, ember.tensor(ys)).index_select(-1, ember.tensor(xs))


def pad(img, padding, fill=0, padding_mode="constant"):
    _assert_image_tensor(img)
    if fill is None:
        fill = 0
    if not isinstance(padding, (int, tuple, list)):
        raise TypeError("Got inappropriate padding arg")
    if not isinstance(fill, (int, float)):
        raise TypeError("Got inappropriate fill arg")
    if not isinstance(padding_mode, str):
        raise TypeError("Got inappropriate padding_mode arg")
    if isinstance(padding, tuple):
        padding = list(padding)
    if isinstance(padding, list) and len(padding) not in [1, 2, 4]:
        raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element tuple")
    if padding_mode not in ["constant", "edge", "reflect", "symmetric"]:
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
    p = _parse_pad_padding(padding)
    if padding_mode == "symmetric":
        return _pad_symmetric(img, p)
    mode = "replicate" if padding_mode == "edge" else padding_mode
    squeeze = img.ndim < 4
    if squeeze:
        img = img.unsqueeze(dim=0)
    out_dtype = img.dtype
    cast = mode != "constant" and img.dtype not in (ember.float32, ember.float64)
    if cast:
        img = img.to(ember.float32)
    if mode in ("reflect", "replicate"):
        img = _nn_pad(img, p, mode=mode)
    else:
        img = _nn_pad(img, p, mode=mode, value=float(fill) if img.is_floating_point() else int(fill))
    if squeeze:
        img = img.squeeze(dim=0)
    if cast:
        img = img.to(out_dtype)
    return img


def _cast_squeeze_in(img, req_dtypes):
    squeeze = img.ndim < 4
    if squeeze:
        img = img.unsqueeze(dim=0)
    out_dtype = img.dtype
    cast = out_dtype not in req_dtypes
    if cast:
        img = img.to(req_dtypes[0])
    return img, cast, squeeze, out_dtype


def _cast_squeeze_out(img, need_cast, need_squeeze, out_dtype):
    if need_squeeze:
        img = img.squeeze(dim=0)
    if need_cast:
        if not _is_float(out_dtype):
            img = ember.round(img)
        img = img.to(out_dtype)
    return img


def _flatten_batch(img):
    """`[..., C, H, W]` → `[N, C, H, W]` plus the leading shape to restore."""
    lead = list(img.shape[:-3])
    return img.reshape([-1] + list(img.shape[-3:])), lead


def resize(img, size, interpolation="bilinear", antialias=True):
    _assert_image_tensor(img)
    size = list(size)
    if antialias is None:
        antialias = False
    if antialias and interpolation not in ["bilinear", "bicubic"]:
        antialias = False
    shape = list(img.shape)
    if img.ndim > 4:
        img = img.reshape([-1] + shape[-3:])
    img, need_cast, need_squeeze, out_dtype = _cast_squeeze_in(img, [ember.float32, ember.float64])
    align_corners = False if interpolation in ["bilinear", "bicubic"] else None
    img = interpolate(img, size=size, mode=interpolation, align_corners=align_corners, antialias=antialias)
    if interpolation == "bicubic" and out_dtype == ember.uint8:
        img = img.clamp(min=0, max=255)
    img = _cast_squeeze_out(img, need_cast, need_squeeze, out_dtype)
    if len(shape) > 4:
        img = img.reshape(shape[:-2] + size)
    return img


# ---- grid transforms (affine, rotate, perspective) ----

def _assert_grid_transform_inputs(img, matrix, interpolation, fill, supported, coeffs=None):
    if not isinstance(img, Tensor):
        raise TypeError("Input img should be Tensor")
    _assert_image_tensor(img)
    if matrix is not None and not isinstance(matrix, list):
        raise TypeError("Argument matrix should be a list")
    if matrix is not None and len(matrix) != 6:
        raise ValueError("Argument matrix should have 6 float values")
    if coeffs is not None and len(coeffs) != 8:
        raise ValueError("Argument coeffs should have 8 float values")
    if fill is not None and not isinstance(fill, (int, float, tuple, list)):
        warnings.warn("Argument fill should be either int, float, tuple or list")
    num_channels = get_dimensions(img)[0]
    if fill is not None and isinstance(fill, (tuple, list)) and len(fill) > 1 and len(fill) != num_channels:
        raise ValueError(
            "The number of elements in 'fill' cannot broadcast to match the number of "
            f"channels of the image ({len(fill)} != {num_channels})"
        )
    if interpolation not in supported:
        raise ValueError(f"Interpolation mode '{interpolation}' is unsupported with Tensor input")


def _grid_sample(img, grid, mode):
    """`grid_sample(img, grid, mode, padding_mode='zeros', align_corners=False)` for `[N, C, H, W]`
    float input and an `[N, Ho, Wo, 2]` grid of (x, y) in [-1, 1]: ember has none."""
    n, c, h, w = img.shape
    ho, wo = grid.shape[1], grid.shape[2]
    flat = img.reshape(n, c, h * w)
    gx = grid[..., 0].reshape(n, ho * wo)
    gy = grid[..., 1].reshape(n, ho * wo)
    # unnormalise as PyTorch's CPU kernel does (coord * size/2 + (size-1)/2), so ties at .5 round alike
    x = gx * (w / 2.0) + (w - 1) / 2.0
    y = gy * (h / 2.0) + (h - 1) / 2.0

    def tap(xi, yi, weight):
        valid = (xi >= 0) & (xi <= w - 1) & (yi >= 0) & (yi <= h - 1)
        idx = (yi.clamp(0, h - 1) * w + xi.clamp(0, w - 1)).to(ember.int64)
        vals = flat.gather(2, idx.unsqueeze(1).expand(n, c, ho * wo))
        return vals * (weight * valid.to(img.dtype)).unsqueeze(1)

    if mode == "nearest":
        # nearbyint: round half to even, as PyTorch's kernel
        out = tap(ember.round(x), ember.round(y), ember.ones_like(x))
    else:
        x0, y0 = ember.floor(x), ember.floor(y)
        x1, y1 = x0 + 1, y0 + 1
        wx1, wy1 = x - x0, y - y0
        wx0, wy0 = 1.0 - wx1, 1.0 - wy1
        out = tap(x0, y0, wx0 * wy0) + tap(x1, y0, wx1 * wy0) + tap(x0, y1, wx0 * wy1) + tap(x1, y1, wx1 * wy1)
    return out.reshape(n, c, ho, wo)


def _apply_grid_transform(img, grid, mode, fill):
    shape = list(img.shape)
    if img.ndim > 4:
        img = img.reshape([-1] + shape[-3:])
    img, need_cast, need_squeeze, out_dtype = _cast_squeeze_in(img, [grid.dtype])
    if img.shape[0] > 1:
        grid = grid.expand(img.shape[0], grid.shape[1], grid.shape[2], grid.shape[3])
    if fill is not None:
        mask = ember.ones((img.shape[0], 1, img.shape[2], img.shape[3]), dtype=img.dtype)
        img = ember.cat((img, mask), dim=1)
    img = _grid_sample(img, grid, mode)
    if fill is not None:
        mask = img[:, -1:, :, :]
        img = img[:, :-1, :, :]
        mask = mask.expand_as(img)
        fill_list = list(fill) if isinstance(fill, (tuple, list)) else [float(fill)]
        fill_img = ember.tensor(fill_list, dtype=img.dtype).view(1, len(fill_list), 1, 1).expand_as(img)
        if mode == "nearest":
            img = ember.where(mask < 0.5, fill_img, img)
        else:
            img = img * mask + (1.0 - mask) * fill_img
    img = _cast_squeeze_out(img, need_cast, need_squeeze, out_dtype)
    if len(shape) > 4:
        img = img.reshape(shape[:-2] + list(img.shape[-2:]))
    return img


def _base_grid(ow, oh, x0, y0, dtype):
    xs = ember.linspace(x0, x0 + ow - 1.0, steps=ow).to(dtype)
    ys = ember.linspace(y0, y0 + oh - 1.0, steps=oh).to(dtype)
    gx = xs.view(1, ow).expand(oh, ow)
    gy = ys.view(oh, 1).expand(oh, ow)
    return ember.stack((gx, gy, ember.ones((oh, ow), dtype=dtype)), dim=-1).reshape(1, oh * ow, 3)


def _gen_affine_grid(theta, w, h, ow, oh):
    base = _base_grid(ow, oh, -ow * 0.5 + 0.5, -oh * 0.5 + 0.5, theta.dtype)
    rescaled = theta.transpose(1, 2) / ember.tensor([0.5 * w, 0.5 * h], dtype=theta.dtype)
    return base.bmm(rescaled).view(1, oh, ow, 2)


def affine(img, matrix, interpolation="nearest", fill=None):
    _assert_grid_transform_inputs(img, matrix, interpolation, fill, ["nearest", "bilinear"])
    dtype = img.dtype if img.is_floating_point() else ember.float32
    theta = ember.tensor(matrix, dtype=dtype).reshape(1, 2, 3)
    grid = _gen_affine_grid(theta, w=img.shape[-1], h=img.shape[-2], ow=img.shape[-1], oh=img.shape[-2])
    return _apply_grid_transform(img, grid, interpolation, fill=fill)


def _compute_affine_output_size(matrix, w, h):
    # float32 arithmetic, as TorchVision computes it, so the expanded size agrees to the pixel
    pts = ember.tensor([[-0.5 * w, -0.5 * h, 1.0], [-0.5 * w, 0.5 * h, 1.0], [0.5 * w, 0.5 * h, 1.0], [0.5 * w, -0.5 * h, 1.0]])
    theta = ember.tensor(matrix, dtype=ember.float32).view(2, 3)
    new_pts = ember.matmul(pts, theta.T)
    half = ember.tensor((w * 0.5, h * 0.5))
    min_vals = new_pts.amin(dim=0) + half
    max_vals = new_pts.amax(dim=0) + half
    tol = 1e-4
    cmax = ember.ceil(ember.trunc(max_vals / tol) * tol)
    cmin = ember.floor(ember.trunc(min_vals / tol) * tol)
    size = (cmax - cmin).tolist()
    return int(size[0]), int(size[1])


def rotate(img, matrix, interpolation="nearest", expand=False, fill=None):
    _assert_grid_transform_inputs(img, matrix, interpolation, fill, ["nearest", "bilinear"])
    w, h = img.shape[-1], img.shape[-2]
    ow, oh = _compute_affine_output_size(matrix, w, h) if expand else (w, h)
    dtype = img.dtype if img.is_floating_point() else ember.float32
    theta = ember.tensor(matrix, dtype=dtype).reshape(1, 2, 3)
    grid = _gen_affine_grid(theta, w=w, h=h, ow=ow, oh=oh)
    return _apply_grid_transform(img, grid, interpolation, fill=fill)


def _perspective_grid(coeffs, ow, oh, dtype):
    theta1 = ember.tensor([[[coeffs[0], coeffs[1], coeffs[2]], [coeffs[3], coeffs[4], coeffs[5]]]], dtype=dtype)
    theta2 = ember.tensor([[[coeffs[6], coeffs[7], 1.0], [coeffs[6], coeffs[7], 1.0]]], dtype=dtype)
    base = _base_grid(ow, oh, 0.5, 0.5, dtype)
    rescaled1 = theta1.transpose(1, 2) / ember.tensor([0.5 * ow, 0.5 * oh], dtype=dtype)
    grid = base.bmm(rescaled1) / base.bmm(theta2.transpose(1, 2)) - 1.0
    return grid.view(1, oh, ow, 2)


def perspective(img, perspective_coeffs, interpolation="bilinear", fill=None):
    if not isinstance(img, Tensor):
        raise TypeError("Input img should be Tensor.")
    _assert_image_tensor(img)
    _assert_grid_transform_inputs(img, None, interpolation, fill, ["nearest", "bilinear"], coeffs=perspective_coeffs)
    dtype = img.dtype if img.is_floating_point() else ember.float32
    grid = _perspective_grid(perspective_coeffs, ow=img.shape[-1], oh=img.shape[-2], dtype=dtype)
    return _apply_grid_transform(img, grid, interpolation, fill=fill)


# ---- filters and colour ops ----

def _gaussian_kernel1d(kernel_size, sigma, dtype):
    half = (kernel_size - 1) * 0.5
    x = ember.linspace(-half, half, steps=kernel_size).to(dtype)
    pdf = ember.exp(-0.5 * (x / sigma).pow(2))
    return pdf / pdf.sum()


def _gaussian_kernel2d(kernel_size, sigma, dtype):
    kx = _gaussian_kernel1d(kernel_size[0], sigma[0], dtype)
    ky = _gaussian_kernel1d(kernel_size[1], sigma[1], dtype)
    return ember.mm(ky[:, None], kx[None, :])


def _depthwise(img, kernel, padding=None):
    """Convolves each channel of `[..., C, H, W]` with a 2-d kernel (padding: reflect `ltrb`)."""
    shape = list(img.shape)
    x = img.reshape([-1] + shape[-3:]) if img.ndim != 4 else img
    c = x.shape[-3]
    weight = kernel.expand(c, 1, kernel.shape[0], kernel.shape[1]).contiguous()
    if padding is not None:
        x = _nn_pad(x, padding, mode="reflect")
    x = conv2d(x, weight, groups=c)
    return x.reshape(shape[:-2] + list(x.shape[-2:])) if len(shape) != 4 else x


def gaussian_blur(img, kernel_size, sigma):
    if not isinstance(img, Tensor):
        raise TypeError(f"img should be Tensor. Got {type(img)}")
    _assert_image_tensor(img)
    dtype = img.dtype if img.is_floating_point() else ember.float32
    kernel = _gaussian_kernel2d(kernel_size, sigma, dtype)
    x, need_cast, need_squeeze, out_dtype = _cast_squeeze_in(img, [kernel.dtype])
    padding = [kernel_size[0] // 2, kernel_size[0] // 2, kernel_size[1] // 2, kernel_size[1] // 2]
    x = _depthwise(x, kernel, padding)
    return _cast_squeeze_out(x, need_cast, need_squeeze, out_dtype)


def invert(img):
    _assert_image_tensor(img)
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    _assert_channels(img, [1, 3])
    return _max_value(img.dtype) - img


def posterize(img, bits):
    _assert_image_tensor(img)
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    if img.dtype != ember.uint8:
        raise TypeError(f"Only torch.uint8 image tensors are supported, but found {img.dtype}")
    _assert_channels(img, [1, 3])
    return img & -int(2 ** (8 - bits))


def solarize(img, threshold):
    _assert_image_tensor(img)
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    _assert_channels(img, [1, 3])
    if threshold > _max_value(img.dtype):
        raise TypeError("Threshold should be less than bound of img.")
    return ember.where(img >= threshold, invert(img), img)


def _blurred_degenerate_image(img):
    dtype = img.dtype if img.is_floating_point() else ember.float32
    kernel = ember.ones((3, 3), dtype=dtype)
    kernel[1, 1] = 5.0
    kernel = kernel / kernel.sum()
    x, need_cast, need_squeeze, out_dtype = _cast_squeeze_in(img, [kernel.dtype])
    x = _cast_squeeze_out(_depthwise(x, kernel), need_cast, need_squeeze, out_dtype)
    result = img.clone()
    result[..., 1:-1, 1:-1] = x
    return result


def adjust_sharpness(img, sharpness_factor):
    if sharpness_factor < 0:
        raise ValueError(f"sharpness_factor ({sharpness_factor}) is not non-negative.")
    _assert_image_tensor(img)
    _assert_channels(img, [1, 3])
    if img.shape[-1] <= 2 or img.shape[-2] <= 2:
        return img
    return _blend(img, _blurred_degenerate_image(img), sharpness_factor)


def autocontrast(img):
    _assert_image_tensor(img)
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    _assert_channels(img, [1, 3])
    bound = _max_value(img.dtype)
    dtype = img.dtype if img.is_floating_point() else ember.float32
    minimum = img.amin(dim=(-2, -1), keepdim=True).to(dtype)
    maximum = img.amax(dim=(-2, -1), keepdim=True).to(dtype)
    scale = bound / (maximum - minimum)
    flat = ember.isfinite(scale).logical_not()
    minimum = ember.where(flat, ember.zeros_like(minimum), minimum)
    scale = ember.where(flat, ember.ones_like(scale), scale)
    return ((img - minimum) * scale).clamp(0, bound).to(img.dtype)


def _histogram256(chan):
    """bincount(chan.flatten(), minlength=256) of a uint8 channel (ember has no bincount)."""
    idx = chan.reshape(-1).to(ember.int64)
    return ember.zeros(256, dtype=ember.int64).scatter_add_(0, idx, ember.ones_like(idx))


def _scale_channel(chan):
    hist = _histogram256(chan)
    nonzero = hist[hist != 0]
    step = int(nonzero[:-1].sum().item()) // 255
    if step == 0:
        return chan
    lut = ember.div(ember.cumsum(hist, 0) + step // 2, step, rounding_mode="floor")
    lut = _nn_pad(lut, [1, 0])[:-1].clamp(0, 255)
    return lut[chan.to(ember.int64)].to(ember.uint8)


def _equalize_single(img):
    return ember.stack([_scale_channel(img[c]) for c in range(img.shape[0])])


def equalize(img):
    _assert_image_tensor(img)
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    if img.dtype != ember.uint8:
        raise TypeError(f"Only torch.uint8 image tensors are supported, but found {img.dtype}")
    _assert_channels(img, [1, 3])
    if img.ndim == 3:
        return _equalize_single(img)
    # any leading batch dimensions (videos, batches of videos), as TorchVision v2's equalize
    flat, lead = _flatten_batch(img)
    return ember.stack([_equalize_single(x) for x in flat]).reshape(lead + list(img.shape[-3:]))


def normalize(tensor, mean, std, inplace=False):
    _assert_image_tensor(tensor)
    if not tensor.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.ndim < 3:
        raise ValueError(
            f"Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = {tensor.size()}"
        )
    dtype = tensor.dtype
    mean = ember.as_tensor(mean, dtype=dtype)
    std = ember.as_tensor(std, dtype=dtype)
    if bool((std == 0).any()):
        raise ValueError(f"std evaluated to zero after conversion to {dtype}, leading to division by zero.")
    if mean.ndim == 1:
        mean = mean.view(-1, 1, 1)
    if std.ndim == 1:
        std = std.view(-1, 1, 1)
    if inplace:
        return tensor.sub_(mean).div_(std)
    return (tensor - mean) / std


def erase(img, i, j, h, w, v, inplace=False):
    _assert_image_tensor(img)
    if not inplace:
        img = img.clone()
    img[..., i:i + h, j:j + w] = v
    return img


def elastic_transform(img, displacement, interpolation="bilinear", fill=None):
    if not isinstance(img, Tensor):
        raise TypeError(f"img should be Tensor. Got {type(img)}")
    h, w = img.shape[-2], img.shape[-1]
    ys = ember.linspace((-h + 1) / h, (h - 1) / h, steps=h)
    xs = ember.linspace((-w + 1) / w, (w - 1) / w, steps=w)
    identity = ember.stack((xs.view(1, w).expand(h, w), ys.view(h, 1).expand(h, w)), dim=-1).unsqueeze(0)
    return _apply_grid_transform(img, identity + displacement, interpolation, fill)
