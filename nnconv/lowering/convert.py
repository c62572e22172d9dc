"""The conversion stages after the rewrite: check every operator, then lower them into NNAPI models.

`checked` runs an op's rule check (and asks the NNAPI runtime about what the rule emits); the per-op
report of a whole model built from it is `check_report.check_ops`. `lower_ops` lowers any subset of a
subgraph's operators (the whole model, or one partition with the tensors crossing its boundary as model
inputs and outputs) and validates the result. `nnconv.pipeline.prepare` drives them; this module never reads a model.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Sequence, SupportsInt

import numpy as np

from nnconv.errors import EXIT_INTERNAL, ConversionError, InternalError, NnconvError
from nnconv.lowering import rules as _rules  # noqa: F401  (registers every rule)
from nnconv.lowering.context import INT8_SHIFT, CheckContext, ConversionState, LowerContext, dtype_name
from nnconv.lowering.diagnostics import Code, Diagnostic
from nnconv.lowering.registry import CUSTOM_RULES, RULES, Rule
from nnconv.lowering.rule_errors import malformed_reason, rule_bug
from nnconv.nnapi.builder import ModelBuilder, SubgraphBuilder
from nnconv.nnapi.enums import OperandType
from nnconv.nnapi.levels import ApiLevel, LevelError, feature_level
from nnconv.nnapi.model import Model, SymmPerChannelQuantParams
from nnconv.nnapi.program import ConvertedModel, IoTensor
from nnconv.nnapi.graph_invariants import GraphViolation, graph_violations
from nnconv.nnapi.validate import operation_refusals, validate_model
from nnconv.rewrite.state import ConversionOptions
from nnconv.tflite.ir import Operator, Subgraph, TfliteModel
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType


# -- rules ------------------------------------------------------------------------------------------
def rule_for(op: Operator) -> Rule | None:
    if op.builtin_code == BuiltinOperator.CUSTOM:
        return CUSTOM_RULES.get(op.custom_code or "")
    return RULES.get(op.builtin_code)


def target_level(api_level: SupportsInt) -> ApiLevel:
    """The target level as the one type every stage takes: an `ApiLevel` (what the command line parses) as it
    is; a library caller's plain number checked once, here (NnconvError for a level NNAPI does not have)."""
    try:
        return ApiLevel.of(api_level)
    except LevelError as e:
        raise NnconvError(f"API level {e}") from None


def make_state(model: TfliteModel, api_level: SupportsInt, options: ConversionOptions | None = None) -> ConversionState:
    state = ConversionState(model=model, api_level=target_level(api_level), options=options or ConversionOptions())
    from nnconv.rewrite.pipeline import rewrite
    rewrite(state)
    return state


def state_at_level(state: ConversionState, api_level: SupportsInt) -> ConversionState:
    """The same rewritten model and options at another API level. The rewrite stage does not depend on the
    level, so it is not run again, and the two states share what was derived from it (`state.memo`)."""
    return replace(state, api_level=target_level(api_level))


def check_op(state: ConversionState, sg: Subgraph, op: Operator) -> list[Diagnostic]:
    """Every diagnostic for one op at `state.api_level` (empty: it lowers)."""
    return checked(state, sg, op).diagnostics


def checked(state: ConversionState, sg: Subgraph, op: Operator, runtime: bool = True) -> CheckContext:
    """The op's check context after its rule's check: diagnostics and notes (nothing for a folded op).
    `runtime=False` skips lowering the op to ask the runtime (`runtime_refusals`): for callers inside the
    lowering itself, which would otherwise recurse into it.
    Kept per (op, API level) in `state.memo`: the report at one level and the searches for the lowest
    accepting level of the others (`check --api-level all`) ask for the same checks; read it, never change it."""
    key = ("checked", sg.index, op.index, int(state.api_level), runtime)
    found = state.memo.get(key)
    if found is None:
        found = state.memo[key] = _run_check(state, sg, op, runtime)
    return found


def _run_check(state: ConversionState, sg: Subgraph, op: Operator, runtime: bool) -> CheckContext:
    c = CheckContext(state, sg, op)
    c.nested_checker = lambda inner_sg, inner_op: check_op(state, inner_sg, inner_op)
    if is_folded(state, sg, op):
        return c
    rule = rule_for(op)
    if rule is None:
        if op.builtin_code == BuiltinOperator.CUSTOM:
            d = Diagnostic(Code.CUSTOM_OPERATOR, f"custom op '{op.custom_code}' has no NNAPI equivalent",
                           hint="keep it on the CPU (partial delegation) or replace it with builtins")
        else:
            d = Diagnostic(Code.UNSUPPORTED_OPERATOR, f"no NNAPI lowering for TFLite {op.name}",
                           hint="this op stays on the TFLite CPU kernels")
        c.diagnostics.append(d.at(op.index, op.name, sg.index))
        return c
    if rule.options_type is not None and not isinstance(op.options, rule.options_type):
        found = "none" if op.options is None else type(op.options).__name__
        c.refuse(Code.MALFORMED, f"malformed {op.name} operator: its options are {found}, not the "
                 f"{rule.options_type.__name__} its NNAPI operation is built from",
                 hint="the model file is inconsistent; re-export it")
        return c
    try:
        rule.check(c)
    except Exception as e:  # noqa: BLE001 - sorted into the model's fault or ours, never swallowed
        # A hand-edited or corrupt model can give an op fewer tensors than its kind has, or options of
        # another op: refuse that op with a reason instead of failing the whole run. Anything else the
        # check raises is a bug of the rule (rule_errors.py).
        reason = malformed_reason(c, e)
        if reason is None:
            raise rule_bug(op, type(rule).__name__, e) from e
        c.refuse(Code.MALFORMED, f"malformed {op.name} operator: {reason} ({type(e).__name__}: {e})",
                 hint="the model file is inconsistent; re-export it")
    if c.ok and runtime:
        c.diagnostics.extend(runtime_refusals(state, sg, op))
    if c.ok:  # spec-valid cases drivers commonly refuse: warnings from the same check (driver_support.py)
        from nnconv.lowering.driver_support import warn_driver_issues
        warn_driver_issues(c, rule.driver_notes)
    return c


def runtime_refusals(state: ConversionState, sg: Subgraph, op: Operator) -> list[Diagnostic]:
    """What the NNAPI runtime says of the operations the rule emits for `op`: the op is lowered alone and
    each emitted operation validated at the target level, as Android validates a model before compiling
    it (`nnapi/validate.py`: each operation's validate and the constant checks of its prepare, NNC030; and
    the graph invariants of `nnapi/graph_invariants.py`, NNC031). A refused operation refuses the op here,
    at check time, with the runtime's reason; a rule therefore cannot emit what the executor would then
    refuse. (Where an exact alternative lowering exists for a refused case, the
    rule's check chooses it before this point, e.g. DEQUANTIZE -> float op -> QUANTIZE.)

    Lowering the op alone can fail where its partition lowers (an op whose output becomes a constant cannot
    be a model of its own): an `NnconvError` here says nothing yet, and a real refusal is reported with its
    own message and exit code where the op's partition is lowered (`build_plan`). Any other exception is a
    bug of the rule's lowering: an `InternalError` (exit 4, "please report"), never a diagnostic."""
    try:
        model = _lower(state, [op.index], sg.index)[0]
    except NnconvError as e:
        if e.exit_code == EXIT_INTERNAL:
            raise
        return []
    except Exception as e:  # noqa: BLE001 - the model's fault (a refusal) or a rule bug (exit 4)
        # As in a check (`_run_check`): options of another op or missing tensors that only the lowering
        # reads are the model's fault (fuzzing found a MEAN carrying UnpackOptions, whose keep_dims only
        # the lowering reads).
        reason = malformed_reason(CheckContext(state, sg, op), e)
        if reason is not None:
            return [Diagnostic(Code.MALFORMED, f"malformed {op.name} operator: {reason} ({type(e).__name__}: {e})",
                               hint="the model file is inconsistent; re-export it").at(op.index, op.name, sg.index)]
        rule = rule_for(op)
        raise rule_bug(op, type(rule).__name__ if rule is not None else "lowering", e, "lowering") from e
    # Android checks the graph (every operand read has a value, each written once: graph_invariants.py)
    # before it compiles a model: operations a rule emits out of order, or reading what nothing writes,
    # would be refused there (and by `run`), so they refuse the op here.
    broken = [Diagnostic(Code.GRAPH_INVARIANT, f"the NNAPI operations this op lowers to break a graph invariant "
                         f"({v.invariant.value}): {v}", hint="a bug of nnconv's lowering: please report it")
              .at(op.index, op.name, sg.index) for v in graph_violations(model)]
    return broken + [Diagnostic(Code.RUNTIME_REFUSED, f"the NNAPI runtime refuses the {r.type.name} this op "
                                f"lowers to: {r.reason}", hint="the reference CPU's validate/prepare refuses "
                                "these parameters").at(op.index, op.name, sg.index)
                     for r in operation_refusals(model, feature_level(state.api_level))]


def is_folded(state: ConversionState, sg: Subgraph, op: Operator) -> bool:
    """True when the op emits nothing: every output was folded into a constant, or a graph rewrite removed
    the op (its work is done by another op; `ConversionState.removed`)."""
    if (sg.index, op.index) in state.removed:
        return True
    return bool(op.outputs) and all((sg.index, o) in state.folded for o in op.outputs if o >= 0)


# -- lowering ---------------------------------------------------------------------------------------
class SubgraphLowering:
    """Lowers a set of operators of one TFLite subgraph into one NNAPI subgraph."""

    def __init__(self, converter: "Converter", sg: Subgraph, builder: SubgraphBuilder) -> None:
        self.converter = converter
        self.state = converter.state
        self.sg = sg
        self.builder = builder
        self.operands: dict[int, int] = {}
        self._constant_producers: dict[int, Operator] | None = None  # built on first use

    def operand_for(self, tensor_index: int) -> int:
        found = self.operands.get(tensor_index)
        if found is not None:
            return found
        if self._constant_producers is None:
            self._constant_producers = constant_producers(self.state, self.sg)
        producer = self._constant_producers.get(tensor_index)
        if producer is not None:  # a constant made by an op of another partition: make it here too
            self._lower_op(producer)
            found = self.operands.get(tensor_index)
            if found is not None:
                return found
        t = self.sg.tensors[tensor_index]
        c = CheckContext(self.state, self.sg, _NO_OP)
        ntype = c.nnapi_type(t)
        if ntype is None:
            raise ConversionError(f"tensor '{t.name}' of type {dtype_name(t.type)} has no NNAPI operand type")
        dims = t.shape if t.shape else (1,)
        q = t.quantization
        scale = q.scale[0] if q.scale and not q.is_per_channel else 0.0
        zp = q.zero_point[0] if q.zero_point and not q.is_per_channel else 0
        if ntype is OperandType.TENSOR_QUANT8_ASYMM and scale == 0.0:
            scale = 1.0  # NNAPI requires a positive scale; unquantized uint8 data is taken as-is
        channel = None
        if ntype is OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            channel = SymmPerChannelQuantParams(q.quantized_dimension, tuple(float(s) for s in q.scale))
            zp = 0
        shifted = c.int8_shifted(t)
        if shifted:
            zp += INT8_SHIFT
            if scale == 0.0:
                scale = 1.0
        if c.is_const(t):
            value = np.asarray(c.const_value(t))
            if t.type == TensorType.FLOAT16:
                value = value.astype(np.float32)  # the delegate's HALF_TO_FLOAT constant conversion
            elif t.type == TensorType.INT64:
                if value.size and (value.min() < -2**31 or value.max() >= 2**31):
                    raise ConversionError(f"int64 constant '{t.name}' does not fit in int32")
                value = value.astype(np.int32)
            elif shifted:
                value = (value.astype(np.int16) + INT8_SHIFT).astype(np.uint8)
            value = value.reshape(dims)
            idx = self.builder.add_constant(ntype, value, scale=scale, zero_point=zp, channel_quant=channel,
                                            name=t.name)
        else:
            idx = self.builder.add_tensor(ntype, dims, scale=scale, zero_point=zp, channel_quant=channel,
                                          name=t.name)
        self.operands[tensor_index] = idx
        return idx

    def lower(self, ops: Sequence[Operator], inputs: Sequence[int], outputs: Sequence[int]) -> None:
        in_operands = [self.operand_for(t) for t in inputs]
        if self._constant_producers is None:
            self._constant_producers = constant_producers(self.state, self.sg)
        for op in ops:
            if is_folded(self.state, self.sg, op):
                continue
            if op.outputs and op.outputs[0] in self._constant_producers:
                continue  # lowered where a consumer reads it (operand_for): no unused constant copies
            self._lower_op(op)
        out_operands = [self.operand_for(t) for t in outputs]
        for t, o in zip(outputs, out_operands):
            if self.builder.operand(o).is_constant or o in in_operands:
                raise ConversionError(f"output tensor '{self.sg.tensors[t].name}' is not computed by any "
                                      "lowered operation (constant or pass-through outputs are not supported)")
        self.builder.set_io(in_operands, out_operands)

    def lower_ops(self, ops: Sequence[Operator]) -> None:
        """Lowers every op of `ops` that emits something, in order; the subgraph's inputs and outputs are the
        caller's (control flow's dedicated referenced subgraphs, rules/control_flow.py)."""
        for op in ops:
            if not is_folded(self.state, self.sg, op):
                self._lower_op(op)

    def _lower_op(self, op: Operator) -> None:
        rule = rule_for(op)
        if rule is None:
            raise ConversionError(f"op #{op.index} {op.name} has no lowering rule")
        context = LowerContext(self.state, self.sg, op, self)
        context.carry_stored_values(rule.stored_values_from)
        rule.lower(context)
        context.finish_carried()


class _NoOp:
    index = -1
    name = ""
    inputs: tuple = ()
    outputs: tuple = ()
    options = None


_NO_OP = _NoOp()


class Converter:
    """Owns the NNAPI model under construction; referenced subgraphs are lowered once each."""

    def __init__(self, state: ConversionState) -> None:
        self.state = state
        self.builder = ModelBuilder()
        self._referenced: dict[int, int] = {}
        self.notes: dict[tuple[int, int], str] = {}  # (subgraph, op) -> LowerContext.explain's note

    def referenced_subgraph(self, tflite_subgraph: int) -> int:
        if tflite_subgraph in self._referenced:
            return self._referenced[tflite_subgraph]
        sg = self.state.model.subgraphs[tflite_subgraph]
        ref, builder = self.builder.add_referenced()
        self._referenced[tflite_subgraph] = ref
        SubgraphLowering(self, sg, builder).lower(sg.operators, sg.inputs, sg.outputs)
        return ref

    def new_referenced(self, tflite_subgraph: int) -> tuple[int, SubgraphLowering]:
        """A new, empty referenced NNAPI subgraph for TFLite subgraph `tflite_subgraph` (not shared: its caller
        chooses its inputs' order and outputs) and the lowering that fills it."""
        ref, builder = self.builder.add_referenced()
        return ref, SubgraphLowering(self, self.state.model.subgraphs[tflite_subgraph], builder)


def io_spec(state: ConversionState, sg: Subgraph, tensor_index: int) -> IoTensor:
    t = sg.tensors[tensor_index]
    c = CheckContext(state, sg, _NO_OP)
    q = t.quantization
    np_name = t.dtype.name if t.dtype is not None else dtype_name(t.type)
    return IoTensor(name=t.name or f"tensor{tensor_index}", tflite_tensor=tensor_index, dtype=np_name,
                    shape=t.shape, offset=INT8_SHIFT if c.int8_shifted(t) else 0,
                    scale=q.scale[0] if q.scale and not q.is_per_channel else 0.0,
                    zero_point=q.zero_point[0] if q.zero_point and not q.is_per_channel else 0)


# Ops whose rules emit no NNAPI operation when every input is constant: their output is a float32 constant
# (DEQUANTIZE of constant float16 / int8 weights, DENSIFY of a sparse constant).
_CONSTANT_PRODUCERS = (BuiltinOperator.DEQUANTIZE, BuiltinOperator.DENSIFY)
# ops whose output depends only on their input's static shape: a constant whatever the input's values
# (ZEROS_LIKE emits an operation only into a model output, which stays a real producer)
_SHAPE_CONSTANT_PRODUCERS = (BuiltinOperator.ZEROS_LIKE,)


def constant_producers(state: ConversionState, sg: Subgraph) -> dict[int, Operator]:
    """Tensor -> the op computing it from constants alone (`_CONSTANT_PRODUCERS`), or from its input's static
    shape (`_SHAPE_CONSTANT_PRODUCERS`), with no NNAPI operation.
    Such a tensor never crosses a partition boundary: each partition reading it lowers its producer again
    and gets its own constant. (TFLite's delegate likewise points the consumers of a constant float16
    DEQUANTIZE at the float16 constant and leaves the DEQUANTIZE on the CPU under partial delegation; a
    constant cannot be an NNAPI model output, so passing it between partitions fails.) Kept in `state.memo`
    per API level (whether the producer's rule accepts it depends on the level)."""
    key = ("constant_producers", sg.index, int(state.api_level))
    if key not in state.memo:
        state.memo[key] = _find_constant_producers(state, sg)
    return state.memo[key]


def _consumers(state: ConversionState, sg: Subgraph) -> dict[int, list[int]]:
    """Tensor -> the operators that read it and are not folded away (kept in `state.memo`)."""
    key = ("consumers", sg.index)
    if key not in state.memo:
        found: dict[int, list[int]] = {}
        for k, op in enumerate(sg.operators):
            if not is_folded(state, sg, op):
                for t in op.inputs:
                    found.setdefault(t, []).append(k)
        state.memo[key] = found
    return state.memo[key]


def _find_constant_producers(state: ConversionState, sg: Subgraph) -> dict[int, Operator]:
    found: dict[int, Operator] = {}
    for op in sg.operators:
        by_shape = op.builtin_code in _SHAPE_CONSTANT_PRODUCERS
        if (op.builtin_code not in _CONSTANT_PRODUCERS and not by_shape) or len(op.outputs) != 1 \
                or op.outputs[0] < 0 or (by_shape and op.outputs[0] in sg.outputs):
            continue
        ins = [sg.tensors[i] for i in op.inputs if i >= 0]
        # ops run in order, so a producer's constant output (DENSIFY -> DEQUANTIZE) is known by its reader
        if ins and (by_shape or all(t.data is not None or (sg.index, t.index) in state.folded or t.index in found
                                    for t in ins)) and checked(state, sg, op, runtime=False).ok:
            # A refused producer (say of an int4 constant) stays a CPU op whose output enters as an input.
            # (It emits no NNAPI operation, so the runtime has nothing to refuse: its rule's check decides.)
            found[op.outputs[0]] = op
    return found


def partition_boundary(sg: Subgraph, op_indices: Iterable[int], state: ConversionState
                       ) -> tuple[list[int], list[int]]:
    """Tensors entering and leaving a set of operators: (inputs, outputs) in first-use order."""
    chosen = set(op_indices)
    produced_inside: set[int] = set()
    inputs: list[int] = []
    constants = constant_producers(state, sg)
    for k in sorted(chosen):
        op = sg.operators[k]
        for t in op.inputs:
            if t < 0 or t in produced_inside or t in inputs or t in constants:
                continue
            tensor = sg.tensors[t]
            if tensor.data is not None or (sg.index, t) in state.folded:
                continue
            if tensor.is_variable and t not in sg.inputs and not any(t in o.outputs for o in sg.operators):
                # recurrent state: the rules lower it as a zero constant (rules/recurrent/). A subgraph input
                # or an operator's output flagged variable (a corrupt file) stays an input, as the
                # whole-model lowering has it (an operand read there and written by nothing in the set
                # would have no value: graph_invariants.py, NNC031).
                continue
            inputs.append(t)
        produced_inside.update(o for o in op.outputs if o >= 0)
    # Folded ops are gone from the converted model: what they read (e.g. a SHAPE of a computed tensor) is
    # not needed at runtime, so it does not make a tensor an output.
    consumers = _consumers(state, sg)
    outputs = [t for k in sorted(chosen) for t in sg.operators[k].outputs
               if t >= 0 and (any(j not in chosen for j in consumers.get(t, ())) or t in sg.outputs)
               and (sg.index, t) not in state.folded and (t not in constants or t in sg.outputs)]
    return inputs, list(dict.fromkeys(outputs))


def _lower(state: ConversionState, op_indices: Sequence[int] | None, subgraph: int
           ) -> tuple[Model, list[Operator], list[int], list[int], dict[int, int], dict[tuple[int, int], str]]:
    """The NNAPI model of the given operators (all when None), not yet validated; with its TFLite operators,
    the tensors entering and leaving it, the NNAPI operand of each TFLite tensor and the rules' notes on
    their expansions (`LowerContext.explain`)."""
    sg = state.model.subgraphs[subgraph]
    conv = Converter(state)
    if op_indices is None:
        ops = list(sg.operators)
        inputs, outputs = list(sg.inputs), list(sg.outputs)
    else:
        ops = [sg.operators[k] for k in sorted(op_indices)]
        inputs, outputs = partition_boundary(sg, op_indices, state)
    lowering = SubgraphLowering(conv, sg, conv.builder.main)
    lowering.lower(ops, inputs, outputs)
    model = conv.builder.finish()
    if state.options.relax_float32_to_float16 and state.api_level >= 28:
        model.relax_computation_float32_to_float16 = True
    return model, ops, inputs, outputs, dict(lowering.operands), conv.notes


def lower_ops(state: ConversionState, op_indices: Sequence[int] | None = None, subgraph: int = 0) -> ConvertedModel:
    """Lowers the given operators (all when None) of a subgraph into a validated ConvertedModel: the HAL's
    structural rules, then every operation's own validation at the target level (nnapi/validate.py). The
    check has already refused every op whose operations the runtime refuses (`runtime_refusals`), so an
    `OperationsRefusedError` here is a bug of nnconv (exit 4)."""
    model, ops, inputs, outputs, operands, notes = _lower(state, op_indices, subgraph)
    sg = state.model.subgraphs[subgraph]
    broken = graph_violations(model)
    if broken:
        # each op's own operations passed the check (NNC031): the ops' operations together break the graph,
        # so the lowering's mapping of TFLite tensors to operands is wrong, never the user's model
        raise InternalError(f"the lowered NNAPI model breaks a graph invariant: {_with_source(broken[0], sg)}"
                            + (f" (and {len(broken) - 1} more)" if len(broken) > 1 else "")
                            + "; please report this bug with the model")
    validate_model(model, feature_level(state.api_level))
    return ConvertedModel(model=model, inputs=[io_spec(state, sg, t) for t in inputs],
                          outputs=[io_spec(state, sg, t) for t in outputs], api_level=state.api_level,
                          tflite_ops=[op.index for op in ops], subgraph=subgraph,
                          tensor_operands=operands,
                          notes={k: note for (s, k), note in notes.items() if s == subgraph})


def _with_source(v: GraphViolation, sg: Subgraph) -> str:
    """A violation in the words of the TFLite model: the operator its operation was lowered from."""
    if v.source_op is None or not 0 <= v.source_op < len(sg.operators):
        return str(v)
    return f"TFLite op #{v.source_op} {sg.operators[v.source_op].name}: {v}"
