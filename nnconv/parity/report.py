"""The report of one `verify`: the parity report plus what the options added (per-op rows, the simulated
relaxed-fp16 driver, a dataset's summary, a repro), its verdict line and its JSON (docs/verify.md,
*Single-model JSON*). parity/session.py makes it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from nnconv.parity.per_op import PASS, PerOpReport
from nnconv.parity.tolerances import ToleranceOverrides, tolerance_for
from nnconv.parity.verify import OutputParity, ParityReport

SCHEMA_VERSION = 1
RELAXED_ATOL = 2.0 ** -14  # float16's smallest normal; the tolerance is otherwise relative to the magnitude
RELAXED_RTOL = 1e-2
RELAXED_TOLERANCE = ToleranceOverrides(atol=RELAXED_ATOL, rtol=RELAXED_RTOL)
RELAXED_TOLERANCE_TEXT = tolerance_for(np.float32, overrides=RELAXED_TOLERANCE).describe()


@dataclass
class VerifyReport:
    """A parity report plus what the options added: per-op rows, relaxed-fp16 outputs, metadata."""

    parity: ParityReport
    meta: dict
    per_op: PerOpReport | None = None
    relaxed: list[OutputParity] | None = None
    relaxed_per_op: PerOpReport | None = None
    seconds: float = 0.0
    tflite_outputs: dict[str, np.ndarray] = field(default_factory=dict)  # for --save-reference
    dataset: dict | None = None  # `--dataset`: parity/dataset.py's summary; the rest is its worst sample's
    repro: dict | None = None  # `--save-repro`: what was written (parity/repro.py)
    fail_on_uninformative: bool = False  # VerifyOptions.fail_on_uninformative
    timings: list[tuple[str, float]] = field(default_factory=list)  # (phase, seconds): `-v` prints them

    @property
    def parity_passed(self) -> bool:
        """Every output (and relaxed output, and dataset sample) within tolerance."""
        return self.parity.passed and all(o.passed for o in self.relaxed or []) and \
            (self.dataset is None or self.dataset["passed"])

    @property
    def passed(self) -> bool:
        """`parity_passed`, unless `--fail-on uninformative` fails a PASS on constant outputs."""
        return self.parity_passed and not (self.fail_on_uninformative and self.uninformative)

    @property
    def model(self) -> str:
        return self.parity.model

    @property
    def unreadable_line(self) -> str:
        """`--dataset`: one line on the samples that could not be read (not compared), "" when none."""
        bad = (self.dataset or {}).get("unreadable") or []
        if not bad:
            return ""
        total = self.dataset["samples"] + len(bad)
        return (f"{len(bad)} of {total} samples of {self.dataset['path']} could not be read (not compared): "
                f"{bad[0]['sample']}: {bad[0]['error']}" + (f"; and {len(bad) - 1} more" if len(bad) > 1 else ""))

    @property
    def uninformative(self) -> list[str]:
        """Outputs whose TFLite values are constant (or nearly so) on the inputs used (the whole dataset's)."""
        if self.dataset is not None:
            return list(self.dataset["uninformative_outputs"])
        return [o.name for o in self.parity.outputs if o.uninformative]

    @property
    def verdict(self) -> str:
        """The one-line verdict: FAIL, PASS, or PASS flagged when every output compared is uninformative
        (a constant output passes on any engine) or some are."""
        if not self.parity_passed:
            return "FAIL"
        flat = self.uninformative
        if not flat:
            return "PASS"
        from nnconv.parity.verify import INPUTS_HINT, UNINFORMATIVE_HINT
        which = "every output is" if len(flat) == len(self.parity.outputs) else \
            f"{len(flat)} of {len(self.parity.outputs)} outputs are"
        # with --per-op, what the intermediates show instead of recommending them
        hint = UNINFORMATIVE_HINT if self.per_op is None else f"{self.per_op.summary()}; {INPUTS_HINT}"
        text = f"uninformative: {which} constant on these inputs ({', '.join(flat)}); {hint}"
        return f"FAIL (--fail-on {text})" if self.fail_on_uninformative else f"PASS ({text})"

    def to_json(self) -> dict:
        data = {"schema_version": SCHEMA_VERSION, **self.parity.to_json(), **self.meta, "passed": self.passed,
                "uninformative_outputs": self.uninformative, "verdict": self.verdict,
                "seconds": round(self.seconds, 3)}
        if self.dataset is not None:
            data["dataset"] = self.dataset
        if self.per_op is not None and self.repro is not None:
            data["repro"] = self.repro
        if self.per_op is not None:
            data["per_op_kernels"] = self.per_op.kernels
            data["per_op_kernels_note"] = self.per_op.kernels_note or None
            data["per_op_notes"] = self.per_op.notes
            data["per_op"] = [e.to_json() for e in self.per_op.entries]
            data["first_divergent_op"] = self.per_op.first_divergent.to_json() if self.per_op.first_divergent \
                else None
            start = self.per_op.first_large
            data["divergence_starts_at"] = start.to_json() if start else None
            difference = self.per_op.first_difference
            data["first_difference"] = difference.to_json() if difference else None
            data["first_non_finite"] = self.per_op.first_non_finite
        if self.relaxed is not None:
            relaxed: dict[str, Any] = {"tolerance": RELAXED_TOLERANCE_TEXT,
                                       "simulated": "fp16 storage of float32 operands, fp32 arithmetic rounded "
                                                    "to fp16 per operation (nnconv/runtime/relaxed.py)",
                                       "outputs": [o.to_json() for o in self.relaxed]}
            if self.relaxed_per_op is not None:
                first = self.relaxed_per_op.first_large
                relaxed["first_large_error_op"] = first.to_json() if first else None
                relaxed["per_op"] = [e.to_json() for e in self.relaxed_per_op.entries]
            data["relaxed"] = relaxed
        return data


_SETTLED = {"reference kernels": "within TFLite's reference kernels", "NNAPI arithmetic": "as NNAPI's own arithmetic",
            "kernel spread": "within TFLite's kernel spread"}


def settlement_notes(outputs: Sequence[OutputParity], per_op: PerOpReport) -> list[str]:
    """One line per output that passes through a settlement (parity/settle.py, kernel_spread.py) while its op
    is out of tolerance per op, where only the plain tolerance applies: the two figures then disagree, and
    this says why."""
    entries = {e.tensor: e for e in per_op.entries}
    notes = []
    for o in outputs:
        e = entries.get(o.name.split("/", 1)[-1])  # partition rows are named p<k>/<tensor>
        if o.settled_by and e is not None and e.status != PASS:
            notes.append(f"output '{o.name}' passes {_SETTLED.get(o.settled_by, o.settled_by)} (its detail); per op "
                         f"only the plain tolerance applies, so #{e.op_index} {e.op} shows out of tolerance here")
    return notes
