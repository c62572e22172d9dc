"""The NNAPI IR: builder placement of constants, validator rules, executor bookkeeping."""

from __future__ import annotations

import numpy as np
import pytest

from nnconv.errors import ExecutionError, ModelValidationError
from nnconv.runtime.executor import Executor, SubgraphRunner
from nnconv.nnapi.builder import ModelBuilder
from nnconv.nnapi.enums import OperandLifeTime, OperandType, OperationType
from nnconv.nnapi.levels import api_level_of_feature_level, feature_level
from nnconv.nnapi.model import SymmPerChannelQuantParams
from nnconv.nnapi.validate import validate_model

F32 = OperandType.TENSOR_FLOAT32


def test_constants_follow_the_128_byte_rule():
    mb = ModelBuilder()
    small = mb.main.add_constant(F32, np.ones(32, np.float32))  # 128 bytes: copied
    large = mb.main.add_constant(F32, np.ones(33, np.float32))  # 132 bytes: referenced
    ops = mb.model.main.operands
    assert ops[small].lifetime is OperandLifeTime.CONSTANT_COPY
    assert ops[large].lifetime is OperandLifeTime.CONSTANT_REFERENCE
    assert len(mb.model.pools) == 1
    np.testing.assert_array_equal(mb.model.constant_value(ops[large]), np.ones(33, np.float32))


def test_large_constants_are_not_copied():
    w = np.arange(1000, dtype=np.float32)
    mb = ModelBuilder()
    idx = mb.main.add_constant(F32, w)
    assert np.shares_memory(mb.model.constant_value(mb.model.main.operands[idx]), w)


def test_scalars_have_no_dimensions():
    mb = ModelBuilder()
    s = mb.main.add_scalar(3)
    assert mb.model.main.operands[s].type is OperandType.INT32
    assert mb.model.main.operands[s].dimensions == ()


def _relu_chain(n: int) -> ModelBuilder:
    mb = ModelBuilder()
    x = mb.main.add_tensor(F32, (2, 3))
    cur = x
    for _ in range(n):
        nxt = mb.main.add_tensor(F32, (2, 3))
        mb.main.add_operation(OperationType.RELU, [cur], [nxt])
        cur = nxt
    mb.main.set_io([x], [cur])
    return mb


def test_validator_accepts_a_valid_model():
    validate_model(_relu_chain(3).model)


def test_validator_collects_every_problem():
    mb = ModelBuilder()
    x = mb.main.add_tensor(F32, (2, 3))
    y = mb.main.add_tensor(F32, (2, 3))
    z = mb.main.add_tensor(F32, (2, 3))
    bad_scalar = mb.main.add_tensor(OperandType.INT32, (2,))
    mb.main.add_operation(OperationType.ADD, [x, z, bad_scalar], [y])  # z read before written
    mb.main.add_operation(OperationType.RELU, [y], [z])
    mb.main.add_operation(OperationType.RELU, [y], [z])  # z written twice
    mb.main.set_io([x], [z])
    with pytest.raises(ModelValidationError) as e:
        validate_model(mb.model)
    text = " | ".join(e.value.problems)
    assert "before operation 1 (RELU) writes it: the operations are out of execution order" in text
    assert "a second time (operation 1 (RELU) wrote it)" in text
    assert "scalar INT32 has dimensions" in text


def test_validator_checks_constant_sizes_and_per_channel_params():
    mb = ModelBuilder()
    c = mb.main.add_constant(F32, np.ones(4, np.float32))
    mb.model.main.operands[c].dimensions = (5,)
    w = mb.main.add_constant(OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL, np.ones((3, 2), np.int8),
                             channel_quant=SymmPerChannelQuantParams(0, (0.5, 0.5)))
    out = mb.main.add_tensor(F32, (5,))
    mb.main.add_operation(OperationType.RELU, [c], [out])
    mb.main.set_io([], [out])
    with pytest.raises(ModelValidationError) as e:
        validate_model(mb.model)
    text = " | ".join(e.value.problems)
    assert "needs 20" in text and "channel scales" in text
    assert w is not None


def test_executor_releases_intermediates():
    mb = _relu_chain(12)
    runner = SubgraphRunner(mb.model)
    runner.run_subgraph(0, [np.full((2, 3), -1.0, np.float32)])
    assert runner.peak_live_values <= 3


def test_executor_rejects_wrong_inputs():
    mb = _relu_chain(1)
    ex = Executor(mb.model)
    from nnconv.errors import InputDataError
    with pytest.raises(InputDataError, match="shape"):
        ex.run([np.zeros((3, 2), np.float32)])
    with pytest.raises(InputDataError, match=r"is float64\[2, 3\]; the model takes float32\[2, 3\]: save it as float32"):
        ex.run([np.zeros((2, 3), np.float64)])
    with pytest.raises(InputDataError, match="takes 1 inputs"):
        ex.run([])
    with pytest.raises(InputDataError, match="missing input"):
        ex.run({"nope": np.zeros((2, 3), np.float32)})


def test_missing_kernel_is_a_clear_error():
    mb = ModelBuilder()
    x = mb.main.add_tensor(F32, (2,))
    y = mb.main.add_tensor(F32, (2,))
    mb.main.add_operation(OperationType.CONV_2D, [x], [y])
    mb.main.set_io([x], [y])
    with pytest.raises(ExecutionError):
        SubgraphRunner(mb.model).run_subgraph(0, [np.zeros(2, np.float32)])


@pytest.mark.parametrize("api,fl", [(27, 1), (28, 2), (29, 3), (30, 4), (31, 5), (33, 6), (34, 7), (35, 8)])
def test_feature_levels(api, fl):
    assert feature_level(api) == fl
    assert api_level_of_feature_level(fl) == api


def test_parity_compare_treats_equal_infinities_and_nans_as_agreement():
    import warnings

    from nnconv.parity import compare
    a = np.array([np.inf, -np.inf, np.nan, 1.0], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compare("y", a, a.copy()).passed
    b = a.copy()
    b[2] = 0.0
    assert not compare("y", a, b).passed


def test_hybrid_models_get_the_documented_looser_float_tolerance():
    from nnconv.parity.tolerances import FLOAT_RTOL, HYBRID_RTOL, tolerance_for
    from nnconv.parity.verify import has_hybrid_ops
    from nnconv.tflite.reader import read_model
    assert tolerance_for(np.float32).rtol == FLOAT_RTOL
    assert tolerance_for(np.float32, hybrid=True).rtol == HYBRID_RTOL
    assert tolerance_for(np.int8, hybrid=True).kind == "quant"
    import pathlib
    models = pathlib.Path(__file__).resolve().parent.parent / "examples" / "models"
    assert has_hybrid_ops(read_model(models / "mobilenet_v2_dynamic_range.tflite"))
    assert not has_hybrid_ops(read_model(models / "mobilenet_v2_float.tflite"))
    assert not has_hybrid_ops(read_model(models / "mobilenet_v2_int8.tflite"))
