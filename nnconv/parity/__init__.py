"""Numerical parity between our executor and TFLite's interpreter."""

from nnconv.parity.tolerances import Tolerance, tolerance_for
from nnconv.parity.verify import ParityReport, compare, random_inputs, run_parity

__all__ = ["ParityReport", "Tolerance", "compare", "random_inputs", "run_parity", "tolerance_for"]
