"""NNAPI kernels: one module per OperationType, vectorized numpy. Importing this package registers them all.

The list below is explicit: a new `kernels/<op>.py` with an `@kernel(OperationType.X)` function is added to
it; `tests/test_registry.py` fails when a module of this folder is not imported, so a forgotten line cannot
silently drop a kernel. Modules starting with `_` (and `registry`, `common`) hold shared helpers.
"""

from __future__ import annotations

from nnconv.runtime.kernels import (abs, add, argmax, axis_aligned_bbox_transform, batch_matmul, batch_to_space_nd,
                                    bidirectional_sequence_lstm, bidirectional_sequence_rnn, box_with_nms_limit, cast,
                                    channel_shuffle, concatenation, conv_2d, depthwise_conv_2d, dequantize,
                                    detection_postprocessing, div, elu, embedding_lookup, equal, exp, expand_dims, fill,
                                    floor, fully_connected, gather, generate_proposals, greater, greater_equal,
                                    grouped_conv_2d, hard_swish, heatmap_max_keypoint, if_, instance_normalization,
                                    l2_normalization, less, less_equal, local_response_normalization, log, log_softmax,
                                    logical_and, logical_not, logical_or, logistic, lsh_projection, lstm, maximum, mean,
                                    minimum, mirror_pad, mul, neg, not_equal, pack, pad, pooling, pow, prelu, quantize,
                                    quantized_16bit_lstm, quantized_lstm, random_multinomial, reduce, relu,
                                    relu1, relu6, reshape, resize_bilinear, resize_nearest_neighbor, reverse, rnn,
                                    roi_align, roi_pooling, rsqrt, select, sin, slice, softmax, space_to_batch_nd,
                                    space_to_depth, split, sqrt, squeeze, strided_slice, sub, svdf, tanh, tile, topk_v2,
                                    transpose, transpose_conv_2d, unidirectional_sequence_lstm,
                                    unidirectional_sequence_rnn, while_)
from nnconv.runtime.kernels.registry import KERNELS, KernelCall, kernel

__all__ = ["KERNELS", "KernelCall", "kernel"]
