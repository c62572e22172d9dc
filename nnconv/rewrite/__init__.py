"""The rewrite stage: TFLite IR -> TFLite IR, between the reader and the lowering rules.

Exact rewrites that make real models lowerable (constant and shape folding, ...), each documented with the
identity it relies on.
"""
