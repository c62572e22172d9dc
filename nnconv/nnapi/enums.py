"""NNAPI enumerations, with the values of the NDK `NeuralNetworksTypes.h` and the HAL 1.3 `types.hal`.

The values are part of the `.nnapi` file format and of the generated NDK C code, so they must never be
renumbered.
"""

from __future__ import annotations

import enum


class OperandType(enum.IntEnum):
    """HAL `OperandType` / NDK `OperandCode`."""

    FLOAT32 = 0
    INT32 = 1
    UINT32 = 2
    TENSOR_FLOAT32 = 3
    TENSOR_INT32 = 4
    TENSOR_QUANT8_ASYMM = 5
    BOOL = 6
    TENSOR_QUANT16_SYMM = 7
    TENSOR_FLOAT16 = 8
    TENSOR_BOOL8 = 9
    FLOAT16 = 10
    TENSOR_QUANT8_SYMM_PER_CHANNEL = 11
    TENSOR_QUANT16_ASYMM = 12
    TENSOR_QUANT8_SYMM = 13
    TENSOR_QUANT8_ASYMM_SIGNED = 14
    SUBGRAPH = 15  # NDK ANEURALNETWORKS_MODEL

    @property
    def is_scalar(self) -> bool:
        return self in _SCALAR_TYPES

    @property
    def is_tensor(self) -> bool:
        return not self.is_scalar and self is not OperandType.SUBGRAPH

    @property
    def is_quantized(self) -> bool:
        return self in _QUANT_TYPES

    @property
    def is_float(self) -> bool:
        return self in (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16,
                        OperandType.FLOAT32, OperandType.FLOAT16)

    @property
    def min_feature_level(self) -> int:
        """Lowest feature level (1..8) whose spec defines this type."""
        return _TYPE_MIN_FL.get(self, 1)


_SCALAR_TYPES = frozenset({OperandType.FLOAT32, OperandType.INT32, OperandType.UINT32,
                           OperandType.BOOL, OperandType.FLOAT16})
_QUANT_TYPES = frozenset({OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED,
                          OperandType.TENSOR_QUANT8_SYMM, OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL,
                          OperandType.TENSOR_QUANT16_SYMM, OperandType.TENSOR_QUANT16_ASYMM})
_TYPE_MIN_FL = {
    OperandType.BOOL: 3, OperandType.TENSOR_QUANT16_SYMM: 3, OperandType.TENSOR_FLOAT16: 3,
    OperandType.TENSOR_BOOL8: 3, OperandType.FLOAT16: 3, OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL: 3,
    OperandType.TENSOR_QUANT16_ASYMM: 3, OperandType.TENSOR_QUANT8_SYMM: 3,
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: 4, OperandType.SUBGRAPH: 4,
}


class OperationType(enum.IntEnum):
    """HAL `OperationType` / NDK `OperationCode`: the code of every NNAPI operation (NNAPI's list is complete:
    0..105). What nnconv knows of each, the feature level that introduced it included, is its
    `OperationSpec` (`nnconv/nnapi/operations/`)."""

    ADD = 0
    AVERAGE_POOL_2D = 1
    CONCATENATION = 2
    CONV_2D = 3
    DEPTHWISE_CONV_2D = 4
    DEPTH_TO_SPACE = 5
    DEQUANTIZE = 6
    EMBEDDING_LOOKUP = 7
    FLOOR = 8
    FULLY_CONNECTED = 9
    HASHTABLE_LOOKUP = 10
    L2_NORMALIZATION = 11
    L2_POOL_2D = 12
    LOCAL_RESPONSE_NORMALIZATION = 13
    LOGISTIC = 14
    LSH_PROJECTION = 15
    LSTM = 16
    MAX_POOL_2D = 17
    MUL = 18
    RELU = 19
    RELU1 = 20
    RELU6 = 21
    RESHAPE = 22
    RESIZE_BILINEAR = 23
    RNN = 24
    SOFTMAX = 25
    SPACE_TO_DEPTH = 26
    SVDF = 27
    TANH = 28
    BATCH_TO_SPACE_ND = 29
    DIV = 30
    MEAN = 31
    PAD = 32
    SPACE_TO_BATCH_ND = 33
    SQUEEZE = 34
    STRIDED_SLICE = 35
    SUB = 36
    TRANSPOSE = 37
    ABS = 38
    ARGMAX = 39
    ARGMIN = 40
    AXIS_ALIGNED_BBOX_TRANSFORM = 41
    BIDIRECTIONAL_SEQUENCE_LSTM = 42
    BIDIRECTIONAL_SEQUENCE_RNN = 43
    BOX_WITH_NMS_LIMIT = 44
    CAST = 45
    CHANNEL_SHUFFLE = 46
    DETECTION_POSTPROCESSING = 47
    EQUAL = 48
    EXP = 49
    EXPAND_DIMS = 50
    GATHER = 51
    GENERATE_PROPOSALS = 52
    GREATER = 53
    GREATER_EQUAL = 54
    GROUPED_CONV_2D = 55
    HEATMAP_MAX_KEYPOINT = 56
    INSTANCE_NORMALIZATION = 57
    LESS = 58
    LESS_EQUAL = 59
    LOG = 60
    LOGICAL_AND = 61
    LOGICAL_NOT = 62
    LOGICAL_OR = 63
    LOG_SOFTMAX = 64
    MAXIMUM = 65
    MINIMUM = 66
    NEG = 67
    NOT_EQUAL = 68
    PAD_V2 = 69
    POW = 70
    PRELU = 71
    QUANTIZE = 72
    QUANTIZED_16BIT_LSTM = 73
    RANDOM_MULTINOMIAL = 74
    REDUCE_ALL = 75
    REDUCE_ANY = 76
    REDUCE_MAX = 77
    REDUCE_MIN = 78
    REDUCE_PROD = 79
    REDUCE_SUM = 80
    ROI_ALIGN = 81
    ROI_POOLING = 82
    RSQRT = 83
    SELECT = 84
    SIN = 85
    SLICE = 86
    SPLIT = 87
    SQRT = 88
    TILE = 89
    TOPK_V2 = 90
    TRANSPOSE_CONV_2D = 91
    UNIDIRECTIONAL_SEQUENCE_LSTM = 92
    UNIDIRECTIONAL_SEQUENCE_RNN = 93
    RESIZE_NEAREST_NEIGHBOR = 94
    QUANTIZED_LSTM = 95
    IF = 96
    WHILE = 97
    ELU = 98
    HARD_SWISH = 99
    FILL = 100
    RANK = 101
    BATCH_MATMUL = 102
    PACK = 103
    MIRROR_PAD = 104
    REVERSE = 105


class FuseCode(enum.IntEnum):
    """Fused activation applied to an operation's output."""

    NONE = 0
    RELU = 1
    RELU1 = 2
    RELU6 = 3


class PaddingCode(enum.IntEnum):
    """Implicit padding scheme. TFLite's `Padding` enum is SAME=0, VALID=1: it must be translated."""

    SAME = 1
    VALID = 2


class OperandLifeTime(enum.IntEnum):
    """HAL 1.3 `OperandLifeTime`."""

    TEMPORARY_VARIABLE = 0
    SUBGRAPH_INPUT = 1
    SUBGRAPH_OUTPUT = 2
    CONSTANT_COPY = 3
    CONSTANT_REFERENCE = 4
    NO_VALUE = 5
    SUBGRAPH = 6


# ANEURALNETWORKS_MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES: values up to this size are CONSTANT_COPY.
MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES = 128
