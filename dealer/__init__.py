"""The ACPC dealer, made of parts: seating, the hand loop, the turn policy and the writers,
put together by :class:`dealer.match.Match` (docs/architecture.md says which module holds what).

:mod:`protocol` is imported first: it chooses, before any module of its
compiled group is imported, whether that group -- which includes the dealer's
hot path (``dealer.seatio``, ``dealer.seats``, ``dealer.turns``,
``dealer.writers``, ``dealer.handloop``) -- runs compiled or from its sources
(:mod:`protocol._variant`).

Layer L3 (``dealer/``): may import ``protocol/`` (L0), the compute core and
runtime of ``acpc_lbr/`` (L1) and ``agents/`` (L2, though it does not: the
dealer and the players meet only on the wire); never ``acpc_lbr/app/`` or
``acpc_lbr/cli/`` (docs/architecture.md, "Folders are the layers").
"""

import protocol  # noqa: F401 (chooses the variant of the dealer's compiled parts)
