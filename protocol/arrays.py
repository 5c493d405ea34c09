"""The numpy array types the project's annotations use: one definition, imported everywhere.

``FloatArray`` is what ranges, range-answer rows, equity vectors and policies'
probabilities are (float64); ``BoolArray`` the masks of blocked hands;
``IntArray`` card and hand numbers (int64).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]

__all__ = ["BoolArray", "FloatArray", "IntArray"]
