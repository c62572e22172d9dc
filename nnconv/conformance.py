"""NNAPI conformance (CTS) vectors: load the cases of `shared/nnapi_cts`, build our NNAPI IR from each,
run it on the executor and compare with the tolerances of the Android test harness.

Each case is a dict as described in the data's README (model, inputs, outputs, ignored_outputs,
expect_failure). `run_case` returns a `CaseResult` whose status is "passed", "failed" or "unsupported"
(an operation without a kernel).
"""

from __future__ import annotations

import gzip
import json
import os
import pathlib
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from nnconv.errors import NnconvError
from nnconv.executor import SubgraphRunner
from nnconv.kernels import KERNELS
from nnconv.nnapi.enums import OperandLifeTime, OperandType, OperationType
from nnconv.nnapi.model import (STORAGE_DTYPE, DataLocation, Model, Operand, Operation, Subgraph,
                                SymmPerChannelQuantParams)
from nnconv.nnapi.validate import validate_model

FOLDERS = ("V1_0", "V1_1", "V1_2", "V1_3", "V1_3_cts_only")


def cts_dir() -> pathlib.Path:
    env = os.environ.get("NNCONV_CTS_DIR")
    if env:
        return pathlib.Path(env)
    return pathlib.Path(__file__).resolve().parent.parent.parent / "shared" / "nnapi_cts"


def iter_cases(root: pathlib.Path | None = None, folders: tuple[str, ...] = FOLDERS) -> Iterator[tuple[str, dict]]:
    """(id, case) for every case, id = '<folder>/<case name>'."""
    root = root or cts_dir()
    for folder in folders:
        d = root / folder
        if not d.is_dir():
            continue
        for f in sorted(d.glob("*.json.gz")):
            with gzip.open(f, "rt") as fh:
                for case in json.load(fh):
                    yield f"{folder}/{case['name']}", case


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
        if len(values) == 0 and od.dimensions and 0 not in od.dimensions and od.byte_size() > 0:
            arrays.append(None)  # an omitted optional input
            continue
        arr = np.asarray(values, dtype=np.float64 if od.type.is_float else None).astype(od.dtype)
        if od.type.is_tensor:
            dims = od.dimensions if (od.dimensions and 0 not in od.dimensions) else arr.shape
            arr = arr.reshape(dims)
        else:
            arr = arr.reshape(())
        arrays.append(arr)
    return arrays


def _uses_float16(model: Model) -> bool:
    return any(o.type in (OperandType.TENSOR_FLOAT16, OperandType.FLOAT16) for sg in model.subgraphs()
               for o in sg.operands)


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


def run_case(case: dict) -> CaseResult:
    ops = _operations(case)
    missing = [o for o in ops if o not in OperationType.__members__ or OperationType[o] not in KERNELS]
    if missing:
        return CaseResult("unsupported", f"no kernel for {', '.join(missing)}", ops)
    model = build_model(case)
    if case.get("expect_failure"):
        try:
            validate_model(model)
            SubgraphRunner(model).run_subgraph(0, _inputs(case, model))
        except NnconvError:
            return CaseResult("passed", "failed as expected", ops)
        except Exception as e:  # noqa: BLE001 - any crash is a wrong failure mode
            return CaseResult("failed", f"crashed instead of failing cleanly: {type(e).__name__}: {e}", ops)
        return CaseResult("failed", "the case must fail, but it ran", ops)
    try:
        validate_model(model)
        outputs = SubgraphRunner(model).run_subgraph(0, _inputs(case, model))
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
        if "multinomial_tolerance" in case:
            continue  # sampled indices are checked statistically by a dedicated test
        exp = np.asarray(expected, dtype=np.float64)
        if od.dimensions and 0 not in od.dimensions and tuple(got.shape) != tuple(od.dimensions):
            problems.append(f"output {k}: shape {list(got.shape)} != {list(od.dimensions)}")
            continue
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
        for key in ("(all)", *r.operations):
            row = table.setdefault(folder, {}).setdefault(key, {"cases": 0, "passed": 0, "failed": 0,
                                                                "unsupported": 0})
            row["cases"] += 1
            row[r.status] += 1
    return table
