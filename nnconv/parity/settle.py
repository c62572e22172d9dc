"""Quantized outputs out of tolerance of TFLite's optimized kernels, settled as `verify` settles them: against
TFLite's reference kernels (whose integer arithmetic the NNAPI reference CPU follows), then, still out of
tolerance, with nnconv's executor computing TFLite's way the few operations whose NNAPI arithmetic differs
from TFLite's reference kernels (tflite_arithmetic.py: kernels verify hands the executor, which itself only
ever computes NNAPI's arithmetic). Within tolerance then, the whole difference is NNAPI's own arithmetic, which
a phone's reference CPU shares: the output passes and its detail names the operations of this model that
round differently, and how (`ArithmeticDifferences`), never the whole list nnconv knows.

| NNAPI arithmetic | TFLite's reference kernels | `ArithmeticDifferences` |
| --- | --- | --- |
| requantization multiplier of convolutions and matmuls from input x filter scale rounded to float32 (`GetQuantizedConvolutionMultipler`) | the product kept in double | (always) |
| FULLY_CONNECTED requantized with two roundings (SRDHM, then RDBPOT) | one: (x * M + 2^(s-1)) >> s | `fully_connected` |
| quantized RESIZE_BILINEAR: TFLite's float template, float32 weights, (sum + 0.5) converted toward zero | `ResizeBilinearInteger`: Q10 positions and weights, rounded half away from zero | `has_resize` |
| a QUANTIZE between quantized types: nnconv's ADD(x, 0), NNAPI's ADD pipeline | one multiplier | `requantize` |
| int8 AVERAGE_POOL_2D carried as uint8 below API 30: rounded half up | int8: half away from zero | `signed_average` |
| int8 SQUARED_DIFFERENCE through float (nnconv's lowering): the exact square rounded once | fixed point | `squared_difference` |
| int8 MEAN over H and W as one AVERAGE_POOL_2D: one rounding | sum, then a multiplier: two roundings | `mean` |

Measured bit-exact against TFLite's reference kernels, each op alone on TFLite's inputs
(tests/parity/test_tflite_arithmetic_ops.py, test_tflite_multipliers.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from nnconv.errors import NnconvError
from nnconv.nnapi.program import ConvertedModel
from nnconv.nnapi.quantization import is_quant8
from nnconv.parity.executors import Executors, KernelSet
from nnconv.parity.tflite_arithmetic import TfliteArithmetic
from nnconv.parity.tflite_kernels import CONV_REQUANTIZING
from nnconv.parity.tflite_runner import REFERENCE_KERNELS
from nnconv.parity.tolerances import ToleranceOverrides
from nnconv.parity.verify import OutputParity, ParityReport, TfliteReference, run_parity
from nnconv.tflite.ir import Subgraph
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType

SIGNED_INT8_FROM_API = 30  # below it nnconv carries int8 tensors as uint8 (+128)
_OPS_NAMED = 3  # op indexes a cause lists before "and N more"


@dataclass(frozen=True)
class Cause:
    """One arithmetic NNAPI computes differently, at the TFLite ops of one model where it applies."""

    ops: tuple[tuple[int, str], ...]  # (TFLite op index, op name)
    how: str  # NNAPI's way, then TFLite's

    def describe(self) -> str:
        """`#0 RESIZE_BILINEAR: float32 weights, ...`, at most three ops named."""
        shown = ", ".join(f"#{k} {name}" for k, name in self.ops[:_OPS_NAMED])
        more = f" and {len(self.ops) - _OPS_NAMED} more" if len(self.ops) > _OPS_NAMED else ""
        return f"{shown}{more}: {self.how}"


class ArithmeticDifferences:
    """The operations of one converted model (the whole model or a partition) whose NNAPI arithmetic differs
    from TFLite's reference kernels, and the executor's replacements that compute them TFLite's way."""

    def __init__(self, sg: Subgraph, converted: ConvertedModel) -> None:
        covered = set(converted.tflite_ops) or {op.index for op in sg.operators}
        ops = [op for op in sg.operators if op.index in covered]

        def int8_input(op: Any) -> bool:
            return bool(op.inputs) and op.inputs[0] >= 0 and sg.tensors[op.inputs[0]].type is TensorType.INT8

        def quantized_input(op: Any) -> bool:
            return bool(op.inputs) and op.inputs[0] >= 0 and \
                sg.tensors[op.inputs[0]].type in (TensorType.INT8, TensorType.UINT8)

        main = converted.model.main
        multipliers = sorted({o.source_op for o in main.operations if o.type in CONV_REQUANTIZING
                              and o.source_op is not None and is_quant8(main.operands[o.inputs[0]].type)})
        self.fully_connected = frozenset(op.index for op in ops if op.builtin is B.FULLY_CONNECTED
                                         and quantized_input(op))
        self.requantize = frozenset(op.index for op in ops if op.builtin is B.QUANTIZE and quantized_input(op))
        # a real uint8 pool rounds half up as TFLite's uint8 kernel does: only int8 carried as uint8 differs
        self.signed_average = frozenset(op.index for op in ops if op.builtin is B.AVERAGE_POOL_2D and int8_input(op))
        self.squared_difference = frozenset(op.index for op in ops if op.builtin is B.SQUARED_DIFFERENCE
                                            and int8_input(op))
        self.mean = frozenset(op.index for op in ops if op.builtin is B.MEAN and int8_input(op))
        resize = [op.index for op in ops if op.builtin is B.RESIZE_BILINEAR and quantized_input(op)]
        carried = converted.api_level < SIGNED_INT8_FROM_API
        names = {op.index: op.name for op in sg.operators}

        def cause(indexes: Any, how: str) -> Cause:
            return Cause(tuple((k, names.get(k, "?")) for k in sorted(indexes)), how)
        causes = [
            cause(multipliers, "requantization multiplier from input x filter scale rounded to float32 (TFLite: "
                               "the double product)"),
            cause(self.fully_connected, "requantized with two roundings (TFLite: one)"),
            cause(resize, "float32 weights, the sum + 0.5 converted toward zero (TFLite: Q10 integer positions "
                          "and weights)"),
            cause(self.requantize, "requantized through NNAPI's ADD (TFLite: one multiplier)"),
            cause(self.signed_average if carried else (), "int8 carried as uint8 below API 30, rounded half up "
                                                          "(TFLite: half away from zero)"),
            cause(self.squared_difference, "nnconv's float form, the exact square rounded once (TFLite: fixed "
                                           "point)"),
            cause(self.mean, "one AVERAGE_POOL_2D, rounded once (TFLite: twice)"),
        ]
        self.causes = [c for c in causes if c.ops]
        self.has_resize = bool(resize)

    def kernel_set(self) -> KernelSet:
        """Our executor computing every difference TFLite's way (verify's rerun: the executor's replacements),
        as one kernel set of the verify's executors (parity/executors.py)."""
        return KernelSet("TFLite's arithmetic", {"replacements": TfliteArithmetic(
            self.fully_connected, self.has_resize, self.requantize, self.signed_average, self.squared_difference,
            self.mean)})

    def describe(self) -> str:
        """`#0 RESIZE_BILINEAR: float32 weights, ...; #4 FULLY_CONNECTED: requantized with two roundings ...`."""
        return "; ".join(c.describe() for c in self.causes) or "no operation known to round differently"


def differences_of(reference: TfliteReference, converted: ConvertedModel) -> ArithmeticDifferences:
    return ArithmeticDifferences(reference.model.subgraphs[converted.subgraph], converted)


def compare_with_reference_kernels(report: ParityReport, reference: TfliteReference, converted: ConvertedModel,
                                   feed: Mapping[str, np.ndarray], overrides: ToleranceOverrides | None = None,
                                   executors: Executors | None = None) -> None:
    """Settles the quantized outputs of `report` (compared with TFLite's optimized builtin or XNNPACK
    kernels) that are out of tolerance: within tolerance of TFLite's reference kernels, they pass and say
    which kernels they matched; else within tolerance of them computed TFLite's way (the module docstring),
    they pass naming the operations of this model whose NNAPI arithmetic differs. Rows are updated in place;
    an interpreter that cannot run the model leaves them as they are. `executors`: our side of the verify,
    whose outputs on `feed` `report` compared (parity/executors.py)."""
    executors = executors or Executors()
    try:
        ref = run_parity(reference, converted, feed, kernels=REFERENCE_KERNELS, overrides=overrides,
                         executors=executors)
    except NnconvError:
        return
    by_name = {o.name: o for o in ref.outputs}
    unexplained = {o.name for o in report.outputs if not o.passed and o.max_lsb is not None
                   and o.name in by_name and not by_name[o.name].passed}
    differences = differences_of(reference, converted)
    tflite_way = with_tflite_arithmetic(reference, converted, feed, differences, overrides, executors) \
        if unexplained else {}
    for o in report.outputs:
        r = by_name.get(o.name)
        if o.passed or o.max_lsb is None or r is None:
            continue
        t = tflite_way.get(o.name)
        if r.passed:
            o.passed = True
            o.settled_by = "reference kernels"
            note = (f"within tolerance of TFLite's reference kernels (max {r.max_lsb} LSB), whose integer "
                    f"arithmetic the NNAPI reference CPU follows; TFLite's {report.kernels} kernels differ by up to "
                    f"{o.max_lsb} LSB")
        elif t is not None and t.passed:
            o.passed = True
            o.settled_by = "NNAPI arithmetic"
            note = (f"{r.max_lsb} LSB from TFLite's reference kernels, all from NNAPI's own arithmetic "
                    f"({differences.describe()}): computed TFLite's way, nnconv is within {t.max_lsb} LSB of "
                    f"them; NNAPI's reference CPU differs the same way")
        else:
            note = f"also {r.max_lsb} LSB from TFLite's reference kernels"
            if t is not None and differences.causes:
                note += f" ({t.max_lsb} LSB with TFLite's arithmetic at {differences.describe()})"
        o.detail = "; ".join(filter(None, [o.detail, note]))


def with_tflite_arithmetic(reference: TfliteReference, converted: ConvertedModel, feed: Mapping[str, np.ndarray],
                           differences: ArithmeticDifferences, overrides: ToleranceOverrides | None,
                           executors: Executors) -> dict[str, OutputParity]:
    """Our outputs computed TFLite's way (`differences.kernel_set`) against TFLite's reference kernels, by
    output name; empty when TFLite fails."""
    tflite_way = differences.kernel_set()
    try:
        report = run_parity(reference, converted, feed, kernels=REFERENCE_KERNELS, overrides=overrides,
                            executors=executors, our_kernels=tflite_way)
    except NnconvError:
        return {}
    return {o.name: o for o in report.outputs}
