"""The pure core of acpc-lbr: ACPC games, cards, rules and wire formats.

Nothing in this package does I/O (beyond reading bundled game files) or
draws random numbers on its own: every reader of the game -- the dealer,
the agents, the log tools -- goes through these modules.

Its hot modules run compiled (mypyc) when the install built them and their
sources have not changed since; see :mod:`protocol._variant`.
"""

from protocol import _variant

#: True when the mypyc-compiled modules of :data:`protocol._variant.GROUP` are in use.
COMPILED: bool = _variant.select()


def variant() -> str:
    """``'compiled'`` or ``'pure'``: which protocol core this process runs."""
    return "compiled" if COMPILED else "pure"
