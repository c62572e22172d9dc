"""How an image becomes a model input for `verify --image` and `--dataset`: one option set, the convention of
TFLite's `label_image` and evaluation tools (and OpenVINO's mean/scale values), per channel:

    value = (pixel - mean[c]) / std[c]        pixel in 0..255, after the bilinear resize to the input

then, for a uint8 / int8 input, quantized with the input's own scale and zero point (round half to even,
clamped). The layout is the input's: NHWC ([1, H, W, C]) or NCHW ([1, C, H, W], PyTorch and litert-torch
models), C = 1 or 3, found from where the 1- or 3-channel axis is, or given (`--input-layout`) when both
could be ([1, 3, 8, 3]).

| options | value |
| --- | --- |
| none | pixels onto [-1, 1]: mean 127.5, std 127.5 (MobileNet, label_image's defaults) |
| `--input-range LO HI` | pixels onto [LO, HI] linearly (`--input-range 0 1`: mean 0, std 255) |
| `--input-mean M[,M,M] --input-std S[,S,S]` | per channel; one value for every channel; either alone leaves the other at 0 / 1. torchvision's ImageNet normalization (mean 0.485, 0.456, 0.406 and std 0.229, 0.224, 0.225 of 0..1 pixels) is `--input-mean 123.675,116.28,103.53 --input-std 58.395,57.12,57.375` |
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nnconv.errors import InputDataError

LAYOUTS = ("nhwc", "nchw")
DEFAULT_RANGE = (-1.0, 1.0)
_CHANNELS = (1, 3)


@dataclass(frozen=True)
class ImagePreprocessing:
    layout: str | None = None  # "nhwc" / "nchw"; None: the input's
    mean: tuple[float, ...] | None = None  # per channel, or one value for all
    std: tuple[float, ...] | None = None
    value_range: tuple[float, float] | None = None  # --input-range: 0..255 onto [LO, HI]

    def check(self) -> None:
        if self.value_range is not None and (self.mean is not None or self.std is not None):
            raise InputDataError("--input-range and --input-mean/--input-std both say how pixels become values: "
                                 "give one")
        if self.layout is not None and self.layout not in LAYOUTS:
            raise InputDataError(f"--input-layout {self.layout}: give nhwc or nchw")
        if self.std is not None and any(s == 0 for s in self.std):
            raise InputDataError("--input-std: a standard deviation of 0 divides by zero")
        if self.value_range is not None and not self.value_range[0] < self.value_range[1]:
            raise InputDataError(f"--input-range {self.value_range[0]} {self.value_range[1]}: LO must be below HI")

    def per_channel(self, channels: int) -> tuple[np.ndarray, np.ndarray]:
        """(mean, std) over `channels`, float64, from the options (the module docstring's table)."""
        if self.mean is None and self.std is None:
            low, high = self.value_range or DEFAULT_RANGE
            std = 255.0 / (high - low)
            return np.full(channels, -low * std), np.full(channels, std)
        return _channels(self.mean or (0.0,), channels, "--input-mean"), \
            _channels(self.std or (1.0,), channels, "--input-std")

    def describe(self) -> dict:
        """The preprocessing as JSON reports record it."""
        return {"layout": self.layout, "mean": list(self.mean) if self.mean else None,
                "std": list(self.std) if self.std else None,
                "range": list(self.value_range) if self.value_range else None}


def _channels(values: tuple[float, ...], channels: int, option: str) -> np.ndarray:
    if len(values) == 1:
        return np.full(channels, values[0], np.float64)
    if len(values) != channels:
        raise InputDataError(f"{option} gives {len(values)} values; the image input has {channels} channel(s)")
    return np.asarray(values, np.float64)


def image_layout(shape: tuple[int, ...], layout: str | None) -> str | None:
    """"nhwc" or "nchw" for a 4-D input of 1 or 3 channels (`layout` when given and it fits), else None."""
    if len(shape) != 4:
        return None
    fits = {"nhwc": shape[3] in _CHANNELS, "nchw": shape[1] in _CHANNELS}
    if layout is not None:
        return layout if fits[layout] else None
    return "nhwc" if fits["nhwc"] else "nchw" if fits["nchw"] else None


def parse_values(text: str, option: str) -> tuple[float, ...]:
    """`0.5` or `123.675,116.28,103.53` (commas or spaces) as floats."""
    try:
        values = tuple(float(v) for v in text.replace(",", " ").split())
    except ValueError:
        raise InputDataError(f"{option} {text}: give numbers, one per channel or one for all (M or R,G,B)") from None
    if not values or not all(np.isfinite(values)):
        raise InputDataError(f"{option} {text}: give finite numbers, one per channel or one for all")
    return values
