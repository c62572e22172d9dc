"""The object-detection operations of NNAPI feature level 3: AXIS_ALIGNED_BBOX_TRANSFORM, BOX_WITH_NMS_LIMIT,
DETECTION_POSTPROCESSING, GENERATE_PROPOSALS, HEATMAP_MAX_KEYPOINT, ROI_ALIGN and ROI_POOLING. The runtime
checks nothing of theirs beyond the operand types' levels; their kernels check the rest at execution."""

from __future__ import annotations

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations.spec import declare

_T = OperationType

declare(_T.AXIS_ALIGNED_BBOX_TRANSFORM, level=3, inputs="ROIS DELTAS BATCH_INDEX IMAGE_SIZES")
declare(_T.BOX_WITH_NMS_LIMIT, level=3,
        # NMS_KERNEL: 0 hard, 1 linear, 2 gaussian (soft NMS)
        inputs="SCORES BOXES BATCH_INDEX SCORE_THRESHOLD MAX_DETECTIONS NMS_KERNEL IOU_THRESHOLD SIGMA "
               "NMS_SCORE_THRESHOLD",
        outputs="SCORES BOXES CLASSES BATCH_INDEX")
declare(_T.DETECTION_POSTPROCESSING, level=3,
        inputs="SCORES BOX_ENCODINGS ANCHORS Y_SCALE X_SCALE H_SCALE W_SCALE USE_REGULAR_NMS MAX_DETECTIONS "
               "MAX_CLASSES_PER_DETECTION MAX_DETECTIONS_PER_CLASS SCORE_THRESHOLD IOU_THRESHOLD "
               "BACKGROUND_IN_LABEL",
        outputs="SCORES BOXES CLASSES NUM_DETECTIONS")
declare(_T.GENERATE_PROPOSALS, level=3,
        inputs="SCORES DELTAS ANCHORS IMAGE_SIZES HEIGHT_STRIDE WIDTH_STRIDE PRE_NMS_TOP_N POST_NMS_TOP_N "
               "IOU_THRESHOLD MIN_SIZE NCHW",
        outputs="SCORES BOXES BATCH_INDEX")
declare(_T.HEATMAP_MAX_KEYPOINT, level=3, inputs="HEATMAPS BOXES NCHW", outputs="SCORES KEYPOINTS")
declare(_T.ROI_ALIGN, level=3,
        inputs="INPUT ROIS BATCH_INDEX OUTPUT_HEIGHT OUTPUT_WIDTH HEIGHT_STRIDE WIDTH_STRIDE HEIGHT_SAMPLING_RATIO "
               "WIDTH_SAMPLING_RATIO NCHW")
declare(_T.ROI_POOLING, level=3,
        inputs="INPUT ROIS BATCH_INDEX OUTPUT_HEIGHT OUTPUT_WIDTH HEIGHT_STRIDE WIDTH_STRIDE NCHW")
