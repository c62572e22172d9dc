"""TFLite's `PartitionGraphIntoIndependentNodeSubsets` (graph_info.cc), which every delegate's partitions
come from: the execution plan cut into subsets, each all-delegated or all-CPU, with the tensors each reads
from outside itself and the tensors later subsets (or the graph's outputs) read from it.

It works in epochs, greedily: an epoch starts with the first node in execution order whose inputs are all
available, which fixes the epoch's kind; every node of the same kind whose inputs are available joins it,
sweeping the plan again and again until none can. Tensors no node writes (graph inputs, constants, state)
are always available. Nodes that may have side effects (IF, WHILE, CALL_ONCE, any node touching a resource
tensor) also wait for the previous such node: control edges keep their order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

_NOT_READY = -1
_ALWAYS_READY = -2


@dataclass
class NodeSubset:
    """One subset: its kind, its nodes in the order they run, and its boundary tensors (sorted, unique,
    as TFLite's `Uniquefy` leaves them). Inputs include constants and graph inputs."""

    delegated: bool
    nodes: list[int] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class PlanNode:
    """What the partitioner reads of one node of the execution plan."""

    index: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    side_effect: bool = False


def partition(num_tensors: int, plan: Sequence[PlanNode], delegated: Iterable[int],
              graph_outputs: Sequence[int]) -> list[NodeSubset]:
    """The node subsets of `plan` when the nodes in `delegated` go to a delegate (greedy mode). ValueError
    when some node can never run (a dependency cycle or an input nothing produces in time)."""
    chosen = set(delegated)
    epoch_of_tensor = [_ALWAYS_READY] * num_tensors
    for node in plan:
        for t in node.outputs:
            if t >= 0:
                epoch_of_tensor[t] = _NOT_READY
    chain = [k for k, n in enumerate(plan) if n.side_effect]
    waits_for = {b: a for a, b in zip(chain, chain[1:])}  # control edges: each side effect after the last
    done = [False] * len(plan)
    subsets: list[NodeSubset] = []
    while True:
        current: NodeSubset | None = None
        epoch = len(subsets)
        progress = True
        while progress:
            progress = False
            for k, node in enumerate(plan):
                if done[k] or (k in waits_for and not done[waits_for[k]]):
                    continue
                if any(t >= 0 and epoch_of_tensor[t] == _NOT_READY for t in node.inputs):
                    continue
                kind = node.index in chosen
                if current is None:
                    current = NodeSubset(kind)
                    subsets.append(current)
                if kind != current.delegated:
                    continue
                done[k] = True
                current.nodes.append(node.index)
                for t in node.outputs:
                    if t >= 0:
                        epoch_of_tensor[t] = epoch
                for t in node.inputs:
                    if t < 0:
                        continue
                    source = epoch_of_tensor[t]
                    if source != epoch:
                        current.inputs.append(t)
                        if source >= 0:
                            subsets[source].outputs.append(t)
                progress = True
        if current is None:
            break
    if not all(done):
        raise ValueError("the execution plan has nodes that can never run")
    for t in graph_outputs:
        if 0 <= t < num_tensors and epoch_of_tensor[t] >= 0:
            subsets[epoch_of_tensor[t]].outputs.append(t)
    for s in subsets:
        s.inputs = sorted(set(s.inputs))
        s.outputs = sorted(set(s.outputs))
    return subsets
