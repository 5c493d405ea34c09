"""Fast hand evaluator for 5, 6 and 7 cards (numba kernels behind a numpy front door).

Cards are ACPC indices ``rank * 4 + suit`` (``2c`` = 0 ... ``As`` = 51).  A hand's
rank is the class of its best five cards among the 7462 distinct five-card
hands: 1 (7-5-4-3-2 high) ... 7462 (royal flush).  Higher is better and equal
ranks tie, in exactly the order (and with exactly the ties) of the ACPC
reference ranker (``rankCardset``); the numbers themselves differ from the
reference's.  The same scale serves 5-, 6- and 7-card hands.

How it works (tables built in :mod:`acpc_lbr._tables`): each card has a 64-bit
key (additive rank key + per-suit counter); a 7-card hand sums 7 keys.  A
4096-entry table tells whether a suit holds 5+ cards; if so a 8192-entry table
ranks that suit's rank mask, otherwise a row-displacement perfect hash of the
rank-key sum ranks the rank multiset.  About 0.2 MB of tables are touched by
7-card hands.

Public front door (validates input, raises :class:`EvaluatorInputError`):

* :func:`evaluate` -- one hand.
* :func:`evaluate_batch` -- an ``(n, k)`` array of hands, ``k`` in {5, 6, 7}.
* :func:`category` / :func:`category_index` -- category of a rank.

Kernels for other numba code (never raise, no validation; tables passed in):

* ``hand_rank7(t, c0, c1, c2, c3, c4, c5, c6) -> int32``: rank of 7 distinct
  cards, ``t`` being :data:`TABLES` (an :class:`EvalTables` named tuple).  Any
  of the cards may be the phantom card :data:`PHANTOM_CARD` (52) to rank a
  5- or 6-card hand.  ``hand_rank_kernel`` is an alias.
* ``hand_state(t, cards, n) -> (key, mask)``: the summed ``t.card_key`` (int64)
  and OR-ed ``t.card_mask`` (uint64) of ``cards[:n]``, to start an incremental
  evaluation.
* ``rank_from_key(t, key, mask) -> int32``: rank of a hand of 7 cards (phantoms
  allowed) from its summed key and mask.  Equity kernels keep the board's
  key/mask and add two hole cards per opponent: ``rank_from_key(t, bk +
  t.card_key[a] + t.card_key[b], bm | t.card_mask[a] | t.card_mask[b])``.
* ``card_bit(c) -> uint64``: ``1 << (16 * suit + rank)`` (0 for the phantom card),
  the value of ``t.card_mask[c]``.

Performance notes for kernel authors: pass ``TABLES`` into the outer kernel and
hand it down; these helpers are branch-free so numba/LLVM inline them (a branchy
helper taking the tuple is not inlined and costs ~10x).  Card arguments should
be unsigned (``uint8``) or non-negative ``int64``.

Example:
    >>> evaluate([48, 49, 50, 51, 44]) > evaluate([44, 45, 46, 47, 0])   # AAAA vs KKKK
    True
    >>> category(evaluate([51, 47, 43, 39, 35]))   # As Ks Qs Js Ts
    'straight flush'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from acpc_lbr import _tables
from acpc_lbr.jit import kernel

PHANTOM_CARD = _tables.PHANTOM_CARD
NUM_CLASSES = _tables.NUM_CLASSES
CATEGORY_NAMES = _tables.CATEGORY_NAMES
_ROW_SHIFT = _tables.ROW_SHIFT
_ROW_MASK = _tables.ROW_MASK
_SUIT_SHIFT = _tables.SUIT_SHIFT
_RANK_KEY_MASK = (1 << _SUIT_SHIFT) - 1


class EvaluatorInputError(ValueError):
    """Invalid input to the evaluator: bad shape, dtype, card range or duplicate cards."""


class EquityInputError(EvaluatorInputError):
    """Invalid input to an equity function: bad cards, repeated cards, bad board size or weights.

    Raised by :mod:`acpc_lbr.equity` and :mod:`acpc_lbr.preflop` alike; it lives
    here, below both, with :func:`check_cards`, the card checks they share.
    """


def check_card(c: object) -> int:
    """``c`` as a card index 0..51 (a Python or numpy integer, not a bool).

    Raises:
        EquityInputError: anything else.
    """
    if isinstance(c, (bool, np.bool_)) or not isinstance(c, (int, np.integer)):
        raise EquityInputError(f"a card must be an integer index, got {c!r}")
    if not 0 <= c <= 51:
        raise EquityInputError(f"card index {c} is not in 0..51")
    return int(c)


def check_cards(cards: Sequence[int] | np.ndarray, what: str, sizes: tuple[int, ...]) -> list[int]:
    """``cards`` as a list of card indices 0..51, of one of the allowed ``sizes``.

    Raises:
        EquityInputError: naming ``what`` on a bad card or a bad count.
    """
    try:
        out = [check_card(c) for c in cards]
    except TypeError as exc:
        raise EquityInputError(f"{what} must be a sequence of card indices") from exc
    if len(out) not in sizes:
        raise EquityInputError(f"{what} must have {' or '.join(map(str, sizes))} cards")
    return out


class EvalTables(NamedTuple):
    """The evaluator's lookup tables, passed to every kernel as one argument.

    Attributes:
        card_key: (256,) int64, rank key | suit counter << 32 per card.
        card_mask: (256,) uint64, ``1 << (16 * suit + rank)`` per card (0 from 52 up).
        flush_suit: (4096,) int8, suit holding 5+ cards per suit-counter code, or -1.
        flush_rank: (8192,) int16, rank of the best flush in a 13-bit rank mask.
        hash_offsets: (rows,) int32, perfect-hash row displacements.
        hash_values: (size,) int16, rank per hashed non-flush rank multiset.
        category_start: (9,) int16, lowest rank of each category.
    """

    card_key: np.ndarray
    card_mask: np.ndarray
    flush_suit: np.ndarray
    flush_rank: np.ndarray
    hash_offsets: np.ndarray
    hash_values: np.ndarray
    category_start: np.ndarray


def _load() -> EvalTables:
    raw = _tables.load_tables()
    arrays = {}
    for name in EvalTables._fields:
        arr = np.ascontiguousarray(raw[name])
        arr.setflags(write=False)
        arrays[name] = arr
    return EvalTables(**arrays)


#: The evaluator tables (read-only arrays), loaded once at import.
TABLES: EvalTables = _load()


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------


@kernel
def card_bit(c):  # type: ignore[no-untyped-def]
    """``1 << (16 * suit + rank)`` as uint64; 0 for the phantom card (no table needed)."""
    ci = np.int64(c)
    if ci >= 52:
        return np.uint64(0)
    return np.uint64(1) << np.uint64(((ci & 3) << 4) + (ci >> 2))


@kernel
def rank_from_key(t, key, mask):  # type: ignore[no-untyped-def]
    """Rank a hand from its summed ``t.card_key`` and OR-ed ``t.card_mask``; branch-free."""
    fs = np.int64(t.flush_suit[key >> _SUIT_SHIFT])
    flush = t.flush_rank[(mask >> np.uint64((fs & 3) << 4)) & np.uint64(0x1FFF)]
    r = key & _RANK_KEY_MASK
    plain = t.hash_values[t.hash_offsets[r >> _ROW_SHIFT] + (r & _ROW_MASK)]
    return np.int32(flush if fs >= 0 else plain)


@kernel
def hand_rank7(t, c0, c1, c2, c3, c4, c5, c6):  # type: ignore[no-untyped-def]
    """Rank of 7 distinct cards (phantom card 52 allowed as padding); never raises."""
    key = (
        t.card_key[c0]
        + t.card_key[c1]
        + t.card_key[c2]
        + t.card_key[c3]
        + t.card_key[c4]
        + t.card_key[c5]
        + t.card_key[c6]
    )
    mask = (
        t.card_mask[c0]
        | t.card_mask[c1]
        | t.card_mask[c2]
        | t.card_mask[c3]
        | t.card_mask[c4]
        | t.card_mask[c5]
        | t.card_mask[c6]
    )
    return rank_from_key(t, key, mask)


hand_rank_kernel = hand_rank7


@kernel
def hand_state(t, cards, n):  # type: ignore[no-untyped-def]
    """``(key, mask)`` of ``cards[:n]``: the start of an incremental evaluation."""
    key = np.int64(0)
    mask = np.uint64(0)
    for i in range(n):
        key += t.card_key[cards[i]]
        mask |= t.card_mask[cards[i]]
    return key, mask


@kernel
def _rank_rows(t, hands, out):  # type: ignore[no-untyped-def]
    """Rank every row of ``hands`` (n, k) uint8, k in 5..7, into ``out`` (n,) int32.

    Validates while ranking: returns the index of the first row holding a card
    above 51 or a repeated card (its ``out`` entry is garbage), else -1.
    Missing columns (k < 7) are the phantom card.  Tables have 256 card entries,
    so no uint8 reads out of bounds.
    """
    k = hands.shape[1]
    ck = t.card_key
    cm = t.card_mask
    for i in range(hands.shape[0]):
        c0 = hands[i, 0]
        c1 = hands[i, 1]
        c2 = hands[i, 2]
        c3 = hands[i, 3]
        c4 = hands[i, 4]
        c5 = hands[i, 5] if k > 5 else np.uint8(PHANTOM_CARD)
        c6 = hands[i, 6] if k > 6 else np.uint8(PHANTOM_CARD)
        key = ck[c0] + ck[c1] + ck[c2] + ck[c3] + ck[c4] + ck[c5] + ck[c6]
        mask = cm[c0] | cm[c1] | cm[c2] | cm[c3] | cm[c4] | cm[c5] | cm[c6]
        # Distinct real cards have distinct mask bits, so their sum equals their OR.
        total = cm[c0] + cm[c1] + cm[c2] + cm[c3] + cm[c4] + cm[c5] + cm[c6]
        high = max(c0, c1, c2, c3, c4)
        if k > 5:
            high = max(high, c5)
        if k > 6:
            high = max(high, c6)
        if high > 51 or total != mask:
            return i
        out[i] = rank_from_key(t, key, mask)
    return -1


# ---------------------------------------------------------------------------
# Front door
# ---------------------------------------------------------------------------


def _as_hands(hands: object) -> np.ndarray:
    """Check dtype and shape of (n, k) hands and return them as C-contiguous uint8."""
    arr = np.asarray(hands)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise EvaluatorInputError(f"hands must be an integer array, got dtype {arr.dtype}")
    if arr.ndim != 2 or arr.shape[1] not in (5, 6, 7):
        raise EvaluatorInputError(f"hands must have shape (n, 5|6|7), got {arr.shape}")
    if arr.dtype != np.uint8 and arr.size and (arr.min() < 0 or arr.max() > 51):
        raise EvaluatorInputError("card indices must be in 0..51")
    return np.ascontiguousarray(arr, dtype=np.uint8)


def evaluate_batch(hands: np.ndarray) -> np.ndarray:
    """Rank many hands at once.

    Args:
        hands: Integer array of shape (n, k), k in {5, 6, 7}; card indices 0..51,
            no card repeated within a row.  ``uint8`` C-contiguous input is used
            without a copy (fastest).

    Returns:
        int32 array of shape (n,): the rank of each hand (1..7462, higher is better).

    Raises:
        EvaluatorInputError: on a wrong dtype, shape, card range or a repeated card.
    """
    arr = _as_hands(hands)
    out = np.empty(arr.shape[0], dtype=np.int32)
    bad = _rank_rows(TABLES, arr, out)
    if bad >= 0:
        raise EvaluatorInputError(f"hand {bad} has a card outside 0..51 or a repeated card")
    return out


def evaluate(cards: Sequence[int] | np.ndarray) -> int:
    """Rank one hand of 5, 6 or 7 distinct cards.

    Args:
        cards: Card indices 0..51.

    Returns:
        The rank, 1..7462; higher is better, equal ranks tie.

    Raises:
        EvaluatorInputError: on a wrong number of cards, a card out of range, a
            non-integer card or a repeated card.
    """
    if isinstance(cards, np.ndarray):
        if cards.ndim != 1:
            raise EvaluatorInputError(f"expected a flat sequence of cards, got shape {cards.shape}")
        cards = cards.tolist()
    try:
        n = len(cards)
    except TypeError as exc:
        raise EvaluatorInputError(f"not a sequence of card indices: {cards!r}") from exc
    if n not in (5, 6, 7):
        raise EvaluatorInputError(f"a hand has 5, 6 or 7 cards, got {n}")
    row = []
    for c in cards:
        if isinstance(c, (bool, np.bool_)) or not isinstance(c, (int, np.integer)):
            raise EvaluatorInputError(f"a card must be an integer index, got {c!r}")
        if not 0 <= c <= 51:
            raise EvaluatorInputError(f"card index {c} is not in 0..51")
        row.append(int(c))
    if len(set(row)) != n:
        raise EvaluatorInputError("the hand repeats a card")
    row += [PHANTOM_CARD] * (7 - n)
    return int(hand_rank7(TABLES, *row))


def category_index(rank: int) -> int:
    """Category number of a rank: 0 = high card ... 8 = straight flush.

    Raises:
        EvaluatorInputError: if ``rank`` is not in 1..7462.
    """
    if isinstance(rank, (bool, np.bool_)) or not isinstance(rank, (int, np.integer)):
        raise EvaluatorInputError(f"rank must be an integer, got {rank!r}")
    if not 1 <= rank <= NUM_CLASSES:
        raise EvaluatorInputError(f"rank must be in 1..{NUM_CLASSES}, got {rank}")
    return int(np.searchsorted(TABLES.category_start, rank, side="right")) - 1


def category(rank: int) -> str:
    """Category name of a rank, e.g. ``'full house'``.

    Raises:
        EvaluatorInputError: if ``rank`` is not in 1..7462.
    """
    return CATEGORY_NAMES[category_index(rank)]


__all__ = [
    "CATEGORY_NAMES",
    "NUM_CLASSES",
    "PHANTOM_CARD",
    "TABLES",
    "EquityInputError",
    "EvalTables",
    "EvaluatorInputError",
    "card_bit",
    "check_card",
    "check_cards",
    "category",
    "category_index",
    "evaluate",
    "evaluate_batch",
    "hand_rank7",
    "hand_rank_kernel",
    "hand_state",
    "rank_from_key",
]
