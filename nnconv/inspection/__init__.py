"""`nnconv inspect`: what is inside a `.tflite` or `.nnapi` file (summary.py), as text (render.py), JSON
(the summary's dicts) or Graphviz (dot.py)."""

from nnconv.inspection.dot import to_dot
from nnconv.inspection.render import ops_table_text, summary_text
from nnconv.inspection.summary import file_kind, load, op_rows, summarize, summary_of

__all__ = ["file_kind", "load", "op_rows", "ops_table_text", "summarize", "summary_of", "summary_text", "to_dot"]
