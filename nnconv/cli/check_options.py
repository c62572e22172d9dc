"""What `nnconv check` was asked, parsed once into `CheckOptions` (`from_params`, the command's `parsed`
builder): the models of this shard, the target level (or every level), the format's renderer, the
conversion options, the CI policies and the device profiles. Options that do not go together are refused
there, in one list (`_conflicts`), before any model is read."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Mapping

from nnconv.cli.common import conversion_options, resolve_api_level
from nnconv.cli.scale import Batch
from nnconv.lowering.convert import ConversionOptions
from nnconv.nnapi.levels import ApiLevel, is_all
from nnconv.report.analysis import CheckUsageError, Policies
from nnconv.report.formats import CHECK_FORMATS, CheckFormat
from nnconv.tflite.model_paths import named_models

if TYPE_CHECKING:  # the device stage is imported when --device is given
    from nnconv.devices.profile import DeviceProfile


@dataclass(frozen=True)
class CheckOptions:
    """Everything one `nnconv check` does, parsed and checked against each other."""

    models: tuple[tuple[str, str], ...]  # (path, name) of this shard's models, named relative to their folder
    level: ApiLevel | None  # the target level; None with `every_level`, or when this shard holds no model
    fmt: CheckFormat  # the --format's renderer (report/formats.py)
    conversion: ConversionOptions
    max_partitions: int
    policies: Policies
    jobs: int
    batch: Batch
    node_data: str | None = None
    devices: tuple["DeviceProfile", ...] = ()  # the --device profiles, resolved
    every_level: bool = False  # --api-level all: the op x level matrix

    @property
    def paths(self) -> list[str]:
        return [path for path, _ in self.models]

    @property
    def name_of(self) -> dict[str, str]:
        return dict(self.models)

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> "CheckOptions":
        """The command's click parameters, parsed in the order their errors are reported: the conversion
        options, the models, then (when this shard holds any) the conflicts, the level and the devices."""
        conversion = conversion_options(params["fold_weights"], False, params["input_shapes"], params["target"])
        batch = Batch(params["shard"], params["junit"], params["scheduler"])
        policies = Policies(params["fail_on"], params["min_coverage"], params["max_partitions_allowed"])
        models = tuple(named_models(params["models"], batch.shard))
        given = cls(models, None, CHECK_FORMATS[params["fmt"]], conversion, params["max_partitions"], policies,
                    params["jobs"], batch, params["node_data"])
        if not models:  # a shard holding none of the models says so and exits 0, whatever else was asked
            return given
        every_level = is_all(params["api_level"])
        found = _conflicts(given, every_level, params["feature_level"] is not None, bool(params["devices"]))
        if found:
            raise CheckUsageError(found[0])
        if every_level:
            return replace(given, every_level=True)
        level = resolve_api_level(params["api_level"], params["feature_level"], also=" or 'all'")
        devices: tuple[DeviceProfile, ...] = ()
        if params["devices"]:
            from nnconv.devices.profile import resolve_profiles
            devices = tuple(resolve_profiles(params["devices"]))
        return replace(given, level=level, devices=devices)


def _conflicts(given: CheckOptions, every_level: bool, feature_level: bool, devices: bool) -> list[str]:
    """Every pair of `check` options that exclude each other, first reported first."""
    rules = [
        (given.node_data is not None and (len(given.models) != 1 or every_level),
         "--node-data takes one model at one API level"),
        (every_level and devices, "--device needs one target level, not --api-level all"),
        (every_level and feature_level, "give --api-level all or --feature-level, not both"),
        (every_level and given.policies.any, "--fail-on, --min-coverage and --max-partitions-allowed need one "
                                             "target level, not --api-level all"),
    ]
    return [message for broken, message in rules if broken]
