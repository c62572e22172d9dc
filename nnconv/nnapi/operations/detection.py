"""The object-detection operations of NNAPI feature level 3: AXIS_ALIGNED_BBOX_TRANSFORM, BOX_WITH_NMS_LIMIT,
DETECTION_POSTPROCESSING, GENERATE_PROPOSALS, HEATMAP_MAX_KEYPOINT, ROI_ALIGN and ROI_POOLING. The runtime
checks nothing of theirs beyond the operand types' levels; their kernels check the rest at execution."""

from __future__ import annotations

from enum import IntEnum

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations.spec import declare

_T = OperationType


class BboxTransformSlot(IntEnum):
    ROIS = 0
    DELTAS = 1
    BATCH_INDEX = 2
    IMAGE_SIZES = 3


class BoxWithNmsLimitSlot(IntEnum):
    SCORES = 0
    BOXES = 1
    BATCH_INDEX = 2
    SCORE_THRESHOLD = 3
    MAX_DETECTIONS = 4
    NMS_KERNEL = 5  # 0 hard, 1 linear, 2 gaussian
    IOU_THRESHOLD = 6
    SIGMA = 7
    NMS_SCORE_THRESHOLD = 8


class BoxWithNmsLimitOutput(IntEnum):
    SCORES = 0
    BOXES = 1
    CLASSES = 2
    BATCH_INDEX = 3


class DetectionPostprocessingSlot(IntEnum):
    SCORES = 0
    BOX_ENCODINGS = 1
    ANCHORS = 2
    Y_SCALE = 3
    X_SCALE = 4
    H_SCALE = 5
    W_SCALE = 6
    USE_REGULAR_NMS = 7
    MAX_DETECTIONS = 8
    MAX_CLASSES_PER_DETECTION = 9
    MAX_DETECTIONS_PER_CLASS = 10
    SCORE_THRESHOLD = 11
    IOU_THRESHOLD = 12
    BACKGROUND_IN_LABEL = 13


class DetectionPostprocessingOutput(IntEnum):
    SCORES = 0
    BOXES = 1
    CLASSES = 2
    NUM_DETECTIONS = 3


class GenerateProposalsSlot(IntEnum):
    SCORES = 0
    DELTAS = 1
    ANCHORS = 2
    IMAGE_SIZES = 3
    HEIGHT_STRIDE = 4
    WIDTH_STRIDE = 5
    PRE_NMS_TOP_N = 6
    POST_NMS_TOP_N = 7
    IOU_THRESHOLD = 8
    MIN_SIZE = 9
    NCHW = 10


class GenerateProposalsOutput(IntEnum):
    SCORES = 0
    BOXES = 1
    BATCH_INDEX = 2


class HeatmapMaxKeypointSlot(IntEnum):
    HEATMAPS = 0
    BOXES = 1
    NCHW = 2


class HeatmapMaxKeypointOutput(IntEnum):
    SCORES = 0
    KEYPOINTS = 1


class RoiAlignSlot(IntEnum):
    INPUT = 0
    ROIS = 1
    BATCH_INDEX = 2
    OUTPUT_HEIGHT = 3
    OUTPUT_WIDTH = 4
    HEIGHT_STRIDE = 5
    WIDTH_STRIDE = 6
    HEIGHT_SAMPLING_RATIO = 7
    WIDTH_SAMPLING_RATIO = 8
    NCHW = 9


class RoiPoolingSlot(IntEnum):
    INPUT = 0
    ROIS = 1
    BATCH_INDEX = 2
    OUTPUT_HEIGHT = 3
    OUTPUT_WIDTH = 4
    HEIGHT_STRIDE = 5
    WIDTH_STRIDE = 6
    NCHW = 7


declare(_T.AXIS_ALIGNED_BBOX_TRANSFORM, level=3, inputs=BboxTransformSlot)
declare(_T.BOX_WITH_NMS_LIMIT, level=3, inputs=BoxWithNmsLimitSlot, outputs=BoxWithNmsLimitOutput)
declare(_T.DETECTION_POSTPROCESSING, level=3, inputs=DetectionPostprocessingSlot,
        outputs=DetectionPostprocessingOutput)
declare(_T.GENERATE_PROPOSALS, level=3, inputs=GenerateProposalsSlot, outputs=GenerateProposalsOutput)
declare(_T.HEATMAP_MAX_KEYPOINT, level=3, inputs=HeatmapMaxKeypointSlot, outputs=HeatmapMaxKeypointOutput)
declare(_T.ROI_ALIGN, level=3, inputs=RoiAlignSlot)
declare(_T.ROI_POOLING, level=3, inputs=RoiPoolingSlot)
