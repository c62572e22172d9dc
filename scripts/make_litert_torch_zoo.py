"""Builds PyTorch models converted by litert-torch, in float and quantized, for the writer matrix.

Optional; needs litert-torch (tested with 0.10.0), torch and torchvision (torch 2.14.1 / torchvision 0.29.1)
and ai-edge-quantizer (0.10.0, which litert-torch requires). The package and the default tests never import
this file. Every model has seeded random weights (`weights=None`: nothing is downloaded, nothing is
trained), batch 1 and a small input, and is written as PyTorch lays it out (NCHW images: litert-torch adds
the transposes). Each architecture is written as:

- `<arch>.float32.tflite`: `litert_torch.convert(module, sample)`;
- `<arch>.pt2e_int8.tflite`: litert-torch's own PT2E quantizer (static, symmetric, per-channel int8 weights,
  calibrated on 8 seeded samples), then converted;
- `<arch>.aeq_<recipe>.tflite`: the float model quantized by AI Edge Quantizer with the recipes below
  (`scripts/make_aeq_zoo.py`, which this script imports).

A variant that fails is skipped and listed, with its message, in `OUT/manifest.json`.

    python scripts/make_litert_torch_zoo.py OUT [--only NAME ...] [--skip-existing]
                                                                 [--recipes NAME ...] [--no-pt2e]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import pathlib
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import torch  # noqa: E402
from torch import nn  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import make_aeq_zoo  # noqa: E402

SEED = 1234
CLASSES = 10
IMAGE = (1, 3, 64, 64)
AEQ_RECIPES = ("static_wi8_ai8", "static_wi8_ai16", "dynamic_wi8_afp32", "weight_only_wi8_afp32",
               "weight_only_wi4_afp32")


# -- architectures -----------------------------------------------------------------------------------
class TinyUNet(nn.Module):
    """Two-level U-Net: conv blocks, max-pool down, transposed-conv up, skip concatenations, 1x1 head."""

    def __init__(self, classes: int = 3) -> None:
        super().__init__()

        def block(cin: int, cout: int) -> nn.Sequential:
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(),
                                 nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())

        self.enc1, self.enc2, self.mid = block(3, 8), block(8, 16), block(16, 32)
        self.pool = nn.MaxPool2d(2)
        self.up2, self.dec2 = nn.ConvTranspose2d(32, 16, 2, stride=2), block(32, 16)
        self.up1, self.dec1 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False), block(24, 8)
        self.head = nn.Conv2d(8, classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        m = self.mid(self.pool(e2))
        d2 = self.dec2(torch.cat([self.up2(m), e2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], dim=1))
        return self.head(d1)


class TinyViT(nn.Module):
    """ViT: 8x8 patches of a 32x32 image, class token, learned positions, 2 pre-norm encoder layers."""

    def __init__(self, dim: int = 32, depth: int = 2, heads: int = 4) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, dim, 8, stride=8)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, 17, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, dim * 2, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.patch(x).flatten(2).transpose(1, 2)
        tokens = torch.cat([self.cls.expand(x.shape[0], -1, -1), tokens], dim=1) + self.pos
        return self.head(self.norm(self.encoder(tokens))[:, 0])


class Recurrent(nn.Module):
    """A 2-layer LSTM or GRU over [1, 12, 8] features, its last step through a linear head."""

    def __init__(self, cell: type[nn.Module]) -> None:
        super().__init__()
        self.rnn = cell(8, 16, num_layers=2, batch_first=True)
        self.head = nn.Linear(16, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


def _tv(name: str, **kwargs: Any) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        import torchvision
        return getattr(torchvision.models, name)(weights=None, **kwargs)
    return make


def _lraspp() -> nn.Module:
    import torchvision
    return torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                                      num_classes=3)


class _OutOnly(nn.Module):
    """torchvision's segmenters return a dict; litert-torch wants tensors."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x)["out"]


@dataclass(frozen=True)
class Architecture:
    name: str
    make: Callable[[], nn.Module]
    shape: tuple[int, ...]
    what: str


ARCHITECTURES = (
    Architecture("resnet18", _tv("resnet18", num_classes=CLASSES), IMAGE,
                 "torchvision resnet18, 64x64, 10 classes"),
    Architecture("mobilenet_v2", _tv("mobilenet_v2", num_classes=CLASSES, width_mult=0.5), IMAGE,
                 "torchvision mobilenet_v2, width 0.5, 64x64"),
    Architecture("mobilenet_v3_small", _tv("mobilenet_v3_small", num_classes=CLASSES), IMAGE,
                 "torchvision mobilenet_v3_small (hardswish, squeeze-excite), 64x64"),
    Architecture("shufflenet_v2", _tv("shufflenet_v2_x0_5", num_classes=CLASSES), IMAGE,
                 "torchvision shufflenet_v2_x0_5 (channel shuffle, chunk), 64x64"),
    Architecture("squeezenet", _tv("squeezenet1_1", num_classes=CLASSES), IMAGE,
                 "torchvision squeezenet1_1 (fire modules, ceil-mode max pool), 64x64"),
    Architecture("efficientnet_b0", _tv("efficientnet_b0", num_classes=CLASSES), IMAGE,
                 "torchvision efficientnet_b0 (SiLU, squeeze-excite), 64x64"),
    Architecture("lraspp", lambda: _OutOnly(_lraspp()), IMAGE,
                 "torchvision lraspp_mobilenet_v3_large segmenter, 3 classes, 64x64"),
    Architecture("unet", TinyUNet, IMAGE,
                 "two-level U-Net: transposed conv, bilinear upsample, skip concatenations"),
    Architecture("vit", TinyViT, (1, 3, 32, 32),
                 "ViT: 8x8 patches of 32x32, dim 32, 2 pre-norm encoder layers (4 heads), GELU"),
    Architecture("lstm", lambda: Recurrent(nn.LSTM), (1, 12, 8), "2-layer nn.LSTM(8, 16) over [12, 8]"),
    Architecture("gru", lambda: Recurrent(nn.GRU), (1, 12, 8), "2-layer nn.GRU(8, 16) over [12, 8]"),
)


# -- conversion --------------------------------------------------------------------------------------
def build(arch: Architecture) -> tuple[nn.Module, tuple[torch.Tensor, ...], list[tuple[torch.Tensor, ...]]]:
    """The module in eval mode with seeded weights, one sample input and seeded calibration inputs."""
    with torch.random.fork_rng():  # torchvision initializes from the global generator: seed it locally
        torch.manual_seed(SEED)
        module = arch.make().eval()
    gen = torch.Generator().manual_seed(SEED)
    calib = [(torch.rand(arch.shape, generator=gen) * 2 - 1,) for _ in range(8)]
    return module, calib[0], calib


def convert_float(module: nn.Module, sample: tuple[torch.Tensor, ...]) -> bytes:
    import litert_torch
    return bytes(litert_torch.convert(module, sample).model_content())


def convert_pt2e(module: nn.Module, sample: tuple[torch.Tensor, ...],
                 calib: list[tuple[torch.Tensor, ...]]) -> bytes:
    """litert-torch's own static int8 flow: export, PT2E prepare, calibrate, convert_pt2e, convert."""
    import litert_torch
    from litert_torch.quantize import pt2e_quantizer
    from litert_torch.quantize.quant_config import QuantConfig
    from torchao.quantization.pt2e import quantize_pt2e
    quantizer = pt2e_quantizer.PT2EQuantizer().set_global(
        pt2e_quantizer.get_symmetric_quantization_config(is_per_channel=True))
    graph = torch.export.export(module, sample).module()
    graph = quantize_pt2e.prepare_pt2e(graph, quantizer)
    for args in calib:
        graph(*args)
    graph = quantize_pt2e.convert_pt2e(graph, fold_quantize=False)
    return bytes(litert_torch.convert(graph, sample, quant_config=QuantConfig(pt2e_quantizer=quantizer))
                 .model_content())


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0][:300] if text else ''}"


def make(arch: Architecture, out: pathlib.Path, recipes: list[str], pt2e: bool, skip_existing: bool,
         manifest: dict[str, Any]) -> None:
    module, sample, calib = build(arch)
    targets: list[tuple[str, Callable[[], bytes]]] = [("float32", lambda: convert_float(module, sample))]
    if pt2e:
        targets.append(("pt2e_int8", lambda: convert_pt2e(module, sample, calib)))
    for variant, run in targets:
        path = out / f"{arch.name}.{variant}.tflite"
        if skip_existing and path.exists():
            continue
        t0 = time.perf_counter()
        entry: dict[str, Any] = {"writer": "litert-torch", "recipe": variant, "architecture": arch.name,
                                 "what": arch.what}
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                path.write_bytes(run())
            entry["bytes"] = path.stat().st_size
        except Exception as e:  # noqa: BLE001 - the converter's refusal is itself a result to record
            entry["error"] = _first_line(e)
        entry["seconds"] = round(time.perf_counter() - t0, 1)
        manifest[path.name.removesuffix(".tflite")] = entry
        print(f"{path.name}: {entry.get('error', entry.get('bytes'))} ({entry['seconds']} s)",
              file=sys.stderr, flush=True)
    src = out / f"{arch.name}.float32.tflite"
    if src.exists() and recipes:
        before = set(manifest)
        make_aeq_zoo.quantize_all(src, out, recipes, skip_existing, manifest, arch.what)
        for key in set(manifest) - before:
            manifest[key]["writer"] = "litert-torch + AI Edge Quantizer"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=pathlib.Path, help="directory to write to (outside the repository)")
    ap.add_argument("--only", nargs="*", default=None, choices=[a.name for a in ARCHITECTURES])
    ap.add_argument("--recipes", nargs="*", default=list(AEQ_RECIPES), choices=make_aeq_zoo.RECIPES)
    ap.add_argument("--no-pt2e", action="store_true", help="skip litert-torch's PT2E int8 variant")
    ap.add_argument("--skip-existing", action="store_true", help="keep models already in OUT")
    args = ap.parse_args(argv)
    logging.disable(logging.WARNING)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = make_aeq_zoo.load_manifest(args.out)
    for arch in ARCHITECTURES:
        if args.only is None or arch.name in args.only:
            make(arch, args.out, args.recipes, not args.no_pt2e, args.skip_existing, manifest)
            make_aeq_zoo.save_manifest(args.out, manifest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
