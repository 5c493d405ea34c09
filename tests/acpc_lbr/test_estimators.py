"""Tests of acpc_lbr.estimators: pairing, exact merges, imaginary observations."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pytest

from acpc_lbr.estimators import HandOutcome, MatchEstimates, imaginary_observation
from protocol.cards import cards_from_text
from protocol.gamedef import load_game
from protocol.hands import hand_index
from protocol.ranking import rank_hand


def _outcomes(seed: int, deals: int) -> list[HandOutcome]:
    rng = np.random.default_rng(seed)
    out = []
    for deal in range(deals):
        for half in (0, 1):
            chips = float(rng.normal(0, 100))
            io = None if rng.random() < 0.2 else chips + float(rng.normal(0, 5))
            out.append(HandOutcome(deal, half, chips, io))
    return out


def test_duplicate_pairs_by_deal() -> None:
    """A pair's unit is the mean of its two halves, whatever order they arrive in."""
    estimates = MatchEstimates()
    estimates.add(HandOutcome(3, 1, 100.0, 90.0))
    estimates.add(HandOutcome(7, 0, -50.0, None))
    estimates.add(HandOutcome(3, 0, -20.0, -10.0))
    assert estimates.duplicate.n == 1 and estimates.duplicate.mean == 40.0
    assert estimates.duplicate_io.n == 1 and estimates.duplicate_io.mean == 40.0
    assert estimates.raw.n == 3 and estimates.io.n == 2
    assert list(estimates.pending) == [(7, 0)]


def test_merge_of_batches_equals_one_run() -> None:
    """Batches merged, even with pairs split across them, equal one run over all hands."""
    outcomes = _outcomes(1, 300)
    whole = MatchEstimates()
    for o in outcomes:
        whole.add(o)
    # split so that some pairs straddle the cut
    parts = [outcomes[:101], outcomes[101:377], outcomes[377:]]
    merged = MatchEstimates()
    for part in parts:
        batch = MatchEstimates()
        for o in part:
            batch.add(o)
        merged.merge(MatchEstimates.from_dict(batch.to_dict(big_blind=100)))
    for name in ("raw", "duplicate", "io", "duplicate_io", "io_minus_raw"):
        a, b = whole.estimator(name), merged.estimator(name)
        assert a.n == b.n, name
        assert (a.mean, a.m2) == (b.mean, b.m2), name  # bit for bit: exact sums
    assert whole.pending == merged.pending == {}


def test_units() -> None:
    """mbb/g is 1000·chips/big blind; bb/hand is chips/big blind."""
    estimates = MatchEstimates()
    for chips in (100.0, 300.0):
        estimates.add(HandOutcome(0, 0, chips))
    report = estimates.to_dict(big_blind=100)
    assert report["raw"]["chips"]["mean"] == 200.0
    assert report["raw"]["mbb_per_game"]["mean"] == 2000.0
    assert report["raw"]["bb_per_hand"]["mean"] == 2.0


def _slow_io(game, measured_position, measured_cards, board, spent, weight_of) -> float:
    """Obviously-correct IO: loop over opponent hands, rank with the plain ranker."""
    num = den = 0.0
    for hand in combinations(game.cards, game.num_hole_cards):
        if set(hand) & (set(measured_cards) | set(board)):
            continue
        w = weight_of(hand)
        mine = rank_hand(list(measured_cards) + list(board))
        theirs = rank_hand(list(hand) + list(board))
        me, opp = spent[measured_position], spent[1 - measured_position]
        u = opp if mine > theirs else (-me if mine < theirs else 0.0)
        num += w * u
        den += w
    return num / den


@pytest.mark.parametrize("game_name", ["leduc", "nolimit"])
def test_io_matches_slow_reference(game_name: str) -> None:
    """IO equals the posterior-weighted average of a slow reference on random weights."""
    game = load_game(game_name)
    rng = np.random.default_rng(7)
    numbers = {card: k for k, card in enumerate(game.cards)}
    for trial in range(5):
        cards = [int(c) for c in rng.permutation(game.cards)]
        hero = cards[: game.num_hole_cards]
        board = cards[game.num_hole_cards : game.num_hole_cards + game.total_board_cards]
        weights = rng.random(game.num_hands)
        spent = [int(rng.integers(1, 50))] * 2
        position = trial % 2

        def weight_of(hand: tuple[int, ...], weights: np.ndarray = weights) -> float:
            return float(weights[hand_index([numbers[c] for c in hand])])

        fast = imaginary_observation(game, position, hero, board, spent, weights)
        slow = _slow_io(game, position, hero, board, spent, weight_of)
        assert math.isclose(fast, slow, rel_tol=1e-9, abs_tol=1e-9)


def test_io_from_lbrs_river_equity_is_the_ranked_io_to_the_bit() -> None:
    """On a complete hold'em board, IO read from LBR's equity vector (the live dealer's way)
    equals IO from ranking every hand, bit for bit: ties, both positions, uneven commitments."""
    from acpc_lbr.lbr import equity_function

    game = load_game("nolimit")
    equity = equity_function(game)
    rng = np.random.default_rng(11)
    for trial in range(40):
        cards = [int(c) for c in rng.permutation(52)]
        hero, board = cards[:2], cards[2:7]
        if trial % 4 == 0:  # a board that plays: many ties
            board = cards_from_text("AsKsQsJsTs") if trial % 8 == 0 else cards_from_text("2c2d2h2s3c")
            hero = [c for c in cards if c not in board][:2]
        weights = rng.random(game.num_hands) * (rng.random(game.num_hands) < 0.5)
        spent = [int(rng.integers(100, 20001)), int(rng.integers(100, 20001))] if trial % 3 == 0 else [700, 700]
        position = trial % 2
        vector = equity(hero, board)
        ranked = imaginary_observation(game, position, hero, board, spent, weights)
        read = imaginary_observation(game, position, hero, board, spent, weights, vector)
        assert np.float64(read).tobytes() == np.float64(ranked).tobytes(), (trial, read, ranked)


def test_io_with_a_known_hand_is_the_outcome() -> None:
    """If the answers single out the opponent's real hand, IO equals the real outcome."""
    game = load_game("nolimit")
    hero, villain = cards_from_text("AsAd"), cards_from_text("KsKd")
    board = cards_from_text("2c7d9hTs3c")
    weights = np.zeros(game.num_hands)
    weights[hand_index(villain)] = 1.0
    assert imaginary_observation(game, 0, hero, board, [300, 300], weights) == 300.0
    assert imaginary_observation(game, 1, villain, board, [300, 300], np.ones(1326)) < 300.0
