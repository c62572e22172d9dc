"""The merge-regions rewrite: a rank-5 region of elementwise operations and reductions that treat two adjacent
axes alike runs on rank 4 with those axes merged (a GroupNormalization written as Keras writes it, through
[N, H, W, G, C/G]), in one partition and within the float tolerance of TFLite; a region where no pair of
axes is treated alike keeps rank 5 and is refused."""

from __future__ import annotations

import numpy as np
import pytest

from harness import TfliteBuilder, assert_parity, assert_refused, nnconv_options
from nnconv.lowering.diagnostics import Code
from nnconv.pipeline import analyse, check_model
from nnconv.tflite.options import AddOptions, MulOptions, ReducerOptions, ReshapeOptions, SubOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B

F32, I32 = np.float32, np.int32


def group_norm_model(axes=(1, 2, 4), groups: int = 2, fp16_weights: bool = False) -> bytes:
    """x [1, 4, 6, 8] -> [1, 4, 6, G, 8/G]; mean and variance over `axes` (keep_dims); a zero variance
    replaced by 1 through EQUAL, an identity BROADCAST_TO of that bool mask and SELECT_V2 (Keras 3's
    weighted moments); (x - mean) * rsqrt(var + eps) * gamma + beta; back to [1, 4, 6, 8]. `fp16_weights`:
    gamma and beta stored as float16 and widened by DEQUANTIZE at run time, as TensorFlow writes them."""
    rng = np.random.default_rng(4)
    b = TfliteBuilder()
    x = b.input("x", (1, 4, 6, 8), F32)
    five = (1, 4, 6, groups, 8 // groups)
    stat = tuple(1 if k in axes else d for k, d in enumerate(five))
    r = b.tensor("r", five, F32)
    b.op(B.RESHAPE, [x, b.const("s5", np.array(five, I32))], [r], ReshapeOptions(new_shape=five))
    axes_t = b.const("axes", np.array(axes, I32))
    mean = b.tensor("mean", stat, F32)
    b.op(B.MEAN, [r, axes_t], [mean], ReducerOptions(keep_dims=True))
    d = b.tensor("d", five, F32)
    b.op(B.SUB, [r, mean], [d], SubOptions())
    sq = b.tensor("sq", five, F32)
    b.op(B.SQUARE, [d], [sq])
    var = b.tensor("var", stat, F32)
    b.op(B.MEAN, [sq, axes_t], [var], ReducerOptions(keep_dims=True))
    zero = b.tensor("zero", stat, np.bool_)
    b.op(B.EQUAL, [var, b.const("z", np.array(0.0, F32))], [zero])
    mask = b.tensor("mask", stat, np.bool_)
    b.op(B.BROADCAST_TO, [zero, b.const("stat_shape", np.array(stat, I32))], [mask], version=2)
    safe = b.tensor("safe", stat, F32)
    b.op(B.SELECT_V2, [mask, b.const("one", np.array(1.0, F32)), var], [safe])
    shifted = b.tensor("shifted", stat, F32)
    b.op(B.ADD, [safe, b.const("eps", np.array(1e-3, F32))], [shifted], AddOptions())
    inv = b.tensor("inv", stat, F32)
    b.op(B.RSQRT, [shifted], [inv])
    affine = (1, 1, 1, groups, 8 // groups)

    def weight(name: str, value: np.ndarray) -> int:
        if not fp16_weights:
            return b.const(name, value.astype(F32))
        wide = b.tensor(name, affine, F32)
        b.op(B.DEQUANTIZE, [b.const(name + "_fp16", value.astype(np.float16))], [wide])
        return wide

    gamma, beta = weight("gamma", rng.uniform(0.5, 1.5, affine)), weight("beta", rng.uniform(-0.5, 0.5, affine))
    scale = b.tensor("scale", tuple(max(s, a) for s, a in zip(stat, affine)), F32)
    b.op(B.MUL, [inv, gamma], [scale], MulOptions())
    norm = b.tensor("norm", five, F32)
    b.op(B.MUL, [d, scale], [norm], MulOptions())
    y5 = b.tensor("y5", five, F32)
    b.op(B.ADD, [norm, beta], [y5], AddOptions())
    y = b.tensor("y", (1, 4, 6, 8), F32)
    b.op(B.RESHAPE, [y5, b.const("s4", np.array((1, 4, 6, 8), I32))], [y], ReshapeOptions(new_shape=(1, 4, 6, 8)))
    b.output(y)
    return b.finish()


@pytest.mark.parametrize("groups,fp16_weights", [(2, False), (4, False), (2, True)], ids=["g2", "g4", "g2-fp16"])
def test_group_norm_runs_on_merged_axes_in_one_partition(groups, fp16_weights):
    model = group_norm_model(groups=groups, fp16_weights=fp16_weights)
    result = assert_parity(model, api_level=30)
    # SELECT_V2 lowers with a driver note; the identity BROADCAST_TO is removed
    assert {r.status.value for r in result.report.ops} == {"lowered", "driver_warning", "folded"}
    _report, plan = analyse(model, 30, nnconv_options())
    assert len(plan.partitions) == 1
    report = check_model(model, 30, nnconv_options())
    notes = [n for r in report.ops for n in r.notes if "merge-regions" in n]
    assert any("axes 1 and 2 merged" in n for n in notes)
    assert any("removed: a BROADCAST_TO to its input's own shape" in n for n in notes)


def test_reductions_over_other_adjacent_axes_merge_them():
    """Moments over W, G and C/G but not H: H and W are not alike, G and C/G are (both reduced)."""
    assert_parity(group_norm_model(axes=(2, 3, 4)), api_level=30)
    notes = [n for r in check_model(group_norm_model(axes=(2, 3, 4)), 30, nnconv_options()).ops for n in r.notes]
    assert any("axes 3 and 4 merged" in n for n in notes)


def test_no_pair_treated_alike_keeps_rank_5():
    """Moments over H and G only: every adjacent pair has one axis reduced and one kept."""
    assert_refused(group_norm_model(axes=(1, 3)), 30, Code.RANK)


def test_a_rank5_model_input_keeps_its_shape():
    """A region reading a rank-5 model input is left alone: the model's interface keeps its declared shape
    (and NNAPI refuses it, naming the rank)."""
    b = TfliteBuilder()
    x = b.input("x", (1, 2, 3, 2, 2), F32)
    y5 = b.tensor("y5", (1, 2, 3, 2, 2), F32)
    b.op(B.MUL, [x, b.const("two", np.array(2.0, F32))], [y5], MulOptions())
    y = b.tensor("y", (1, 6, 4), F32)
    b.op(B.RESHAPE, [y5, b.const("s", np.array((1, 6, 4), I32))], [y], ReshapeOptions(new_shape=(1, 6, 4)))
    b.output(y)
    model = b.finish()
    assert not [n for r in check_model(model, 30, nnconv_options()).ops for n in r.notes if "merge-regions" in n]
    assert_refused(model, 30, Code.RANK)
