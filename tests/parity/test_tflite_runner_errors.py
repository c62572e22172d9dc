"""TFLite's own failures while running a model are the user's input (exit 2, one line), not our bug; an
abort in its reference kernels is found in a child process before it can end ours."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from harness import single_op_model
from nnconv.cli import main
from nnconv.errors import NnconvError
from nnconv.parity.reference_probe import ReferenceKernelsAbort, reference_kernels_survive
from nnconv.parity.tflite_runner import REFERENCE_KERNELS, TfliteRunner
from nnconv.tflite.builder import QuantParams, TfliteBuilder
from nnconv.tflite.options import AddOptions, DivOptions, SoftmaxOptions
from nnconv.tflite.schema_enums import BuiltinOperator


def test_a_kernel_failing_at_invoke_is_one_line_of_user_error():
    """Some TFLite kernels prepare at the first invoke (a BROADCAST_TO whose target shape is computed: Keras'
    GroupNormalization as TensorFlow 2.21 converts it fails there)."""
    model = single_op_model(BuiltinOperator.ADD, [("x", (1, 4), np.float32), ("k", (1, 4), np.float32)],
                            [("y", (1, 4), np.float32)], AddOptions())
    runner = TfliteRunner(model)

    def fails() -> None:
        raise RuntimeError("tflite/kernels/broadcast_to.cc Output shape must be broadcastable from input shape."
                           "\nNode number 26 (BROADCAST_TO) failed to prepare.")

    runner.interp.invoke = fails
    with pytest.raises(NnconvError) as e:
        runner.run({d["index"]: np.zeros(d["shape"], np.float32) for d in runner.input_details()})
    assert str(e.value).startswith("the TFLite interpreter failed to run the model: tflite/kernels/broadcast_to.cc")
    assert "\n" not in str(e.value)


def _int8_softmax(input_scale: float) -> bytes:
    return single_op_model(BuiltinOperator.SOFTMAX, [("x", (1, 7), np.int8, QuantParams(input_scale, -1))],
                           [("y", (1, 7), np.int8, QuantParams(1 / 256, -128))], SoftmaxOptions(beta=1.0))


def test_reference_kernels_that_abort_are_found_in_a_child_process(tmp_path):
    """TFLite's reference SOFTMAX aborts the process (TFLITE_CHECK in QuantizeMultiplierGreaterThanOne) when
    beta * input_scale * 2^26 is not above 1: the logits of a Keras int8 classifier with random weights
    (scale 7.8e-9) did, and `verify --per-op`, which consults the reference kernels, died with exit 134. The
    probe runs them in a child: an abort there refuses the reference interpreter with one line, and
    `verify --kernels reference` exits 2 with it; a sane scale passes the probe."""
    tiny, sane = _int8_softmax(7.8e-9), _int8_softmax(0.1)
    assert not reference_kernels_survive(tiny) and reference_kernels_survive(sane)
    with pytest.raises(ReferenceKernelsAbort):
        TfliteRunner(tiny, kernels=REFERENCE_KERNELS)
    TfliteRunner(sane, kernels=REFERENCE_KERNELS)  # no probe failure
    path = tmp_path / "tiny_softmax.tflite"
    path.write_bytes(tiny)
    result = CliRunner().invoke(main, ["verify", str(path), "--target", "nnconv", "--kernels", "reference"])
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("nnconv: error:")]
    assert result.exit_code == 2 and len(errors) == 1 and "reference kernels abort" in errors[0], result.stderr
    # the other kernels run it, and the per-op pass (which would consult the reference kernels) completes
    assert CliRunner().invoke(main, ["verify", str(path), "--target", "nnconv", "--per-op"]).exit_code == 0


def test_tflite_run_errors_are_formatted():
    """Issue 35: TFLite runs its kernel's message and the failing node together ("Division by 0Node number 2
    (DIV) failed to invoke."); verify passed that on unformatted when the run failed."""
    from nnconv.parity.tflite_runner import interpreter_message
    assert interpreter_message(RuntimeError("Division by 0Node number 2 (FLOOR_DIV) failed to invoke.")) == \
        "Division by 0. Node number 2 (FLOOR_DIV) failed to invoke"
    b = TfliteBuilder()
    y = b.input("y", (2, 3), np.int32)
    d = b.tensor("d", (2, 3), np.int32)
    b.op(BuiltinOperator.DIV, [y, y], [d], DivOptions())
    b.output(d)
    runner = TfliteRunner(b.finish())
    with pytest.raises(NnconvError, match=r"was not true\. Node number 0 \(DIV\) failed to invoke$"):
        runner.run({runner.input_details()[0]["index"]: np.zeros((2, 3), np.int32)})
