"""Hand-built positions for the rules engine (acpc.md §4, §5, §6).

Every expected number below is from acpc.md (the reference dealer's
behaviour seen in real runs) unless its comment derives it.
"""

from __future__ import annotations

import re

import pytest

from protocol.cards import cards_from_text
from protocol.errors import IllegalActionError
from protocol.gamedef import GameDef, load_game, parse_gamedef
from protocol.ranking import rank_hand
from protocol.rules import Action, ActionType, State, correct_action, showdown_values

NL = load_game("holdem.nolimit.2p.reverse_blinds")
LIMIT = load_game("holdem.limit.2p.reverse_blinds")

F, C, R = ActionType.FOLD, ActionType.CALL, ActionType.RAISE


def play(game: GameDef | str, betting: str) -> State:
    """A state after the actions of ``betting`` (rounds separated by '/')."""
    state = State(load_game(game) if isinstance(game, str) else game)
    for token in re.findall(r"[fc]|r[0-9]*", betting):
        if token[0] == "r":
            state.apply(Action.raise_to(int(token[1:])) if token[1:] else Action.RAISE)
        else:
            state.apply(Action(ActionType(token)))
    return state


def test_fold_when_checking_is_free_is_illegal() -> None:
    """After the small blind limps the big blind may not fold; the dealer makes it a call."""
    state = play(NL, "c")
    assert not state.can_fold()
    assert state.legal_actions() == [C, R]
    with pytest.raises(IllegalActionError):
        state.check(Action.FOLD)
    action, correction = correct_action(state, Action.FOLD)
    assert action == Action.CALL
    assert correction is not None and correction.message == "invalid action, changed to call"


def test_fold_facing_the_big_blind_is_legal() -> None:
    """The small blind faces the big blind preflop, so it may fold (probe F3_fold_sb)."""
    state = play(NL, "")
    assert state.current_player == 1 and state.can_fold()
    state.apply(Action.FOLD)
    assert state.finished and state.values([(), ()], []) == (50.0, -50.0)


def test_opening_raise_range() -> None:
    """Preflop the smallest raise-to is twice the big blind, the largest the stack."""
    assert play(NL, "").raise_range() == (200, 20000)


@pytest.mark.parametrize(
    ("betting", "tried", "minimum"),
    [("r1000", 1500, 1900), ("r300", 400, 500), ("", 150, 200), ("cc/", 150, 200)],
)
def test_min_raise_tracking(betting: str, tried: int, minimum: int) -> None:
    """Each raise must be at least the largest raise of the round; too small is raised."""
    state = play(NL, betting)
    assert state.raise_range() == (minimum, 20000)
    action, correction = correct_action(state, Action.raise_to(tried))
    assert action == Action.raise_to(minimum)
    assert correction is not None
    assert correction.message == f"raise of {tried} increased to {minimum}"


def test_new_round_min_raise_is_max_spent_plus_big_blind() -> None:
    """After r300c the flop's smallest bet is to 300 + 100."""
    state = play(NL, "r300c/")
    assert state.round == 1
    assert state.min_raise_to == 300 + NL.big_blind
    assert state.raise_range() == (400, 20000)


def test_raise_above_stack_is_lowered() -> None:
    """A raise past the stack becomes all-in (probe C_overstack)."""
    action, correction = correct_action(play(NL, ""), Action.raise_to(50000))
    assert action == Action.raise_to(20000)
    assert correction is not None and correction.message == "raise of 50000 decreased to 20000"


def test_short_stack_may_go_all_in_below_the_min_raise() -> None:
    """r19310 then r20000 is legal although it raises by only 690."""
    state = play(NL, "r6961c/r19310")
    assert state.min_raise_to > 20000
    assert state.raise_range() == (20000, 20000)
    assert state.is_legal(Action.raise_to(20000))
    assert not state.is_legal(Action.raise_to(19999))


def test_all_in_runout_jumps_to_last_round() -> None:
    """An all-in called on the flop ends the hand with empty turn and river segments."""
    state = play(NL, "r6961c/r19310r20000c")
    assert state.finished and state.round == 3
    assert state.betting_string() == "r6961c/r19310r20000c//"
    assert state.actions[2] == [] and state.actions[3] == []


def test_all_in_preflop_call_runs_out_every_round() -> None:
    """r20000c preflop gives three empty segments (probe C_overstack's log)."""
    assert play(NL, "r20000c").betting_string() == "r20000c///"


def test_no_raise_when_opponent_is_all_in() -> None:
    """Facing an all-in, only fold and call remain."""
    state = play(NL, "r20000")
    assert state.legal_actions() == [F, C]
    assert state.raise_range() is None


def test_limit_raise_caps() -> None:
    """Limit hold'em allows 3 raises preflop and 4 on later streets (maxRaises)."""
    state = play(LIMIT, "rrr")
    assert LIMIT.max_raises == (3, 4, 4, 4)
    assert state.legal_actions() == [F, C]
    action, correction = correct_action(state, Action.RAISE)
    assert action == Action.CALL and correction is not None
    flop = play(LIMIT, "rrrc/rrrr")
    assert not flop.can_raise()
    assert play(LIMIT, "rrrc/rrr").can_raise()


def test_limit_raise_sizes() -> None:
    """Limit raise-to is the highest commitment plus the round's raise size."""
    state = play(LIMIT, "r")
    assert state.max_spent == 10 + 10
    assert state.raise_range() == (30, 30)
    turn = play(LIMIT, "rc/cc/")
    assert turn.raise_range() == (20 + 20, 20 + 20)


def test_limit_raise_with_a_size_is_read_as_a_raise() -> None:
    """In limit a size is ignored (probe M2_limit_r300)."""
    action, correction = correct_action(play(LIMIT, ""), Action.raise_to(300))
    assert action == Action.RAISE and correction is None


def test_reply_problems_become_calls() -> None:
    """An unknown letter is invalid, a sizeless no-limit raise is a bad format."""
    state = play(NL, "")
    action, correction = correct_action(state, None, "invalid")
    assert action == Action.CALL
    assert correction is not None and correction.message == "invalid action, changed to call"
    action, correction = correct_action(state, None, "bad_format")
    assert action == Action.CALL and correction is not None
    assert correction.message == "bad action format in response, changed to call"
    assert correct_action(state, None)[1] == correction


def test_apply_leaves_state_unchanged_on_error() -> None:
    """A refused action does not touch the state."""
    state = play(NL, "r300")
    before = state.clone()
    with pytest.raises(IllegalActionError):
        state.apply(Action.raise_to(350))
    assert state == before


def test_heads_up_tie_is_exactly_zero() -> None:
    """A board that plays for both (royal flush) splits to exactly 0."""
    state = play(NL, "r300c/cc/cc/cc")
    hole = [cards_from_text("2c3d"), cards_from_text("4h5c")]
    values = state.values(hole, cards_from_text("AsKsQsJsTs"))
    assert values == (0.0, 0.0)
    assert all(v == 0 for v in values)


THREE_SHORT = parse_gamedef(
    """\
GAMEDEF
nolimit
numPlayers = 3
numRounds = 4
stack = 1000 5000 5000
blind = 50 100 0
firstPlayer = 3 1 1 1
numSuits = 4
numRanks = 13
numHoleCards = 2
numBoardCards = 0 3 1 1
END GAMEDEF
"""
)


def test_three_player_side_pot_with_short_all_in() -> None:
    """The short stack wins only the main pot; the side pot goes to the next best hand."""
    state = play(THREE_SHORT, "r3000cr5000c")
    assert state.finished and state.round == 3
    assert state.betting_string() == "r3000cr5000c///"
    assert state.spent == [1000, 5000, 5000]
    board = cards_from_text("2c7d9hJsKd")
    hole = [cards_from_text("AsAd"), cards_from_text("QsQh"), cards_from_text("3c4d")]
    ranks = [rank_hand(list(h) + list(board)) for h in hole]
    assert ranks[0] > ranks[1] > ranks[2]  # aces > queens > king high
    values = state.values(hole, board)
    main_pot, side_pot = 3 * 1000, 2 * 4000
    assert values == (main_pot - 1000, side_pot - 5000, -5000)
    assert sum(values) == 0


def test_short_all_in_reraise_is_all_in_only() -> None:
    """After r3000 by position 2 and a short call, position 1 can only go all-in to 5000."""
    state = play(THREE_SHORT, "r3000c")
    assert state.current_player == 1
    assert state.raise_range() == (5000, 5000)


def test_three_way_split_values_are_fractional_and_sum_to_zero() -> None:
    """Three tied winners share pots that do not divide evenly."""
    # Four players: the folded one put in 50; the other three put in 100 and tie.
    values = showdown_values([100, 100, 100, 50], [7, 7, 7, -1])
    share = (4 * 50) / 3 + (3 * 50) / 3  # level-50 pot, then level-100 pot
    assert values[:3] == pytest.approx((share - 100,) * 3)
    assert values[0] != round(values[0])
    assert values[3] == -50
    assert sum(values) == pytest.approx(0.0, abs=1e-9)


def test_three_way_split_of_a_side_pot() -> None:
    """Side pots are shared only among those who reached their level."""
    values = showdown_values([1000, 5000, 5000], [3, 3, 3])
    assert values == (0.0, 0.0, 0.0)
    values = showdown_values([1000, 5000, 5000], [9, 3, 3])
    assert values == (2000.0, -1000.0, -1000.0)


def test_kuhn_legal_actions() -> None:
    """Kuhn: check or bet; facing the one bet, fold or call; no raise after it."""
    assert play("kuhn", "").legal_actions() == [C, R]
    assert play("kuhn", "r").legal_actions() == [F, C]
    assert play("kuhn", "c").legal_actions() == [C, R]
    assert play("kuhn", "cr").legal_actions() == [F, C]
    assert play("kuhn", "cc").finished and play("kuhn", "crc").finished
    assert play("kuhn", "rf").values([(0,), (1,)], ()) == (1.0, -1.0)


def test_leduc_legal_actions_and_sizes() -> None:
    """Leduc: two raises per round, of 2 then 4."""
    state = play("leduc", "rr")
    assert state.legal_actions() == [F, C]
    assert state.spent == [3, 5]
    flop = play("leduc", "rrc/")
    assert flop.round == 1 and flop.legal_actions() == [C, R]
    assert flop.raise_range() == (5 + 4, 5 + 4)
    assert play("leduc", "rrc/rrc").finished


def test_a_state_is_made_again_from_its_fields_with_its_betting() -> None:
    """``State``'s ``__init__`` is written out (not the dataclass's): a state rebuilt from its
    fields (``dataclasses.replace``, pickling, ``clone``) is equal, with the same betting
    string and facts, and plays on independently after a clone."""
    import dataclasses
    import pickle

    game = load_game("nolimit")
    state = State(game, 3)
    state.apply(Action.raise_to(300))
    state.apply(Action.CALL)
    state.apply(Action.raise_to(900))
    for copy in (dataclasses.replace(state), pickle.loads(pickle.dumps(state)), state.clone()):
        assert copy == state and copy.betting_string() == "r300c/r900"
        assert copy.table.stack == state.table.stack and copy.current_player == state.current_player
    moved = dataclasses.replace(state, hand_id=4)
    assert moved.hand_id == 4 and moved.betting_string() == "r300c/r900"
    clone = state.clone()
    clone.apply(Action.CALL)
    assert state.betting_string() == "r300c/r900" and clone.betting_string() == "r300c/r900c/"


def test_heads_up_showdown_values_are_the_general_split_bit_for_bit() -> None:
    """The heads-up path of showdown_values gives exactly the general side-pot split's floats:
    equal and unequal commitments (a short all-in, either way round), zero commitments, ties,
    a folded player (rank -1) on either side, and both."""
    import random

    from protocol.rules import _showdown_values_general

    rng = random.Random(33)
    cases = [([100, 100], [5, 5]), ([0, 0], [1, 2]), ([50, 20000], [-1, 3]), ([20000, 50], [3, -1]),
             ([300, 300], [-1, -1]), ([0, 700], [4, -1]), ([1, 2], [7, 7])]
    for _ in range(5000):
        spent = [rng.choice([0, 1, 50, 100, rng.randrange(20001)]) for _ in range(2)]
        ranks = [rng.choice([-1, 0, 5, 5, rng.randrange(10**6)]) for _ in range(2)]
        cases.append((spent, ranks))
    for spent, ranks in cases:
        fast, general = showdown_values(spent, ranks), _showdown_values_general(spent, ranks)
        assert fast == general and all(type(v) is float for v in fast), (spent, ranks, fast, general)
