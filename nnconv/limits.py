"""Limits on what nnconv accepts: the memory bound of `run` and `verify` (`--max-memory`) and the size
syntax it is given in, and the range of quantization scales both readers accept.

The default is half of the machine's physical memory (os.sysconf), so a model or an `.npz` that declares
huge tensors is refused with exit 2 and the figure before anything is allocated, instead of being killed
by the kernel's OOM killer or failing half way with MemoryError.
"""

from __future__ import annotations

import os
import re

from nnconv.errors import NnconvError

# Quantization scales outside this range are not numbers a real model holds (float32 scales of exported
# models lie around 1e-10 .. 1e4), and products / ratios of three of them must stay finite in the float64
# requantization arithmetic. Both readers refuse scales outside it (exit 2).
MIN_SCALE = 2.0 ** -80
MAX_SCALE = 2.0 ** 80

DEFAULT_FRACTION_OF_RAM = 0.5
FALLBACK_MAX_MEMORY = 4 << 30  # when the platform cannot tell its physical memory
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}


def physical_memory() -> int | None:
    """Bytes of physical memory, or None when the platform does not say."""
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
    return pages * page_size if pages > 0 and page_size > 0 else None


def default_max_memory() -> int:
    ram = physical_memory()
    return int(ram * DEFAULT_FRACTION_OF_RAM) if ram else FALLBACK_MAX_MEMORY


def parse_size(text: str) -> int:
    """'512M', '2G', '1.5GiB', '1000000' -> bytes (binary units: 1K = 1024)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = m.group(2).lower() if m else ""
    if m is None or unit not in _UNITS:
        raise NnconvError(f"--max-memory {text!r}: give a size such as 512M, 2G or 1073741824")
    value = int(float(m.group(1)) * _UNITS[unit])
    if value <= 0:
        raise NnconvError(f"--max-memory {text!r}: the size must be positive")
    return value
