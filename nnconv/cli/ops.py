"""`nnconv ops`: every TFLite op nnconv lowers, the NNAPI ops it becomes and from which API level."""

from __future__ import annotations

import json

import click
from rich.table import Table

from nnconv.cli import common
from nnconv.cli.common import handle_errors


@click.command()
@click.option("--format", "fmt", type=click.Choice(["table", "json", "md"]), default="table", show_default=True)
@handle_errors
def ops(fmt: str) -> None:
    """List the TFLite ops nnconv lowers, the NNAPI ops they become and from which API level."""
    from nnconv.report.ops_doc import ops_json, ops_markdown
    data = ops_json()
    if fmt == "json":
        click.echo(json.dumps(data, indent=2))
    elif fmt == "md":
        click.echo(ops_markdown(), nl=False)  # the text ends with its own newline
    else:
        table = Table(title=f"{len(data['ops'])} TFLite ops")
        for col in ("TFLite op", "NNAPI ops", "min API", "dtypes", "constraints"):
            table.add_column(col)
        for o in data["ops"]:
            table.add_row(o["op"], ", ".join(o["nnapi_ops"]), str(o["min_api_level"]), ", ".join(o["dtypes"]),
                          o["constraints"])
        common.out.print(table)
