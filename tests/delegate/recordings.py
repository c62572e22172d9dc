"""The recordings of TFLite's own NNAPI delegate (`tests/data/delegate/`: a copy of `shared/delegate/` beside
the repository, whose README says how they were made), and the comparison of `--target delegate` with them:
node verdicts, partitions, outcome and graph.

Used by the tests of this folder and by `scripts/delegate_agreement.py`; never by the library."""

from __future__ import annotations

import functools
import hashlib
import json
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "delegate"
ARCHIVE = DATA / "recordings.tar.xz"
OPS_MODELS = DATA / "ops"  # the models a recording names by a path outside the repository
SETS = ("examples", "tests", "ops")


def fnv64(data: bytes) -> str:
    """FNV-1a 64 of raw bytes, as the recordings hash constant values."""
    h = 0xcbf29ce484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def fnv64_fast(data: bytes) -> str:
    """FNV-1a 64 with numpy for long buffers (the same value as `fnv64`)."""
    if len(data) < 4096:
        return fnv64(data)
    h = 0xcbf29ce484222325
    prime = 0x100000001b3
    for byte in memoryview(data):  # (python ints: exact; long constants are few)
        h = ((h ^ byte) * prime) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


@dataclass
class Recording:
    set: str
    path: Path
    data: dict

    @property
    def model(self) -> Path:
        m = self.data["model"]
        if m.startswith("../"):  # a model of the recordings' own set, outside the repository
            return OPS_MODELS / Path(m).name
        return REPO / m

    @property
    def name(self) -> str:
        return f"{self.set}/{self.path.stem}"

    def current(self) -> bool:
        p = self.model
        return p.exists() and hashlib.sha256(p.read_bytes()).hexdigest() == self.data["sha256"]

    def levels(self) -> Iterator[dict]:
        yield from self.data["levels"]


@functools.lru_cache(maxsize=1)
def _archive() -> tuple[tuple[str, bytes], ...]:
    with tarfile.open(ARCHIVE, "r:xz") as tar:
        return tuple((m.name, tar.extractfile(m).read()) for m in tar.getmembers()  # type: ignore[union-attr]
                     if m.isfile() and m.name.endswith(".json"))


def recordings(sets: tuple[str, ...] = SETS) -> list[Recording]:
    """The recordings of `sets`, by set then file name (a `path` is the member's name in the archive)."""
    out = []
    for s in sets:
        for name, data in sorted(_archive()):
            p = Path(name)
            if p.parent.name == s:
                out.append(Recording(s, p, json.loads(data)))
    return out


@dataclass
class Diff:
    """Disagreements of one model-level, by kind."""

    nodes: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    partitions: list[str] = field(default_factory=list)
    outcome: list[str] = field(default_factory=list)
    graph: list[str] = field(default_factory=list)

    def all(self) -> list[str]:
        return self.outcome + self.nodes + self.messages + self.partitions + self.graph


def operand_signature(model, index: int) -> dict:
    """One operand of our NNAPI model in the recordings' terms."""
    from nnconv.nnapi.enums import OperandLifeTime
    o = model.main.operands[index]
    sig = {"type_name": o.type.name, "dims": list(o.dimensions) if (o.dimensions or o.type.is_tensor and
                                                                   o.dimensions) else None,
           "scale": float(np.float32(o.scale)), "zero_point": int(o.zero_point)}
    if not o.dimensions:
        sig["dims"] = None
    if o.channel_quant is not None:
        scales = np.asarray(o.channel_quant.scales, np.float32).tobytes()
        sig["per_channel"] = (o.channel_quant.channel_dim, len(o.channel_quant.scales), fnv64(scales))
    if o.lifetime is OperandLifeTime.NO_VALUE:
        sig["value"] = "null"
    elif o.is_constant:
        raw = bytes(memoryview(model.constant_value(o)).cast("B")) if o.location.length else b""
        sig["value"] = (len(raw), fnv64_fast(raw))
    else:
        sig["value"] = None
    return sig


def recorded_operand(o: dict) -> dict:
    sig = {"type_name": o["type_name"], "dims": o.get("dims"), "scale": float(np.float32(o.get("scale") or 0.0)),
           "zero_point": int(o.get("zero_point") or 0)}
    pc = o.get("per_channel")
    if pc:
        sig["per_channel"] = (pc["channel_dim"], pc["scale_count"], pc["scales_fnv64"])
    if not o.get("value_set"):
        sig["value"] = None
    elif o["value"].get("null"):
        sig["value"] = "null"
    else:
        sig["value"] = (o["value"]["length"], o["value"].get("fnv64", fnv64(b"")))
    return sig


def compare_graph(ours, theirs: dict) -> list[str]:
    """Every difference between our NNAPI model and a recorded one (operations, operands, I/O, relax)."""
    out = []
    sg = ours.main
    ops = [(op.type.name, list(op.inputs), list(op.outputs)) for op in sg.operations]
    rec_ops = [(op["type_name"], op["inputs"], op["outputs"]) for op in theirs["operations"]]
    if ops != rec_ops:
        k = next((i for i, (a, b) in enumerate(zip(ops, rec_ops)) if a != b), min(len(ops), len(rec_ops)))
        out.append(f"operation {k}: ours {ops[k:k + 1]} theirs {rec_ops[k:k + 1]} (counts {len(ops)}/{len(rec_ops)})")
    if len(sg.operands) != len(theirs["operands"]):
        out.append(f"operand count: ours {len(sg.operands)} theirs {len(theirs['operands'])}")
    for i, o in enumerate(theirs["operands"][:len(sg.operands)]):
        a, b = operand_signature(ours, i), recorded_operand(o)
        if a != b:
            out.append(f"operand {i}: ours {a} theirs {b}")
            break
    if list(sg.input_indexes) != theirs["inputs"] or list(sg.output_indexes) != theirs["outputs"]:
        out.append(f"io: ours {sg.input_indexes}->{sg.output_indexes} theirs {theirs['inputs']}->{theirs['outputs']}")
    relax = theirs.get("relaxComputationFloat32toFloat16")
    if relax is not None and bool(relax) != bool(ours.relax_computation_float32_to_float16):
        out.append(f"relax: ours {ours.relax_computation_float32_to_float16} theirs {relax}")
    return out


def compare_level(lv: dict, plan) -> Diff:
    """Our plan (`nnconv.delegate.plan.DelegatePlan`) against one recorded level."""
    d = Diff()
    if plan.outcome.value != lv["outcome"]:
        d.outcome.append(f"outcome: ours {plan.outcome.value} ({plan.error[:120]}) theirs {lv['outcome']} "
                         f"({(lv.get('error') or '')[:120]})")
    nodes = lv.get("nodes") or []
    for n in nodes:
        if n.get("fp16_const_dequantize"):
            continue
        v = plan.verdicts[n["index"]] if n["index"] < len(plan.verdicts) else None
        if v is None:
            d.nodes.append(f"#{n['index']} {n['op']}: no verdict")
            continue
        if v.supported != bool(n["supported"]):
            why = "; ".join(f["message"] for f in n.get("failures", []))
            ours = "; ".join(f.message for f in v.failures)
            d.nodes.append(f"#{n['index']} {n['op']} v{n['version']}: theirs {n['supported']} ({why}) ours "
                           f"{v.supported} ({ours})")
        theirs_msgs = [(f["type"], f["message"]) for f in n.get("failures", [])]
        ours_msgs = [(int(f.type), f.message) for f in v.failures]
        if theirs_msgs != ours_msgs:
            d.messages.append(f"#{n['index']} {n['op']}: theirs {theirs_msgs} ours {ours_msgs}")
    if lv["outcome"] in ("delegated", "not_delegated"):
        fp16 = {n["index"] for n in nodes if n.get("fp16_const_dequantize")}
        theirs = sorted(sorted(set(p) - fp16) for p in lv.get("delegated") or [] if set(p) - fp16)
        mine = sorted(sorted(set(p.nodes) - fp16) for p in plan.partitions if set(p.nodes) - fp16)
        if theirs != mine:
            d.partitions.append(f"partitions: theirs {theirs} ours {mine}")
        if lv["outcome"] == "delegated" and len(lv.get("nnapi_models") or []) == len(plan.built):
            for k, (nm, built) in enumerate(zip(lv["nnapi_models"], plan.built)):
                d.graph += [f"model {k}: {x}" for x in compare_graph(built.model, nm)]
        elif lv["outcome"] == "delegated":
            d.graph.append(f"model count: theirs {len(lv.get('nnapi_models') or [])} ours {len(plan.built)}")
    return d
