"""What one conversion carries from the rewrite stage to the lowering: the user's options and the state of
the model being converted (folded constants, densified sparse constants, what the graph rewrites changed).

It lives in the rewrite stage because the rewrites fill it and the lowering (a later stage) reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from nnconv.nnapi.levels import ApiLevel
from nnconv.targets import DEFAULT_TARGET, Target
from nnconv.tflite.ir import TfliteModel

if TYPE_CHECKING:
    from nnconv.rewrite.registry import RewriteRecord


@dataclass(frozen=True)
class ConversionOptions:
    """Choices a user can make about a conversion."""

    fold_constants: bool = True  # evaluate ops whose inputs are all constant at conversion time
    fold_dynamic_range_weights: bool = False  # hybrid int8 weights -> float32 constants (API 27/28)
    relax_float32_to_float16: bool = False  # set relaxComputationFloat32toFloat16 (API 28+)
    # (input name, shape) pairs: main-subgraph inputs resized before the rewrite stage (tflite/input_shapes.py)
    input_shapes: tuple[tuple[str, tuple[int, ...]], ...] = ()
    # whose decisions: TFLite's NNAPI delegate (what phones run) or nnconv's own converter (`nnconv/targets.py`)
    target: Target = DEFAULT_TARGET


@dataclass
class ConversionState:
    """Shared by every operator of one conversion."""

    model: TfliteModel
    api_level: ApiLevel  # the target, as the command line parsed it (`lowering.convert.target_level`)
    options: ConversionOptions
    folded: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)  # (subgraph, tensor) -> value
    # Non-constant int64 tensors whose values always fit int32 (indices), carried as TENSOR_INT32; see
    # rewrite/int64_indices.py.
    int64_as_int32: set[tuple[int, int]] = field(default_factory=set)
    densified: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)  # sparse constants, dense
    rewrites: list["RewriteRecord"] = field(default_factory=list)  # what the graph rewrites changed
    source: TfliteModel | None = None  # the model as read, when the graph rewrites changed `model`
    removed: set[tuple[int, int]] = field(default_factory=set)  # (subgraph, op) a graph rewrite made dead
    # What the later stages derive from the rewritten model once and keep (each op's check per API level, a
    # subgraph's consumers): the rewrite does not depend on the API level, so the states of one model at
    # several levels (`dataclasses.replace(state, api_level=...)`) share this dict. Filled only after the
    # rewrite stage has finished.
    memo: dict[Any, Any] = field(default_factory=dict)
