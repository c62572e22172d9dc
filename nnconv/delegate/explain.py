"""The delegate's refusals in the report's terms: each failure quotes the delegate's own message, then says in
our words what in the model caused it, with a hint and the diagnostic code CI scripts match."""

from __future__ import annotations

from nnconv.delegate.failures import Failure, FailureType
from nnconv.delegate.graph import DelegateGraph, Node
from nnconv.lowering.diagnostics import Code, Diagnostic
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType as T

F = FailureType

_CODES = {
    F.UNSUPPORTED_OPERATOR: Code.UNSUPPORTED_OPERATOR, F.UNSUPPORTED_ANDROID_VERSION: Code.API_LEVEL,
    F.UNSUPPORTED_OPERATOR_VERSION: Code.OPERATOR_VERSION, F.UNSUPPORTED_INPUT_TYPE: Code.DTYPE,
    F.NOT_RESTRICTED_SCALE_COMPLIANT: Code.QUANTIZATION, F.UNSUPPORTED_OUTPUT_TYPE: Code.DTYPE,
    F.UNSUPPORTED_OPERAND_SIZE: Code.OPERAND_VALUE, F.UNSUPPORTED_OPERAND_VALUE: Code.OPERAND_VALUE,
    F.UNSUPPORTED_HYBRID_OPERATOR: Code.QUANTIZATION, F.UNSUPPORTED_QUANTIZATION_TYPE: Code.QUANTIZATION,
    F.MISSING_REQUIRED_OPERAND: Code.MISSING_OPERAND, F.UNSUPPORTED_OPERAND_RANK: Code.RANK,
    F.INPUT_TENSOR_SHOULD_HAVE_CONSTANT_SHAPE: Code.NON_CONSTANT, F.UNSUPPORTED_OPERATOR_VARIANT: Code.OPTION,
    F.NO_ACTIVATION_EXPECTED: Code.OPTION, F.UNSUPPORTED_QUANTIZATION_PARAMETERS: Code.QUANTIZATION,
}

_INT16 = ("NNAPI has no int16 activation type (16x8 quantization): quantize with int8 activations, or keep the "
          "model float")


def _dtype(t: T | None) -> str:
    return "none" if t is None else t.name.lower()


def _tensor_types(graph: DelegateGraph, node: Node) -> str:
    ins = [_dtype(graph.tensor(t).type) if t >= 0 else "-" for t in node.inputs]
    outs = [_dtype(graph.tensor(t).type) for t in node.outputs if t >= 0]
    return f"inputs {', '.join(ins) or 'none'} -> outputs {', '.join(outs) or 'none'}"


def explain(failure: Failure, graph: DelegateGraph, node: Node, min_level: int | None) -> Diagnostic:
    """One refusal as a diagnostic: the delegate's words in quotes, then ours."""
    quoted = failure.message.strip()
    words, hint = _why(failure, graph, node, min_level)
    code = _CODES.get(failure.type, Code.UNSUPPORTED_OPERATOR)
    if failure.type is F.UNSUPPORTED_OPERATOR and node.op == B.CUSTOM:
        code = Code.CUSTOM_OPERATOR
    message = f'TFLite\'s NNAPI delegate: "{quoted}"' if quoted else "TFLite's NNAPI delegate refuses it"
    if words:
        message += f" ({words})"
    return Diagnostic(code, message, hint=hint, min_api_level=min_level).at(node.index, node.name)


def _why(failure: Failure, graph: DelegateGraph, node: Node, min_level: int | None) -> tuple[str, str]:
    t = failure.type
    later = f"from API {min_level}" if min_level is not None else "at no API level"
    if t is F.UNSUPPORTED_OPERATOR:
        if node.op == B.CUSTOM:
            return (f"custom op '{node.custom_code}': the delegate maps builtins only",
                    "it runs on TFLite's CPU kernels, splitting the model around it")
        return (f"the delegate has no NNAPI mapping for {node.name}",
                "it runs on TFLite's CPU kernels, splitting the model around it")
    if t is F.UNSUPPORTED_ANDROID_VERSION:
        return (f"the delegate maps this op {later}", f"target API {min_level} or later" if min_level else "")
    if t is F.UNSUPPORTED_OPERATOR_VERSION:
        return (f"this {node.name} is operator version {node.version}, a newer variant than the delegate knows "
                "(a newer converter, or a quantization scheme it predates)",
                "re-export with a converter whose op versions the delegate takes, or accept the CPU fallback")
    if t in (F.UNSUPPORTED_INPUT_TYPE, F.UNSUPPORTED_OUTPUT_TYPE):
        types = _tensor_types(graph, node)
        int16 = any(t >= 0 and graph.tensor(t).type == T.INT16 for t in (*node.inputs, *node.outputs))
        hint = _INT16 if int16 else (f"{later.capitalize()} the delegate takes these types" if min_level else "")
        return types, hint
    if t is F.NOT_RESTRICTED_SCALE_COMPLIANT:
        x, w, y = (graph.tensor(node.inputs[0]), graph.tensor(node.inputs[1]), graph.tensor(node.outputs[0]))
        return (f"input scale {x.scale:.6g} x filter scale {w.scale:.6g} = {x.scale * w.scale:.6g} is not below "
                f"the output scale {y.scale:.6g}, which NNAPI 1.0/1.1 require", "API 29 drops this rule")
    if t is F.UNSUPPORTED_HYBRID_OPERATOR:
        return ("float activations with int8/uint8 weights (dynamic-range quantization)",
                "API 29 adds hybrid ops for CONV_2D / FULLY_CONNECTED; --target nnconv --fold-weights folds the "
                "weights to float32 at any level")
    if t is F.UNSUPPORTED_QUANTIZATION_TYPE:
        return ("per-channel quantized weights", "API 29 adds per-channel convolution weights")
    if t is F.INPUT_TENSOR_SHOULD_HAVE_CONSTANT_SHAPE:
        return ("a parameter the delegate needs as a constant is computed by the model",
                "nnconv rewrite folds computed shapes into constants where TFLite's graph allows it")
    if t is F.NO_ACTIVATION_EXPECTED:
        return ("the op carries a fused activation the delegate does not pass on", "")
    return ("", "")


def model_diagnostic(code: Code, message: str, hint: str = "") -> Diagnostic:
    """A diagnostic about the whole model (no op index)."""
    return Diagnostic(code, message, hint=hint)
