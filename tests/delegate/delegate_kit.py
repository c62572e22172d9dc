"""Helpers for the per-op tests of the delegate target (`test_delegate_*.py`): the delegate's verdict on a node,
the NNAPI graph of the partition it builds (operand by operand, in a form tests can compare with what
`nnapi_delegate.cc` writes), and parity of that graph on our executor against TFLite's interpreter.

Operands are described as tuples:

- a tensor operand: (type name, dims, scale, zero point), the scale as float32 (NNAPI's `float`);
- a constant scalar: (type name, value);
- an omitted operand (`setOperandValue(nullptr, 0)`): (type name, "omitted", dims, scale).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

import nnconv
from nnconv.delegate.conversion import DelegateConversion
from nnconv.nnapi.enums import OperandLifeTime
from nnconv.nnapi.model import Model
from nnconv.parity.verify import compare
from nnconv.runtime.executor import Executor
from nnconv.parity.tflite_runner import TfliteRunner

LEVELS = (27, 28, 29, 30, 31, 33, 34, 35)


def f32(x: float) -> float:
    """A Python float rounded to float32, as the delegate's `float` holds it."""
    return float(np.float32(x))


def prepared(model: bytes, api: int) -> DelegateConversion:
    p = nnconv.prepare(model, api)
    assert isinstance(p, DelegateConversion)
    return p


def verdict(model: bytes, api: int, node: int = 0) -> tuple[bool, list[str]]:
    """The delegate's Validate on `node`: (supported, its failure messages in order)."""
    v = prepared(model, api).delegate_plan().verdicts[node]
    return v.supported, [f.message for f in v.failures]


def accepted_levels(model: bytes, node: int = 0, levels: Sequence[int] = LEVELS) -> list[int]:
    return [api for api in levels if verdict(model, api, node)[0]]


@dataclass
class Graph:
    """The NNAPI model of the delegate's only partition, with what the plan says about it."""

    model: Model
    error: str  # what Android's runtime refuses in it ("": it takes it)
    nodes: list[int]
    converted: Any  # the ConvertedModel (None when the runtime refuses the graph)

    def operand(self, index: int) -> tuple:
        return describe(self.model, index)

    @property
    def op_types(self) -> list[str]:
        return [op.type.name for op in self.model.main.operations]

    def ops(self) -> list[tuple[str, list[tuple], list[tuple]]]:
        """Every operation: (type, its inputs described, its outputs described)."""
        m = self.model
        return [(op.type.name, [describe(m, i) for i in op.inputs], [describe(m, o) for o in op.outputs])
                for op in m.main.operations]

    def op(self, k: int) -> tuple[str, list[tuple], list[tuple]]:
        return self.ops()[k]

    def value(self, index: int) -> np.ndarray:
        """A constant operand's value (flat, in its NNAPI storage dtype)."""
        o = self.model.main.operands[index]
        return np.asarray(self.model.constant_value(o)).reshape(-1)

    def input_value(self, k: int, i: int) -> np.ndarray:
        """The value of input `i` of operation `k`."""
        return self.value(self.model.main.operations[k].inputs[i])

    @property
    def inputs(self) -> list[tuple]:
        return [describe(self.model, i) for i in self.model.main.input_indexes]

    @property
    def outputs(self) -> list[tuple]:
        return [describe(self.model, i) for i in self.model.main.output_indexes]


def describe(model: Model, index: int) -> tuple:
    o = model.main.operands[index]
    scale = float(np.float32(o.scale))
    if o.lifetime is OperandLifeTime.NO_VALUE:
        return (o.type.name, "omitted", tuple(o.dimensions), scale)
    if not o.type.is_tensor and o.is_constant:
        v = np.asarray(model.constant_value(o)).reshape(-1)[0]
        return (o.type.name, v.item())
    if o.channel_quant is not None:
        return (o.type.name, tuple(o.dimensions), "per-channel", o.channel_quant.channel_dim,
                tuple(float(np.float32(s)) for s in o.channel_quant.scales))
    return (o.type.name, tuple(o.dimensions), scale, int(o.zero_point))


def graph(model: bytes, api: int, partition: int = 0, partitions: int = 1) -> Graph:
    """The delegate's partition `partition` at `api` (asserting it forms `partitions` of them)."""
    p = prepared(model, api)
    plan = p.delegate_plan()
    assert len(plan.partitions) == partitions, (plan.outcome, plan.error, [v.failures for v in plan.verdicts])
    pp = p.plan()
    part = pp.partitions[partition]
    converted = None
    if not part.error:
        converted = pp.converted[sum(1 for q in pp.partitions[:partition] if not q.error)]
    return Graph(plan.built[partition].model, part.error, list(plan.partitions[partition].nodes), converted)


def model_file(model: bytes) -> str:
    f = tempfile.NamedTemporaryFile(suffix=".tflite", delete=False)
    f.write(model)
    f.close()
    return f.name


def verify(model: bytes, api: int, inputs: Mapping[str, np.ndarray] | None = None, seed: int | None = None,
           allow_partial: bool = False):
    """`nnconv verify MODEL --api-level api` in-process (the delegate target: its partitions on our executor
    against TFLite's interpreter, with nnconv's tolerances; `allow_partial` when some ops stay on the CPU)."""
    path = model_file(model)
    try:
        kw: dict = {"allow_partial": allow_partial}
        if inputs is not None:
            kw["inputs"] = dict(inputs)
        else:
            kw["seed"] = 0 if seed is None else seed
        return nnconv.verify(path, api_level=api, **kw)
    finally:
        os.unlink(path)


def assert_verified(model: bytes, api: int, inputs: Mapping[str, np.ndarray] | None = None,
                    seed: int | None = None, allow_partial: bool = False) -> Any:
    report = verify(model, api, inputs, seed, allow_partial)
    bad = [o for o in report.parity.outputs if not o.passed]
    assert report.passed and report.parity.outputs, "; ".join(
        f"{o.name}: max|diff|={o.max_abs:.3g} lsb={o.max_lsb} {o.detail}" for o in bad) or "no outputs compared"
    return report


def run_both(model: bytes, api: int, inputs: Mapping[str, np.ndarray]) -> tuple[dict, dict]:
    """The delegate's only partition (covering the whole model) on our executor, and TFLite's interpreter,
    on the same inputs: (ours, theirs), by output name."""
    g = graph(model, api)
    assert g.converted is not None, g.error
    ours = Executor(g.converted).run(dict(inputs))
    runner = TfliteRunner(model)
    by_name = {d["name"]: d["index"] for d in runner.input_details()}
    theirs_by_index = runner.run({by_name[k]: v for k, v in inputs.items()})
    names = [o.name for o in g.converted.outputs if not o.name.endswith("(new state)")]
    theirs = dict(zip(names, theirs_by_index.values()))
    return ours, theirs


def compare_outputs(ours: Mapping[str, np.ndarray], theirs: Mapping[str, np.ndarray], hybrid: bool = False) -> list:
    """nnconv's tolerance verdict on each of TFLite's outputs (`hybrid`: the policy for float outputs of
    dynamic-range models compared with TFLite's own hybrid kernels)."""
    return [compare(name, np.asarray(ours[name]), np.asarray(want), hybrid=hybrid) for name, want in theirs.items()]


def assert_outputs_close(ours: Mapping[str, np.ndarray], theirs: Mapping[str, np.ndarray],
                         hybrid: bool = False) -> None:
    bad = [r for r in compare_outputs(ours, theirs, hybrid) if not r.passed]
    assert not bad, "; ".join(f"{r.name}: max|diff|={r.max_abs:.3g} lsb={r.max_lsb}" for r in bad)


def run_steps(model: bytes, api: int, feeds: Sequence[Mapping[str, np.ndarray]],
              feedback: Sequence[tuple[str, str]] = ()) -> list[tuple[dict, dict]]:
    """The delegate's only partition over several invocations, run as the delegate runs it, against TFLite's
    interpreter (which keeps its variable tensors between invocations). After each invocation the delegate
    copies every state output into its TFLite state tensor (`model_state_outputs_`) and, for the basic LSTM,
    each feedback loop's output into its input (`feedback_loops_`, given here as (output name, input name)).
    Returns (ours, theirs) per step, by output name (ours also has the "(new state)" outputs)."""
    g = graph(model, api)
    assert g.converted is not None, g.error
    ex = Executor(g.converted)
    input_of = {s.tflite_tensor: s.name for s in g.converted.inputs}
    runner = TfliteRunner(model)
    index_of = {d["name"]: d["index"] for d in runner.input_details()}
    state: dict[str, np.ndarray] = {}
    steps = []
    for feed in feeds:
        ours = ex.run({**feed, **state})
        for spec in g.converted.outputs:
            if spec.name.endswith(" (new state)"):
                state[input_of[spec.tflite_tensor]] = ours[spec.name]
        for out, inp in feedback:
            state[inp] = ours[out]
        got = runner.run({index_of[k]: v for k, v in feed.items()})
        theirs = {d["name"]: got[d["index"]] for d in runner.output_details()}
        steps.append((ours, theirs))
    return steps
