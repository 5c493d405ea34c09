"""Range bookkeeping of lbr.md: uniform start, board removal, Bayesian update, inconsistencies."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from acpc_lbr.ranges import (
    RangeTracker,
    bayes_update,
    compatible_mask,
    hand_table,
    remove_cards,
    uniform_range,
)
from protocol.cards import cards_from_text
from protocol.gamedef import load_game
from protocol.hands import all_hands, hand_index

HOLDEM = load_game("nolimit")
LEDUC = load_game("leduc")
KUHN = load_game("kuhn")


@pytest.mark.parametrize("game", [HOLDEM, LEDUC, KUHN], ids=["holdem", "leduc", "kuhn"])
def test_hand_table_follows_colex_hand_order(game):
    """Hand i of the table holds the cards whose numbers have colex index i (range-query.md)."""
    table = hand_table(game)
    assert len(table.hand_cards) == game.num_hands
    for i, numbers in enumerate(all_hands(game.deck_size, game.num_hole_cards)):
        assert table.hand_cards[i] == tuple(game.cards[k] for k in numbers)
        assert hand_index(numbers) == i
        assert table.contains[list(table.hand_cards[i]), i].all()
    assert table.contains.sum() == game.num_hands * game.num_hole_cards


def test_hand_table_holdem_ends():
    """2c2d is hand 0 and AhAs hand 1325, as range-query.md states."""
    table = hand_table(HOLDEM)
    assert table.hand_cards[0] == cards_from_text("2c2d")
    assert table.hand_cards[1325] == cards_from_text("AhAs")


def test_overlaps_matches_set_intersection():
    """The overlap matrix says whether two hold'em hands share a card (sampled pairs)."""
    table = hand_table(HOLDEM)
    rng = np.random.default_rng(7)
    for i, j in rng.integers(0, HOLDEM.num_hands, size=(500, 2)):
        expected = bool(set(table.hand_cards[i]) & set(table.hand_cards[j]))
        assert table.overlaps[i, j] == expected


def test_uniform_range_holdem_excludes_hole_cards():
    """With two hole cards dead, C(50,2) = 1225 hands share the mass equally."""
    hole = cards_from_text("AsKd")
    pi = uniform_range(HOLDEM, hole)
    assert pi.dtype == np.float64 and pi.shape == (1326,)
    assert np.count_nonzero(pi) == comb(50, 2)
    assert pi.sum() == pytest.approx(1.0)
    assert np.allclose(pi[pi > 0], 1 / comb(50, 2))
    table = hand_table(HOLDEM)
    for i in np.flatnonzero(pi == 0):
        assert set(table.hand_cards[i]) & set(hole)


def test_remove_cards_zeroes_board_hands_and_renormalises():
    """A flop leaves C(47,2) = 1081 compatible hands; relative weights are kept."""
    hole = cards_from_text("AsKd")
    flop = cards_from_text("2c7h9s")
    pi = uniform_range(HOLDEM, hole)
    pi[0] *= 3.0  # 2c2d: blocked by the flop
    pi[hand_index((50, 51))] *= 2.0  # AhAs: blocked by the hole (already 0)
    pi /= pi.sum()
    known = compatible_mask(HOLDEM, hole + flop)
    new, consistent = remove_cards(pi, HOLDEM, flop, known)
    assert consistent
    assert np.count_nonzero(new) == comb(47, 2)
    assert new[0] == 0.0
    assert new.sum() == pytest.approx(1.0)
    kept = new > 0
    assert np.allclose(new[kept] / pi[kept], (new[kept] / pi[kept])[0])


def test_remove_cards_with_no_mass_left_resets():
    """When the board blocks every hand with weight, the range resets to the compatible hands."""
    hole = cards_from_text("Qh")
    pi = np.zeros(LEDUC.num_hands)
    ks = hand_index((LEDUC.cards.index(cards_from_text("Ks")[0]),))
    pi[ks] = 1.0
    known = compatible_mask(LEDUC, hole + cards_from_text("Ks"))
    new, consistent = remove_cards(pi, LEDUC, cards_from_text("Ks"), known)
    assert not consistent
    assert np.array_equal(new, known / known.sum())


def test_bayes_update_is_product_renormalised():
    """pi(h) <- pi(h) sigma(h), renormalised (hand-computed on Kuhn)."""
    pi = uniform_range(KUHN, cards_from_text("Ks"))  # [1/2, 0, 1/2]
    known = compatible_mask(KUHN, cards_from_text("Ks"))
    new, consistent = bayes_update(pi, np.array([0.25, 0.9, 0.75]), known)
    assert consistent
    assert new.tolist() == pytest.approx([0.25, 0.0, 0.75])


def test_bayes_update_ignores_values_on_dead_hands():
    """Answers on impossible hands (even NaN) do not leak into the range."""
    pi = uniform_range(KUHN, cards_from_text("Ks"))
    known = compatible_mask(KUHN, cards_from_text("Ks"))
    new, consistent = bayes_update(pi, np.array([0.5, np.nan, 0.5]), known)
    assert consistent
    assert new.tolist() == [0.5, 0.0, 0.5]


def test_bayes_update_inconsistency_resets_to_uniform_compatible():
    """Probability 0 for every possible hand is an inconsistency: reset, flag False."""
    pi = uniform_range(LEDUC, cards_from_text("Ah"))
    known = compatible_mask(LEDUC, cards_from_text("Ah"))
    sigma = np.zeros(LEDUC.num_hands)
    sigma[LEDUC.cards.index(cards_from_text("Ah")[0])] = 1.0  # only LBR's own card
    new, consistent = bayes_update(pi, sigma, known)
    assert not consistent
    assert np.array_equal(new, pi)


def test_bayes_update_rejects_wrong_shape():
    """A sigma vector of the wrong length is an error, not a silent broadcast."""
    pi = uniform_range(KUHN, ())
    with pytest.raises(ValueError):
        bayes_update(pi, np.ones(4), compatible_mask(KUHN, ()))


@given(st.lists(st.floats(0.0, 1.0), min_size=6, max_size=6), st.integers(0, 5))
def test_bayes_update_always_normalised(sigma, hole_number):
    """Whatever sigma, the result is a distribution on the compatible hands."""
    hole = (LEDUC.cards[hole_number],)
    known = compatible_mask(LEDUC, hole)
    start = uniform_range(LEDUC, hole)
    new, consistent = bayes_update(start, np.array(sigma), known)
    assert new.sum() == pytest.approx(1.0)
    assert (new[~known] == 0).all()
    assert consistent == bool((start * np.array(sigma)).sum() > 0)


def test_tracker_counts_inconsistencies_over_the_match():
    """start_hand resets the range but the inconsistency count runs over the match."""
    tracker = RangeTracker(LEDUC)
    tracker.start_hand(cards_from_text("Qh"))
    assert np.count_nonzero(tracker.probs) == 5
    assert not tracker.observe(np.zeros(6))
    assert tracker.inconsistencies == 1
    tracker.start_hand(cards_from_text("Ks"))
    assert tracker.inconsistencies == 1
    assert tracker.observe(np.ones(6))
    assert tracker.add_board(cards_from_text("As"))
    assert np.count_nonzero(tracker.probs) == 4
    assert tracker.probs.sum() == pytest.approx(1.0)
    clone = tracker.copy()
    clone.observe(np.zeros(6))
    assert (clone.inconsistencies, tracker.inconsistencies) == (2, 1)


def test_tracker_board_seen_twice_is_ignored():
    """Feeding the whole board again at every decision does not change the range."""
    tracker = RangeTracker(HOLDEM)
    tracker.start_hand(cards_from_text("AsKd"))
    tracker.add_board(cards_from_text("2c7h9s"))
    before = tracker.probs.copy()
    tracker.add_board(cards_from_text("2c7h9s"))
    assert np.array_equal(before, tracker.probs)
    tracker.add_board(cards_from_text("2c7h9sTd"))
    assert np.count_nonzero(tracker.probs) == comb(46, 2)
