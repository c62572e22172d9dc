"""The samples of `verify --dataset PATH`: where each comes from and how it becomes the model's inputs.

PATH is
- a folder: its files in sorted order (recursively), each one sample:
  - images (`.png`, `.jpg`, `.jpeg`, `.bmp`, `.gif`, `.webp` through Pillow, the `image` extra; `.ppm`, `.pgm`,
    `.pnm` always), preprocessed exactly as `--image` is (parity/inputs.py and parity/preprocess.py: resized
    bilinearly to the model's one image input, NHWC or NCHW, normalized, quantized with the input's scale);
  - `.npy`: the array of a model with one input;
  - `.npz`: the inputs by name or positional `arr_k`, as `--inputs` reads them;
  other files (labels, READMEs) and hidden files or folders (`.git`, `.cache`) are skipped;
- one `.npz` whose arrays carry a leading sample axis: sample i is every array's row i (by input name or
  `arr_k`); the arrays must agree on the number of samples;
- one `.npy` with a leading sample axis, for a model with one input: [N, *input shape], or [N, *input shape
  without its leading 1] (an [N, 3, 224, 224] batch for a [1, 3, 224, 224] input).
Array samples of a float dtype for a uint8 / int8 input (float images preprocessed elsewhere) are quantized
with the input's scale and zero point, as images are; other dtypes must be the input's.
A sample that cannot be read (a corrupt image, an array of the wrong shape) does not stop the others: its
`load` raises InputDataError, which parity/dataset.py records as that sample's row.
Sample names are the file's path relative to the folder, or `#i` for rows of one `.npz`. `limit` (`--samples N`)
keeps the first N. Samples are loaded one at a time (`Sample.load`), so a large dataset is never in memory
whole; `.npy`/`.npz` files are read through nnconv.npz (headers checked before anything is inflated).
"""

from __future__ import annotations

import os
import pathlib
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from nnconv import npz
from nnconv.errors import InputDataError
from nnconv.nnapi.program import IoTensor
from nnconv.parity.inputs import image_inputs, quantize
from nnconv.parity.partitioned import bind_model_inputs
from nnconv.parity.preprocess import ImagePreprocessing

PILLOW_IMAGES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp")
PNM_IMAGES = (".ppm", ".pgm", ".pnm")
ARRAYS = (".npy", ".npz")

Feed = dict[str, np.ndarray]


@dataclass(frozen=True)
class Sample:
    name: str
    load: Callable[[], Feed]  # the model's inputs, keyed by input name


def dataset_samples(path: str | os.PathLike, specs: Sequence[IoTensor], preprocessing: ImagePreprocessing | None,
                    max_bytes: int, limit: int | None = None) -> list[Sample]:
    """The samples of `path` (see the module docstring), at most `limit`; an empty dataset is an error."""
    root = pathlib.Path(path)
    if root.is_dir():
        files = sorted(f for f in root.rglob("*") if f.is_file() and f.suffix.lower() in
                       PILLOW_IMAGES + PNM_IMAGES + ARRAYS
                       and not any(part.startswith(".") for part in f.relative_to(root).parts))
        samples = [Sample(f.relative_to(root).as_posix(), _file_loader(f, specs, preprocessing, max_bytes))
                   for f in files[:limit]]
    elif root.suffix.lower() == ".npz" and root.is_file():
        samples = _stacked(root, specs, max_bytes)[:limit]
    elif root.suffix.lower() == ".npy" and root.is_file():
        samples = _stacked_npy(root, specs, max_bytes)[:limit]
    elif not root.exists():
        raise InputDataError(f"--dataset {os.fspath(path)}: no such file or folder")
    else:
        raise InputDataError(f"--dataset {os.fspath(path)}: give a folder of images / .npy / .npz samples, or "
                             "one .npz or .npy whose arrays have a leading sample axis")
    if not samples:
        raise InputDataError(f"--dataset {os.fspath(path)}: no sample found (images: "
                             f"{', '.join(PILLOW_IMAGES + PNM_IMAGES)}; arrays: .npy, .npz)")
    return samples


def bind_inputs(specs: Sequence[IoTensor], arrays: Mapping[str, np.ndarray], where: str) -> Feed:
    """`arrays` by input name or positional `arr_k`, checked against the model's inputs as `--inputs` is;
    float arrays for a quantized input quantized with its scale and zero point (float images)."""
    arrays = dict(arrays)
    for k, spec in enumerate(specs):
        key = spec.name if spec.name in arrays else f"arr_{k}"
        a = arrays.get(key)
        if a is not None and np.asarray(a).dtype.kind == "f" and spec.np_dtype.kind in "iu" and spec.scale > 0:
            arrays[key] = quantize(np.asarray(a), spec)
    try:
        return bind_model_inputs(specs, arrays)
    except InputDataError as e:
        raise InputDataError(f"{where}: {e}") from None


def _file_loader(f: pathlib.Path, specs: Sequence[IoTensor], preprocessing: ImagePreprocessing | None,
                 max_bytes: int) -> Callable[[], Feed]:
    suffix = f.suffix.lower()
    if suffix == ".npz":
        return lambda: bind_inputs(specs, npz.load_npz(str(f), max_bytes=max_bytes), str(f))
    if suffix == ".npy":
        def load_npy() -> Feed:
            if len(specs) != 1:
                raise InputDataError(f"{f}: a .npy sample fills one input; the model takes {len(specs)} "
                                     "(give .npz samples by input name)")
            return bind_inputs(specs, {"arr_0": npz.load_npy(str(f), max_bytes=max_bytes)}, str(f))
        return load_npy
    return lambda: image_inputs(f, specs, preprocessing, "--dataset")


def _stacked(path: pathlib.Path, specs: Sequence[IoTensor], max_bytes: int) -> list[Sample]:
    """Samples along the leading axis of one .npz's arrays."""
    arrays = npz.load_npz(str(path), max_bytes=max_bytes)
    counts = {k: (a.shape[0] if a.ndim else None) for k, a in arrays.items()}
    if not arrays or None in counts.values() or len(set(counts.values())) != 1:
        raise InputDataError(f"--dataset {path}: the arrays must share a leading sample axis; their shapes are "
                             + ", ".join(f"{k} {list(a.shape)}" for k, a in arrays.items()))
    count = next(iter(counts.values()))

    def row(i: int) -> Callable[[], Feed]:
        return lambda: bind_inputs(specs, {k: a[i] for k, a in arrays.items()}, f"{path} sample #{i}")
    return [Sample(f"#{i}", row(i)) for i in range(count)]


def _stacked_npy(path: pathlib.Path, specs: Sequence[IoTensor], max_bytes: int) -> list[Sample]:
    """Samples along the leading axis of one .npy, for a model with one input: [N, *shape], or [N, *shape[1:]]
    when the input's shape starts with a 1 (the batch axis the samples replace)."""
    if len(specs) != 1:
        raise InputDataError(f"--dataset {path}: a .npy fills one input; the model takes {len(specs)} (give one .npz "
                             "with an array per input name, each with a leading sample axis)")
    (spec,) = specs
    a = npz.load_npy(str(path), max_bytes=max_bytes)
    shape = tuple(spec.shape)
    if a.ndim == len(shape) + 1 and tuple(a.shape[1:]) == shape:
        def row(i: int) -> Callable[[], Feed]:
            return lambda: bind_inputs(specs, {"arr_0": a[i]}, f"{path} sample #{i}")
    elif shape[:1] == (1,) and tuple(a.shape[1:]) == shape[1:]:
        def row(i: int) -> Callable[[], Feed]:
            return lambda: bind_inputs(specs, {"arr_0": a[i][None]}, f"{path} sample #{i}")
    else:
        raise InputDataError(f"--dataset {path}: the array is {list(a.shape)}; with a leading sample axis the input "
                             f"'{spec.name}' takes [N, {', '.join(map(str, shape))}]"
                             + (f" or [N, {', '.join(map(str, shape[1:]))}]" if shape[:1] == (1,) else ""))
    return [Sample(f"#{i}", row(i)) for i in range(a.shape[0])]
