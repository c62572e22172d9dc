"""Where `verify`'s inputs and references come from: seeded random values (optionally in a range), an
`.npz` of arrays, one image, or reference outputs saved elsewhere (e.g. on a device).

Images: decoded with Pillow when it is installed (`pip install 'nnconv[image]'`: PNG, JPEG, BMP, ...);
without it, binary PPM / PGM (P6 / P5, 8-bit) are read by `_read_pnm` below. The image is resized
(bilinear) to the model's single image input, [1, H, W, C] or [1, C, H, W] (C 1 or 3), and its pixels
become values as parity/preprocess.py says (default: onto [-1, 1], the range `random_inputs` uses;
`--input-range`, or per-channel `--input-mean` / `--input-std`):
- float inputs take those values;
- quantized inputs (uint8 / int8) take them quantized with the input's own scale and zero point (round half
  to even, clamped to the dtype): the range the model was calibrated for is honoured.
"""

from __future__ import annotations

import os
from typing import Mapping, Sequence

import numpy as np

from nnconv.errors import InputDataError
from nnconv.nnapi.program import IoTensor
from nnconv.parity.preprocess import ImagePreprocessing, image_layout

def ranged_inputs(specs: Sequence[IoTensor], seed: int, low: float, high: float) -> dict[str, np.ndarray]:
    """Seeded uniform values in [low, high] for float inputs and, for quantized inputs, the integers whose
    real values (scale, zero point) fall in that range; integer index inputs keep `random_inputs`' values."""
    from nnconv.parity.verify import random_inputs
    if not low < high:
        raise InputDataError(f"--input-range {low} {high}: LO must be below HI")
    out = random_inputs(list(specs), seed)
    rng = np.random.default_rng(seed)
    for spec in specs:
        dt = spec.np_dtype
        shape = tuple(spec.shape)
        if dt.kind == "f":
            out[spec.name] = rng.uniform(low, high, size=shape).astype(dt)
        elif dt in (np.dtype(np.uint8), np.dtype(np.int8), np.dtype(np.int16)) and spec.scale > 0:
            out[spec.name] = quantize(rng.uniform(low, high, size=shape), spec)
    return out


def quantize(real: np.ndarray, spec: IoTensor) -> np.ndarray:
    """Real values in the input's quantized dtype (round half to even, clamped)."""
    info = np.iinfo(spec.np_dtype)
    q = np.rint(np.asarray(real, dtype=np.float64) / spec.scale) + spec.zero_point
    return np.clip(q, info.min, info.max).astype(spec.np_dtype)


def image_inputs(path: str | os.PathLike, specs: Sequence[IoTensor],
                 preprocessing: ImagePreprocessing | tuple[float, float] | None = None,
                 option: str = "--image") -> dict[str, np.ndarray]:
    """The model's one image input filled from an image file (see the module docstring); `preprocessing`: how
    pixels become values (a (LO, HI) pair is `--input-range`); `option` names where the image came from in
    errors (`--image`, or `--dataset` for its samples)."""
    if not isinstance(preprocessing, ImagePreprocessing):
        preprocessing = ImagePreprocessing(value_range=preprocessing)
    preprocessing.check()
    layouts = [image_layout(tuple(s.shape), preprocessing.layout) for s in specs]
    if len(specs) != 1 or layouts[0] is None:
        wanted = f"[1, H, W, 1 or 3] or [1, 1 or 3, H, W]" if preprocessing.layout is None else \
            {"nhwc": "[1, H, W, 1 or 3] (--input-layout nhwc)", "nchw": "[1, 1 or 3, H, W] (--input-layout nchw)"}[
                preprocessing.layout]
        raise InputDataError(f"{option} needs a model with one image input {wanted}; this one takes "
                             + ", ".join(f"{s.name} {list(s.shape)}" for s in specs))
    spec, nchw = specs[0], layouts[0] == "nchw"
    _, height, width, channels = (spec.shape[0], *spec.shape[2:], spec.shape[1]) if nchw else spec.shape
    pixels = resize_bilinear(read_image(path, channels, option), height, width)
    mean, std = preprocessing.per_channel(channels)
    real = (pixels - mean) / std
    if nchw:
        real = real.transpose(2, 0, 1)
    dt = spec.np_dtype
    if dt.kind == "f":
        value = real.astype(dt)
    elif dt in (np.dtype(np.uint8), np.dtype(np.int8)) and spec.scale > 0:
        value = quantize(real, spec)
    else:
        raise InputDataError(f"{option}: input {spec.name} is {spec.dtype}; only float and uint8/int8 images")
    return {spec.name: value.reshape(spec.shape)}


def read_image(path: str | os.PathLike, channels: int, option: str = "--image") -> np.ndarray:
    """An [H, W, channels] float64 array of 0..255 pixel values."""
    try:
        from PIL import Image
    except ImportError:
        pixels = _read_pnm(path, option)
    else:
        try:
            with Image.open(path) as im:
                pixels = np.asarray(im.convert("L" if channels == 1 else "RGB"))
        # Pillow's decoders raise OSError for most damage, but ValueError / SyntaxError / EOFError from some
        # plugins (a PPM header "P6 junk"), and DecompressionBombError past its pixel limit.
        except (OSError, ValueError, SyntaxError, EOFError, Image.DecompressionBombError) as e:
            raise InputDataError(f"{option} {os.fspath(path)}: cannot read it as an image ({e})") from None
    pixels = pixels.astype(np.float64)
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    if pixels.shape[2] != channels:
        pixels = pixels.mean(axis=2, keepdims=True) if channels == 1 else np.repeat(pixels[:, :, :1], 3, axis=2)
    return pixels


def _read_pnm(path: str | os.PathLike, option: str = "--image") -> np.ndarray:
    """Binary 8-bit PGM (P5) or PPM (P6): the formats read without Pillow."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InputDataError(f"{option} {os.fspath(path)}: {e.strerror}") from None
    fields: list[bytes] = []
    pos = 0
    while len(fields) < 4 and pos < len(data):  # magic, width, height, maxval; '#' starts a comment
        while pos < len(data) and data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.find(b"\n", pos) + 1 or len(data)
            continue
        end = pos
        while end < len(data) and not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    pos += 1  # the single whitespace byte before the raster
    if len(fields) < 4 or fields[0] not in (b"P5", b"P6") or not all(f.isdigit() for f in fields[1:]):
        raise InputDataError(f"{option} {os.fspath(path)}: not a binary PGM/PPM; install Pillow "
                             "(pip install 'nnconv[image]') to read PNG, JPEG and other formats")
    width, height, maxval = (int(f) for f in fields[1:])
    channels = 3 if fields[0] == b"P6" else 1
    size = width * height * channels
    if maxval > 255 or len(data) - pos < size:
        raise InputDataError(f"{option} {os.fspath(path)}: truncated or 16-bit PGM/PPM")
    raster = np.frombuffer(data, dtype=np.uint8, count=size, offset=pos).reshape(height, width, channels)
    return raster.astype(np.float64) * (255.0 / maxval)


def resize_bilinear(pixels: np.ndarray, height: int, width: int) -> np.ndarray:
    """Bilinear resize with half-pixel centers (as TFLite's RESIZE_BILINEAR with half_pixel_centers)."""
    h, w = pixels.shape[:2]
    if (h, w) == (height, width):
        return pixels

    def axis(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        pos = np.clip((np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5, 0, n_in - 1)
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, n_in - 1)
        return lo, hi, pos - lo

    y0, y1, fy = axis(h, height)
    x0, x1, fx = axis(w, width)
    top = pixels[y0][:, x0] * (1 - fx)[None, :, None] + pixels[y0][:, x1] * fx[None, :, None]
    bottom = pixels[y1][:, x0] * (1 - fx)[None, :, None] + pixels[y1][:, x1] * fx[None, :, None]
    return top * (1 - fy)[:, None, None] + bottom * fy[:, None, None]


def bind_reference(saved: Mapping[str, np.ndarray], specs: Sequence[IoTensor]) -> dict[str, np.ndarray]:
    """Saved outputs (by output name or positional `arr_k`) keyed by output name, checked against the
    model's outputs."""
    out = {}
    for k, spec in enumerate(specs):
        a = saved.get(spec.name, saved.get(f"arr_{k}"))
        if a is None:
            raise InputDataError(f"--reference has no output '{spec.name}' (or 'arr_{k}'); it holds "
                                 f"{', '.join(sorted(saved)) or 'nothing'}")
        a = np.asarray(a)
        if tuple(a.shape) != tuple(spec.shape):
            raise InputDataError(f"--reference: output '{spec.name}' is {list(a.shape)}; the model computes "
                                 f"{list(spec.shape)}")
        out[spec.name] = a.astype(spec.np_dtype) if a.dtype != spec.np_dtype else a
    extra = sorted(set(saved) - {s.name for s in specs} - {f"arr_{k}" for k in range(len(specs))})
    if extra:  # a misspelt output name would leave its output unchecked
        raise InputDataError(f"--reference holds {', '.join(repr(x) for x in extra)}, which the model does not "
                             f"compute; its outputs are {', '.join(repr(s.name) for s in specs)}")
    return out
