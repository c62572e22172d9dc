"""Failing outputs of a whole-model verify, diagnosed on TFLite's intermediates (one more TFLite run keeping
every tensor, and one of ours, only when something fails):

- a NaN or an infinity in TFLite's values: the op where it first appears from finite inputs (a division by
  zero on these inputs, say) is named in each failing output's detail: what follows it (a QUANTIZE of NaN)
  is undefined arithmetic, on which two engines need not agree;
- boolean outputs that differ: where a quantized comparison decided them, the two values it compared.

A comparison of two quantized tensors with different scales compares real values that the two engines
rescale differently: NNAPI's reference CPU dequantizes each input to float32, `(q - zp) * scale`, and
compares the floats (Comparisons.cpp); TFLite's int8/uint8 kernels shift `q - zp` left by 8 bits and
multiply each by its scale over twice the larger one in fixed point (comparisons.cc), a resolution of 1/128
of the larger scale. Two real values closer than that (a near tie, exact ties included) may compare either
way on the two engines: the mismatch is arithmetic, not a conversion error, and the detail says so with
both values; any other mismatch is a real difference. The verdict stays exact: a user deciding that near
ties do not matter can see that every mismatch is one.
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from nnconv.errors import NnconvError
from nnconv.nnapi.program import ConvertedModel
from nnconv.parity.executors import Executors
from nnconv.parity.tflite_runner import BUILTIN_KERNELS, XNNPACK, TfliteRunner
from nnconv.parity.verify import OutputParity, ParityReport, TfliteReference, tflite_feed
from nnconv.tflite.ir import Operator, Subgraph
from nnconv.tflite.schema_enums import BuiltinOperator as B

COMPARISONS = frozenset({B.EQUAL, B.NOT_EQUAL, B.GREATER, B.GREATER_EQUAL, B.LESS, B.LESS_EQUAL})
TFLITE_RESOLUTION = 1 / 128  # of the larger input scale: (q - zp) << 8 times scale / (2 * max scale)
_SHOWN = 3  # mismatches whose values the detail gives


def diagnose_failures(report: ParityReport, reference: TfliteReference, converted: ConvertedModel,
                      feed: Mapping[str, np.ndarray], kernels: str, executors: Executors | None = None) -> None:
    """Adds to the failing outputs of `report` what TFLite's intermediates show (the module docstring). Rows
    are updated in place; nothing is added when TFLite cannot run the model keeping its tensors.
    `executors`: our side of the verify, whose outputs on `feed` `report` compared."""
    failing = {o.name: o for o in report.outputs if not o.passed}
    if not failing:
        return
    sg = reference.model.subgraphs[converted.subgraph]
    if kernels == XNNPACK:  # a delegate hides the tensors it computes: read them from the builtin kernels
        kernels = BUILTIN_KERNELS
    try:
        runner = TfliteRunner(reference.source, kernels=kernels, preserve_all_tensors=True)
        runner.run(tflite_feed(runner, converted, feed))
        ours = (executors or Executors()).run(converted, feed)
    except (NnconvError, ValueError, RuntimeError):
        return
    appears = first_non_finite(sg, runner.tensor)
    if appears:
        for row in failing.values():
            row.detail = "; ".join(filter(None, [row.detail, appears]))
    producer = {t: op for op in sg.operators for t in op.outputs if t >= 0}
    for spec in converted.model_outputs:
        row, op = failing.get(spec.name), producer.get(spec.tflite_tensor)
        if row is not None and op is not None and row.dtype == "bool" and op.builtin in COMPARISONS:
            _explain_comparison(row, op, sg, runner, ours[spec.name], spec.tflite_tensor)


def first_non_finite(sg: Subgraph, tflite_tensor: Callable[[int], np.ndarray]) -> str:
    """`a NaN or infinity first appears ... at #2 FLOOR_MOD -> m`: the first op in execution order whose float output holds
    a NaN or an infinity in TFLite's values while none of its inputs does; "" when there is none."""
    bad: set[int] = set()
    for op in sg.operators:
        read_bad = False
        for t in op.inputs:
            if t >= 0 and (t in bad or non_finite_counts(tflite_value(tflite_tensor, t))):
                read_bad = True
        for t in op.outputs:
            counts = non_finite_counts(tflite_value(tflite_tensor, t)) if t >= 0 else {}
            if counts:
                bad.add(t)
                if not read_bad:
                    what = ", ".join(f"{n} {'NaN' if kind == 'nan' else 'infinite'}" for kind, n in counts.items())
                    return (f"a NaN or infinity first appears in TFLite's values at #{op.index} {op.name} -> "
                            f"{sg.tensors[t].name} ({what}), from finite inputs: what reads it is undefined "
                            f"arithmetic the engines need not agree on (--per-op compares every op)")
    return ""


def tflite_value(tflite_tensor: Callable[[int], np.ndarray], t: int) -> np.ndarray | None:
    try:
        return tflite_tensor(t)
    except (ValueError, RuntimeError, KeyError):  # the interpreter did not keep it
        return None


def non_finite_counts(value: np.ndarray | None) -> dict[str, int]:
    """{"nan": n, "inf": n} of a float tensor, the nonzero counts only ({} for finite or integer tensors)."""
    if value is None or np.asarray(value).dtype.kind != "f":
        return {}
    a = np.asarray(value)
    counts = {"nan": int(np.count_nonzero(np.isnan(a))), "inf": int(np.count_nonzero(np.isinf(a)))}
    return {k: v for k, v in counts.items() if v}


def _explain_comparison(row: OutputParity, op: Operator, sg: Subgraph, runner: TfliteRunner, ours: np.ndarray,
                        out: int) -> None:
    """The values a quantized comparison compared at its output's mismatches, near ties or not."""
    ins = [sg.tensors[t] for t in op.inputs[:2]]
    scales = [t.quantization.scale for t in ins]
    if any(len(s) != 1 for s in scales) or any(t.type.name not in ("INT8", "UINT8") for t in ins):
        return
    a, b = (np.broadcast_to(runner.tensor(t.index), ours.shape) for t in ins)
    real = [(x.astype(np.float64) - t.quantization.zero_point[0]) * t.quantization.scale[0]
            for x, t in zip((a, b), ins)]
    where = np.argwhere(np.asarray(ours) != runner.tensor(out))
    resolution = TFLITE_RESOLUTION * max(s[0] for s in scales)
    near = [bool(abs(real[0][tuple(i)] - real[1][tuple(i)]) <= resolution) for i in where]
    shown = "; ".join(f"at {list(map(int, i))}: {ins[0].name or 'a'} = {real[0][tuple(i)]:.6g} (q {int(a[tuple(i)])}), "
                      f"{ins[1].name or 'b'} = {real[1][tuple(i)]:.6g} (q {int(b[tuple(i)])})"
                      for i in where[:_SHOWN])
    if all(near):
        what = (f"{'each is' if len(near) > 1 else 'it is'} a near tie after rescaling: #{op.index} {op.name} "
                f"compares values closer than TFLite's rescaling resolution ({resolution:.3g}, 1/128 of the "
                f"larger input scale), which NNAPI compares as float32 and TFLite in fixed point")
    else:
        what = f"{len(near) - sum(near)} not near a tie (#{op.index} {op.name}'s inputs)"
    row.detail = "; ".join(filter(None, [row.detail, f"{what}: {shown}"]))
