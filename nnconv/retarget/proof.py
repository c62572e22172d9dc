"""The proof that a rewrite changed nothing a user sees: TFLite's own interpreter runs the original and the
rewritten model on the same inputs, and every output must match.

Integer, boolean and quantized outputs must be bit-exact (the rewrites move no quantized value through
arithmetic: folding refuses quantized arithmetic, merges move data). Float outputs must be within nnconv's
float tolerance (`parity/tolerances.py`: max |diff| <= 1e-5 + 1e-4 x max |expected|), because a folded value
is computed by numpy where TFLite's kernel computed it before, and a kernel may sum in another order; in
practice they are bit-exact too, and the report gives the largest difference.

Inputs: seeded (`nnconv verify`'s: [-1, 1] for float, the whole range of quantized inputs, small
non-negative integers for indices), or the user's `.npz` (`--inputs`, by input name or `arr_k`). The original
is run at the rewritten model's input shapes (an `--input-shape` resize, as TFLite's strict resize does).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from nnconv.errors import InternalError, NnconvError
from nnconv.nnapi.program import IoTensor, bind_inputs
from nnconv.parity.tflite_runner import TfliteRunner
from nnconv.parity.tolerances import ToleranceOverrides
from nnconv.parity.verify import OutputParity, compare, random_inputs

EXACT_QUANTIZED = ToleranceOverrides(max_lsb=0)  # a rewrite must not move a quantized value by one step


@dataclass
class Proof:
    """The comparison of every output of the main subgraph."""

    outputs: list[OutputParity] = field(default_factory=list)
    inputs: str = ""  # where the inputs came from

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outputs)

    def to_json(self) -> dict[str, Any]:
        return {"passed": self.passed, "inputs": self.inputs, "outputs": [o.to_json() for o in self.outputs]}


def input_specs(runner: TfliteRunner) -> list[IoTensor]:
    """The interpreter's inputs as nnconv describes model inputs."""
    specs = []
    for d in runner.input_details():
        scale, zero_point = d.get("quantization", (0.0, 0))
        specs.append(IoTensor(name=d["name"], tflite_tensor=int(d["index"]), dtype=np.dtype(d["dtype"]).name,
                              shape=tuple(int(x) for x in d["shape"]), scale=float(scale), zero_point=int(zero_point)))
    return specs


def prove(original: bytes, rewritten: bytes, seed: int = 0,
          inputs: Mapping[str, np.ndarray] | None = None) -> Proof:
    """Runs both models on TFLite's builtin kernels and compares their outputs (see the module docstring)."""
    old = TfliteRunner(original)  # a model TFLite cannot run is the user's input (exit 2)
    try:
        new = TfliteRunner(rewritten)
    except NnconvError as e:  # but one TFLite ran before the rewrite is our bug
        raise InternalError(f"TFLite's interpreter refuses the rewritten model: {e}") from None
    specs = input_specs(new)
    if inputs is None:
        feed = random_inputs(specs, seed)
        arrays = [feed[s.name] for s in specs]
        where = f"seeded (seed {seed})"
    else:
        arrays = bind_inputs(specs, inputs)
        where = "--inputs"
    by_index = {s.tflite_tensor: a for s, a in zip(specs, arrays)}
    expected = old.run(by_index)
    actual = new.run(by_index)
    proof = Proof(inputs=where)
    for d in old.output_details():
        i = int(d["index"])
        proof.outputs.append(compare(d["name"], actual[i], expected[i], overrides=EXACT_QUANTIZED))
    return proof
