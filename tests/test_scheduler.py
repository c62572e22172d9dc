"""`--scheduler ADDRESS`: check and verify run one task per model (and level) on a Dask distributed cluster,
here a scheduler and one worker process started on 127.0.0.1 by the test; the report equals a local run's."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from harness import single_op_model
from nnconv.cli import main
from nnconv.errors import EXIT_BAD_INPUT, EXIT_OK
from nnconv.tflite.options import AddOptions, MulOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B

distributed = pytest.importorskip("distributed", reason="Dask distributed is not installed (the `distributed` "
                                                        "extra, also in `test`): --scheduler cannot be tested")


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  host="127.0.0.1") as c:
        yield c.scheduler_address


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "models"
    (d / "sub").mkdir(parents=True)
    shape = (1, 4, 3)
    for name, op, options in (("add.tflite", B.ADD, AddOptions()), ("sub/mul.tflite", B.MUL, MulOptions())):
        (d / name).write_bytes(single_op_model(op, [("x", shape, np.float32),
                                                    ("c", np.full(shape, 0.5, np.float32))],
                                               [("y", shape, np.float32)], options))
    (d / "broken.tflite").write_bytes(b"TFL3 not a model")
    (d / "custom.tflite").write_bytes(single_op_model(B.CUSTOM, [("x", (1, 4), np.float32)],
                                                      [("y", (1, 4), np.float32)], custom_code="NnconvNoSuchOp"))
    return d


def _without_times(value):
    if isinstance(value, dict):
        return {k: _without_times(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [_without_times(v) for v in value]
    return value


@pytest.mark.parametrize("args", [
    pytest.param(["verify", "--api-level", "29"], id="verify"),
    pytest.param(["check", "--fail-on", "refused"], id="check"),
    pytest.param(["check", "--api-level", "all"], id="check-all-levels"),
])
def test_cluster_report_equals_local(cluster, folder, tmp_path, args):
    runner = CliRunner()
    command, *rest = args
    local = runner.invoke(main, [command, str(folder), *rest, "--format", "json", "--junit", str(tmp_path / "l.xml")])
    remote = runner.invoke(main, [command, str(folder), *rest, "--format", "json", "--scheduler", cluster,
                                  "--junit", str(tmp_path / "r.xml")])
    assert remote.exit_code == local.exit_code, (remote.output, local.output)
    assert _without_times(json.loads(remote.stdout)) == _without_times(json.loads(local.stdout))
    assert remote.stderr == local.stderr
    strip = [line for line in (tmp_path / "l.xml").read_text().splitlines() if "time=" not in line]
    assert strip == [line for line in (tmp_path / "r.xml").read_text().splitlines() if "time=" not in line]


def test_one_model_on_the_cluster(cluster, folder):
    result = CliRunner().invoke(main, ["verify", str(folder / "add.tflite"), "--scheduler", cluster,
                                       "--format", "json"])
    assert result.exit_code == EXIT_OK, result.output
    assert [m["status"] for m in json.loads(result.stdout)["models"]] == ["pass"]


def test_unreachable_scheduler_is_one_line(folder):
    result = CliRunner().invoke(main, ["check", str(folder), "--scheduler", "tcp://127.0.0.1:9"])
    assert result.exit_code == EXIT_BAD_INPUT and len(result.stderr.strip().splitlines()) == 1
    assert "cannot connect to a Dask scheduler" in result.stderr
