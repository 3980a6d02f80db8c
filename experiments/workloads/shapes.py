"""The fixed shapes of the workloads' data sets, which both the settings (to check parameters)
and the generators and loaders (to make and read the data) need: plain constants and
arithmetic, no pydantic and no numpy, so the rank programs' import path stays light and
``settings`` imports no data module (the data modules name ``settings`` for type hints only).
"""

from __future__ import annotations

# KiTS19 after resampling: d1 (slices) ~ N(240, 60) in [128, 512]; d2 ~ N(350, 50) in [256, 512]
# (the mean volume 240 * 350^2 float32 voxels = 117.6 MB, the thesis's mean image size).
D1 = (240.0, 60.0, 128, 512)
D2 = (350.0, 50.0, 256, 512)

# Criteo 1TB (MLPerf DLRM) cardinalities of the 26 categorical features. The generator draws
# each feature within its cardinality; the model folds ids with ``% max_cardinality`` as the
# reference's ``--max-ind-range`` does.
CRITEO_CARDINALITIES = [
    39884406, 39043, 17289, 7420, 20263, 3, 7120, 1543, 63, 38532951, 2953546, 403346, 10,
    2208, 11938, 155, 4, 976, 14, 39979771, 25641295, 39664984, 585935, 12972, 108, 36,
]


def min_dims(scale: float) -> tuple[int, int]:
    """The smallest (d1, d2) a UNET3D case can have at ``scale``."""
    return max(1, int(D1[2] * scale)), max(1, int(D2[2] * scale))
