"""The pure core of acpc-lbr: ACPC games, cards, rules and wire formats.

Nothing in this package does I/O (beyond reading bundled game files) or
draws random numbers on its own: every reader of the game -- the dealer,
the agents, the log tools -- goes through these modules.

Its hot modules, with the dealer's per-action path, run compiled (mypyc) when
the install built them and their sources have not changed since; see
:mod:`protocol._variant`.

Layer L0 (``protocol/``): imports no other package of the project
(docs/architecture.md, "Folders are the layers").
"""

from protocol import _variant

#: True when the mypyc-compiled modules of :data:`protocol._variant.GROUP` are in use
#: (all of them: the protocol core and the dealer's hot path).
COMPILED, _WHY = _variant.select()


def variant() -> str:
    """Which variant of the compiled core (protocol core + dealer hot path) runs, and why:
    ``'compiled (mypyc)'``, ``'pure (not built)'``, ..."""
    return f"{'compiled' if COMPILED else 'pure'} ({_WHY})"


def helper() -> str:
    """Whether the plain C helper of the per-hand loops (``protocol/_handnative.c``) is in use:
    ``'in use'``, ``'not built'`` or ``'off (ACPC_LBR_PURE is set)'``."""
    if _variant.pure_forced():
        return f"off ({_variant.PURE_ENV} is set)"
    return "in use" if _variant.native_helper() is not None else "not built"
