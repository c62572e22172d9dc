"""The `delegate` target: what TFLite's own NNAPI delegate decides and builds, which is what phones run.

Phones run `.tflite` models through TFLite's NNAPI delegate (LiteRT `tflite/delegates/nnapi/`). This package
reproduces it in our own structure, from the delegate's source read for facts (google-ai-edge/LiteRT at
f67457790c9c), so that `check`, `convert`, `verify` and `probe` answer the user's real question: will the
delegate take my model on this Android version, how will it split it, and what NNAPI graph will it build.

    TfliteModel -> tflite.prepare (TFLite's Prepare: shapes, constants, dynamic tensors)
        -> graph.DelegateGraph (the TfLiteContext the delegate reads)
        -> validation (NNAPIDelegateKernel::Validate, per node: the delegate's own failure messages)
        -> partition (DoPrepare: float16 weights, PreviewDelegatePartitioning, the partition cap)
        -> build (BuildGraph / AddOpsAndTensors / Map: the NNAPI model of each partition)
        -> outcome (what TFLite ends with: delegated, nothing delegated, or the delegate refused or failed)

`nnconv/lowering/` is the other target (`nnconv`): our own converter, which goes further (rewrites,
emulations, NDK C). The two share the NNAPI IR, its validation and the executor, never their decisions.
"""
