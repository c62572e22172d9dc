"""docs/reading-the-report.md is generated (scripts/gen_reading_doc.py fills its template with real command
output): its first line says so, and it is what the script makes of the template today, so that a change of
the commands' output, or an edit of the page instead of the template, cannot go unnoticed.

The numbers `nnconv verify` measures against TFLite's float kernels (differences, the range of TFLite's
outputs) depend on the CPU, BLAS and TFLite's kernels, not on nnconv: they are compared as placeholders."""

from __future__ import annotations

import importlib.util
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "reading-the-report.md"
MEASURED = re.compile(r"\d+\.\d+(?:e[-+]?\d+)?|\d+e[-+]?\d+")  # decimals and exponents, not counts


def _generator():
    spec = importlib.util.spec_from_file_location("gen_reading_doc", ROOT / "scripts" / "gen_reading_doc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _comparable(page: str) -> str:
    """The page with the measured numbers of its `nnconv verify` outputs masked."""
    parts = page.split("```")  # odd parts: the inside of code blocks
    return "```".join(MEASURED.sub("#", part) if k % 2 and part.lstrip("\n").startswith("$ nnconv verify")
                      else part for k, part in enumerate(parts))


def test_the_page_says_it_is_generated():
    assert PAGE.read_text().startswith(_generator().MARKER)


def test_the_page_is_what_its_generator_makes():
    generated = _generator().render()
    assert _comparable(generated) == _comparable(PAGE.read_text()), \
        "docs/reading-the-report.md is stale: run `python scripts/gen_reading_doc.py` (and edit the template, " \
        "scripts/templates/reading-the-report.tmpl.md, not the page)"
