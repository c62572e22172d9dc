"""`verify --dataset`: images (PPM without Pillow, PNG with it), .npy/.npz samples and one stacked .npz; per
output agreement, error percentiles, LSB histograms and the worst sample by name; `--per-op` on the worst
sample; `--samples`; bad datasets are one line, exit 2."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from click.testing import CliRunner

from chain_models import SHAPE, add_mul_sub_chain
from harness import single_op_model
from nnconv.cli import main
from nnconv.errors import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK
from nnconv.nnapi.enums import OperationType
from nnconv.parity.inputs import image_inputs
from nnconv.parity.samples import dataset_samples
from nnconv.parity.session import VerifyOptions, verify
from nnconv.pipeline import prepare
from nnconv.runtime.kernels import KERNELS
from nnconv.tflite.options import ConcatenationOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "models"


def _write_ppm(path: pathlib.Path, pixels: np.ndarray) -> None:
    h, w, _ = pixels.shape
    path.write_bytes(b"P6\n%d %d\n255\n" % (w, h) + pixels.astype(np.uint8).tobytes())


@pytest.fixture
def images(tmp_path):
    d = tmp_path / "images"
    (d / "cats").mkdir(parents=True)
    rng = np.random.default_rng(3)
    for i in range(4):
        _write_ppm(d / ("cats" if i % 2 else ".") / f"img{i}.ppm", rng.integers(0, 256, (30, 20, 3)))
    (d / "labels.txt").write_text("not a sample\n")
    (d / ".cache").mkdir()
    _write_ppm(d / ".cache" / "thumb.ppm", np.zeros((2, 2, 3)))  # hidden: skipped
    return d


def _json(args):
    result = CliRunner().invoke(main, args)
    return result, (json.loads(result.stdout) if result.stdout.strip().startswith("{") else None)


def test_image_folder_float_classifier(images):
    result, data = _json(["verify", str(FIXTURES / "mobilenet_v2_float.tflite"), "--dataset", str(images),
                          "--input-range", "0", "1", "--format", "json"])
    assert result.exit_code == EXIT_OK, result.output
    ds = data["dataset"]
    assert ds["samples"] == 4 and ds["failing_samples"] == 0 and ds["passed"]
    out = ds["outputs"][0]
    assert out["name"] == "probabilities" and out["top1_agreement"] == 1.0 and out["top5_agreement"] == 1.0
    assert set(out["abs_error"]) == {"p50", "p90", "p99", "max"}
    assert out["abs_error"]["p50"] <= out["abs_error"]["p90"] <= out["abs_error"]["p99"] <= out["abs_error"]["max"]
    assert out["lsb_histogram"] is None and out["worst_sample"] in {"img0.ppm", "img2.ppm", "cats/img1.ppm",
                                                                    "cats/img3.ppm"}
    assert data["inputs"] == {"dataset": str(images), "range": [0.0, 1.0],
                              "preprocessing": {"layout": None, "mean": None, "std": None, "range": [0.0, 1.0]}}
    table = CliRunner().invoke(main, ["verify", str(FIXTURES / "mobilenet_v2_float.tflite"), "--dataset",
                                      str(images)])
    assert table.exit_code == EXIT_OK and "4 samples, 0 failing" in table.stdout and "p99" in table.stdout


def test_samples_are_preprocessed_as_image_is(images):
    prepared = prepare(str(FIXTURES / "mobilenet_v2_int8.tflite"), 30)
    specs = prepared.lowered(allow_partial=False).whole.converted.inputs
    samples = dataset_samples(images, specs, (0.0, 1.0), 1 << 30)
    assert [s.name for s in samples] == ["cats/img1.ppm", "cats/img3.ppm", "img0.ppm", "img2.ppm"]
    name = specs[0].name
    np.testing.assert_array_equal(samples[2].load()[name],
                                  image_inputs(images / "img0.ppm", specs, (0.0, 1.0))[name])
    assert len(dataset_samples(images, specs, None, 1 << 30, limit=2)) == 2


def test_quantized_lsb_histogram_and_samples_limit(images):
    result, data = _json(["verify", str(FIXTURES / "mobilenet_v2_int8.tflite"), "--dataset", str(images),
                          "--samples", "3", "--kernels", "reference", "--format", "json"])
    assert result.exit_code == EXIT_OK, result.output
    out = data["dataset"]["outputs"][0]
    assert data["dataset"]["samples"] == 3 and out["samples"] == 3
    assert sum(out["lsb_histogram"].values()) == 3 * 10  # every element of every sample, in LSB
    assert out["abs_error"]["max"] == max(int(k) for k in out["lsb_histogram"])


def test_png_through_pillow(tmp_path):
    image_module = pytest.importorskip("PIL.Image", reason="PNG samples need the `image` extra (Pillow)")
    d = tmp_path / "png"
    d.mkdir()
    rng = np.random.default_rng(5)
    for i in range(2):
        image_module.fromarray(rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)).save(d / f"{i}.png")
    result, data = _json(["verify", str(FIXTURES / "mobilenet_v2_float.tflite"), "--dataset", str(d),
                          "--format", "json"])
    assert result.exit_code == EXIT_OK and data["dataset"]["samples"] == 2


def _squared_fault(real):
    def faulty(call):  # test-only: an error growing with the value, so the largest sample is the worst
        return [np.asarray(o) + np.asarray(o) ** 2 * np.float32(1e-3) for o in real(call)]
    return faulty


def test_worst_sample_by_name_and_per_op_on_it(tmp_path, monkeypatch):
    model = tmp_path / "chain.tflite"
    model.write_bytes(add_mul_sub_chain())
    rng = np.random.default_rng(11)
    stacked = rng.uniform(-1, 1, (5, *SHAPE)).astype(np.float32)
    stacked[3] *= 20  # sample #3: the largest values
    np.savez(tmp_path / "set.npz", x=stacked)
    monkeypatch.setitem(KERNELS, OperationType.MUL, _squared_fault(KERNELS[OperationType.MUL]))
    report = verify(str(model), VerifyOptions(dataset=str(tmp_path / "set.npz"), per_op=True))
    ds = report.dataset
    assert not report.passed and ds["worst_sample"] == "#3" and ds["outputs"][0]["worst_sample"] == "#3"
    assert ds["failing_samples"] >= 1
    # the per-op comparison ran on sample #3 alone and blames the faulty MUL
    assert report.meta["inputs"]["dataset"].endswith("set.npz")
    assert report.per_op.first_divergent.op == "MUL"
    data = report.to_json()
    assert data["dataset"]["worst_sample"] == "#3" and data["first_divergent_op"]["op"] == "MUL"


def test_npy_and_npz_sample_files(tmp_path):
    model = tmp_path / "chain.tflite"
    model.write_bytes(add_mul_sub_chain())
    d = tmp_path / "arrays"
    d.mkdir()
    rng = np.random.default_rng(2)
    np.save(d / "a.npy", rng.uniform(-1, 1, SHAPE).astype(np.float32))
    np.savez(d / "b.npz", x=rng.uniform(-1, 1, SHAPE).astype(np.float32))
    np.savez(d / "c.npz", arr_0=rng.uniform(-1, 1, SHAPE).astype(np.float32))
    result, data = _json(["verify", str(model), "--dataset", str(d), "--format", "json"])
    assert result.exit_code == EXIT_OK, result.output
    assert data["dataset"]["samples"] == 3 and data["dataset"]["outputs"][0]["top1_agreement"] is None


def test_constant_output_over_the_dataset_is_flagged(tmp_path):
    from test_verdict import _constant_output_model
    model = tmp_path / "flat.tflite"
    model.write_bytes(_constant_output_model())
    np.savez(tmp_path / "set.npz", x=np.random.default_rng(0).uniform(-1, 1, (4, 1, 20)).astype(np.float32))
    result, data = _json(["verify", str(model), "--dataset", str(tmp_path / "set.npz"), "--format", "json"])
    assert result.exit_code == EXIT_OK
    assert data["dataset"]["uninformative_outputs"] == ["y"] and data["verdict"].startswith("PASS (uninformative")


@pytest.mark.parametrize("make,extra,message", [
    pytest.param(lambda d: np.savez(d / "s.npz", x=np.zeros((2, *SHAPE), np.float32),
                                    y=np.zeros((3, 1), np.float32)), "s.npz", "leading sample axis", id="axes"),
    pytest.param(lambda d: (d / "empty").mkdir(), "empty", "no sample found", id="empty"),
    pytest.param(lambda d: None, "missing", "no such file", id="missing"),
    pytest.param(lambda d: np.savez(d / "s.npz", x=np.zeros((2, 3), np.float32)), "s.npz", "the model takes",
                 id="shape"),
    pytest.param(lambda d: ((d / "imgs").mkdir(), (d / "imgs" / "bad.ppm").write_bytes(b"P6 junk")), "imgs",
                 "--dataset", id="corrupt-image"),
])
def test_bad_datasets_exit_2_one_line(tmp_path, make, extra, message):
    model = tmp_path / "chain.tflite"
    model.write_bytes(add_mul_sub_chain())
    make(tmp_path)
    result = CliRunner().invoke(main, ["verify", str(model), "--dataset", str(tmp_path / extra)])
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr


@pytest.mark.parametrize("args", [["--seed", "1"], ["--samples", "2"]], ids=["with-seed", "samples-alone"])
def test_option_conflicts(tmp_path, args):
    model = tmp_path / "chain.tflite"
    model.write_bytes(add_mul_sub_chain())
    np.savez(tmp_path / "s.npz", x=np.zeros((2, *SHAPE), np.float32))
    dataset = ["--dataset", str(tmp_path / "s.npz")] if args[0] == "--seed" else []
    result = CliRunner().invoke(main, ["verify", str(model), *dataset, *args])
    assert result.exit_code == EXIT_BAD_INPUT and len(result.stderr.strip().splitlines()) == 1


def test_failing_dataset_exit_1_and_junit_reason(tmp_path, monkeypatch):
    model = tmp_path / "chain.tflite"
    model.write_bytes(add_mul_sub_chain())
    np.savez(tmp_path / "s.npz", x=np.random.default_rng(1).uniform(-1, 1, (3, *SHAPE)).astype(np.float32))
    real = KERNELS[OperationType.SUB]
    monkeypatch.setitem(KERNELS, OperationType.SUB, lambda call: [np.asarray(o) + np.float32(1) for o in real(call)])
    junit = tmp_path / "j.xml"
    result = CliRunner().invoke(main, ["verify", str(model), "--dataset", str(tmp_path / "s.npz"),
                                       "--junit", str(junit)])
    assert result.exit_code == EXIT_FAILURE
    assert "output 'y': 3 of 3 samples over the tolerance" in junit.read_text()


def test_dataset_over_a_folder_of_models(tmp_path, images):
    models = tmp_path / "models"
    models.mkdir()
    for name in ("mobilenet_v2_float.tflite", "mobilenet_v2_int8.tflite"):
        (models / name).write_bytes((FIXTURES / name).read_bytes())
    result, data = _json(["verify", str(models), "--dataset", str(images), "--samples", "2", "--format", "json"])
    assert result.exit_code == EXIT_OK, result.output
    assert [m["report"]["dataset"]["samples"] for m in data["models"]] == [2, 2]
    table = CliRunner().invoke(main, ["verify", str(models), "--dataset", str(images), "--samples", "2"])
    assert table.stdout.count("2 samples, 0 failing") == 2


def test_failing_samples_are_settled_as_one_verify_settles_them(tmp_path, monkeypatch):
    """A quantized sample out of tolerance of TFLite's builtin kernels passes when TFLite's reference
    kernels (the NNAPI reference arithmetic) agree with it, as in one verify."""
    import nnconv.parity.dataset as dataset
    from test_verify_reference_kernels import int8_model
    path = int8_model(tmp_path)
    np.savez(tmp_path / "s.npz", x=np.random.default_rng(6).integers(-128, 128, (3, 2, 5, 3)).astype(np.int8))
    real_compare = dataset.compare

    def builtin_off(name, actual, expected, hybrid=False, overrides=None, source=None):
        row = real_compare(name, actual, expected, hybrid, overrides, source)
        row.passed, row.max_lsb = False, 3  # as if TFLite's optimized kernels rounded 3 LSB away
        return row
    monkeypatch.setattr(dataset, "compare", builtin_off)
    report = verify(path, VerifyOptions(dataset=str(tmp_path / "s.npz")))
    out = report.dataset["outputs"][0]
    assert report.dataset["passed"] and out["failing_samples"] == 0
    monkeypatch.setattr(dataset, "settle", lambda *args: None)  # without settling, every sample fails
    assert verify(path, VerifyOptions(dataset=str(tmp_path / "s.npz"))).dataset["failing_samples"] == 3


def test_percentiles_are_nearest_rank_errors():
    from nnconv.parity.dataset import OutputStats
    from nnconv.parity.verify import compare
    stats = OutputStats("y")
    expected = np.zeros((1, 100), np.int8)
    ours = expected.copy()
    ours[0, :10] = 1  # 10% of the elements 1 LSB off, one of them 3 LSB
    ours[0, 0] = 3
    stats.add(compare("y", ours, expected), ours, expected)
    data = stats.to_json(["#0"])
    assert data["abs_error"] == {"p50": 0.0, "p90": 0.0, "p99": 1.0, "max": 3.0}
    assert data["lsb_histogram"] == {"0": 90, "1": 9, "3": 1}


def test_progress_bar_on_a_terminal_only(monkeypatch):
    import io

    from rich.console import Console

    from nnconv.cli import common
    from nnconv.cli.verify_dataset import sample_progress

    class Tty(io.StringIO):
        def isatty(self):
            return True
    stream = Tty()
    monkeypatch.setattr(common, "err", Console(file=stream, force_terminal=True, width=80))
    with sample_progress() as advance:
        for name in ("a.png", "b.png", "c.png"):
            advance(name, 3)
    assert "sample" in stream.getvalue()
    monkeypatch.setattr(common, "err", Console(file=io.StringIO(), width=80))  # a pipe or a log: no bar
    with sample_progress() as advance:
        assert advance is None


def _report(model: pathlib.Path, batch: int, seen: list[str] | None = None, **options) -> dict:
    advance = None if seen is None else (lambda name, total: seen.append(f"{name}/{total}"))
    data = verify(str(model), VerifyOptions(batch=batch, **options), advance=advance).to_json()
    data.pop("seconds")
    return data


@pytest.mark.parametrize("fixture", ["mobilenet_v2_int8.tflite", "mobilenet_v2_float.tflite"])
def test_batched_samples_give_the_one_by_one_report(images, fixture):
    """Our executor runs the samples in chunks through `run_batch`; the report is the sample-by-sample one, bit
    for bit (chunks of 2 + 2, of 4, and one at a time), and the progress bar still moves per sample."""
    options = dict(dataset=str(images), input_range=(0.0, 1.0))
    seen: list[str] = []
    one = _report(FIXTURES / fixture, 1, **options)
    pairs = _report(FIXTURES / fixture, 2, seen, **options)
    whole = _report(FIXTURES / fixture, 32, **options)
    assert one["dataset"].pop("batch") == {"max_batch": 1, "batched_samples": 0, "loop_reason": None}
    assert pairs["dataset"].pop("batch") == {"max_batch": 2, "batched_samples": 4, "loop_reason": None}
    # 32 asked, 4 samples: one chunk of 4
    assert whole["dataset"].pop("batch") == {"max_batch": 4, "batched_samples": 4, "loop_reason": None}
    assert one == pairs == whole
    assert seen == [f"{name}/4" for name in ("cats/img1.ppm", "cats/img3.ppm", "img0.ppm", "img2.ppm")]


def test_a_batch_over_max_memory_halves_then_loops_saying_why_once(images):
    """A batched graph over `--max-memory` (runtime/batch.py) halves the chunk; when not even 2 samples fit, the
    samples run one at a time and the report says why once (JSON and table). The int8 fixture needs 90 KiB for
    one sample, 160 KiB for two, 300 KiB for four."""
    model = str(FIXTURES / "mobilenet_v2_int8.tflite")
    halved = verify(model, VerifyOptions(dataset=str(images), executor_options={"max_memory": 200 << 10}))
    assert halved.dataset["batch"] == {"max_batch": 2, "batched_samples": 4, "loop_reason": None}
    args = ["verify", model, "--dataset", str(images), "--max-memory", "150K"]
    result, data = _json([*args, "--format", "json"])
    assert result.exit_code == EXIT_OK, result.output
    batch = data["dataset"]["batch"]
    assert batch["max_batch"] == 1 and batch["batched_samples"] == 0, batch
    assert batch["loop_reason"].startswith("at 2 samples: ") and "over the 150 KiB allowed" in batch["loop_reason"]
    table = CliRunner().invoke(main, args)
    assert table.exit_code == EXIT_OK and table.stdout.count("ran the samples one at a time") == 1, table.stdout
    assert table.stdout.count("150 KiB allowed") == 1


def test_a_graph_that_mixes_samples_loops_and_says_which_op_once(tmp_path):
    """Three chunks of two (the last of one) all loop: the report gives the operation, once, and the samples
    compare as one by one."""
    model = tmp_path / "concat.tflite"
    # y = concat([a, b], axis 0): its sample axis mixes samples, so a batched plan loops
    model.write_bytes(single_op_model(B.CONCATENATION, [("a", (1, 6), np.float32), ("b", (1, 6), np.float32)],
                                      [("y", (2, 6), np.float32)], ConcatenationOptions(axis=0)))
    rng = np.random.default_rng(4)
    np.savez(tmp_path / "s.npz", a=rng.uniform(-1, 1, (5, 1, 6)).astype(np.float32),
             b=rng.uniform(-1, 1, (5, 1, 6)).astype(np.float32))
    batched = _report(model, 2, dataset=str(tmp_path / "s.npz"))
    batch = batched["dataset"].pop("batch")
    assert batch["batched_samples"] == 0 and batch["loop_reason"].startswith("operation #0 CONCATENATION"), batch
    one = _report(model, 1, dataset=str(tmp_path / "s.npz"))
    one["dataset"].pop("batch")
    assert one == batched and batched["dataset"]["samples"] == 5
