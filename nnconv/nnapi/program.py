"""A converted model: the NNAPI `Model` plus what the HAL does not hold but a user needs to run it: the
names and original TFLite dtypes of its inputs and outputs, and the value conversion at each boundary
(int8 tensors carried as uint8 with zero point +128 below API 30)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

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
