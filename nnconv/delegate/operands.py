"""`NNAPIOpBuilder`: how the delegate turns TFLite tensors and parameters into NNAPI operands.

Operands are numbered in the order they are added (`addOperand`), one per TFLite tensor, reused by every later
reader; an operation's inputs and outputs collect in `inputs` / `outputs` until `finish_operation`.
`add_tensor` is `AddTensor` with its flags:

- int8 becomes TENSOR_QUANT8_ASYMM_SIGNED with `USE_INT8_ASYMM_SIGNED` (feature level 4+, non-hybrid ops),
  TENSOR_QUANT8_ASYMM with zero point + 128 with `INT8_CONVERSION` (its constant data shifted, its runtime
  values converted at each invocation), and otherwise TENSOR_QUANT8_SYMM with the zero point kept (which the
  NNAPI runtime takes only where the spec allows QUANT8_SYMM, e.g. DEQUANTIZE's input); more than one scale
  (or `FORCE_PER_CHANNEL`) makes it TENSOR_QUANT8_SYMM_PER_CHANNEL;
- uint8 in a hybrid op is read as int8 (legacy uint8 weights are int8 values);
- a constant float16 with `HALF_TO_FLOAT_CONVERSION` becomes a float32 constant;
- a rank-0 tensor keeps rank 0 (an operand of unknown rank) unless `SCALAR_AS_TENSOR` makes it [1].

What the delegate adds to TFLite's tensor array while building (converted constants, generated biases and
constants) is counted in `added_tensors`: it may move that array under a pointer the delegate still holds
(`outcome.py` warns).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from nnconv.delegate.graph import TYPE_GET_NAME, DelegateGraph, TensorInfo
from nnconv.nnapi.builder import SubgraphBuilder
from nnconv.nnapi.enums import OperandLifeTime, OperandType, OperationType
from nnconv.nnapi.model import Operand, SymmPerChannelQuantParams
from nnconv.tflite.schema_enums import TensorType as T

O = OperandType


class BuildError(Exception):
    """The delegate's graph building returned kTfLiteError; the message is what TFLite would log."""


class BuildCrash(BuildError):
    """The delegate's graph building dereferences a null pointer (no error is returned: the app crashes)."""


class Flag(enum.IntFlag):
    """`NN_TENSOR_FLAG_*`."""

    NONE = 0
    SCALAR_AS_TENSOR = 1
    INT8_CONVERSION = 2
    USE_INT8_ASYMM_SIGNED = 4
    FORCE_PER_CHANNEL = 8
    HALF_TO_FLOAT_CONVERSION = 16


class Conversion(enum.Enum):
    """How the delegate converts a model input's data at each invocation (`add_type_conversion`)."""

    INT8_TO_UINT8 = "int8+128"  # int8 values carried as uint8 (zero point + 128)
    HALF_TO_FLOAT = "float16->float32"
    TO_INT32 = "to int32"  # a one-element tensor fed as an INT32 scalar
    TO_FLOAT32 = "to float32"  # a one-element tensor fed as a FLOAT32 scalar


@dataclass
class OperandBuilder:
    """Builds the operands and operations of one partition's NNAPI model."""

    graph: DelegateGraph
    sb: SubgraphBuilder
    has_per_channel_api: bool = True
    tensor_operand: dict[int, int] = field(default_factory=dict)  # lite_tensor_to_ann_tensor_
    conversions: dict[int, Conversion] = field(default_factory=dict)  # index_to_type_conversion_
    dequantized: dict[tuple[int, int], int] = field(default_factory=dict)  # DequantizeMapping
    inputs: list[int] = field(default_factory=list)  # augmented_inputs_
    outputs: list[int] = field(default_factory=list)  # augmented_outputs_
    added_tensors: int = 0  # context->AddTensors calls (upstream: they can move the tensor array)
    conversion_tensors: int = 0  # of which converting a constant the delegate holds a pointer to
    null_api_calls: list[str] = field(default_factory=list)  # NNAPI functions called that the level lacks
    # The delegate numbers operands with a counter of its own (`next_ann_tensor_index_`), which every
    # reference uses; it can fall behind NNAPI's own count (`single_value_as_scalar`), and then operations,
    # values and model inputs/outputs name the operand NNAPI numbered so, as upstream does.
    count: int = 0

    # -- raw operands ----------------------------------------------------------------------------
    def _operand(self, type: OperandType, dims: Sequence[int] = (), scale: float = 0.0, zero_point: int = 0,
                 channel: SymmPerChannelQuantParams | None = None, name: str = "") -> int:
        """`addOperand` plus a new delegate index (the number the delegate will use for it)."""
        self._add_operand(type, dims, scale, zero_point, channel, name)
        self.count += 1
        return self.count - 1

    def _add_operand(self, type: OperandType, dims: Sequence[int] = (), scale: float = 0.0, zero_point: int = 0,
                     channel: SymmPerChannelQuantParams | None = None, name: str = "") -> None:
        self.sb.subgraph.operands.append(Operand(type=type, dimensions=tuple(int(d) for d in dims),
                                                 scale=float(scale), zero_point=int(zero_point),
                                                 channel_quant=channel, name=name))

    def _set_value(self, index: int, value: np.ndarray | None) -> None:
        """`setOperandValue`: nullptr/0 marks the operand omitted (NO_VALUE)."""
        operand = self.sb.subgraph.operands[index]
        if value is None:
            operand.lifetime = OperandLifeTime.NO_VALUE
            return
        operand.lifetime, operand.location = self.sb._mb.store_constant(np.ascontiguousarray(value))

    # -- scalars and vectors ---------------------------------------------------------------------
    def scalar_int32(self, value: int) -> int:
        return self._scalar(O.INT32, np.int32(value))

    def scalar_float32(self, value: float) -> int:
        return self._scalar(O.FLOAT32, np.float32(value))

    def scalar_bool(self, value: bool) -> int:
        return self._scalar(O.BOOL, np.bool_(value))

    def _scalar(self, type: OperandType, value: np.generic) -> int:
        index = self._operand(type)
        self._set_value(index, np.asarray(value))
        self.inputs.append(index)
        return index

    def vector(self, type: OperandType, values: Sequence | np.ndarray | None, count: int | None = None,
               scale: float = 0.0, zero_point: int = 0) -> int:
        """`AddVector*Operand`: a rank-1 constant; `values=None` with count 0 is an omitted operand of dims [0]."""
        n = len(values) if values is not None else int(count or 0)
        index = self._operand(type, (n,), scale, zero_point)
        arr = None if values is None else np.asarray(values, dtype=_STORAGE[type])
        self._set_value(index, arr)
        self.inputs.append(index)
        return index

    def omitted(self, type: OperandType = O.TENSOR_FLOAT32) -> int:
        """`AddVector*Operand(nullptr, 0)`: an omitted optional input (dims [0], no value). The int8 and int16
        vectors carry scale 1, as AddVectorInt8Operand / AddVectorInt16Operand give every operand."""
        scale = 1.0 if type in (O.TENSOR_QUANT8_SYMM, O.TENSOR_QUANT16_SYMM) else 0.0
        return self.vector(type, None, 0, scale=scale)

    # -- tensors ---------------------------------------------------------------------------------
    def add_tensor_input(self, tensor: int, hybrid: bool = False, flags: Flag = Flag.NONE) -> int:
        return self._add_tensor(tensor, hybrid, flags, self.inputs)

    def add_tensor_output(self, tensor: int, flags: Flag = Flag.NONE) -> int:
        return self._add_tensor(tensor, False, flags, self.outputs)

    def _add_tensor(self, tensor: int, hybrid: bool, flags: Flag, into: list[int]) -> int:
        if tensor < 0:
            # AddTensor of an omitted input (-1; e.g. a CONV_2D bias given as -1, which Validate's input count
            # lets through): upstream resizes its index map with -1 + 1 and indexes the tensor array at -1,
            # undefined behaviour where Python would quietly read the last tensor
            raise BuildCrash("the delegate adds an omitted (-1) input as a tensor: it indexes TFLite's tensor "
                             "array at -1 (undefined behaviour)")
        found = self.tensor_operand.get(tensor)
        if found is not None:
            into.append(found)
            return found
        t = self.graph.tensor(tensor)
        ttype = T.INT8 if hybrid and t.type == T.UINT8 else t.type  # legacy: uint8 hybrid weights are int8
        scale, zp = t.scale, t.zero_point
        channel = None
        int8_conversion = bool(flags & Flag.INT8_CONVERSION)
        if ttype in (T.FLOAT32, T.FLOAT16, T.BOOL):
            # AddTensor reads `params` only for the quantized and integer types: a float or boolean tensor
            # that carries quantization parameters in the file still gets scale 0 and zero point 0
            scale, zp = 0.0, 0
        if ttype == T.FLOAT32:
            nn = O.TENSOR_FLOAT32
        elif ttype == T.FLOAT16:
            nn = O.TENSOR_FLOAT16
            if flags & Flag.HALF_TO_FLOAT_CONVERSION:
                nn = O.TENSOR_FLOAT32
                self.conversions[tensor] = Conversion.HALF_TO_FLOAT
        elif ttype == T.UINT8:
            nn, scale = O.TENSOR_QUANT8_ASYMM, (scale or 1.0)
        elif ttype == T.INT8:
            if flags & Flag.USE_INT8_ASYMM_SIGNED:
                nn = O.TENSOR_QUANT8_ASYMM_SIGNED
            elif int8_conversion:
                nn = O.TENSOR_QUANT8_ASYMM
            else:
                nn = O.TENSOR_QUANT8_SYMM
            if t.affine:
                if len(t.quant.scale) > 1 or flags & Flag.FORCE_PER_CHANNEL:
                    channel = SymmPerChannelQuantParams(t.quant.quantized_dimension,
                                                        tuple(float(np.float32(s)) for s in t.quant.scale))
                    nn, scale, zp = O.TENSOR_QUANT8_SYMM_PER_CHANNEL, 0.0, 0
                else:
                    scale = float(np.float32(t.quant.scale[0]))
                    zp = int(t.quant.zero_point[0]) if t.quant.zero_point else 0
            if nn is not O.TENSOR_QUANT8_SYMM_PER_CHANNEL:
                if int8_conversion:
                    zp += 128
                    self.conversions[tensor] = Conversion.INT8_TO_UINT8
                scale = scale or 1.0
        elif ttype == T.INT32:
            nn = O.TENSOR_INT32
        elif ttype == T.BOOL:
            nn = O.TENSOR_BOOL8
        elif ttype == T.INT16:
            nn = O.TENSOR_QUANT16_SYMM
        else:
            raise BuildError(f"Failed to add NN API tensor: type {TYPE_GET_NAME.get(ttype, ttype.name)} is not "
                             "supported.")
        dims = t.dims
        if flags & Flag.SCALAR_AS_TENSOR and not dims:
            dims = (1,)
        index = self._operand(nn, dims, scale, zp, channel, t.name)
        self.tensor_operand[tensor] = index
        if channel is not None and not self.has_per_channel_api:
            self.null_api_calls.append("ANeuralNetworksModel_setOperandSymmPerChannelQuantParams")
        if t.constant:
            self._set_value(index, self._constant_bytes(t, ttype, nn, flags))
        into.append(index)
        return index

    def _constant_bytes(self, t: TensorInfo, ttype: T, nn: OperandType, flags: Flag) -> np.ndarray:
        raw = np.ascontiguousarray(t.data) if t.data is not None else np.zeros(0, np.uint8)
        if ttype in (T.UINT8, T.INT8) and flags & Flag.INT8_CONVERSION and nn is not O.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            # int8 weights rewritten as uint8 (+128) into a tensor the delegate adds
            self.added_tensors += 1
            self.conversion_tensors += 1
            return (raw.reshape(-1).view(np.int8).astype(np.int16) + 128).astype(np.uint8)
        if ttype == T.FLOAT16 and flags & Flag.HALF_TO_FLOAT_CONVERSION:
            self.added_tensors += 1
            self.conversion_tensors += 1
            return raw.reshape(-1).view(np.float16).astype(np.float32)
        return raw.reshape(-1).view(np.uint8) if raw.dtype != np.bool_ else raw.reshape(-1)

    def new_constant(self, nn: OperandType, dims: Sequence[int], values: np.ndarray, scale: float = 0.0,
                     zero_point: int = 0) -> int:
        """`AddNewInputConstantTensor`: a constant the delegate makes (a new TFLite tensor holds its data)."""
        self.added_tensors += 1
        index = self._operand(nn, dims, scale, zero_point)
        self._set_value(index, np.asarray(values, dtype=_STORAGE[nn]).reshape(-1))
        self.inputs.append(index)
        return index

    def single_value_as_scalar(self, tensor: int, nn: OperandType, checked: bool = True) -> int | None:
        """`AddSingleValueTensorAsScalarOperand`: a computed one-element tensor fed as a scalar model input
        (converted to int32 / float32 at each invocation). With `checked=False` its failures are the
        caller's to ignore, as PAD_V2's value does upstream: the build goes on with what was added so far
        (None when nothing was)."""
        t = self.graph.tensor(tensor)
        if t.num_elements != 1:
            if not checked:
                return None  # TF_LITE_ENSURE_EQ returned before anything was added
            raise BuildError(f"NumElements(tensor) == 1 was not true for tensor '{t.name}'")
        # upstream adds the operand before it looks the tensor up: a tensor that already has an operand
        # leaves this one unused and uncounted, and every later index of the delegate is one short of NNAPI's
        self._add_operand(nn, (), name=t.name)
        found = self.tensor_operand.get(tensor)
        if found is not None:
            self.inputs.append(found)
            return found
        index = self.count
        self.count += 1
        self.tensor_operand[tensor] = index
        # upstream pushes the operand before it asks for the type's TFLite equivalent, so an unchecked failure
        # (TENSOR_FLOAT16) leaves the operand mapped and used, with no conversion
        self.inputs.append(index)
        equivalent = T.INT32 if nn is O.INT32 else T.FLOAT32 if nn is O.FLOAT32 else None
        if equivalent is None:
            if not checked:
                return index
            raise BuildError(f"NN API Delegate: Can't get an equivalent TF Lite type for provided NN API type: "
                             f"{int(nn)}.")
        if t.type != equivalent:
            self.conversions[tensor] = Conversion.TO_INT32 if nn is O.INT32 else Conversion.TO_FLOAT32
        return index

    def additional_output(self, nn: OperandType, dims: Sequence[int], scale: float = 0.0, zero_point: int = 0) -> int:
        """`AddAdditionalOutputTensor`: an operand the delegate adds as an operation output (intermediates of
        composite lowerings, LSTM scratch and state outputs)."""
        index = self._operand(nn, dims, scale, zero_point)
        self.outputs.append(index)
        return index

    def intermediate_output(self, ttype: T, dims: Sequence[int], scale: float, zero_point: int,
                            int8_conversion: bool = False) -> int:
        """`AddIntermediateOutputTensor` (float32, int8, uint8 only)."""
        if ttype == T.FLOAT32:
            nn = O.TENSOR_FLOAT32
        elif ttype == T.INT8:
            nn = O.TENSOR_QUANT8_ASYMM if int8_conversion else O.TENSOR_QUANT8_ASYMM_SIGNED
        elif ttype == T.UINT8:
            nn = O.TENSOR_QUANT8_ASYMM
        else:
            raise BuildError(f"an intermediate tensor of type {TYPE_GET_NAME.get(ttype, ttype.name)} cannot be "
                             "added")
        if int8_conversion:
            zero_point += 128
        return self.additional_output(nn, dims, scale, zero_point)

    # -- operations ------------------------------------------------------------------------------
    def add_operation(self, type: OperationType, inputs: Sequence[int], outputs: Sequence[int], node: int) -> None:
        """`AddOperationToModel` (records the TFLite node the operation maps to)."""
        self.sb.add_operation(type, inputs, outputs, source_op=node)

    def finish_operation(self, type: OperationType, node: int) -> None:
        """`FinalizeAddOperation`: the collected inputs and outputs become one operation."""
        self.add_operation(type, self.inputs, self.outputs, node)
        self.inputs = []
        self.outputs = []

    def dequantize_input(self, position: int, tensor: int, key_type: T, node: int) -> None:
        """`AddDequantize`: a DEQUANTIZE of the tensor's operand into a new float32 operand (one per operand
        and key type), which replaces the collected input at `position`."""
        source = self.tensor_operand[tensor]
        found = self.dequantized.get((source, int(key_type)))
        if found is None:
            found = self._operand(O.TENSOR_FLOAT32, self.graph.tensor(tensor).dims)
            self.add_operation(OperationType.DEQUANTIZE, [source], [found], node)
            self.dequantized[(source, int(key_type))] = found
        if position < len(self.inputs):
            self.inputs[position] = found


_STORAGE = {
    O.INT32: np.int32, O.FLOAT32: np.float32, O.BOOL: np.bool_, O.TENSOR_INT32: np.int32,
    O.TENSOR_FLOAT32: np.float32, O.TENSOR_FLOAT16: np.float16, O.TENSOR_QUANT8_ASYMM: np.uint8,
    O.TENSOR_QUANT8_ASYMM_SIGNED: np.int8, O.TENSOR_QUANT8_SYMM: np.int8, O.TENSOR_QUANT16_SYMM: np.int16,
    O.TENSOR_BOOL8: np.bool_,
}
