"""nnconv's host side of the Android NDK Neural Networks API.

`include/android/NeuralNetworks.h` declares the NDK's types, constants and functions so that generated C
compiles without the NDK; `recorder_*.c` implement the model-building functions on a host, validating each
call and recording the models built; `check.py` compiles and runs generated C against them and `record.py`
compares what was built with the `.nnapi` file (`nnconv convert --check-c`).
"""
