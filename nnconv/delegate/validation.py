"""`NNAPIDelegateKernel::Validate`: does the delegate take one node at a target feature level, and if not,
every reason it gives. One validator per TFLite builtin (registered by the `validate_*` modules); a builtin
without one is refused as the delegate refuses it ("Unsupported operation type."), custom ops included."""

from __future__ import annotations

from dataclasses import dataclass

from nnconv.delegate import validate_nn, validate_sequence, validate_tensor  # noqa: F401  (registrations)
from nnconv.delegate.failures import Failure, FailureType, NodeCheck
from nnconv.delegate.graph import DelegateGraph, Node
from nnconv.delegate.setup import DelegateSetup
from nnconv.delegate.validator_registry import VALIDATORS

UNSUPPORTED = Failure(FailureType.UNSUPPORTED_OPERATOR, "Unsupported operation type.")


@dataclass(frozen=True)
class Validation:
    """`Validate`'s answer for one node: whether the delegate takes it and every reason it gives when not
    (a refusal may come without one: DENSIFY of a tensor that is not constant)."""

    supported: bool
    failures: tuple[Failure, ...] = ()


def validate(graph: DelegateGraph, node: Node, setup: DelegateSetup) -> Validation:
    """The delegate's verdict on `node`. The node is read as the delegate reads it: pass
    `graph.remapped(node)` on the float16 path."""
    fn = VALIDATORS.get(node.op)
    if fn is None:
        return Validation(False, (UNSUPPORTED,))
    check = NodeCheck(graph, node, setup)
    fn(check)
    return Validation(check.valid, tuple(check.failures))
