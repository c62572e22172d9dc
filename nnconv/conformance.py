"""NNAPI conformance (CTS) vectors: load the cases of `tests/data/nnapi_cts`, build our NNAPI IR from each,
run it on the executor and compare with the tolerances of the Android test harness.

Each case is a dict as described in the data's README (model, inputs, outputs, ignored_outputs,
expect_failure, multinomial_tolerance). `run_case` returns a `CaseResult` whose status is "passed",
"failed" or "unsupported" (an operation without a kernel).

As CTS does (nn/runtime/test/TestGenerated.cpp, TestHarness.cpp):
- an empty input list is an omitted optional input (no buffer): the operand gets no value;
- every compared output must come out with exactly its declared dimensions, so an output declared with
  a 0 dimension (the `*zero_sized*` cases) must be zero-sized;
- `expect_failure` cases pass when validation or execution raises an `NnconvError`;
- RANDOM_MULTINOMIAL outputs are checked statistically (`multinomial_problems`);
- QuantizationCouplingTest: single-operation cases with a TENSOR_QUANT8_ASYMM operand are re-run with
  every such operand turned TENSOR_QUANT8_ASYMM_SIGNED (`signed_coupling_case`), id suffix
  `/signed_coupling`.
"""

from __future__ import annotations

import gzip
import json
import os
import pathlib
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator

import numpy as np

from nnconv.errors import NnconvError
from nnconv.runtime.executor import SubgraphRunner
from nnconv.runtime.kernels import KERNELS
from nnconv.runtime.kernels.registry import ExecutionOptions
from nnconv.nnapi.enums import OperandLifeTime, OperandType, OperationType
from nnconv.nnapi.model import (STORAGE_DTYPE, DataLocation, Model, Operand, Operation, Subgraph,
                                SymmPerChannelQuantParams)
from nnconv.nnapi.validate import validate_model

FOLDERS = ("V1_0", "V1_1", "V1_2", "V1_3", "V1_3_cts_only")
SIGNED_COUPLING = "signed_coupling"
DYNAMIC_OUTPUT_SHAPE = "dynamic_output_shape"
# Operations TestHarness.h `hasQuant8CoupledOperands` skips: their quant8 operands are not coupled to
# real values (HASHTABLE_LOOKUP's hits tensor is a bool, LSH_PROJECTION hashes raw bytes, PAD_V2's pad
# value is an int32 scalar, CAST ignores quantization, QUANTIZED_16BIT_LSTM has no signed variant).
COUPLING_EXCLUDED_OPS = frozenset({"HASHTABLE_LOOKUP", "LSH_PROJECTION", "PAD_V2", "CAST",
                                   "QUANTIZED_16BIT_LSTM"})


def cts_dir() -> pathlib.Path:
    """`$NNCONV_CTS_DIR`, or else the copy committed in the repository (`tests/data/nnapi_cts`)."""
    env = os.environ.get("NNCONV_CTS_DIR")
    if env:
        return pathlib.Path(env)
    return pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "nnapi_cts"


def iter_cases(root: pathlib.Path | None = None, folders: tuple[str, ...] = FOLDERS,
               derived: bool = True, dynamic_shapes: bool = False) -> Iterator[tuple[str, dict]]:
    """(id, case) for every case, id = '<folder>/<case name>'; with `derived`, each case eligible for
    CTS's QuantizationCouplingTest is followed by its signed twin, id '<folder>/<case name>/signed_coupling';
    with `dynamic_shapes`, each case eligible for CTS's DynamicOutputShapeTest is followed by its twin with
    unspecified output dimensions, id '<folder>/<case name>/dynamic_output_shape'."""
    root = root or cts_dir()
    for folder in folders:
        d = root / folder
        if not d.is_dir():
            continue
        for f in sorted(d.glob("*.json.gz")):
            with gzip.open(f, "rt") as fh:
                for case in json.load(fh):
                    cid = f"{folder}/{case['name']}"
                    yield cid, case
                    if derived and is_coupling_candidate(case):
                        yield f"{cid}/{SIGNED_COUPLING}", signed_coupling_case(case)
                    if dynamic_shapes and is_dynamic_shape_candidate(case):
                        yield f"{cid}/{DYNAMIC_OUTPUT_SHAPE}", dynamic_output_shape_case(case)


def _subgraph_specs(spec: dict) -> list[dict]:
    return [spec, *spec.get("referenced", [])]


def has_quant8_coupled_operands(case: dict) -> bool:
    """TestHarness.h `hasQuant8CoupledOperands`: some operation outside `COUPLING_EXCLUDED_OPS` reads or
    writes a TENSOR_QUANT8_ASYMM operand."""
    for sg in _subgraph_specs(case["model"]):
        ops = sg["operands"]
        for op in sg["operations"]:
            if op["type"] in COUPLING_EXCLUDED_OPS:
                continue
            if any(ops[i]["type"] == "TENSOR_QUANT8_ASYMM" for i in (*op["inputs"], *op["outputs"])):
                return True
    return False


def is_coupling_candidate(case: dict) -> bool:
    """The QuantizationCouplingTest filter of TestGenerated.cpp: a case expected to succeed, one operation,
    no referenced subgraph, quant8-coupled operands."""
    spec = case["model"]
    return (not case.get("expect_failure") and len(spec["operations"]) == 1
            and not spec.get("referenced") and has_quant8_coupled_operands(case))


def signed_coupling_case(case: dict) -> dict:
    """TestHarness.cpp `convertQuant8AsymmOperandsToSigned`: every TENSOR_QUANT8_ASYMM operand becomes
    TENSOR_QUANT8_ASYMM_SIGNED with zero point and values (constants, inputs, expected outputs) minus 128;
    the expected results are otherwise unchanged, since the real values are the same.

    The new case shares every part the conversion leaves alone with `case` (which is not modified), so
    deriving the twins of all cases stays cheap at collection time."""
    def convert(sg: dict) -> dict:
        operands = []
        for od in sg["operands"]:
            if od["type"] == "TENSOR_QUANT8_ASYMM":
                od = dict(od, type="TENSOR_QUANT8_ASYMM_SIGNED", zero_point=int(od.get("zero_point", 0)) - 128)
                if "value" in od:
                    od["value"] = [int(v) - 128 for v in od["value"]]
            operands.append(od)
        return dict(sg, operands=operands)

    spec = convert(case["model"])
    if spec.get("referenced"):
        spec["referenced"] = [convert(r) for r in spec["referenced"]]
    ops = spec["operands"]

    def shift(indexes: list[int], lists: list[list]) -> list[list]:
        return [[int(v) - 128 for v in values] if ops[idx]["type"] == "TENSOR_QUANT8_ASYMM_SIGNED" else values
                for idx, values in zip(indexes, lists)]

    return dict(case, model=spec, inputs=shift(spec["input_indexes"], case["inputs"]),
                outputs=shift(spec["output_indexes"], case["outputs"]), **{SIGNED_COUPLING: True})


def is_dynamic_shape_candidate(case: dict) -> bool:
    """The DynamicOutputShapeTest filter of TestGenerated.cpp: a case expected to succeed without
    `hasScalarOutputs` (TestHarness.h: no RANK, IF or WHILE operation in any subgraph)."""
    if case.get("expect_failure"):
        return False
    return not any(op["type"] in ("RANK", "IF", "WHILE")
                   for sg in _subgraph_specs(case["model"]) for op in sg["operations"])


def dynamic_output_shape_case(case: dict) -> dict:
    """GeneratedTestUtils.cpp `createModel(..., testDynamicOutputShape=true)`: every main output operand
    gets all-unspecified (0) dimensions of its rank, so the executor must infer the output shapes; the
    results must still come out with the originally declared dimensions (`expected_output_dims`)."""
    spec = case["model"]
    outs = set(spec["output_indexes"])
    operands = [dict(od, dimensions=[0] * len(od.get("dimensions", []))) if k in outs else od
                for k, od in enumerate(spec["operands"])]
    expected = [list(spec["operands"][k].get("dimensions", [])) for k in spec["output_indexes"]]
    return dict(case, model=dict(spec, operands=operands), expected_output_dims=expected,
                **{DYNAMIC_OUTPUT_SHAPE: True})


def _operand(spec: dict, model: Model) -> Operand:
    t = OperandType[spec["type"]]
    lifetime = OperandLifeTime[spec["lifetime"]]
    dims = tuple(int(d) for d in spec.get("dimensions", []))
    cq = spec.get("channel_quant")
    channel = SymmPerChannelQuantParams(cq["channel_dim"], tuple(float(s) for s in cq["scales"])) if cq else None
    location = DataLocation()
    if lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE):
        arr = np.asarray(spec.get("value", []), dtype=np.float64 if t.is_float else None)
        arr = arr.astype(STORAGE_DTYPE[t])
        raw = arr.tobytes()
        if lifetime is OperandLifeTime.CONSTANT_COPY:
            pad = (-len(model.operand_values)) % 8
            model.operand_values.extend(b"\0" * pad)
            location = DataLocation(0, len(model.operand_values), len(raw))
            model.operand_values.extend(raw)
        else:
            model.pools.append(np.frombuffer(raw, dtype=np.uint8).copy())
            location = DataLocation(len(model.pools) - 1, 0, len(raw))
    elif lifetime is OperandLifeTime.SUBGRAPH:
        location = DataLocation(0, int(spec["value"][0]), 0)
    return Operand(type=t, dimensions=dims, scale=float(spec.get("scale", 0.0)),
                   zero_point=int(spec.get("zero_point", 0)), lifetime=lifetime, location=location,
                   channel_quant=channel)


def _subgraph(spec: dict, model: Model) -> Subgraph:
    sg = Subgraph(operands=[_operand(o, model) for o in spec["operands"]],
                  operations=[Operation(OperationType[op["type"]], list(op["inputs"]), list(op["outputs"]))
                              for op in spec["operations"]],
                  input_indexes=list(spec["input_indexes"]), output_indexes=list(spec["output_indexes"]))
    for op in sg.operations:
        for i in op.inputs:
            sg.operands[i].number_of_consumers += 1
    return sg


def build_model(case: dict) -> Model:
    """Our NNAPI IR for a CTS case (operation types unknown to us raise KeyError)."""
    m = Model()
    spec = case["model"]
    m.main = _subgraph(spec, m)
    m.referenced = [_subgraph(r, m) for r in spec.get("referenced", [])]
    m.relax_computation_float32_to_float16 = bool(spec.get("relax_fp32_to_fp16", False))
    return m


def _inputs(case: dict, model: Model) -> list[np.ndarray | None]:
    arrays: list[np.ndarray | None] = []
    for idx, values in zip(model.main.input_indexes, case["inputs"]):
        od = model.main.operands[idx]
        if len(values) == 0:
            # CTS passes no buffer for empty data (createRequest: setInput(i, nullptr, 0)): an omitted
            # optional input, whatever its declared dimensions.
            arrays.append(None)
            continue
        arr = np.asarray(values, dtype=np.float64 if od.type.is_float else None).astype(od.dtype)
        if od.type.is_tensor:
            # Every main input with data has fully specified dimensions in the vectors.
            dims = od.dimensions if (od.dimensions and 0 not in od.dimensions) else arr.shape
            arr = arr.reshape(dims)
        else:
            arr = arr.reshape(())
        arrays.append(arr)
    return arrays


def _uses_float16(model: Model) -> bool:
    """TestHarness.cpp `hasFloat16Inputs`: a TENSOR_FLOAT16 operand in any subgraph (scalars do not count)."""
    return any(o.type is OperandType.TENSOR_FLOAT16 for sg in model.subgraphs() for o in sg.operands)


def tolerance(od: Operand, case: dict, model: Model) -> tuple[float, float]:
    """(atol, rtol) of the Android test harness for one output operand."""
    name = case["name"]
    t = od.type
    if t in (OperandType.TENSOR_FLOAT16, OperandType.FLOAT16):
        return 5 * 2.0 ** -10, 5 * 2.0 ** -10
    if t in (OperandType.TENSOR_FLOAT32, OperandType.FLOAT32):
        if model.relax_computation_float32_to_float16 or _uses_float16(model):
            return 5 * 2.0 ** -10, 5 * 2.0 ** -10
        return 1e-5, 5 * 2.0 ** -23
    if t in (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED,
             OperandType.TENSOR_QUANT8_SYMM):
        return (3.0 if "mobilenet" in name else 1.0), 0.0
    if t in (OperandType.TENSOR_BOOL8, OperandType.BOOL):
        return 0.0, 0.0
    return 1.0, 0.0


def multinomial_problems(logits: np.ndarray, samples: np.ndarray, tolerance: float) -> list[str]:
    """The RANDOM_MULTINOMIAL check of TestHarness.cpp, per batch: for every class, the observed frequency
    of the class among that batch's samples must lie within `tolerance` of softmax(logits) (computed in
    float32 like the harness). (The harness itself pools the counts of all batches, which only works for a
    single batch; every CTS case has one.)"""
    logits = np.asarray(logits, dtype=np.float32)
    samples = np.asarray(samples)
    if logits.ndim != 2 or samples.ndim != 2 or samples.shape[0] != logits.shape[0]:
        return [f"multinomial: logits {list(logits.shape)} and samples {list(samples.shape)} do not match"]
    batches, classes = logits.shape
    n = samples.shape[1]
    if n == 0:
        return ["multinomial: no samples"]
    out_of_range = (samples < 0) | (samples >= classes)
    if out_of_range.any():
        return [f"multinomial: {int(out_of_range.sum())} sampled indices outside [0, {classes})"]
    flat = samples.astype(np.int64) + np.arange(batches, dtype=np.int64)[:, None] * classes
    counts = np.bincount(flat.ravel(), minlength=batches * classes).reshape(batches, classes)
    e = np.exp(logits.astype(np.float32))
    expected = e / e.sum(axis=1, keepdims=True, dtype=np.float32)
    observed = counts.astype(np.float32) / np.float32(n)
    bad = np.abs(observed - expected) > np.float32(tolerance)
    if not bad.any():
        return []
    b, c = (int(v) for v in np.argwhere(bad)[0])
    return [f"multinomial: {int(bad.sum())} (batch, class) frequencies off by more than {tolerance:g}, e.g. "
            f"batch {b} class {c}: {observed[b, c]:.4f} observed vs {expected[b, c]:.4f}"]


@dataclass
class CaseResult:
    status: str  # passed | failed | unsupported
    message: str = ""
    operations: tuple[str, ...] = ()


def _operations(case: dict) -> tuple[str, ...]:
    spec = case["model"]
    ops = [op["type"] for op in spec["operations"]]
    for r in spec.get("referenced", []):
        ops += [op["type"] for op in r["operations"]]
    return tuple(dict.fromkeys(ops))


def is_infinite_loop_timeout_case(case: dict) -> bool:
    """TestHarness.h `isInfiniteLoopTimeoutTest`: an expected failure whose first operation is a WHILE
    (the `while_infinite_loop` cases)."""
    ops = case["model"]["operations"]
    return bool(case.get("expect_failure")) and bool(ops) and ops[0]["type"] == "WHILE"


# CTS runs its never-ending loop with ANeuralNetworksExecution_setLoopTimeout(1 ms)
# (TestControlFlow.cpp InfiniteLoop) rather than the 2 s default; so does `run_case`.
INFINITE_LOOP_TIMEOUT_SECONDS = 0.001
# Every operation is validated as the NNAPI runtime does before compiling (nnapi/validate.py), at the
# newest feature level: each case targets its own version, and no valid case may be refused.
CTS_FEATURE_LEVEL = 8


def execution_options(case: dict, clock: Callable[[], float] | None = None) -> ExecutionOptions:
    """The execution settings CTS uses for `case`: its 1 ms loop timeout for the never-ending loop, measured
    on `clock` (the wall clock when None; tests pass one that does not depend on the machine's load)."""
    options = ExecutionOptions() if clock is None else ExecutionOptions(clock=clock)
    if is_infinite_loop_timeout_case(case):
        return replace(options, loop_timeout_seconds=INFINITE_LOOP_TIMEOUT_SECONDS)
    return options


def run_case(case: dict, clock: Callable[[], float] | None = None) -> CaseResult:
    """Runs one CTS case on the executor; `clock` as for `execution_options`."""
    ops = _operations(case)
    missing = [o for o in ops if o not in OperationType.__members__ or OperationType[o] not in KERNELS]
    if missing:
        return CaseResult("unsupported", f"no kernel for {', '.join(missing)}", ops)
    model = build_model(case)
    options = execution_options(case, clock)
    if case.get("expect_failure"):
        try:
            validate_model(model, CTS_FEATURE_LEVEL)
            SubgraphRunner(model, options=options).run_subgraph(0, _inputs(case, model))
        except NnconvError:
            return CaseResult("passed", "failed as expected", ops)
        except Exception as e:  # noqa: BLE001 - any crash is a wrong failure mode
            return CaseResult("failed", f"crashed instead of failing cleanly: {type(e).__name__}: {e}", ops)
        return CaseResult("failed", "the case must fail, but it ran", ops)
    try:
        validate_model(model, CTS_FEATURE_LEVEL)
        outputs = SubgraphRunner(model, options=options).run_subgraph(0, _inputs(case, model))
    except NnconvError as e:
        return CaseResult("failed", f"{type(e).__name__}: {e}", ops)
    except Exception as e:  # noqa: BLE001 - report crashes as failures with their type
        return CaseResult("failed", f"crash: {type(e).__name__}: {e}", ops)
    problems = []
    ignored = set(case.get("ignored_outputs", []))
    for k, (idx, expected) in enumerate(zip(model.main.output_indexes, case["outputs"])):
        if k in ignored:
            continue
        od = model.main.operands[idx]
        got = np.asarray(outputs[k])
        # CTS asserts the actual dimensions equal the declared ones exactly; a declared 0 (the zero-sized
        # cases) must therefore come out as 0. Main outputs never have an unspecified rank.
        dims = tuple(case["expected_output_dims"][k]) if "expected_output_dims" in case else tuple(od.dimensions)
        if (dims or not od.type.is_tensor) and tuple(got.shape) != dims:
            problems.append(f"output {k}: shape {list(got.shape)} != {list(dims)}")
            continue
        if "multinomial_tolerance" in case:
            # Sampled class indices: compared statistically with the softmax of the logits input.
            problems += multinomial_problems(_inputs(case, model)[0], got, float(case["multinomial_tolerance"]))
            continue
        exp = np.asarray(expected, dtype=np.float64)
        if od.type.is_float:
            # CTS holds expected values in the operand's type: the spec's float32 numbers rounded to float32.
            exp = exp.astype(od.dtype).astype(np.float64)
        if got.size != exp.size:
            problems.append(f"output {k}: {got.size} values, expected {exp.size}")
            continue
        atol, rtol = tolerance(od, case, model)
        g = got.astype(np.float64).ravel()
        bad = np.abs(g - exp) > atol + rtol * np.abs(exp)
        bad |= np.isnan(g)
        if bad.any():
            i = int(np.argmax(bad))
            problems.append(f"output {k}: {int(bad.sum())}/{g.size} values off, e.g. [{i}] = {g[i]!r}, "
                            f"expected {exp[i]!r} (atol {atol:g}, rtol {rtol:g})")
    if problems:
        return CaseResult("failed", "; ".join(problems), ops)
    return CaseResult("passed", "", ops)


def summarize(results: dict[str, CaseResult]) -> dict[str, Any]:
    """Per folder and per operation: cases, passed, failed, unsupported."""
    table: dict[str, dict[str, dict[str, int]]] = {}
    for cid, r in results.items():
        folder = cid.split("/", 1)[0]
        for derived in (SIGNED_COUPLING, DYNAMIC_OUTPUT_SHAPE):
            if cid.endswith("/" + derived):
                folder += "/" + derived
        for key in ("(all)", *r.operations):
            row = table.setdefault(folder, {}).setdefault(key, {"cases": 0, "passed": 0, "failed": 0,
                                                                "unsupported": 0})
            row["cases"] += 1
            row[r.status] += 1
    return table
