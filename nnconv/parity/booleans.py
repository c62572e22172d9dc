"""Boolean outputs that differ: counted as mismatches, and where a quantized comparison decided them, shown
with the two values it compared.

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

from typing import Any, Mapping

import numpy as np

from nnconv.errors import NnconvError
from nnconv.nnapi.program import ConvertedModel
from nnconv.parity.tflite_runner import TfliteRunner
from nnconv.parity.verify import ParityReport, TfliteReference, tflite_feed
from nnconv.runtime.executor import Executor
from nnconv.tflite.schema_enums import BuiltinOperator as B

COMPARISONS = frozenset({B.EQUAL, B.NOT_EQUAL, B.GREATER, B.GREATER_EQUAL, B.LESS, B.LESS_EQUAL})
TFLITE_RESOLUTION = 1 / 128  # of the larger input scale: (q - zp) << 8 times scale / (2 * max scale)
_SHOWN = 3  # mismatches whose values the detail gives


def explain_boolean_mismatches(report: ParityReport, reference: TfliteReference, converted: ConvertedModel,
                               feed: Mapping[str, np.ndarray], kernels: str,
                               executor_options: Mapping[str, Any] | None = None) -> None:
    """Adds to each failing boolean output computed by a quantized comparison the values it compared at the
    mismatches and whether each is a near tie (the module docstring). Rows are updated in place; nothing is
    added when TFLite cannot run the model keeping its tensors."""
    failing = {o.name: o for o in report.outputs if not o.passed and o.dtype == "bool"}
    if not failing:
        return
    sg = reference.model.subgraphs[converted.subgraph]
    producer = {t: op for op in sg.operators for t in op.outputs if t >= 0}
    try:
        runner = TfliteRunner(reference.source, kernels=kernels, preserve_all_tensors=True)
        runner.run(tflite_feed(runner, converted, feed))
        ours = Executor(converted, **dict(executor_options or {})).run(dict(feed))
    except (NnconvError, ValueError, RuntimeError):
        return
    for spec in converted.outputs:
        row, op = failing.get(spec.name), producer.get(spec.tflite_tensor)
        if row is None or op is None or op.builtin not in COMPARISONS:
            continue
        ins = [sg.tensors[t] for t in op.inputs[:2]]
        scales = [t.quantization.scale for t in ins]
        if any(len(s) != 1 for s in scales) or any(t.type.name not in ("INT8", "UINT8") for t in ins):
            continue
        a, b = (np.broadcast_to(runner.tensor(t.index), ours[spec.name].shape) for t in ins)
        real = [(x.astype(np.float64) - t.quantization.zero_point[0]) * t.quantization.scale[0]
                for x, t in zip((a, b), ins)]
        where = np.argwhere(np.asarray(ours[spec.name]) != runner.tensor(spec.tflite_tensor))
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

