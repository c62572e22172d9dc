"""`nnconv rewrite`: a `.tflite` that TFLite's stock NNAPI delegate takes more of, by exact TFLite -> TFLite
rewrites that the delegate target (`nnconv/delegate/`) says help, proven unchanged on TFLite's interpreter.

    view.py     the delegate's view of a model at a level (outcome, partitions, ops on NNAPI), compared
    steps.py    the rewrites, each a step over nnconv's rewrite stage with the identity it relies on
    engine.py   applies the steps that help, keeps the others out, writes nothing until the proof passes
    proof.py    TFLite's interpreter on the original and the rewritten model, outputs compared
    render.py   the report (table or JSON)
"""
