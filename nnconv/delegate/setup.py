"""The delegate's configuration at one Android API level: what `StatefulNnApiDelegate` reads from the phone's
NNAPI runtime and from its options before it validates a node.

We model the delegate with its default options (at most 3 partitions, `disallow_nnapi_cpu`, no fp16
relaxation, no compilation cache) on a phone with an NNAPI accelerator: from API 29 the delegate then targets
that device (`ShouldUseTargetDevices`), asks it which operations it takes (`check --device` answers that part
for real drivers) and validates with `is_accelerator_specified` set, which relaxes two checks (MUL up to
version 3, quantized AVERAGE_POOL_2D windows above 256). Below API 29 there is no device API: the delegate
validates for the runtime itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from nnconv.nnapi.levels import ApiLevel

# The delegate's named feature levels (`nnapi_delegate_kernel.h`): from Android 13 the runtime reports feature
# levels as 1000006.. instead of API levels, and the delegate compares against those numbers.
SDK_27, SDK_28, SDK_29, SDK_30, SDK_31 = 27, 28, 29, 30, 31
FL6, FL7, FL8 = 1000006, 1000007, 1000008
DEFAULT_MAX_PARTITIONS = 3  # Options::max_number_delegated_partitions

_TARGET_FEATURE_LEVEL = {27: 27, 28: 28, 29: 29, 30: 30, 31: 31, 32: 31, 33: FL6, 34: FL7, 35: FL8}
# NNAPI feature levels 1..8 as the delegate numbers them (ANeuralNetworksDevice_getFeatureLevel's values)
_DELEGATE_NUMBER_OF_FEATURE_LEVEL = {1: 27, 2: 28, 3: 29, 4: 30, 5: 31, 6: FL6, 7: FL7, 8: FL8}


@dataclass(frozen=True)
class DelegateSetup:
    """The numbers the delegate decides with at one API level."""

    api_level: ApiLevel
    max_partitions: int = DEFAULT_MAX_PARTITIONS
    allow_fp16: bool = False  # Options::allow_fp16: relaxComputationFloat32toFloat16 (from API 28)
    # The NNAPI feature level (1..8) of the device the delegate targets, when known (`check --device`):
    # `GetTargetFeatureLevel` lowers the target to it when it is below the runtime's.
    device_feature_level: int | None = None

    @property
    def android_sdk_version(self) -> int:
        """`NnApi::android_sdk_version` (the phone's API level)."""
        return int(self.api_level)

    @property
    def feature_level(self) -> int:
        """The target feature level `Validate` and `Map` receive (`GetTargetFeatureLevel`): the runtime's
        feature level, which Android 12L (API 32) reports as 31 and Android 13+ as 1000006...1000008."""
        runtime = _TARGET_FEATURE_LEVEL[int(self.api_level)]
        if self.device_feature_level is not None and self.has_device_api:
            device = _DELEGATE_NUMBER_OF_FEATURE_LEVEL.get(self.device_feature_level, runtime)
            return min(device, runtime)
        return runtime

    @property
    def accelerator_specified(self) -> bool:
        """`is_accelerator_specified`: true from API 29 (`disallow_nnapi_cpu` with the device API)."""
        return self.android_sdk_version >= SDK_29

    @property
    def has_device_api(self) -> bool:
        """From API 29 the delegate previews partitions, builds each one and asks the devices about it before
        it replaces any node (`GetNodesSupportedByAccelerator`); below, it replaces the nodes at once and
        builds the models when TFLite initializes the delegate kernels."""
        return self.android_sdk_version >= SDK_29

    @property
    def has_per_channel_api(self) -> bool:
        """`ANeuralNetworksModel_setOperandSymmPerChannelQuantParams` exists from API 29 only; the delegate
        calls it without a null check when it adds a per-channel operand (upstream defect)."""
        return self.android_sdk_version >= SDK_29

    @property
    def has_relax_api(self) -> bool:
        """`relaxComputationFloat32toFloat16` is called from API 28 (value: the `allow_fp16` option)."""
        return self.android_sdk_version >= SDK_28

    @property
    def level(self) -> ApiLevel:
        return ApiLevel.of(self.api_level)
