"""The runtime stage: the numpy executor of NNAPI models and its kernels (one module per NNAPI operation)."""
