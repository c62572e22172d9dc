"""Shape and data-movement ops: RESHAPE, SQUEEZE, EXPAND_DIMS, CONCATENATION, PAD, PADV2, MIRROR_PAD,
TRANSPOSE, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND, SPACE_TO_DEPTH, DEPTH_TO_SPACE, TILE, FILL, REVERSE_V2,
BROADCAST_TO, PACK, UNPACK and SHAPE (normally folded away, see `Shape`).

These ops move stored values without arithmetic, so quantized inputs and outputs must share their
parameters (CONCATENATION excepted: NNAPI requantizes mismatched inputs from API 29). Parameters NNAPI
needs at compilation time (shapes, paddings, permutations, axes) must be constant or folded.

One module per family: `reshape`, `concat`, `pad`, `permute`, `blocks`, `tile`. Importing this package
registers their rules.
"""

from __future__ import annotations

from nnconv.lowering.rules.shape import blocks, concat, pad, permute, reshape, tile

__all__ = ["blocks", "concat", "pad", "permute", "reshape", "tile"]
