"""protocol/_handnative.c against its slow twins: the deal's loop, the card texts and the showdown
ranks, hand by hand.

The C module is built beside the compiled group (setup.py). In a tree where it was not built
these tests skip, except where the group itself is compiled: a build that compiled the group
and not this helper is a broken build.
"""

from __future__ import annotations

import importlib
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import protocol
from protocol import _variant
from protocol import deal as deal_module
from protocol import wire
from protocol.cards import DECK_SIZE
from protocol.deal import Deal, DealSource
from protocol.gamedef import bundled_games, load_game
from protocol.ranking import _rank_cards, _rank_general, rank_hand
from protocol.rules import game_table


def _helper() -> Any:
    try:
        return importlib.import_module(_variant.HELPER)
    except ImportError:
        if protocol.COMPILED:
            pytest.fail("the group is compiled but protocol._handnative was not built beside it")
        pytest.skip("protocol._handnative is not built here (a source tree)")


@pytest.fixture(scope="module")
def native() -> Any:
    return _helper()


def test_the_variants_use_the_helper_exactly_when_built_and_not_pure(native: Any) -> None:
    """In the compiled variant the deal and the texts go through the C helper; ACPC_LBR_PURE keeps
    them out (tests/protocol/test_variant.py runs this file's twins on the pure sources too)."""

    expected = None if _variant.pure_forced() else native
    assert deal_module._NATIVE is expected
    assert wire._NATIVE is expected


@pytest.mark.parametrize("name", bundled_games())
def test_the_c_deal_is_the_python_deal_hand_by_hand(native: Any, name: str) -> None:
    """Two sources of one seed: one deals through the C loop, the other through the Python loop
    (and ``DealSource.deal``, whichever it takes, agrees with both), 2,000 hands of each game."""
    game = load_game(name)
    table = game_table(game)
    count = table.num_hole_cards * table.num_players + table.total_board_cards
    for seed in (0, 1, 42, 2**32 - 1):
        through_c, through_python, through_deal = DealSource(seed), DealSource(seed), DealSource(seed)
        for _ in range(500):
            words = through_c._rng.getrandbits(32 * count).to_bytes(4 * count, "little")
            hole, board = native.deal_cards(words, table.deck, table.num_hole_cards,
                                            table.num_players, table.num_board_cards)
            slow = through_python._deal_slowly(table)
            assert Deal(hole=hole, board=board) == slow
            assert through_deal.deal(game) == slow
        assert through_c._rng.getstate() == through_python._rng.getstate() == through_deal._rng.getstate()


def _python_deal(words: list[int], deck: tuple[int, ...], hole_cards: int, num_players: int,
                 board_counts: tuple[int, ...]) -> tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...]]:
    """The reference's dealCards, written plainly for this test."""
    deck_left, cards = list(deck), []
    for output in words:
        slot = output % len(deck_left)
        cards.append(deck_left[slot])
        deck_left[slot] = deck_left[-1]
        deck_left.pop()
    hole = tuple(tuple(cards[p * hole_cards:(p + 1) * hole_cards]) for p in range(num_players))
    start, board = hole_cards * num_players, []
    for n in board_counts:
        board.append(tuple(cards[start:start + n]))
        start += n
    return hole, tuple(board)


@given(st.data())
def test_the_c_deal_follows_the_reference_rule_on_any_deck_and_words(native: Any, data: st.DataObject) -> None:
    deck = tuple(data.draw(st.permutations(range(DECK_SIZE)))[:data.draw(st.integers(1, DECK_SIZE))])
    num_players = data.draw(st.integers(0, 4))
    hole_cards = data.draw(st.integers(0, 3))
    board_counts = tuple(data.draw(st.lists(st.integers(0, 5), max_size=4)))
    total = hole_cards * num_players + sum(board_counts)
    words = data.draw(st.lists(st.integers(0, 2**32 - 1), min_size=total, max_size=total))
    packed = b"".join(w.to_bytes(4, "little") for w in words)
    if total > len(deck):
        with pytest.raises(ValueError, match="more cards than the deck"):
            native.deal_cards(packed, deck, hole_cards, num_players, board_counts)
        return
    assert native.deal_cards(packed, deck, hole_cards, num_players, board_counts) == \
        _python_deal(words, deck, hole_cards, num_players, board_counts)


@pytest.mark.parametrize(("args", "error", "message"), [
    ((b"\0" * 7, tuple(range(52)), 2, 1, ()), ValueError, "7 bytes of words for 2 cards"),
    ((b"", tuple(range(53)), 0, 0, ()), ValueError, "over 52"),
    ((b"", (52,), 0, 0, ()), ValueError, "off 0..51"),
    ((b"", (-1,), 0, 0, ()), ValueError, "off 0..51"),
    ((b"", (1,), -1, 0, ()), ValueError, "negative"),
    ((b"", (1,), 0, 0, (-1,)), ValueError, "negative board"),
    ((b"", [1], 0, 0, ()), TypeError, "tuples"),
    (("text", (1,), 0, 0, ()), TypeError, "bytes-like"),
    ((b"", (1,), 0, 0), TypeError, "5 arguments"),
])
def test_the_c_deal_refuses_what_is_not_a_deal(native: Any, args: tuple[Any, ...], error: type[Exception],
                                               message: str) -> None:
    with pytest.raises(error, match=message):
        native.deal_cards(*args)


@pytest.mark.parametrize("args", [
    (b"", (), 0, 0, (50, 2**63 - 50, 2**63 - 1, 1)),  # board counts whose sum wraps
    (b"", tuple(range(52)), 3 * 2**61, 2, ()),  # a product that wraps
    (b"", tuple(range(52)), 53, 1, ()),
    (b"", tuple(range(52)), 1, 53, ()),
    (b"", tuple(range(52)), 0, 0, (0,) * 53),
])
def test_the_c_deal_refuses_counts_past_the_deck_before_any_arithmetic(native: Any,
                                                                        args: tuple[Any, ...]) -> None:
    """Found by a review under ASan and UBSan: counts that overflowed a sum or a product read
    memory off the deal's arrays. Each is refused before it is added or multiplied."""
    with pytest.raises((ValueError, OverflowError)):
        native.deal_cards(*args)


def test_card_texts_survive_a_group_that_changes_the_list_being_read(native: Any) -> None:
    """Found by the same review: a group that is no list or tuple is turned into one by its own
    __iter__, which may empty or shorten the list of groups; the helper reads a copy."""
    groups: list[Any] = []

    class Clearing:
        def __iter__(self) -> Any:
            groups.clear()
            return iter([0])

    class Shortening:
        def __iter__(self) -> Any:
            del groups[1:]
            return iter([0])

    groups[:] = [Clearing(), [1], [2]]
    assert native.cards_texts(groups) == ["2c", "2d", "2h"]
    groups[:] = [Shortening()] + [[i] for i in range(1, 8)]
    assert native.cards_texts(groups) == ["2c", "2d", "2h", "2s", "3c", "3d", "3h", "3s"]
    with pytest.raises(TypeError):
        native.cards_texts(iter([[0]]))


def test_card_texts_are_the_python_texts(native: Any) -> None:
    rng = random.Random(7)
    for _ in range(3000):
        groups = tuple(tuple(rng.sample(range(DECK_SIZE), rng.randint(0, 7))) for _ in range(rng.randint(0, 5)))
        deal = Deal(hole=groups, board=groups[::-1])
        assert native.cards_texts(deal.hole) == wire._slow_card_texts(deal)[0]
        assert native.cards_texts(deal.board) == wire._slow_card_texts(deal)[1]
    assert native.cards_texts([]) == []
    assert native.cards_texts([[], [51, 0]]) == ["", "As2c"]


@pytest.mark.parametrize("odd", [52, -1, 2**70, True, 1.0, "As", None])
def test_card_texts_leave_what_is_off_the_deck_to_the_python_path(native: Any, odd: Any) -> None:
    """None back, and the dealer's own path then says what is wrong (or renders a bool as
    Python's lookup does): the C helper raises nothing a bot's data could reach."""
    assert native.cards_texts([[0], [odd]]) is None


def test_card_texts_refuse_what_is_not_groups(native: Any) -> None:
    with pytest.raises(TypeError):
        native.cards_texts(5)
    with pytest.raises(TypeError):
        native.cards_texts([5])


def test_deal_fields_are_the_python_fields(native: Any) -> None:
    """Every bundled game's deals, and random groups of 0 to 16 positions and rounds (empty
    groups, whole decks): the C fields equal the Python ones; beyond what its buffer holds,
    or past 16 positions or rounds, it leaves the deal to Python."""
    for name in bundled_games():
        game, source = load_game(name), DealSource(5)
        for _ in range(300):
            deal = source.deal(game)
            assert native.deal_fields(deal.hole, deal.board) == wire._slow_deal_fields(deal)
    rng = random.Random(9)
    for _ in range(3000):
        hole = tuple(tuple(rng.sample(range(DECK_SIZE), rng.choice([0, 1, 2, 4, 52])))
                     for _ in range(rng.randint(0, 16)))
        board = tuple(tuple(rng.sample(range(DECK_SIZE), rng.choice([0, 1, 3, 5])))
                      for _ in range(rng.randint(0, 16)))
        deal = Deal(hole=hole, board=board)
        fields = native.deal_fields(hole, board)
        if fields is None:
            assert sum(map(len, board)) * 2 + len(board) > 2 * DECK_SIZE + 32
        else:
            assert fields == wire._slow_deal_fields(deal)
    assert native.deal_fields(((0,),) * 17, ()) is None
    assert native.deal_fields((), ((0,),) * 17) is None
    assert native.deal_fields(((52,),), ()) is None
    assert native.deal_fields((), ((0,), (True,))) is None
    with pytest.raises(TypeError):
        native.deal_fields((), 5)


def test_the_match_state_lines_are_the_same_with_either_texts() -> None:
    """The lines a deal gives, through whatever texts this variant renders, equal the slow texts'."""
    game = load_game("holdem.nolimit.3p")
    source = DealSource(3)
    for _ in range(200):
        deal = source.deal(game)
        hole, boards = wire._slow_card_texts(deal)
        entry = wire._DealText(deal)
        assert entry.hole == hole
        assert entry.boards == ["/".join(boards[:r + 1]) for r in range(len(boards))]


def test_c_ranks_are_the_general_rankers_values(native: Any) -> None:
    """Every size of hand from 0 to 10 cards, random and crowded into few ranks or suits (straights,
    flushes, the wheel, two suits of five): the C rank equals both Python rankers'."""
    rng = random.Random(11)
    for size in range(11):
        for trial in range(3000):
            if trial % 3 == 0:  # crowded: a few ranks, all suits
                ranks = rng.sample(range(13), rng.randint(1, 5))
                pool = [r * 4 + s for r in ranks for s in range(4)]
            elif trial % 3 == 1:  # crowded: two suits, neighbouring ranks
                low = rng.randint(-1, 8)
                pool = [(r % 13) * 4 + s for r in range(low, low + 6) for s in rng.sample(range(4), 2)]
            else:
                pool = list(range(DECK_SIZE))
            cards = rng.sample(pool, min(size, len(pool)))
            expected = _rank_general(cards)
            assert native.rank_cards(cards) == expected, cards
            assert native.rank_cards(tuple(cards)) == expected
            assert _rank_cards(cards) == expected
            assert rank_hand(iter(cards)) == expected


@pytest.mark.parametrize("cards", [[0, 0], [52], [-1], [2**70], [True, 5], [1.0], ["As"], [None]])
def test_c_ranks_leave_what_is_not_distinct_deck_cards_to_python(native: Any, cards: list[Any]) -> None:
    assert native.rank_cards(cards) == -1
    assert native.rank_cards(tuple(cards)) == -1


def test_c_ranks_leave_other_containers_to_python(native: Any) -> None:
    assert native.rank_cards(iter([1, 2])) == -1
    assert native.rank_cards({1, 2}) == -1
