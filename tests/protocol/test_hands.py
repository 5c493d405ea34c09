"""Hand numbering and blocking have one home (protocol/hands.py), and every caller agrees with it.

The oracle is the slow twin (:func:`protocol.hands.hand_index`, :func:`protocol.hands.all_hands`:
the colex definition in plain Python) and, for blocking, a set intersection per hand. Every
hand of Kuhn, Leduc and hold'em is checked, through every module that numbers or blocks hands:
the game definition, the SDK, LBR's ranges, the equity and preflop tables, the dealer's relay.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acpc_lbr import equity, preflop
from acpc_lbr.ranges import compatible_mask, hand_table
from agents import sdk
from dealer.relay import blocked_mask
from protocol.gamedef import GameDef, load_game
from protocol.hands import HandNumbering, all_hands, hand_index, holdem, numbering, suit_maps

GAMES = ("kuhn", "leduc", "nolimit")


@pytest.fixture(scope="module", params=GAMES)
def game(request: pytest.FixtureRequest) -> GameDef:
    return load_game(request.param)


def test_front_door_lists_the_slow_twins_hands(game: GameDef) -> None:
    """The numbering's table is all_hands (card numbers -> card indices), row by row."""
    numbers = all_hands(game.deck_size, game.num_hole_cards)
    expected = np.array([[game.cards[n] for n in hand] for hand in numbers])
    assert np.array_equal(game.hands.cards, expected)
    assert game.hands.num_hands == game.num_hands == len(numbers)


def test_every_hand_numbers_back_to_itself_through_every_caller(game: GameDef) -> None:
    """For every hand, in both card orders: the slow twin, GameDef, the vectorised look-up,
    the SDK and LBR's hand table give the same index."""
    cards = game.hand_cards
    numbered = game.hands
    table = hand_table(game)
    everything = np.arange(game.num_hands)
    assert np.array_equal(numbered.hands_of(cards), everything)
    assert np.array_equal(numbered.hands_of(cards[:, ::-1]), everything)
    assert sdk.hand_cards(game) is cards and table.cards is cards
    for h, row in enumerate(cards.tolist()):
        assert hand_index([int(numbered.number[c]) for c in row]) == h
        assert game.hand_of(row) == game.hand_of(row[::-1]) == sdk.hand_of(game, row[::-1]) == h
        assert table.hand_cards[h] == tuple(row)


def test_holdem_callers_share_one_table() -> None:
    """Equity's and preflop's tables are protocol/hands.py's hold'em numbering, and equity's
    checked look-up agrees with it on all 1326 hands."""
    holdem_game = load_game("nolimit")
    assert equity.HAND_CARDS is preflop.HAND_CARDS is holdem().cards
    assert np.array_equal(holdem_game.hand_cards, holdem().cards)
    for h, (c1, c2) in enumerate(holdem().cards.tolist()):
        assert equity.hand_index(c2, c1) == int(equity.HAND_INDEX[c1, c2]) == holdem().hand_of((c1, c2)) == h
    assert (np.diag(holdem().pairs) == -1).all()


def _naive_sharing(game: GameDef, cards: set[int]) -> np.ndarray:
    return np.array([bool(cards & set(row)) for row in game.hand_cards.tolist()])


def test_every_single_card_blocks_the_same_hands_everywhere(game: GameDef) -> None:
    """Each card of the game blocks exactly the hands holding it, in every caller."""
    for card in game.cards:
        expected = _naive_sharing(game, {card})
        assert np.array_equal(game.hands_sharing([card]), expected)
        assert np.array_equal(sdk.blocked_hands(game, [card]), expected)
        assert np.array_equal(blocked_mask(game, [card]), expected)
        assert np.array_equal(compatible_mask(game, [card]), ~expected)
        assert np.array_equal(game.hands.contains[card], expected)


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(GAMES), data=st.data())
def test_card_sets_block_the_same_hands_everywhere(name: str, data: st.DataObject) -> None:
    """Random sets of board/dead cards (in any order, repeated or not): every caller agrees
    with the naive intersection, hold'em's equity mask included."""
    game = load_game(name)
    cards = data.draw(st.lists(st.sampled_from(game.cards), max_size=6))
    expected = _naive_sharing(game, set(cards))
    assert np.array_equal(game.hands_sharing(cards), expected)
    assert np.array_equal(sdk.blocked_hands(game, tuple(cards)), expected)
    assert np.array_equal(blocked_mask(game, cards), expected)
    overlaps = game.hands.overlaps
    if len(set(cards)) == game.num_hole_cards:  # the cards make a hand: the hands it overlaps
        assert np.array_equal(overlaps[game.hand_of(sorted(set(cards)))], expected)
    if game.deck_size == 52:
        assert np.array_equal(equity.possible_hands(cards), ~expected)


def test_overlaps_is_pairwise_sharing() -> None:
    """Two Leduc hands overlap exactly when they share a card (a hand overlaps itself)."""
    leduc = load_game("leduc")
    rows = [set(r) for r in leduc.hand_cards.tolist()]
    expected = np.array([[bool(a & b) for b in rows] for a in rows])
    assert np.array_equal(leduc.hands.overlaps, expected)


def test_suit_maps_are_the_24_suit_relabellings() -> None:
    """Each map keeps ranks, permutes the four suits, and all 24 differ; the identity is first."""
    maps = suit_maps()
    assert maps.shape == (24, 52)
    assert (maps[0] == np.arange(52)).all()
    assert ((maps // 4) == np.arange(52) // 4).all()
    assert len({tuple(m) for m in maps.tolist()}) == 24
    assert all(sorted(m) == list(range(52)) for m in maps.tolist())


def test_bad_hands_and_decks_are_refused() -> None:
    """Off-deck or repeated cards, wrong counts and bad decks raise ValueError, not a wrong index."""
    leduc = load_game("leduc")
    with pytest.raises(ValueError):
        leduc.hand_of((0,))  # 2c is not a Leduc card
    with pytest.raises(ValueError):
        holdem().hand_of((5, 5))
    with pytest.raises(ValueError):
        holdem().hand_of((5,))
    with pytest.raises(ValueError):
        holdem().hands_of(np.array([[1, 1]]))
    with pytest.raises(ValueError):
        holdem().hands_of(np.array([[1, 52]]))
    with pytest.raises(ValueError):
        HandNumbering((3, 1), 1)
    with pytest.raises(ValueError):
        numbering((1, 2), 3)
    with pytest.raises(ValueError):
        load_game("kuhn").hands.pairs
