"""Exact hold'em equities by full enumeration of the board (numba kernels).

All results are exact: every completion of the board from the cards still in
the deck is dealt once, each equally likely; a win counts 1, a tie 1/2.

Public front door (validates, raises :class:`EquityInputError`, a ``ValueError``):

* :func:`equity` -- hero vs one villain hand: ``(win, tie, loss)`` fractions.
* :func:`equity_vs_range` -- hero vs a weighted list of villain hands.
* :func:`equity_vector` -- LBR's ``e(h)`` against every one of the 1326 hands.
* :func:`possible_hands` -- mask of hands that share no card with given cards.
* :func:`hand_index`, :data:`HAND_CARDS`, :data:`HAND_INDEX` -- hold'em's hand
  numbering (the range-query order: the hand ``c1 < c2`` is
  ``c2 * (c2 - 1) // 2 + c1``, so ``2c2d`` is 0, ..., ``AhAs`` 1325), which is
  :func:`protocol.hands.holdem`'s: its tables, and a look-up that raises
  :class:`EquityInputError`.

Cost (one thread): the river is one board, the turn 46 rivers, the flop 1081
turn/river pairs, preflop 1,712,304 boards per villain hand.  The vector over
all 1326 hands enumerates each completion once and ranks every opponent hand
on it; completions equivalent under a suit permutation that fixes hero's hand
and the board are dealt once with their orbit's weight.  Preflop that is still
2.1 million boards x 990 hands / (2 offsuit, 4 pair, 6 suited): 0.6-1.6 s,
so with no board and no dead cards :func:`equity_vector` reads the exact
precomputed table of :mod:`acpc_lbr.preflop` instead. Equity sits above that
table (it reads it); the table is built from equity's enumeration by
:mod:`acpc_lbr.preflop_build`, which sits above both.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from acpc_lbr.evaluator import TABLES, EquityInputError, check_card, check_cards, rank_from_key
from acpc_lbr.jit import kernel
from acpc_lbr.preflop import NUM_BOARDS, preflop_counts_vector, preflop_equity_vector
from protocol.hands import holdem, suit_maps

_HOLDEM = holdem()
NUM_HANDS = _HOLDEM.num_hands
# From this many distinct villain hands on, equity_vs_range ranks all hands in one pass.
_FEW_HANDS = 64

#: (1326, 2) int64: the two cards (low, high) of each hand, in colex order.
HAND_CARDS = _HOLDEM.cards
#: (52, 52) int64: hand number of a card pair (either order), -1 on the diagonal.
HAND_INDEX = _HOLDEM.pairs


def hand_index(c1: int, c2: int) -> int:
    """Colex number (0..1325) of the two-card hand ``{c1, c2}``.

    Raises:
        EquityInputError: if a card is not in 0..51 or the cards are equal.

    >>> hand_index(0, 1), hand_index(1, 2), hand_index(51, 50)
    (0, 2, 1325)
    """
    a, b = check_card(c1), check_card(c2)
    if a == b:
        raise EquityInputError("a hand needs two different cards")
    return int(HAND_INDEX[a, b])


def possible_hands(dead_cards: Sequence[int] = ()) -> np.ndarray:
    """Mask of the hands that share no card with ``dead_cards``.

    Args:
        dead_cards: Card indices 0..51 (hole cards, board, ...).

    Returns:
        bool array of shape (1326,), in colex hand order.

    Raises:
        EquityInputError: if a card is not in 0..51.
    """
    return ~_HOLDEM.sharing([check_card(c) for c in dead_cards])


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------


@kernel
def _next_combination(idx, k, m):  # type: ignore[no-untyped-def]
    """Advance ``idx[:k]`` to the next k-subset of range(m) (lexicographic); False when done."""
    i = k - 1
    while i >= 0 and idx[i] == m - k + i:
        i -= 1
    if i < 0:
        return False
    idx[i] += 1
    for j in range(i + 1, k):
        idx[j] = idx[j - 1] + 1
    return True


@kernel
def _pair_counts(t, hero, villain, board, deck):  # type: ignore[no-untyped-def]
    """Win/tie/loss board counts of hero vs villain over completions of ``board`` from ``deck``.

    Args:
        t: Evaluator tables.
        hero, villain: (2,) card arrays.
        board: (nb,) known board cards, nb <= 5.
        deck: (m,) cards that can still come (not hero, villain, board or dead).

    Returns:
        (wins, ties, losses) as int64.
    """
    ck = t.card_key
    cm = t.card_mask
    bk = np.int64(0)
    bm = np.uint64(0)
    for c in board:
        bk += ck[c]
        bm |= cm[c]
    hk = bk + ck[hero[0]] + ck[hero[1]]
    hm = bm | cm[hero[0]] | cm[hero[1]]
    vk = bk + ck[villain[0]] + ck[villain[1]]
    vm = bm | cm[villain[0]] | cm[villain[1]]
    k = 5 - board.shape[0]
    m = deck.shape[0]
    idx = np.arange(k)
    wins = np.int64(0)
    ties = np.int64(0)
    total = np.int64(0)
    while True:
        rk = np.int64(0)
        rm = np.uint64(0)
        for i in range(k):
            c = deck[idx[i]]
            rk += ck[c]
            rm |= cm[c]
        a = rank_from_key(t, hk + rk, hm | rm)
        b = rank_from_key(t, vk + rk, vm | rm)
        wins += a > b
        ties += a == b
        total += 1
        if not _next_combination(idx, k, m):
            break
    return wins, ties, total - wins - ties


@kernel
def _vector_counts(t, hero, board, deck, perms, acc):  # type: ignore[no-untyped-def]
    """For every opponent hand, add its (wins << 32 | ties) of hero over completions.

    Completions are the (5 - nb)-subsets of ``deck``; on each, every hand of two
    further ``deck`` cards is ranked and compared with hero's hand.  Hands
    holding a card outside ``deck`` are never touched.

    Suit symmetry: ``perms`` (g, 52) lists the suit permutations (as card maps)
    that fix hero's cards and the set of board + dead cards.  Only the
    completion that is smallest in its orbit under them is dealt, with weight
    ``g / |stabiliser|`` (the orbit's size).  The caller recovers the true counts
    as ``sum over perms p of acc[p(h)] / g``.  With ``g = 1`` (identity only)
    ``acc`` holds the true counts.

    On a complete board an opponent's hand is either a flush (a flush excludes
    quads and full houses with 7 cards) or ranked by its rank multiset alone.
    So per completion the kernel ranks the <= 91 rank pairs once (perfect hash
    of the board's rank-key sum plus two rank keys), and per opponent hand only
    looks up its rank pair and, if the board holds 3+ cards of a suit, the
    flush rank of that suit's mask with the hand's cards of that suit (0 when
    under five cards): ``rank = max(flush_rank, pair_rank)``.

    Args:
        t: Evaluator tables.
        hero: (2,) hero's cards.
        board: (nb,) known board cards.
        deck: (m,) ascending cards that can still come.
        perms: (g, 52) int64 suit permutations as card maps; row 0 the identity.
        acc: (1326,) int64 accumulator, indexed by colex hand number.

    Returns:
        The number of completions seen by each possible hand: C(m - 2, 5 - nb).
    """
    ck = t.card_key
    cm = t.card_mask
    fr = t.flush_rank
    g = perms.shape[0]
    rank_mask = np.int64(0xFFFFFFFF)
    rank_key = np.empty(13, dtype=np.int64)
    for r in range(13):
        rank_key[r] = ck[4 * r] & rank_mask
    bk = np.int64(0)
    bm = np.uint64(0)
    for c in board:
        bk += ck[c]
        bm |= cm[c]
    hk = ck[hero[0]] + ck[hero[1]]
    hm = cm[hero[0]] | cm[hero[1]]
    k = 5 - board.shape[0]
    m = deck.shape[0]
    rest = m - k
    idx = np.arange(k)
    in_runout = np.zeros(m, dtype=np.bool_)
    rcard = np.empty(rest, dtype=np.int64)
    rrank13 = np.empty(rest, dtype=np.int64)
    rrank = np.empty(rest, dtype=np.int64)
    rsuitbit = np.empty(rest, dtype=np.int64)
    avail = np.zeros(13, dtype=np.int64)
    pair_rank = np.zeros(13 * 13, dtype=np.int64)
    pair_out = np.zeros(13 * 13, dtype=np.int64)
    runout = np.empty(k, dtype=np.int64)
    image = np.empty(k, dtype=np.int64)
    while True:
        # Orbit weight of this completion, or 0 if a permuted copy is smaller.
        for i in range(k):
            runout[i] = deck[idx[i]]
        weight = np.int64(1)
        if g > 1:
            stab = 0
            for p in range(g):
                for i in range(k):
                    c = perms[p, runout[i]]
                    j = i  # insertion sort of the image
                    while j > 0 and image[j - 1] > c:
                        image[j] = image[j - 1]
                        j -= 1
                    image[j] = c
                cmp = 0
                for i in range(k):
                    if image[i] != runout[i]:
                        cmp = -1 if image[i] < runout[i] else 1
                        break
                if cmp < 0:
                    stab = 0
                    break
                if cmp == 0:
                    stab += 1
            if stab == 0:
                if not _next_combination(idx, k, m):
                    break
                continue
            weight = np.int64(g // stab)
        fk = bk
        fm = bm
        for i in range(k):
            c = deck[idx[i]]
            fk += ck[c]
            fm |= cm[c]
            in_runout[idx[i]] = True
        hero_rank = rank_from_key(t, fk + hk, fm | hm)
        # Suit with 3+ board cards (at most one on 5 cards), or -1.
        flush_suit = -1
        for s in range(4):
            if (fk >> (32 + 3 * s)) & 7 >= 3:
                flush_suit = s
        board_suit_mask = np.int64(0)
        if flush_suit >= 0:
            board_suit_mask = np.int64((fm >> np.uint64(16 * flush_suit)) & np.uint64(0x1FFF))
        for r in range(13):
            avail[r] = 0
        n = 0
        for i in range(m):
            if not in_runout[i]:
                c = deck[i]
                r = c >> 2
                rcard[n] = c
                rrank[n] = r
                rrank13[n] = 13 * r
                rsuitbit[n] = np.int64((c & 3) == flush_suit) << r
                avail[r] += 1
                n += 1
        for i in range(k):
            in_runout[idx[i]] = False
        # Non-flush rank of every rank pair an opponent can hold.
        board_ranks = fk & rank_mask
        for r1 in range(13):
            if avail[r1] == 0:
                continue
            for r2 in range(r1, 13):
                if avail[r2] == 0 or (r1 == r2 and avail[r1] < 2):
                    continue
                key = board_ranks + rank_key[r1] + rank_key[r2]
                v = np.int64(t.hash_values[t.hash_offsets[key >> 9] + (key & 511)])
                pair_rank[13 * r1 + r2] = v
                pair_rank[13 * r2 + r1] = v
                o = ((np.int64(hero_rank > v) << 32) | np.int64(hero_rank == v)) * weight
                pair_out[13 * r1 + r2] = o
                pair_out[13 * r2 + r1] = o
        if flush_suit < 0:
            for j in range(1, rest):
                base = (rcard[j] * (rcard[j] - 1)) >> 1
                rj = rrank[j]
                for i in range(j):
                    acc[base + rcard[i]] += pair_out[rrank13[i] + rj]
        else:
            for j in range(1, rest):
                base = (rcard[j] * (rcard[j] - 1)) >> 1
                rj = rrank[j]
                sj = board_suit_mask | rsuitbit[j]
                for i in range(j):
                    opp = max(np.int64(fr[sj | rsuitbit[i]]), pair_rank[rrank13[i] + rj])
                    acc[base + rcard[i]] += (
                        (np.int64(hero_rank > opp) << 32) | np.int64(hero_rank == opp)
                    ) * weight
        if not _next_combination(idx, k, m):
            break
    count = np.int64(1)
    for i in range(k):  # C(m - 2, k)
        count = count * (m - 2 - i) // (i + 1)
    return count


# ---------------------------------------------------------------------------
# Front door
# ---------------------------------------------------------------------------


def _distinct(*groups: list[int]) -> list[int]:
    used = [c for g in groups for c in g]
    if len(set(used)) != len(used):
        raise EquityInputError("a card appears twice among the hands, board and dead cards")
    return used


def deck_without(used: list[int]) -> np.ndarray:
    """Ascending int64 array of the cards not in ``used``."""
    keep = np.ones(52, dtype=bool)
    keep[used] = False
    return _ALL_CARDS[keep]


_ALL_CARDS = np.arange(52, dtype=np.int64)


def equity(
    hero: Sequence[int],
    villain: Sequence[int],
    board: Sequence[int] = (),
    dead: Sequence[int] = (),
) -> tuple[float, float, float]:
    """Exact (win, tie, loss) of hero's hand against villain's.

    Args:
        hero: Hero's two cards.
        villain: Villain's two cards.
        board: 0, 3, 4 or 5 known board cards.
        dead: Cards known to be out of the deck.

    Returns:
        Fractions of all board completions that hero wins, ties and loses
        (summing to 1).  Preflop enumerates all 1,712,304 boards (~20 ms).

    Raises:
        EquityInputError: on a bad card, a repeated card or a bad board size.
    """
    h = check_cards(hero, "hero", (2,))
    v = check_cards(villain, "villain", (2,))
    b = check_cards(board, "board", (0, 3, 4, 5))
    d = check_cards(dead, "dead", tuple(range(53)))
    deck = deck_without(_distinct(h, v, b, d))
    if len(deck) < 5 - len(b):
        raise EquityInputError("not enough cards left to complete the board")
    w, t, lo = _pair_counts(
        TABLES,
        np.array(h, dtype=np.int64),
        np.array(v, dtype=np.int64),
        np.array(b, dtype=np.int64),
        deck,
    )
    n = w + t + lo
    return w / n, t / n, lo / n


def matchup_counts(hero: Sequence[int], villain: Sequence[int]) -> tuple[int, int, int]:
    """Exact (wins, ties, losses) of hero against villain over all 1,712,304 preflop boards.

    One enumeration of the boards (~25 ms).

    Raises:
        EquityInputError: on a bad or repeated card.
    """
    h = check_cards(hero, "hero", (2,))
    v = check_cards(villain, "villain", (2,))
    if len(set(h + v)) != 4:
        raise EquityInputError("a card appears twice among the hands")
    empty = np.zeros(0, dtype=np.int64)
    w, t, lo = _pair_counts(
        TABLES, np.array(h, dtype=np.int64), np.array(v, dtype=np.int64), empty, deck_without(h + v)
    )
    return int(w), int(t), int(lo)


#: (24, 52) int64: each permutation of the four suits as a card -> card map, identity first.
SUIT_MAPS = suit_maps()


def _symmetries(hand: list[int], others: list[int]) -> np.ndarray:
    """Suit permutations (card maps, identity first) mapping each card set onto itself.

    Such a permutation maps hero's hand to itself and the board + dead cards to
    themselves, so it permutes the completions and the opponent hands while
    keeping every showdown's outcome.
    """
    in_hand = np.zeros(52, dtype=bool)
    in_hand[hand] = True
    in_others = np.zeros(52, dtype=bool)
    in_others[others] = True
    keep = in_hand[SUIT_MAPS[:, hand]].all(axis=1) & in_others[SUIT_MAPS[:, others]].all(axis=1)
    return np.ascontiguousarray(SUIT_MAPS[keep])


def vector_counts(
    hero: list[int], board: list[int], dead: list[int]
) -> tuple[np.ndarray, np.ndarray, int]:
    """(wins, ties) per hand as int64 arrays, and the completions per possible hand.

    The exact counts behind :func:`equity_vector`, by enumeration (checked
    cards: see :func:`check_cards`).
    """
    deck = deck_without(_distinct(hero, board, dead))
    if len(deck) < 7 - len(board):
        raise EquityInputError("not enough cards left for an opponent hand and the board")
    # Symmetries pay off preflop and on the flop; later streets are cheap anyway.
    perms = _symmetries(hero, board + dead) if len(board) <= 3 else SUIT_MAPS[:1]
    acc = np.zeros(NUM_HANDS, dtype=np.int64)
    count = _vector_counts(
        TABLES, np.array(hero, dtype=np.int64), np.array(board, dtype=np.int64), deck, perms, acc
    )
    wins = acc >> 32
    ties = acc & 0xFFFFFFFF
    if len(perms) > 1:  # undo the orbit reduction: average over the symmetry group
        hand_maps = HAND_INDEX[perms[:, HAND_CARDS[:, 0]], perms[:, HAND_CARDS[:, 1]]]
        wins = wins[hand_maps].sum(axis=0) // len(perms)
        ties = ties[hand_maps].sum(axis=0) // len(perms)
    return wins, ties, int(count)


def equity_vector(
    hero: Sequence[int], board: Sequence[int] = (), dead: Sequence[int] = ()
) -> np.ndarray:
    """LBR's equity e(h) of hero against every opponent hand h.

    e(h) = (wins + ties / 2) / completions, over every completion of the board
    from the deck minus hero's cards, the board, ``dead`` and h itself.

    Args:
        hero: Hero's two cards.
        board: 0, 3, 4 or 5 board cards.  With no board and no dead cards the
            answer comes from the exact preflop table
            (:func:`acpc_lbr.preflop.preflop_equity_vector`, loaded on first
            use); preflop with dead cards enumerates (seconds).
        dead: Further cards out of the deck (opponents' hands holding one get 0).

    Returns:
        float64 array of shape (1326,) in colex hand order.  Hands that share a
        card with hero, the board or ``dead`` are impossible and get 0; use
        :func:`possible_hands` to mask them.

    Raises:
        EquityInputError: on a bad card, a repeated card or a bad board size.

    Timing (one thread, ``bench/bench_evaluator.py``): river ~0.015 ms, turn
    ~0.07 ms, flop ~1.5 ms; preflop from the table ~0.01 ms (first call
    ~0.2 s to load it), preflop with dead cards 0.6-1.6 s.
    """
    h = check_cards(hero, "hero", (2,))
    b = check_cards(board, "board", (0, 3, 4, 5))
    d = check_cards(dead, "dead", tuple(range(53)))
    if not b and not d:
        return preflop_equity_vector(h)
    wins, ties, count = vector_counts(h, b, d)
    return (wins + 0.5 * ties) / count


def equity_vs_range(
    hero: Sequence[int],
    villain_hands: np.ndarray,
    board: Sequence[int] = (),
    weights: np.ndarray | None = None,
    dead: Sequence[int] = (),
) -> tuple[float, float, float]:
    """Exact (win, tie, loss) of hero against a weighted range of villain hands.

    The result is the weighted average over villain hands of each hand's
    exact (win, tie, loss).  Villain hands that share a card with hero, the
    board or ``dead`` are skipped (their weight counts as 0).  A hand may be
    listed in either card order and more than once.

    Args:
        hero: Hero's two cards.
        villain_hands: Integer array of shape (m, 2).
        board: 0, 3, 4 or 5 board cards.
        weights: Non-negative weights of shape (m,); None means all 1.
        dead: Further cards out of the deck.

    Returns:
        (win, tie, loss), summing to 1.  Few hands are enumerated one by one;
        from 64 distinct hands on, one pass ranks all 1326 hands on every
        completion (postflop: milliseconds), or, preflop with no dead cards,
        the exact counts come from the precomputed preflop table (instant).

    Raises:
        EquityInputError: on bad cards, bad shapes, negative or non-finite
            weights, or when no villain hand with positive weight is possible.
    """
    h = check_cards(hero, "hero", (2,))
    b = check_cards(board, "board", (0, 3, 4, 5))
    d = check_cards(dead, "dead", tuple(range(53)))
    used = _distinct(h, b, d)
    hand_w = _villain_hand_weights(villain_hands, weights, used)
    distinct = np.flatnonzero(hand_w)
    if len(distinct) < _FEW_HANDS:
        return _equity_hand_by_hand(h, b, used, hand_w, distinct)
    if not b and not d:  # preflop: the same exact counts, from the precomputed table
        wins, ties = preflop_counts_vector(h)
        count = NUM_BOARDS
    else:
        wins, ties, count = vector_counts(h, b, d)
    total = hand_w.sum() * count
    return (
        float(hand_w @ wins) / total,
        float(hand_w @ ties) / total,
        float(hand_w @ (count - wins - ties)) / total,
    )


def _villain_hand_weights(
    villain_hands: np.ndarray, weights: np.ndarray | None, used: list[int]
) -> np.ndarray:
    """(1326,) float64: each possible villain hand's total weight (0 for the impossible ones).

    Raises:
        EquityInputError: as :func:`equity_vs_range` (bad hands or weights, nothing possible).
    """
    vh = np.asarray(villain_hands)
    if vh.dtype == np.bool_ or not np.issubdtype(vh.dtype, np.integer):
        raise EquityInputError(f"villain_hands must be integers, got dtype {vh.dtype}")
    if vh.ndim != 2 or vh.shape[1] != 2:
        raise EquityInputError(f"villain_hands must have shape (m, 2), got {vh.shape}")
    if vh.size and (vh.min() < 0 or vh.max() > 51):
        raise EquityInputError("villain card indices must be in 0..51")
    if np.any(vh[:, 0] == vh[:, 1]):
        raise EquityInputError("a villain hand repeats a card")
    if weights is None:
        w = np.ones(len(vh), dtype=np.float64)
    else:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (len(vh),):
            raise EquityInputError(f"weights must have shape ({len(vh)},), got {w.shape}")
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise EquityInputError("weights must be finite and non-negative")
    idx = HAND_INDEX[vh[:, 0], vh[:, 1]] if len(vh) else np.zeros(0, dtype=np.int64)
    ok = possible_hands(used)[idx] & (w > 0)
    if not np.any(ok):
        raise EquityInputError("no villain hand with positive weight is possible")
    # A hand listed twice (or in both card orders) adds its weights.
    return np.bincount(idx[ok], weights=w[ok], minlength=NUM_HANDS)


def _equity_hand_by_hand(
    h: list[int], b: list[int], used: list[int], hand_w: np.ndarray, distinct: np.ndarray
) -> tuple[float, float, float]:
    """(win, tie, loss) against a few villain hands, each enumerated on its own.

    Below :data:`_FEW_HANDS` distinct hands this is cheaper than ranking all
    1326 hands on every completion.
    """
    win = tie = loss = 0.0
    deck_cards = set(range(52)) - set(used)
    for hand in distinct:
        c1, c2 = (int(x) for x in HAND_CARDS[hand])
        deck = np.array(sorted(deck_cards - {c1, c2}), dtype=np.int64)
        cw, ct, cl = _pair_counts(
            TABLES,
            np.array(h, dtype=np.int64),
            np.array([c1, c2], dtype=np.int64),
            np.array(b, dtype=np.int64),
            deck,
        )
        n = cw + ct + cl
        win += hand_w[hand] * cw / n
        tie += hand_w[hand] * ct / n
        loss += hand_w[hand] * cl / n
    total = hand_w.sum()
    return win / total, tie / total, loss / total


__all__ = [
    "HAND_CARDS",
    "HAND_INDEX",
    "NUM_HANDS",
    "SUIT_MAPS",
    "EquityInputError",
    "check_cards",
    "deck_without",
    "equity",
    "equity_vector",
    "equity_vs_range",
    "hand_index",
    "matchup_counts",
    "possible_hands",
    "vector_counts",
]
