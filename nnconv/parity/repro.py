"""`verify --per-op --save-repro DIR`: the first divergent op as a one-op model a driver or kernel author can run.

Polygraphy's `debug reduce` convention: the smallest model that still fails. The first `divergent` op
(parity/per_op.py) is out of tolerance when lowered alone and fed TFLite's own input values, so the op
alone is that model. DIR receives
- `repro.tflite`: the op alone, written with our builder (nnconv.tflite.builder): its computed inputs made
  model inputs, its constant inputs kept as constants (same bytes, type and quantization), its outputs the
  model's outputs, tensor names kept;
- `inputs.npz`: TFLite's values at the op's computed inputs, by the repro's input names;
- `expected.npz`: TFLite's values of the op's outputs;
- `ours.npz`: nnconv's executor's outputs of the repro on those inputs.
Then `nnconv verify DIR/repro.tflite --inputs DIR/inputs.npz` (same `--api-level`, `--kernels` and
tolerance options) fails the same way.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from nnconv.errors import NnconvError, OutputError
from nnconv.npz import save_npz
from nnconv.parity.twin import COPY_ERRORS, quant_params
from nnconv.safe_write import write_bytes
from nnconv.tflite.builder import TfliteBuilder
from nnconv.tflite.ir import TfliteModel
from nnconv.tflite.schema_enums import BuiltinOperator

# Ops that call other subgraphs: their repro would need those subgraphs too.
_CALLS_SUBGRAPHS = {BuiltinOperator.IF, BuiltinOperator.WHILE, BuiltinOperator.CALL_ONCE}


@dataclass(frozen=True)
class OneOpModel:
    data: bytes
    inputs: list[tuple[str, int]]  # (the repro's input name, the original tensor index)
    outputs: list[tuple[str, int]]


def one_op_model(model: TfliteModel, subgraph: int, op_index: int) -> OneOpModel:
    """The op alone (module docstring); NnconvError when it cannot stand alone (it calls subgraphs)."""
    sg = model.subgraphs[subgraph]
    op = sg.operators[op_index]
    if op.builtin in _CALLS_SUBGRAPHS:
        raise NnconvError(f"op #{op_index} {op.name} calls other subgraphs: no one-op repro")
    b = TfliteBuilder(f"nnconv repro of op #{op_index} {op.name}")
    new: dict[int, int] = {}
    names: set[str] = set()
    inputs, outputs = [], []
    for t in [i for i in op.inputs if i >= 0] + list(op.intermediates) + list(op.outputs):
        if t in new:
            continue
        tensor = sg.tensors[t]
        name = tensor.name or f"tensor{t}"
        name = name if name not in names else f"{name}_{t}"
        names.add(name)
        data = None if tensor.data is None else np.ascontiguousarray(tensor.data).tobytes()
        new[t] = b.copied_tensor(name, tensor.shape, tensor.type, data, quant_params(tensor), tensor.shape_signature,
                                 tensor.is_variable)
        if t in op.inputs and tensor.data is None and not tensor.is_variable:
            b.inputs.append(new[t])
            inputs.append((name, t))
        elif t in op.outputs:
            outputs.append((name, t))
    b.op(op.builtin_code, [new[i] if i >= 0 else -1 for i in op.inputs], [new[o] for o in op.outputs],
         op.options, version=op.version, custom_code=op.custom_code,
         intermediates=[new[i] for i in op.intermediates], custom_options=op.custom_options)
    b.output(*(new[o] for o in op.outputs))
    try:
        data = b.finish()
    except COPY_ERRORS as e:
        raise NnconvError(f"op #{op_index} {op.name}: cannot write it alone ({e})") from None
    return OneOpModel(data, inputs, outputs)


def save_repro(directory: str, model: TfliteModel, subgraph: int, op_index: int,
               tflite_tensor: Callable[[int], np.ndarray],
               run_ours: Callable[[bytes, Mapping[str, np.ndarray]], Mapping[str, np.ndarray]]) -> dict[str, Any]:
    """Writes DIR's four files for op `op_index`; `tflite_tensor` reads TFLite's preserved tensors,
    `run_ours(repro bytes, inputs)` runs the repro on nnconv's executor. Returns what the report says."""
    repro = one_op_model(model, subgraph, op_index)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise OutputError(f"--save-repro {directory}: cannot create the folder ({e.strerror or e})") from None
    inputs = {name: tflite_tensor(t) for name, t in repro.inputs}
    expected = {name: tflite_tensor(t) for name, t in repro.outputs}
    ours = run_ours(repro.data, inputs)
    write_bytes(os.path.join(directory, "repro.tflite"), repro.data)
    save_npz(os.path.join(directory, "inputs.npz"), inputs)
    save_npz(os.path.join(directory, "expected.npz"), expected)
    save_npz(os.path.join(directory, "ours.npz"), {name: np.asarray(ours[name]) for name, _ in repro.outputs})
    op = model.subgraphs[subgraph].operators[op_index]
    return {"dir": directory, "op_index": op_index, "op": op.name,
            "files": ["repro.tflite", "inputs.npz", "expected.npz", "ours.npz"]}
