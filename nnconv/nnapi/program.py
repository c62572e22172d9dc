"""A converted model: the NNAPI `Model` plus what the HAL does not hold but a user needs to run it: the
names and original TFLite dtypes of its inputs and outputs, and the value conversion at each boundary
(int8 tensors carried as uint8 with zero point +128 below API 30)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from nnconv.errors import InputDataError
from nnconv.nnapi.model import Model

INT8_SHIFT = 128  # int8 data carried as uint8 below API 30: NNAPI value = TFLite value + 128


@dataclass(frozen=True)
class IoTensor:
    """One model input or output, in `Model.main.input_indexes` / `output_indexes` order."""

    name: str
    tflite_tensor: int
    dtype: str  # numpy dtype name of the TFLite tensor (what users pass and get back)
    shape: tuple[int, ...]
    offset: int = 0  # NNAPI value = TFLite value + offset (128 for int8 carried as uint8)
    scale: float = 0.0  # TFLite quantization, for reports in LSB
    zero_point: int = 0
    # A TFLite variable tensor (an RNN/LSTM's state), which TFLite's NNAPI delegate feeds as a model input and
    # reads back from an extra model output. As an input its value is the state TFLite holds, zeros before the
    # first invocation, so it is not asked of users; as an output it is the delegate's own carry between
    # invocations, in NNAPI's layout (SVDF's differs from TFLite's kernel), so it is not compared with TFLite.
    variable: bool = False

    @property
    def np_dtype(self) -> np.dtype:
        return np.dtype(self.dtype)


@dataclass
class ConvertedModel:
    """An NNAPI model ready to run, with its I/O contract. One per partition when partially lowered."""

    model: Model
    inputs: list[IoTensor]
    outputs: list[IoTensor]
    api_level: int
    tflite_ops: list[int] = field(default_factory=list)  # TFLite operator indexes it covers
    subgraph: int = 0  # TFLite subgraph it came from
    # TFLite tensor index -> the main-subgraph operand holding its value (per-op parity). Known right after
    # lowering; not stored in .nnapi files (empty when loaded from one).
    tensor_operands: dict[int, int] = field(default_factory=dict)
    # TFLite op index -> what its many-operation lowering computes (reports only; not saved in .nnapi files)
    notes: dict[int, str] = field(default_factory=dict)

    @property
    def model_outputs(self) -> list[IoTensor]:
        """The outputs the TFLite model has (and parity compares): all but the recurrent states carried back."""
        return [spec for spec in self.outputs if not spec.variable]

    @property
    def model_output_operands(self) -> list[int]:
        """The NNAPI operands of `model_outputs`, in the same order."""
        return [op for spec, op in zip(self.outputs, self.model.main.output_indexes) if not spec.variable]


def bind_inputs(specs: Sequence[IoTensor], inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """The user's arrays in `specs` order, each found by input name or by numpy's positional name `arr_k`
    (`np.savez(f, x)`). Refused (InputDataError, one line naming the model's inputs): a missing input, an
    array that is no input (a misspelt name would otherwise be ignored and random data used in its place),
    and an array of another dtype (`input_dtype_error`)."""
    takes = ", ".join(f"'{s.name}' {s.dtype}{list(s.shape)}" for s in specs if not s.variable)
    out = []
    for k, spec in enumerate(specs):
        if spec.name in inputs:
            a = np.asarray(inputs[spec.name])
        elif f"arr_{k}" in inputs:
            a = np.asarray(inputs[f"arr_{k}"])
        elif spec.variable:
            a = np.zeros(spec.shape, spec.np_dtype)  # a state starts at zero, as TFLite resets it
        else:
            raise InputDataError(f"missing input '{spec.name}' (or positional 'arr_{k}'); the model takes {takes}")
        if a.dtype != spec.np_dtype:
            raise InputDataError(input_dtype_error(spec, a))
        out.append(a)
    extra = sorted(set(inputs) - {s.name for s in specs} - {f"arr_{k}" for k in range(len(specs))})
    if extra:
        raise InputDataError(f"unknown input array{'s' if len(extra) > 1 else ''} "
                             f"{', '.join(repr(x) for x in extra)}: the model takes {takes} "
                             f"(by name, or positionally as arr_0, arr_1, ...)")
    return out


def input_dtype_error(spec: IoTensor, a: np.ndarray) -> str:
    """Why an input array of the wrong dtype is refused, and how to save it right: numpy's default float64
    for a float32 input is the common case (`np.savez(f, x=x.astype(np.float32))`); a float array for a
    quantized input needs quantizing with the input's scale and zero point, not a cast."""
    what = f"input '{spec.name}' is {a.dtype}{list(a.shape)}; the model takes {spec.dtype}{list(spec.shape)}"
    if spec.scale and np.issubdtype(a.dtype, np.floating) and np.issubdtype(spec.np_dtype, np.integer):
        info = np.iinfo(spec.np_dtype)
        q = f"np.clip(np.round(x / {spec.scale:g}) + {spec.zero_point}, {info.min}, {info.max}).astype(np.{spec.dtype})"
        return (f"{what}, quantized with scale {spec.scale:g} and zero point {spec.zero_point}: save the "
                f"quantized values, e.g. {_savez(spec.name, q)}")
    return f"{what}: save it as {spec.dtype}, e.g. {_savez(spec.name, f'x.astype(np.{spec.dtype})')}"


def _savez(name: str, expression: str) -> str:
    return (f"np.savez(f, {name}={expression})" if name.isidentifier() else
            f"np.savez(f, **{{{name!r}: {expression}}})")
