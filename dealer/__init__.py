"""The ACPC dealer: matches, seats, logs, results and metrics.

:mod:`protocol` is imported first: it chooses, before any module of its
compiled group is imported, whether that group -- which includes
``dealer.match`` -- runs compiled or from its sources (:mod:`protocol._variant`).
"""

import protocol  # noqa: F401 (chooses the variant of dealer.match)
