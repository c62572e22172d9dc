"""Lowering rules, one module per family of TFLite ops. Importing this package registers them all.

Modules are discovered from this directory, so a new `rules/<family>.py` with `@lowering_rule` classes
needs no other edit.
"""

from __future__ import annotations

import importlib
import pkgutil

for _mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if not _mod.startswith("_"):
        importlib.import_module(f"{__name__}.{_mod}")
