"""Regenerates docs/reading-the-report.md: fills scripts/templates/reading-the-report.tmpl.md with the real
output of the `nnconv` commands named in its {{...}} placeholders (run on examples/models, colour off, 120
columns unless the placeholder starts with `COLUMNS=N`).

    python scripts/gen_reading_doc.py
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "scripts" / "templates" / "reading-the-report.tmpl.md"
OUT = ROOT / "docs" / "reading-the-report.md"


DOC_COLUMNS = "120"  # the width the page's outputs are rendered for (the CLI follows COLUMNS)


def run(args: list[str], columns: str = DOC_COLUMNS) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(ROOT), COLUMNS=columns)
    return subprocess.run([sys.executable, "-m", "nnconv.cli", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT)


def block(cmd: str) -> str:
    """A placeholder's command ('nnconv ...', or 'json:nnconv ...' for an excerpt of the JSON report)."""
    if cmd.startswith("json:"):
        data = json.loads(run(cmd[5:].split()[1:]).stdout)
        excerpt = {"schema_version": data["schema_version"], "model": data["model"],
                   "api_level": data["api_level"], "feature_level": data["feature_level"],
                   "ops": [data["ops"][2]], "partitions": [data["partitions"][1]], "summary": data["summary"]}
        return "```json\n" + json.dumps(excerpt, indent=2) + "\n```"
    columns = DOC_COLUMNS
    if cmd.startswith("COLUMNS="):
        columns = cmd.split()[0].split("=", 1)[1]
        p = run(cmd.split()[2:], columns)
    else:
        p = run(cmd.split()[1:])
    text = f"$ {cmd}\n" + p.stdout.rstrip("\n")
    if p.stderr:
        text += "\n" + p.stderr.rstrip("\n")
    if p.returncode:
        text += f"\n$ echo $?\n{p.returncode}"
    return "```\n" + text + "\n```"


def main() -> None:
    out = re.sub(r"\{\{(.+?)\}\}", lambda m: block(m.group(1)), TEMPLATE.read_text())
    OUT.write_text(out)
    print(f"{OUT.relative_to(ROOT)}: {len(out.splitlines())} lines")


if __name__ == "__main__":
    main()
