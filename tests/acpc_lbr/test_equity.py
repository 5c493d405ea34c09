"""Exact equities agree with brute-force enumeration over an independent evaluator.

Oracle: every board completion dealt in Python and ranked by phevaluator
(``evaluate_cards``, lower is better, same card numbering as ACPC); the naive
twin in ``tests/acpc_lbr/naive.py`` for a few small spots.
"""

from __future__ import annotations

import os
import subprocess
import sys
from itertools import combinations
from math import comb
from pathlib import Path

import numba
import numpy as np
import pytest

from acpc_lbr import equity as eq
from acpc_lbr.equity import (
    HAND_CARDS,
    HAND_INDEX,
    EquityInputError,
    equity,
    equity_vector,
    equity_vs_range,
    hand_index,
    possible_hands,
)
from acpc_lbr.evaluator import EvaluatorInputError

from . import naive

REPO = Path(__file__).resolve().parents[2]
JIT = not numba.config.DISABLE_JIT
C = naive.cards


def assert_matches_brute_force(
    hero: list[int],
    villain: list[int],
    board: list[int],
    dead: list[int] = (),  # type: ignore[assignment]
) -> None:
    """equity() equals the brute-force fractions to float precision."""
    w, t, lo = naive.brute_force_counts(hero, villain, board, dead)
    n = w + t + lo
    got = equity(hero, villain, board, dead)
    assert got == pytest.approx((w / n, t / n, lo / n), abs=1e-12)


def random_spot(rng: np.random.Generator, n_board: int) -> tuple[list[int], list[int], list[int]]:
    """Random disjoint hero, villain and board."""
    cards = rng.choice(52, 4 + n_board, replace=False).tolist()
    return cards[:2], cards[2:4], cards[4:]


# ---------------------------------------------------------------------------
# Hand numbering
# ---------------------------------------------------------------------------


def test_hand_index_colex_examples() -> None:
    """Colex order: 2c2d=0, 2c2h=1, 2d2h=2, 2c2s=3, AhAs=1325 (range-query.md)."""
    assert hand_index(*C("2c2d")) == 0
    assert hand_index(*C("2c2h")) == 1
    assert hand_index(*C("2d2h")) == 2
    assert hand_index(*C("2c2s")) == 3
    assert hand_index(*C("AhAs")) == 1325
    assert hand_index(*C("AsAh")) == 1325


def test_hand_tables_round_trip() -> None:
    """HAND_CARDS lists every pair once, low card first, and HAND_INDEX inverts it."""
    assert HAND_CARDS.shape == (1326, 2)
    assert np.all(HAND_CARDS[:, 0] < HAND_CARDS[:, 1])
    expected = sorted(combinations(range(52), 2), key=lambda p: (p[1], p[0]))
    assert [tuple(p) for p in HAND_CARDS.tolist()] == expected
    assert np.array_equal(HAND_INDEX[HAND_CARDS[:, 0], HAND_CARDS[:, 1]], np.arange(1326))
    assert np.array_equal(HAND_INDEX[HAND_CARDS[:, 1], HAND_CARDS[:, 0]], np.arange(1326))


def test_hand_index_agrees_with_protocol_hands() -> None:
    """Our 2-card numbering is protocol.hands.hand_index's numbering for hold'em."""
    from protocol.hands import hand_index as colex_index

    for h in (0, 1, 2, 3, 700, 1325):
        assert colex_index(tuple(int(c) for c in HAND_CARDS[h])) == h


def test_possible_hands_mask() -> None:
    """possible_hands() drops exactly the hands holding a dead card."""
    assert possible_hands().all()
    dead = C("AsKd7h")
    mask = possible_hands(dead)
    assert mask.sum() == comb(49, 2)
    for h in (hand_index(*C("AsQc")), hand_index(*C("2c7h")), hand_index(*C("KdAs"))):
        assert not mask[h]
    assert mask[hand_index(*C("QcJc"))]


# ---------------------------------------------------------------------------
# equity() against brute force
# ---------------------------------------------------------------------------


HAND_PICKED = [
    ("AsKd", "QhQc", "2c7d9h"),  # overcards vs pair on the flop
    ("AhKh", "QsQc", "2h7h9c"),  # flush draw + overs
    ("5c4c", "AsAd", "3c2cKh"),  # straight flush draw (wheel)
    ("AsAd", "AhAc", "Ks7d2c"),  # split pot (always ties unless a flush)
    ("JsTs", "9d9c", "8s7s6h"),  # open-ended straight flush draw
    ("AsKd", "QhQc", "2c7d9hTs"),  # turn
    ("6h6d", "AcKc", "Qc9c2c3h"),  # turn, villain holds the nut flush draw
    ("AsKd", "QhQc", "2c7d9hTs3s"),  # river
    ("7c2d", "7h2s", "AsKsQsJsTs"),  # river: royal board, tie
    ("As2d", "KdKh", "3c4d5h9s9c"),  # river: wheel beats two pair
]


@pytest.mark.parametrize("hero,villain,board", HAND_PICKED)
def test_equity_hand_picked_spots(hero: str, villain: str, board: str) -> None:
    """Hand-picked flop/turn/river spots equal phevaluator brute force."""
    assert_matches_brute_force(C(hero), C(villain), C(board))


@pytest.mark.parametrize("n_board", [3, 4, 5])
def test_equity_random_spots(n_board: int) -> None:
    """10 random spots per street equal phevaluator brute force."""
    rng = np.random.default_rng(n_board)
    for _ in range(10 if JIT else 2):
        assert_matches_brute_force(*random_spot(rng, n_board))


def test_equity_preflop_with_dead_cards() -> None:
    """Preflop with 22 dead cards (C(26,5) boards): equals brute force."""
    rng = np.random.default_rng(99)
    cards = rng.choice(52, 26 if JIT else 36, replace=False).tolist()
    assert_matches_brute_force(cards[:2], cards[2:4], [], cards[4:])


@pytest.mark.skipif(not JIT, reason="1.7 million boards in pure Python")
def test_equity_preflop_full_enumeration() -> None:
    """AsKd vs QhQc preflop over all 1,712,304 boards equals brute force (~4 s)."""
    assert_matches_brute_force(C("AsKd"), C("QhQc"), [])


@pytest.mark.slow
@pytest.mark.parametrize("hero,villain", [("AhAs", "KdKc"), ("7c2d", "8h9h"), ("AcKc", "AdKd")])
def test_equity_preflop_more_spots(hero: str, villain: str) -> None:
    """More preflop spots over all boards equal brute force (slow: ~4 s each)."""
    assert_matches_brute_force(C(hero), C(villain), [])


def test_equity_against_naive_twin() -> None:
    """A turn spot and a river spot agree with the naive best-5-of-7 twin."""
    for hero, villain, board in [("AsKd", "QhQc", "2c7d9hTs"), ("5c4c", "AsAd", "3c2cKh6d")]:
        assert equity(C(hero), C(villain), C(board)) == pytest.approx(
            naive.equity(C(hero), C(villain), C(board)), abs=1e-12
        )


def test_equity_sums_to_one_and_is_symmetric() -> None:
    """win + tie + loss == 1 and equity(a, b).win == equity(b, a).loss."""
    rng = np.random.default_rng(5)
    for n_board in (3, 4, 5, 3, 4, 5):
        hero, villain, board = random_spot(rng, n_board)
        w, t, lo = equity(hero, villain, board)
        w2, t2, lo2 = equity(villain, hero, board)
        assert w + t + lo == pytest.approx(1.0, abs=1e-15)
        assert (w, t, lo) == (lo2, t2, w2)


def test_equity_accepts_numpy_inputs() -> None:
    """Numpy integer arrays work as card sequences."""
    spot = [np.array(C(x), dtype=np.int8) for x in ("AsKd", "QhQc", "2c7d9h")]
    assert equity(*spot) == equity(C("AsKd"), C("QhQc"), C("2c7d9h"))


@pytest.mark.parametrize(
    "hero,villain,board,dead",
    [
        ([51], C("QhQc"), [], []),  # one hero card
        (C("AsKd"), C("QhQc"), C("2c7d"), []),  # two board cards
        (C("AsKd"), C("QhQc"), C("2c7d9hTs3s4s"), []),  # six board cards
        (C("AsKd"), C("AsQc"), [], []),  # shared card
        (C("AsKd"), C("QhQc"), C("2c7d9h"), C("9h")),  # dead card on the board
        (C("AsKd"), [50, 52], [], []),  # out of range
        (C("AsKd"), [50, -1], [], []),  # negative
        (C("AsKd"), [50.0, 49.0], [], []),  # not integers
        (C("AsKd"), C("QhQc"), [], list(range(4, 50))),  # not enough cards left
    ],
)
def test_equity_rejects_bad_input(
    hero: list[int], villain: list[int], board: list[int], dead: list[int]
) -> None:
    """equity() raises EquityInputError (a ValueError) on bad input."""
    with pytest.raises(EquityInputError):
        equity(hero, villain, board, dead)
    assert issubclass(EquityInputError, EvaluatorInputError)
    assert issubclass(EquityInputError, ValueError)


# ---------------------------------------------------------------------------
# equity_vector()
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n_board", [3, 4, 5])
def test_equity_vector_matches_pairwise_equity(n_board: int) -> None:
    """Sampled entries equal win + tie/2 of pairwise equity(); impossible hands are 0."""
    rng = np.random.default_rng(40 + n_board)
    for spot in range(8 if JIT else 1):
        cards = rng.choice(52, 2 + n_board, replace=False).tolist()
        if spot % 2:  # every other spot: a board of one suit, to stress flushes
            suit = int(rng.integers(4))
            suited = [c for c in range(52) if c % 4 == suit]
            cards[2:] = rng.choice(suited, n_board, replace=False).tolist()
            cards[:2] = rng.choice(
                [c for c in range(52) if c not in cards[2:]], 2, replace=False
            ).tolist()
        hero, board = cards[:2], cards[2:]
        vec = equity_vector(hero, board)
        mask = possible_hands(hero + board)
        assert vec.shape == (1326,) and vec.dtype == np.float64
        assert np.all(vec[~mask] == 0)
        assert np.all((vec >= 0) & (vec <= 1))
        for h in rng.choice(np.flatnonzero(mask), 25 if JIT else 5, replace=False):
            w, t, _ = equity(hero, HAND_CARDS[h].tolist(), board)
            assert vec[h] == pytest.approx(w + t / 2, abs=1e-12)


def test_equity_vector_river_against_naive() -> None:
    """On a river every possible hand's entry matches the naive twin's showdown."""
    hero, board = C("AsKd"), C("Ks9s5s2h2d")
    vec = equity_vector(hero, board)
    for h in np.flatnonzero(possible_hands(hero + board))[:: 7 if JIT else 70]:
        opp = HAND_CARDS[h].tolist()
        result = naive.compare(hero + board, opp + board)
        assert vec[h] == {1: 1.0, 0: 0.5, -1: 0.0}[result]


def test_equity_vector_with_dead_cards_preflop() -> None:
    """Board of 0 cards with 25 dead cards: entries equal brute-force pairwise equity."""
    rng = np.random.default_rng(8)
    cards = rng.choice(52, 27 if JIT else 37, replace=False).tolist()
    hero, dead = cards[:2], cards[2:]
    vec = equity_vector(hero, [], dead)
    mask = possible_hands(hero + dead)
    assert np.all(vec[~mask] == 0)
    for h in rng.choice(np.flatnonzero(mask), 5 if JIT else 2, replace=False):
        w, t, lo = naive.brute_force_counts(hero, HAND_CARDS[h].tolist(), [], dead)
        assert vec[h] == pytest.approx((w + t / 2) / (w + t + lo), abs=1e-12)


@pytest.mark.parametrize(
    "hero,board,group_size",
    [
        ("AsKd", "2c2h7s", 2),  # swapping clubs and hearts fixes hero and board
        ("AsKs", "2c2d2h", 6),  # any permutation of clubs, diamonds, hearts
        ("7h7d", "2c2s9c9s", 4),  # swap h/d (the pair) and c/s (the board)
        ("AsKd", "2c7h9h", 1),  # no symmetry
    ],
)
def test_equity_vector_with_suit_symmetry(hero: str, board: str, group_size: int) -> None:
    """Boards with suit symmetries (orbit-weighted enumeration): every entry == equity()."""
    h, b = C(hero), C(board)
    assert len(eq._symmetries(h, b)) == group_size
    vec = equity_vector(h, b)
    mask = possible_hands(h + b)
    for opp in np.flatnonzero(mask)[:: 1 if JIT else 50]:
        w, t, _ = equity(h, HAND_CARDS[opp].tolist(), b)
        assert vec[opp] == pytest.approx(w + t / 2, abs=1e-12)


def test_symmetry_groups() -> None:
    """The suit permutations kept fix hero's hand and the board as sets; identity first."""
    assert len(eq._symmetries(C("AsKd"), [])) == 2
    assert len(eq._symmetries(C("AsKs"), [])) == 6
    assert len(eq._symmetries(C("AsAd"), [])) == 4
    perms = eq._symmetries(C("AsAd"), C("2c"))
    assert len(perms) == 2
    assert np.array_equal(perms[0], np.arange(52))


@pytest.mark.skipif(not JIT, reason="2.1 million boards in pure Python")
@pytest.mark.parametrize("hero", ["AsKs", "8h8c"])
def test_equity_vector_preflop_symmetric(hero: str) -> None:
    """Preflop vector (suited: 6 symmetries, pair: 4) matches equity() on sampled hands (~1 s)."""
    h = C(hero)
    vec = equity_vector(h, [])
    rng = np.random.default_rng(12)
    for opp in rng.choice(np.flatnonzero(possible_hands(h)), 4, replace=False):
        w, t, _ = equity(h, HAND_CARDS[opp].tolist(), [])
        assert vec[opp] == pytest.approx(w + t / 2, abs=1e-12)


def test_equity_vector_rejects_bad_input() -> None:
    """equity_vector() validates hero, board size and repeated cards."""
    with pytest.raises(EquityInputError):
        equity_vector(C("AsKd"), C("2c7d"))
    with pytest.raises(EquityInputError):
        equity_vector(C("AsKd"), C("2c7dAs"))
    with pytest.raises(EquityInputError):
        equity_vector(C("As"), C("2c7d9h"))


# ---------------------------------------------------------------------------
# equity_vs_range()
# ---------------------------------------------------------------------------


def test_equity_vs_range_is_weighted_average() -> None:
    """A small weighted range equals the weighted mean of pairwise equities."""
    hero, board = C("AsKd"), C("2c7d9h")
    villains = [C("QhQc"), C("9c9s"), C("AhTh"), C("7c8c")]
    weights = np.array([1.0, 0.5, 2.0, 0.25])
    expected = np.zeros(3)
    for v, w in zip(villains, weights):
        expected += w * np.array(equity(hero, v, board))
    expected /= weights.sum()
    got = equity_vs_range(hero, np.array(villains), board, weights)
    assert got == pytest.approx(tuple(expected), abs=1e-12)


def test_equity_vs_range_skips_colliding_hands() -> None:
    """Villain hands sharing a card with hero or board are ignored, whatever their weight."""
    hero, board = C("AsKd"), C("2c7d9h")
    clean = equity_vs_range(hero, np.array([C("QhQc")]), board)
    mixed = equity_vs_range(
        hero, np.array([C("QhQc"), C("AsQs"), C("9hTh")]), board, np.array([1.0, 5.0, 7.0])
    )
    assert mixed == pytest.approx(clean, abs=1e-15)
    with pytest.raises(EquityInputError):
        equity_vs_range(hero, np.array([C("AsQs")]), board)
    with pytest.raises(EquityInputError):
        equity_vs_range(hero, np.array([C("QhQc")]), board, np.array([0.0]))


@pytest.mark.parametrize("board", ["2c7d9h", "2c7d9hTs", "2c7d9hTs3s"])
def test_equity_vs_random_range_both_paths(board: str) -> None:
    """'random' range (all 1326 hands, colliding ones skipped): one-pass == hand-by-hand."""
    hero = C("AsKd")
    b = C(board)
    full = equity_vs_range(hero, HAND_CARDS, b)
    mask = possible_hands(hero + b)
    vec = equity_vector(hero, b)
    assert full[0] + full[1] / 2 == pytest.approx(vec[mask].mean(), abs=1e-12)
    assert sum(full) == pytest.approx(1.0, abs=1e-12)
    # Hand-by-hand path (fewer than 64 distinct hands) on a subset, against one-pass.
    subset = np.flatnonzero(mask)[::40]
    few = equity_vs_range(hero, HAND_CARDS[subset], b)
    many = equity_vs_range(
        hero, HAND_CARDS, b, weights=np.isin(np.arange(1326), subset).astype(float)
    )
    assert few == pytest.approx(many, abs=1e-12)


def test_equity_vs_range_duplicates_and_card_order() -> None:
    """A hand listed twice counts twice; card order within a hand does not matter."""
    hero, board = C("AsKd"), C("2c7d9h")
    a = equity_vs_range(hero, np.array([C("QhQc"), C("QcQh"), C("9c9s")]), board)
    b = equity_vs_range(hero, np.array([C("QhQc"), C("9c9s")]), board, np.array([2.0, 1.0]))
    assert a == pytest.approx(b, abs=1e-15)


def test_equity_vs_range_rejects_bad_input() -> None:
    """Shapes, dtypes, card ranges and weights are validated."""
    hero, board = C("AsKd"), C("2c7d9h")
    bad_calls = [
        lambda: equity_vs_range(hero, np.array([1, 2, 3]), board),
        lambda: equity_vs_range(hero, np.array([[1.0, 2.0]]), board),
        lambda: equity_vs_range(hero, np.array([[1, 52]]), board),
        lambda: equity_vs_range(hero, np.array([[3, 3]]), board),
        lambda: equity_vs_range(hero, np.array([[1, 2]]), board, np.array([-1.0])),
        lambda: equity_vs_range(hero, np.array([[1, 2]]), board, np.array([np.nan])),
        lambda: equity_vs_range(hero, np.array([[1, 2]]), board, np.array([1.0, 2.0])),
        lambda: equity_vs_range(hero, np.zeros((0, 2), dtype=int), board),
    ]
    for call in bad_calls:
        with pytest.raises(EquityInputError):
            call()


@pytest.mark.slow
def test_equity_vs_random_range_preflop() -> None:
    """Preflop vs every hand: one pass over 2.1M boards == mean of pairwise equities (slow)."""
    hero = C("AsKd")
    w, t, _ = equity_vs_range(hero, HAND_CARDS, [])
    rng = np.random.default_rng(1)
    mask = possible_hands(hero)
    vec = equity_vector(hero, [])
    assert w + t / 2 == pytest.approx(vec[mask].mean(), abs=1e-12)
    for h in rng.choice(np.flatnonzero(mask), 5, replace=False):
        pw, pt, _ = equity(hero, HAND_CARDS[h].tolist(), [])
        assert vec[h] == pytest.approx(pw + pt / 2, abs=1e-12)


# ---------------------------------------------------------------------------
# Pure-Python mode
# ---------------------------------------------------------------------------


def test_pure_python_mode_agrees() -> None:
    """With NUMBA_DISABLE_JIT=1 the river vector and a turn equity are unchanged."""
    code = (
        "from acpc_lbr.equity import equity, equity_vector\n"
        "v = equity_vector([51, 46], [0, 5, 30, 33, 44])\n"
        "print(repr(v.tolist()), repr(equity([51, 46], [40, 41], [0, 5, 30, 33])))\n"
    )
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        check=True,
        timeout=300,
    )
    vec_text, eq_text = out.stdout.strip().split(" (")
    assert eval(vec_text) == equity_vector([51, 46], [0, 5, 30, 33, 44]).tolist()
    assert eval("(" + eq_text) == equity([51, 46], [40, 41], [0, 5, 30, 33])


def test_module_exports() -> None:
    """The public names others rely on exist."""
    for name in ("equity", "equity_vs_range", "equity_vector", "possible_hands", "hand_index"):
        assert callable(getattr(eq, name))
