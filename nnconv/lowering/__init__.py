"""TFLite -> NNAPI lowering: rules, checks, diagnostics and the conversion driver."""
