"""What a lowering rule sees: `CheckContext` for its support check, `LowerContext` for emitting NNAPI.

Both are bound to one TFLite operator. The TFLite -> NNAPI operand type policy lives here, once, so every
rule agrees on it:

- float32 -> TENSOR_FLOAT32; a constant float16 tensor is widened to a float32 constant (the delegate's
  HALF_TO_FLOAT conversion), a non-constant one is TENSOR_FLOAT16;
- int32 -> TENSOR_INT32; int64 constants are narrowed to TENSOR_INT32 when every value fits, and so are
  int64 index tensors (ARG_MAX / ARG_MIN outputs, GATHER indices: `rewrite/int64_indices.py`,
  `ConversionState.int64_as_int32`);
- uint8 -> TENSOR_QUANT8_ASYMM; int16 -> TENSOR_QUANT16_SYMM; bool -> TENSOR_BOOL8;
- int8 with several scales -> TENSOR_QUANT8_SYMM_PER_CHANNEL (channel dim = quantized_dimension);
  other int8 -> TENSOR_QUANT8_ASYMM_SIGNED from API 30, and below API 30 TENSOR_QUANT8_ASYMM with zero
  point +128 and constant data shifted by +128 (NNAPI has no signed asymmetric type before feature level 4);
  constant int4 (packed two a byte, `tflite/int4.py`) as int8, its values unpacked by `const_value`;
- a rank-0 tensor becomes a [1] tensor, since NNAPI tensors need at least one dimension.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

import numpy as np

from nnconv.lowering.diagnostics import Code, Diagnostic
from nnconv.tflite.kernel_refusals import clamp_overflow
from nnconv.nnapi.builder import SubgraphBuilder
from nnconv.nnapi.enums import FuseCode, OperandType, OperationType
from nnconv.nnapi.levels import ApiLevel, api_level_of_feature_level, feature_level
from nnconv.nnapi.model import Operand, SymmPerChannelQuantParams
from nnconv.nnapi.operations import spec_of
from nnconv.nnapi.program import INT8_SHIFT  # noqa: F401  (re-exported: rules import it from here)
from nnconv.rewrite.state import ConversionState
from nnconv.tflite.int4 import unpack_int4
from nnconv.tflite.ir import Operator, Subgraph, Tensor, TfliteModel
from nnconv.tflite.schema_enums import ActivationFunctionType, BuiltinOperator, TensorType
from nnconv.tflite.sparsity import densify

if TYPE_CHECKING:
    from nnconv.lowering.convert import SubgraphLowering

# How the driver checks one op of a referenced subgraph (IF branches, WHILE bodies): set on the contexts the
# driver makes, so a control-flow rule checks inner ops without importing the driver that imports the rules.
NestedChecker = Callable[[Subgraph, Operator], list[Diagnostic]]

_DTYPE_NAMES = {TensorType.FLOAT32: "float32", TensorType.FLOAT16: "float16", TensorType.INT32: "int32",
                TensorType.UINT8: "uint8", TensorType.INT64: "int64", TensorType.BOOL: "bool",
                TensorType.INT16: "int16", TensorType.INT8: "int8", TensorType.INT4: "int4"}


def dtype_name(t: TensorType) -> str:
    return _DTYPE_NAMES.get(t, t.name.lower())


def conversion_constants(state: ConversionState, sg: Subgraph) -> dict[int, tuple[str, int]]:
    """Tensor -> (how, source tensor) for the outputs of ops that make a constant at conversion time without
    constant folding, so that the rules of their readers see constants too (kept in `state.memo`):
    - "densify": DENSIFY of a sparse constant (the DENSIFY rule densifies it; folding leaves sparse tensors
      alone);
    - "widen": DEQUANTIZE of a float16 constant (or of a densified one) to float32, which the DEQUANTIZE rule
      aliases to the float32 constant the operand policy makes (the delegate's HALF_TO_FLOAT).
    MediaPipe's float16 models read their weights this way: PRELU's alpha then counts as constant (the exact
    composite below API 29) and sparse filters become float32 constant filters instead of a runtime CAST
    (API 29) of a runtime filter. Outputs of the subgraph are excluded (the rules refuse constant outputs)."""
    key = ("conversion_constants", sg.index)
    found = state.memo.get(key)
    if found is not None:
        return found
    found = {}
    outputs = set(sg.outputs)
    for op in sg.operators:
        if len(op.inputs) != 1 or len(op.outputs) != 1 or op.inputs[0] < 0 or op.outputs[0] < 0:
            continue
        src, out = sg.tensors[op.inputs[0]], sg.tensors[op.outputs[0]]
        if op.builtin_code == BuiltinOperator.DENSIFY:
            # only what the DENSIFY rule accepts: a corrupt dense shape must not reach the readers' rules
            if src.data is not None and src.sparsity is not None and src.type == out.type \
                    and tuple(src.shape) == tuple(out.shape):
                found[out.index] = ("densify", src.index)
        elif op.builtin_code == BuiltinOperator.DEQUANTIZE and out.index not in outputs:
            constant = (src.data is not None and src.sparsity is None) or src.index in found
            if constant and src.type == TensorType.FLOAT16 and out.type == TensorType.FLOAT32 \
                    and tuple(src.shape) == tuple(out.shape):
                found[out.index] = ("widen", src.index)
    state.memo[key] = found
    return found


# The hint of a refusal for a shape only known at run time: an input's open (-1) extents can be chosen at
# conversion (`--input-shape`, tflite/input_shapes.py), which makes the shapes downstream static.
STATIC_SHAPES_HINT = ("give the model static input shapes (--input-shape NAME=D0,D1,... sets an input's open "
                      "extents)")


# int16 activations (16x8 quantization: AI Edge Quantizer's static_wi8_ai16, TFLite's
# EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8): NNAPI's 16-bit types (TENSOR_QUANT16_SYMM /
# _ASYMM) exist only for a few operands (QUANTIZED_LSTM's cell state, box coordinates), so every op on int16
# activations is refused, with this hint, wherever a dtype refusal names an int16 tensor.
INT16_HINT = ("NNAPI has no int16 activation type (16x8 quantization: int16 activations, int8 weights): "
              "quantize with int8 activations instead (AI Edge Quantizer's static_wi8_ai8, or TensorFlow's "
              "default full-integer int8), or keep the model float or use dynamic-range quantization (int8 "
              "weights, float activations)")


def _int16_activation(t: Tensor) -> bool:
    return t.type == TensorType.INT16 and t.quantization.is_quantized


def dtype_description(t: Tensor) -> str:
    """The element type a dtype refusal names: int16 with its quantization scheme when it is 16x8's."""
    return "int16 (16x8 quantization)" if _int16_activation(t) else dtype_name(t.type)


def dtype_hint(t: Tensor, hint: str = "") -> str:
    """The hint of a dtype refusal of `t`: the caller's, else INT16_HINT for a quantized int16 tensor."""
    return hint or (INT16_HINT if _int16_activation(t) else "")


def spec_api_level(ops: OperationType | Iterable[OperationType], input_type: OperandType | None = None) -> int:
    """The Android API level at which NNAPI takes `ops` (the highest over several), from their `OperationSpec`s:
    each operation's own feature level and, given input 0's type, the type's own level and the level the
    spec's `input_levels` lists for it. A level that a validator decides from the operands themselves (a
    CONCATENATION requantizing its inputs, LSTM's layer-norm form) is not a declared fact, so it is not included."""
    ops = (ops,) if isinstance(ops, OperationType) else tuple(ops)
    levels = [spec_of(op).level for op in ops]
    if input_type is not None:
        levels.append(input_type.min_feature_level)
        for op in ops:
            table = spec_of(op).input_levels
            if table is not None:
                if input_type not in table:
                    raise ValueError(f"{op.name} takes no {input_type.name} input at any level")
                levels.append(table[input_type])
    return api_level_of_feature_level(max(levels))


def _op_names(ops: OperationType | Iterable[OperationType]) -> str:
    return ops.name if isinstance(ops, OperationType) else " / ".join(op.name for op in ops)


class CheckContext:
    """The operator under check, its tensors, the target level, and `refuse` to record a reason."""

    def __init__(self, state: ConversionState, subgraph: Subgraph, op: Operator) -> None:
        self.state = state
        self.subgraph = subgraph
        self.op = op
        self.diagnostics: list[Diagnostic] = []
        self.notes: list[str] = []  # how the lowering differs from the plain one (reported, not a refusal)
        self.nested_checker: NestedChecker | None = None  # set by the driver (lowering/convert.py)

    def check_nested(self, sg: Subgraph, op: Operator) -> list[Diagnostic]:
        """Every diagnostic for `op` of subgraph `sg`, which this op references (an IF branch, a WHILE body),
        from the driver that checks this op."""
        if self.nested_checker is None:
            raise RuntimeError(f"op #{self.op.index}: checking a referenced subgraph needs the driver's checker")
        return self.nested_checker(sg, op)

    # -- target -----------------------------------------------------------------------------------
    @property
    def api_level(self) -> ApiLevel:
        """The level rules decide at: the target's, except that 32 decides as 31 (`ApiLevel.rule_level`)."""
        return self.state.api_level.rule_level

    @property
    def feature_level(self) -> int:
        return feature_level(self.state.api_level)

    @property
    def options(self) -> Any:
        """The op's builtin options dataclass (None when the op has none)."""
        return self.op.options

    @property
    def model(self) -> TfliteModel:
        return self.state.model

    # -- tensors ----------------------------------------------------------------------------------
    def tensor(self, index: int) -> Tensor:
        return self.subgraph.tensors[index]

    def input(self, i: int) -> Tensor | None:
        """The op's i-th input tensor; None when absent or omitted (-1)."""
        if i >= len(self.op.inputs) or self.op.inputs[i] < 0:
            return None
        return self.subgraph.tensors[self.op.inputs[i]]

    def output(self, i: int = 0) -> Tensor:
        return self.subgraph.tensors[self.op.outputs[i]]

    @property
    def inputs(self) -> list[Tensor | None]:
        return [self.input(i) for i in range(len(self.op.inputs))]

    @property
    def outputs(self) -> list[Tensor]:
        return [self.output(i) for i in range(len(self.op.outputs))]

    def is_const(self, t: Tensor | None) -> bool:
        return t is not None and (t.data is not None or (self.subgraph.index, t.index) in self.state.folded
                                  or t.index in conversion_constants(self.state, self.subgraph))

    def const_value(self, t: Tensor) -> np.ndarray:
        """Value of a constant (or folded, or conversion-time) tensor, shaped like the tensor."""
        folded = self.state.folded.get((self.subgraph.index, t.index))
        if folded is not None:
            return folded
        made = conversion_constants(self.state, self.subgraph).get(t.index)
        if made is not None:
            how, source = made
            value = self.const_value(self.subgraph.tensors[source])
            return value if how == "densify" else np.asarray(value, dtype=np.float32)  # float16 widens exactly
        if t.data is None:
            raise ValueError(f"tensor '{t.name}' is not constant")
        if t.sparsity is not None:
            # NNAPI has no sparse operands: a sparse constant is densified once, at conversion time.
            key = (self.subgraph.index, t.index)
            dense = self.state.densified.get(key)
            if dense is None:
                dense = densify(t.data, t.shape, t.sparsity)
                self.state.densified[key] = dense
            return dense
        if t.type == TensorType.INT4:
            # packed two a byte in the file (tflite/int4.py): the values, as int8, unpacked once
            key = ("int4", self.subgraph.index, t.index)
            values = self.state.memo.get(key)
            if values is None:
                values = self.state.memo[key] = unpack_int4(t.data, t.shape)
            return values
        return t.data

    def nnapi_type(self, t: Tensor) -> OperandType | None:
        """The NNAPI operand type a TFLite tensor gets at this level (module docstring); None if none."""
        tt = t.type
        if tt == TensorType.FLOAT32:
            return OperandType.TENSOR_FLOAT32
        if tt == TensorType.FLOAT16:
            return OperandType.TENSOR_FLOAT32 if self.is_const(t) else OperandType.TENSOR_FLOAT16
        if tt == TensorType.INT32:
            return OperandType.TENSOR_INT32
        if tt == TensorType.INT64:
            safe = (self.subgraph.index, t.index) in self.state.int64_as_int32
            return OperandType.TENSOR_INT32 if self.is_const(t) or safe else None
        if tt == TensorType.UINT8:
            return OperandType.TENSOR_QUANT8_ASYMM
        if tt == TensorType.INT8 or (tt == TensorType.INT4 and self.is_const(t)):  # int4 weights: int8 values
            if t.quantization.is_per_channel:
                return OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL
            return (OperandType.TENSOR_QUANT8_ASYMM_SIGNED if self.api_level >= 30
                    else OperandType.TENSOR_QUANT8_ASYMM)
        if tt == TensorType.INT16:
            return OperandType.TENSOR_QUANT16_SYMM
        if tt == TensorType.BOOL:
            return OperandType.TENSOR_BOOL8
        return None

    def int8_shifted(self, t: Tensor) -> bool:
        """True when this int8 tensor is carried as uint8 with zero point +128 (API < 30)."""
        return (t.type in (TensorType.INT8, TensorType.INT4) and not t.quantization.is_per_channel
                and self.api_level < 30)

    # -- recording refusals -----------------------------------------------------------------------
    def refuse(self, code: Code, message: str, hint: str = "", min_api_level: int | None = None) -> None:
        self.diagnostics.append(Diagnostic(code=code, message=message, hint=hint, min_api_level=min_api_level,
                                           op_index=self.op.index, op_name=self.op.name,
                                           subgraph=self.subgraph.index))

    def note(self, message: str) -> None:
        """Records, for the report, an alternative lowering the rule chose (e.g. through float)."""
        self.notes.append(message)

    def warn_driver(self, message: str) -> None:
        self.refuse(Code.DRIVER_SUPPORT, message)

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)

    def require(self, condition: bool, code: Code, message: str, hint: str = "") -> bool:
        if not condition:
            self.refuse(code, message, hint)
        return condition

    def require_api(self, level: int, what: str, hint: str = "") -> bool:
        """Refuses with API_LEVEL when the target is below `level`; `what` names the feature."""
        if self.api_level >= level:
            return True
        self.refuse(Code.API_LEVEL, f"{what} needs API {level}",
                    hint or f"raise --api-level to {level} or above", min_api_level=level)
        return False

    def require_operation(self, ops: OperationType | Iterable[OperationType], what: str | None = None,
                          hint: str = "") -> bool:
        """`require_api` at the level the operation(s) the rule emits need, from their specs: the highest of
        their feature levels (`spec_api_level`); `what` defaults to the operation's name."""
        return self.require_api(spec_api_level(ops), what or _op_names(ops), hint)

    def require_signature(self, op: OperationType | Iterable[OperationType], input_type: OperandType, what: str,
                          hint: str = "") -> bool:
        """`require_api` at the level `op` (the highest over several) needs with input 0 of `input_type`, from
        its spec (`spec_api_level`): e.g. TENSOR_INT32 ABS at API 30."""
        return self.require_api(spec_api_level(op, input_type), what, hint)

    def require_operand_type(self, t: OperandType, what: str, hint: str = "") -> bool:
        """`require_api` at the level that introduced operand type `t` (`OperandType.min_feature_level`)."""
        return self.require_api(api_level_of_feature_level(t.min_feature_level), what, hint)

    def require_inputs(self, minimum: int, maximum: int | None = None) -> bool:
        n = len(self.op.inputs)
        hi = minimum if maximum is None else maximum
        return self.require(minimum <= n <= hi, Code.MISSING_OPERAND,
                            f"expects {minimum}{'' if hi == minimum else f'..{hi}'} inputs, has {n}")

    def require_dtype(self, t: Tensor | None, allowed: Iterable[TensorType], what: str = "input",
                      hint: str = "") -> bool:
        allowed = tuple(allowed)
        if t is None:
            self.refuse(Code.MISSING_OPERAND, f"{what} is missing")
            return False
        if t.type in allowed:
            return True
        names = "/".join(dtype_name(a) for a in allowed)
        self.refuse(Code.DTYPE, f"{what} '{t.name}' is {dtype_description(t)}; NNAPI takes {names} here",
                    dtype_hint(t, hint))
        return False

    def require_const(self, t: Tensor | None, what: str) -> bool:
        if t is not None and self.is_const(t):
            return True
        self.refuse(Code.NON_CONSTANT, f"{what} must be a constant tensor",
                    "NNAPI needs this parameter at compilation time")
        return False

    def require_rank(self, t: Tensor | None, max_rank: int = 4, min_rank: int = 0, what: str = "input") -> bool:
        if t is None:  # an omitted (-1) tensor has no rank: a corrupt model can omit a mandatory one
            self.refuse(Code.MISSING_OPERAND, f"{what} is missing")
            return False
        return self.require(min_rank <= t.rank <= max_rank, Code.RANK,
                            f"{what} '{t.name}' has rank {t.rank}; NNAPI takes rank {min_rank}..{max_rank} here")

    def require_static_shapes(self) -> bool:
        """Refuses tensors without a static size. In the main subgraph a -1 of `shape_signature` takes the
        stored default extent (see `Tensor.has_dynamic_shape`); inside WHILE / IF bodies, whose values can
        grow from one iteration to the next, any -1 is refused."""
        ok = True
        # WHILE / IF carry values that may change size between iterations: their signatures must be static.
        in_body = self.subgraph.index != 0 or self.op.name in ("WHILE", "IF")
        for t in [*self.inputs, *self.outputs]:
            if t is None or self.is_const(t):
                continue
            if t.has_dynamic_shape or (in_body and t.has_dynamic_signature):
                self.refuse(Code.DYNAMIC_SHAPE, f"tensor '{t.name}' has a dynamic or zero-sized shape "
                            f"{list(t.shape_signature or t.shape)}", STATIC_SHAPES_HINT)
                ok = False
                break
        return ok

    def require_activation(self, act: int, allowed: Sequence[int] = (0, 1, 2, 3, 4, 5, 6)) -> bool:
        if act in allowed:
            return True
        self.refuse(Code.OPTION, f"fused activation {_act_name(act)} cannot be expressed here")
        return False

    def check_fused_activation(self, act: int) -> None:
        """Refuses fused activations with no meaning (SIGN_BIT, unknown codes). TANH and SIGMOID are
        accepted: they lower as NONE (see `LowerContext.fused_output`). A quantized bound TFLite's kernel
        cannot compute is warned about (NNW101, `tflite/kernel_refusals.py`)."""
        if act == ActivationFunctionType.SIGN_BIT:
            self.refuse(Code.OPTION, "fused activation SIGN_BIT has no NNAPI equivalent")
        elif act not in (0, 1, 2, 3, 4, 6):
            self.refuse(Code.OPTION, f"unknown fused activation {act}")
        else:
            warning = clamp_overflow(act, self.outputs[0] if self.outputs else None)
            if warning:
                self.refuse(Code.TFLITE_REFUSES, *warning)


def _act_name(act: int) -> str:
    try:
        return ActivationFunctionType(act).name
    except ValueError:
        return "SIGMOID" if act == 6 else str(act)


# Fused activations with an NNAPI FuseCode (same numeric values in TFLite and NNAPI). TFLite's kernels
# derive their output clamp from the fused activation with `CalculateActivationRange`, which knows only
# RELU, RELU_N1_TO_1 and RELU6: a fused TANH (4) or SIGMOID (6) clamps nothing and applies no function
# (measured: CONV_2D and ADD give the same result with TANH, SIGMOID or NONE). The NNAPI graph computes
# what the interpreter computes, so these lower as FuseCode NONE; no invalid FuseCode is ever emitted.
_FUSE_CODES = {0: FuseCode.NONE, 1: FuseCode.RELU, 2: FuseCode.RELU1, 3: FuseCode.RELU6,
               4: FuseCode.NONE, 6: FuseCode.NONE}


@dataclass
class FusedOutput:
    """Result of `LowerContext.fused_output`: pass `code` as the op's FuseCode, write to `operand`, then call
    `finish()` (a hook for activations that need a trailing op; none does today)."""

    code: FuseCode
    operand: int
    finish: Callable[[], None]


class LowerContext(CheckContext):
    """Adds NNAPI emission to `CheckContext`. Operands for TFLite tensors are created on first use."""

    def __init__(self, state: ConversionState, subgraph: Subgraph, op: Operator,
                 lowering: "SubgraphLowering") -> None:
        super().__init__(state, subgraph, op)
        self.lowering = lowering
        self._carried: dict[int, tuple[int, int]] = {}  # output slot -> (operand the rule writes, real one)

    @property
    def sg(self) -> SubgraphBuilder:
        return self.lowering.builder

    # -- operands ---------------------------------------------------------------------------------
    def operand(self, tensor_index: int) -> int:
        """The NNAPI operand of a TFLite tensor (created, with its constant value if any, on first use)."""
        return self.lowering.operand_for(tensor_index)

    def input_operand(self, i: int) -> int:
        """NNAPI operand of the op's i-th input."""
        return self.operand(self.op.inputs[i])

    def output_operand(self, i: int = 0) -> int:
        """NNAPI operand of the op's i-th output (see `carry_stored_values`)."""
        carried = self._carried.get(i)
        return carried[0] if carried is not None else self.operand(self.op.outputs[i])

    def carry_stored_values(self, slot: int | None) -> None:
        """Before the rule lowers an op that copies the stored values of input `slot` (`Rule.stored_values_from`):
        each int8 / uint8 output quantized differently from that input is written by the rule with the input's
        parameters (NNAPI's data-movement operations keep them), and `finish_carried` copies its stored values
        into the real output with a same-type CAST, which ignores scales as TFLite's kernel does."""
        x = self.input(slot) if slot is not None else None
        if x is None or x.type not in (TensorType.UINT8, TensorType.INT8):
            return
        for i, t in enumerate(self.op.outputs):
            y = self.tensor(t)
            if y.type != x.type or (y.quantization.scale, y.quantization.zero_point) == \
                    (x.quantization.scale, x.quantization.zero_point):
                continue
            src, real = self.info(self.input_operand(slot)), self.operand(t)
            od = self.info(real)
            written = self.temp(od.type, od.dimensions, src.scale, src.zero_point, name=f"{od.name}_stored_values")
            self._carried[i] = (written, real)

    def finish_carried(self) -> None:
        for written, real in self._carried.values():
            self.emit(OperationType.CAST, [written], [real])

    def info(self, operand: int) -> Operand:
        return self.sg.operand(operand)

    def i32(self, value: int) -> int:
        return self.sg.add_scalar(int(value), OperandType.INT32)

    def f32(self, value: float) -> int:
        return self.sg.add_scalar(float(value), OperandType.FLOAT32)

    def f16(self, value: float) -> int:
        return self.sg.add_scalar(float(value), OperandType.FLOAT16)

    def boolean(self, value: bool) -> int:
        return self.sg.add_scalar(bool(value), OperandType.BOOL)

    def scalar_like(self, value: float, tensor_type: OperandType) -> int:
        """A FLOAT16 scalar for TENSOR_FLOAT16 operations, FLOAT32 otherwise (NNAPI pairs them)."""
        return self.f16(value) if tensor_type is OperandType.TENSOR_FLOAT16 else self.f32(value)

    def i32_vector(self, values: Sequence[int]) -> int:
        return self.sg.add_constant(OperandType.TENSOR_INT32, np.asarray(list(values), dtype=np.int32))

    def constant(self, type: OperandType, value: np.ndarray, scale: float = 0.0, zero_point: int = 0,
                 channel_quant: SymmPerChannelQuantParams | None = None, name: str = "") -> int:
        return self.sg.add_constant(type, np.asarray(value), scale=scale, zero_point=zero_point,
                                    channel_quant=channel_quant, name=name)

    def temp(self, type: OperandType, dims: Sequence[int], scale: float = 0.0, zero_point: int = 0,
             name: str = "") -> int:
        """A new intermediate operand not backed by a TFLite tensor (composite lowerings)."""
        return self.sg.add_tensor(type, dims, scale=scale, zero_point=zero_point,
                                  name=name or f"op{self.op.index}_tmp{len(self.sg.subgraph.operands)}")

    def temp_like(self, operand: int, dims: Sequence[int] | None = None, name: str = "") -> int:
        od = self.info(operand)
        return self.temp(od.type, od.dimensions if dims is None else dims, od.scale, od.zero_point, name)

    def no_value(self, type: OperandType = OperandType.TENSOR_FLOAT32) -> int:
        return self.sg.add_no_value(type)

    def alias(self, tensor_index: int, operand: int) -> None:
        """Makes `operand` the NNAPI operand of a TFLite tensor, for an op lowered to no operation (its
        output is an existing operand or a new constant, e.g. DEQUANTIZE of a constant float16 tensor that
        the operand policy already widened to float32). Consumers lowered later read `operand`."""
        if tensor_index in self.lowering.operands:
            raise ValueError(f"tensor {tensor_index} already has NNAPI operand {self.lowering.operands[tensor_index]}")
        self.lowering.operands[tensor_index] = operand

    # -- operations -------------------------------------------------------------------------------
    def emit(self, type: OperationType, inputs: Sequence[int], outputs: Sequence[int]) -> None:
        self.sg.add_operation(type, inputs, outputs, source_op=self.op.index)

    def explain(self, note: str) -> None:
        """A few words on what a many-operation lowering computes and how faithfully, e.g. `int8 mean with
        TFLite's rounding, exact`: reports print `MEAN -> 31 ops (note)` instead of the whole list."""
        self.lowering.converter.notes[(self.subgraph.index, self.op.index)] = note

    def fused_output(self, activation: int, output_index: int = 0) -> FusedOutput:
        """Maps a TFLite fused activation to an NNAPI FuseCode (TANH / SIGMOID -> NONE, as TFLite's kernels
        apply neither; see `_FUSE_CODES`). Pass `code` to the op, write to `operand`, then call `finish()`."""
        return FusedOutput(_FUSE_CODES[activation], self.output_operand(output_index), lambda: None)

    def lower_subgraph(self, tflite_subgraph: int) -> int:
        """Lowers a whole TFLite subgraph (WHILE / IF bodies) as a referenced NNAPI subgraph and returns
        the SUBGRAPH operand that refers to it."""
        ref = self.lowering.converter.referenced_subgraph(tflite_subgraph)
        return self.sg.add_subgraph_ref(ref, name=f"subgraph{tflite_subgraph}")

    def new_referenced_subgraph(self, tflite_subgraph: int) -> tuple[int, SubgraphLowering]:
        """A new referenced NNAPI subgraph of its own for a TFLite subgraph whose inputs and outputs the rule
        arranges (control flow), and the driver's lowering that fills it (`operand_for`, `lower_ops`)."""
        return self.lowering.converter.new_referenced(tflite_subgraph)
