"""`verify`'s image preprocessing options (`--image`, `--dataset` images): `--input-layout`, `--input-mean`,
`--input-std` (nnconv/parity/preprocess.py says what they do). They are gathered into one
`ImagePreprocessing` in the click context instead of three more parameters of the command's function."""

from __future__ import annotations

from typing import Any, Callable

import click

_KEY = "nnconv.image_preprocessing"


def _store(field: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value is None:
            return
        from nnconv.errors import InputDataError
        from nnconv.parity.preprocess import parse_values
        if field != "layout":
            try:
                value = parse_values(value, f"--{param.name.replace('_', '-')}")
            except InputDataError as e:
                raise click.BadParameter(str(e).split(": ", 1)[-1], ctx=ctx, param=param) from None
        ctx.meta.setdefault(_KEY, {})[field] = value
    return callback


def image_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The three options, read back with `image_preprocessing()`."""
    fn = click.option("--input-std", "input_std", default=None, metavar="S[,S,S]", expose_value=False,
                      callback=_store("std"),
                      help="Images: value = (pixel - mean) / std per channel, pixels 0..255 (one value for all "
                           "channels, or one per channel; torchvision: 58.395,57.12,57.375). Default 1.")(fn)
    fn = click.option("--input-mean", "input_mean", default=None, metavar="M[,M,M]", expose_value=False,
                      callback=_store("mean"),
                      help="Images: the mean subtracted per channel, pixels 0..255 (torchvision: "
                           "123.675,116.28,103.53). Default 0; without --input-mean/--input-std, pixels map "
                           "onto --input-range, [-1, 1] by default.")(fn)
    return click.option("--input-layout", "input_layout", type=click.Choice(["nhwc", "nchw"]), default=None,
                        expose_value=False, callback=_store("layout"),
                        help="Images: the input's layout, NHWC [1, H, W, C] or NCHW [1, C, H, W] (default: "
                             "the axis of 1 or 3 channels).")(fn)


def image_preprocessing() -> Any:
    """The `ImagePreprocessing` the options of the current command gave, or None when none was given."""
    given = click.get_current_context().meta.get(_KEY)
    if not given:
        return None
    from nnconv.parity.preprocess import ImagePreprocessing
    return ImagePreprocessing(layout=given.get("layout"), mean=given.get("mean"), std=given.get("std"))
