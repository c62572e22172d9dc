"""Model input shapes chosen by the user (`--input-shape NAME=D0,D1,...`), as TFLite's strict
`ResizeInputTensorStrict` / `resize_tensor_input(strict=True)` allows them: only the extents the input's
`shape_signature` leaves open (-1) may change.

TensorFlow's converter stores a tensor with an unspecified extent (Keras' batch, a fully convolutional
model's height and width, a sequence length) with -1 in `shape_signature` and 1 in `shape`, and TFLite
allocates the model at `shape` until the app resizes an input. NNAPI models have static shapes, so nnconv
converts at `shape` too; this module gives the main subgraph's inputs the shapes the user asks for before
the rewrite stage, whose static-shapes pass then recomputes every downstream shape as TFLite's Prepare
does after a resize. `verify` feeds TFLite inputs of those shapes and its interpreter resizes likewise
(`TfliteRunner.run`).
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

from nnconv.errors import InputDataError
from nnconv.tflite.ir import TfliteModel

InputShapes = tuple[tuple[str, tuple[int, ...]], ...]  # (input name, shape) pairs, hashable for the options


def parse_input_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """"NAME=D0,D1,..." -> (NAME, (D0, D1, ...)); InputDataError on anything else."""
    name, sep, dims = text.rpartition("=")
    try:
        shape = tuple(int(d) for d in dims.split(","))
    except ValueError:
        shape = ()
    if not sep or not name or not shape:
        raise InputDataError(f"--input-shape {text!r}: expected NAME=D0,D1,... (e.g. image=1,224,224,3)")
    if any(d < 1 for d in shape):
        raise InputDataError(f"--input-shape {text!r}: dimensions must be positive")
    return name, shape


def resize_inputs(model: TfliteModel, shapes: Mapping[str, Sequence[int]] | InputShapes) -> TfliteModel:
    """`model` with the named main-subgraph inputs at the given shapes (static from then on). A name is the
    input tensor's or its name in the main subgraph's signature. Raises InputDataError for an unknown name,
    another rank, or a change of an extent the signature fixes."""
    pairs = list(shapes.items()) if isinstance(shapes, Mapping) else list(shapes)
    if not pairs or not model.subgraphs:
        return model
    sg = model.main
    names = {sg.tensors[i].name: i for i in sg.inputs}
    for sig in model.signature_defs:
        if sig.subgraph_index == 0:
            names.update({key: i for key, i in sig.inputs if i in sg.inputs})
    tensors = list(sg.tensors)
    for name, shape in pairs:
        index = names.get(name)
        if index is None:
            known = ", ".join(sorted(names)) or "none"
            raise InputDataError(f"--input-shape: the model has no input '{name}' (its inputs: {known})")
        t = tensors[index]
        signature = t.shape_signature if t.shape_signature is not None else t.shape
        if len(shape) != len(signature):
            raise InputDataError(f"--input-shape: input '{name}' has rank {len(signature)} (signature "
                                 f"{list(signature)}), not {len(shape)}")
        fixed = [k for k, (s, d) in enumerate(zip(signature, shape)) if s >= 0 and s != d]
        if fixed:
            k = fixed[0]
            raise InputDataError(f"--input-shape: input '{name}' fixes dimension {k} at {signature[k]} (signature "
                                 f"{list(signature)}); only its -1 dimensions can change")
        tensors[index] = dataclasses.replace(t, shape=tuple(shape), shape_signature=tuple(shape))
    main = dataclasses.replace(sg, tensors=tuple(tensors))
    return dataclasses.replace(model, subgraphs=(main, *model.subgraphs[1:]))
