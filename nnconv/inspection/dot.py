"""`nnconv inspect --dot`: a file's operation graph as Graphviz text (`dot -Tsvg`).

Nodes are operations (boxes) and model inputs/outputs (ellipses); an edge means an operation reads what
another writes; constants are left out (they would bury the graph). A `.tflite` file draws each subgraph
as a cluster. A `.nnapi` file draws each partition as a cluster (its referenced IF/WHILE subgraphs as
clusters inside it), and the partitions' inputs and outputs as nodes named after their TFLite tensors, so
that partitions separated by ops left to TFLite's CPU kernels meet at the tensors they exchange.
"""

from __future__ import annotations

from typing import Iterable

from nnconv.nnapi.model import Subgraph
from nnconv.nnapi.serialize import NnapiFile
from nnconv.tflite.ir import TfliteModel


def quote(text: str) -> str:
    """A DOT double-quoted string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _edges(producer: dict[int, str], reads: Iterable[tuple[int, str]]) -> list[str]:
    return [f"  {producer[t]} -> {node};" for t, node in reads if t in producer]


def tflite_dot(model: TfliteModel) -> str:
    lines = ["digraph tflite {", "  rankdir=TB;", "  node [shape=box, fontsize=10];"]
    for sg in model.subgraphs:
        lines.append(f"  subgraph cluster_sg{sg.index} {{")
        lines.append(f"    label={quote(f'subgraph {sg.index} {sg.name}'.strip())};")
        producer: dict[int, str] = {}
        for t in sg.inputs:
            node = f"s{sg.index}_t{t}"
            producer[t] = node
            lines.append(f"    {node} [shape=ellipse, label={quote(sg.tensors[t].name)}];")
        reads: list[tuple[int, str]] = []
        for op in sg.operators:
            node = f"s{sg.index}_op{op.index}"
            lines.append(f"    {node} [label={quote(f'#{op.index} {op.name}')}];")
            reads += [(t, node) for t in op.inputs if t >= 0]
            producer.update({t: node for t in op.outputs})
        for t in sg.outputs:
            node = f"s{sg.index}_out{t}"
            lines.append(f"    {node} [shape=ellipse, label={quote(sg.tensors[t].name)}];")
            reads.append((t, node))
        lines.append("  }")
        lines += _edges(producer, reads)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _nnapi_subgraph(lines: list[str], prefix: str, sg: Subgraph, indent: str) -> tuple[dict[int, str], list]:
    """Operation nodes of one NNAPI subgraph; returns (producer of each operand, (operand, reader) pairs)."""
    producer: dict[int, str] = {}
    reads: list[tuple[int, str]] = []
    for n, op in enumerate(sg.operations):
        node = f"{prefix}_op{n}"
        label = f"{n}: {op.type.name}" + ("" if op.source_op is None else f"\n(TFLite #{op.source_op})")
        lines.append(f"{indent}{node} [label={quote(label)}];")
        reads += [(i, node) for i in op.inputs]
        producer.update({i: node for i in op.outputs})
    return producer, reads


def nnapi_dot(nnapi: NnapiFile) -> str:
    lines = ["digraph nnapi {", "  rankdir=TB;", "  node [shape=box, fontsize=10];"]
    tensors: dict[int, str] = {}  # TFLite tensor index -> label, the nodes partitions meet at
    edges: list[str] = []
    for k, part in enumerate(nnapi.partitions):
        ops = part.tflite_ops
        span = f"TFLite ops {ops[0]}..{ops[-1]}" if ops else "no TFLite ops"
        lines.append(f"  subgraph cluster_p{k} {{")
        lines.append(f"    label={quote(f'partition {k}: {span}, API {part.api_level}')};")
        lines.append("    style=rounded;")
        subgraphs = part.model.subgraphs()
        producer, reads = _nnapi_subgraph(lines, f"p{k}", subgraphs[0], "    ")
        for s, sg in enumerate(subgraphs[1:], start=1):
            lines.append(f"    subgraph cluster_p{k}_s{s} {{")
            lines.append(f"      label={quote(f'referenced subgraph {s - 1}')};")
            inner_producer, inner_reads = _nnapi_subgraph(lines, f"p{k}_s{s}", sg, "      ")
            lines.append("    }")
            edges += _edges(inner_producer, inner_reads)
        lines.append("  }")
        main = subgraphs[0]
        for io, operand in zip(part.inputs, main.input_indexes):
            tensors[io.tflite_tensor] = io.name
            producer[operand] = f"t{io.tflite_tensor}"
        for io, operand in zip(part.outputs, main.output_indexes):
            tensors[io.tflite_tensor] = io.name
            reads.append((operand, f"t{io.tflite_tensor}"))
        edges += _edges(producer, reads)
    lines += [f"  t{t} [shape=ellipse, label={quote(name)}];" for t, name in sorted(tensors.items())]
    lines += edges
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_dot(loaded: TfliteModel | NnapiFile) -> str:
    """Graphviz text of a loaded `.tflite` model or `.nnapi` file."""
    return tflite_dot(loaded) if isinstance(loaded, TfliteModel) else nnapi_dot(loaded)
