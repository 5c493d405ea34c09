"""The LBR decision of lbr.md on hand-built positions, betting options and raise sizes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from acpc_lbr.lbr import (
    ActiveRounds,
    BettingOptions,
    LbrPlayer,
    candidate_raises,
    decide,
    equity_function,
    equity_vector_small,
    raise_amount,
)
from acpc_lbr.ranges import compatible_mask, uniform_range
from protocol.cards import cards_from_text
from protocol.gamedef import load_game
from protocol.rules import Action, State

NOLIMIT = load_game("nolimit")  # blinds 100 (position 0) / 50 (position 1), stacks 20000
LIMIT = load_game("holdem.limit.2p.reverse_blinds")  # blinds 10/5, bets 10 10 20 20
KUHN = load_game("kuhn")
LEDUC = load_game("leduc")


def play(game, betting: str) -> State:
    """Replay an ACPC betting string such as ``'r300c/cc/cc/r900'``."""
    state = State(game)
    i = 0
    while i < len(betting):
        char = betting[i]
        i += 1
        if char == "/":
            continue
        if char == "f":
            state.apply(Action.FOLD)
        elif char == "c":
            state.apply(Action.CALL)
        else:
            digits = ""
            while i < len(betting) and betting[i].isdigit():
                digits += betting[i]
                i += 1
            state.apply(Action.raise_to(int(digits)) if digits else Action.RAISE)
    return state


def flat(value: float, game=NOLIMIT) -> np.ndarray:
    return np.full(game.num_hands, value)


def utility_twin(pot, asked, a, pi, e, fold):
    """A naive re-statement of lbr.md's U(raise), hand by hand in plain Python."""
    pi = [p / sum(pi) for p in pi]
    fp = sum(p * f for p, f in zip(pi, fold))
    if fp == 1.0:
        return float(pot)
    keep = [p * (1 - f) for p, f in zip(pi, fold)]
    wp2 = sum(k * x for k, x in zip(keep, e)) / sum(keep)
    return fp * pot + (1 - fp) * (wp2 * (pot + a) - (1 - wp2) * (asked + a))


# -- options ---------------------------------------------------------------------------


def test_parse_named_options():
    """fc has no raise, fcpa the pot raise and all-in, 56bets 55 fractions 0.05*1.15^k plus all-in."""
    assert not BettingOptions.parse("fc").raises
    fcpa = BettingOptions.parse("FCPA")
    assert (fcpa.fractions, fcpa.min_raise, fcpa.all_in) == ((1.0,), False, True)
    bets = BettingOptions.parse("56bets")
    assert len(bets.fractions) == 55 and bets.all_in and not bets.min_raise
    assert bets.fractions[0] == pytest.approx(0.05)
    assert bets.fractions[54] == pytest.approx(0.05 * 1.15**54)


def test_parse_custom_list():
    """'0.5,1,2,min,allin' gives three fractions and both words."""
    options = BettingOptions.parse("0.5,1,2,min,allin")
    assert options.fractions == (0.5, 1.0, 2.0)
    assert options.min_raise and options.all_in


@pytest.mark.parametrize("text", ["", "0.5,huge", "0", "-1", "nan", "inf", "1,,2"])
def test_parse_rejects_bad_options(text):
    """Unknown words and non-positive or non-finite fractions are errors."""
    with pytest.raises(ValueError):
        BettingOptions.parse(text)


def test_active_rounds_parse_is_one_based():
    """'3-4' means turn and river: 0-based rounds 2 and 3."""
    rounds = ActiveRounds.parse("3-4")
    assert [rounds.is_active(r) for r in range(4)] == [False, False, True, True]
    assert rounds.text() == "3-4"
    assert [ActiveRounds.parse("2").is_active(r) for r in range(4)] == [False, True, False, False]
    assert all(ActiveRounds.parse("all").is_active(r) for r in range(4))
    assert ActiveRounds.parse("1-4") == ActiveRounds()


@pytest.mark.parametrize("text", ["0-4", "4-3", "1-5", "x", "3-", ""])
def test_active_rounds_rejects_bad_text(text):
    """Rounds outside 1..4 or reversed are errors."""
    with pytest.raises(ValueError):
        ActiveRounds.parse(text)


@pytest.mark.parametrize(("game_name", "text"), [("leduc", "3-4"), ("leduc", "3"), ("kuhn", "2"), ("kuhn", "1-2")])
def test_active_rounds_outside_the_game_are_errors(game_name, text):
    """A round the game does not have is refused: LBR would never act in it (issue 13)."""
    with pytest.raises(ValueError, match="beyond the last round"):
        ActiveRounds.parse(text, load_game(game_name))


def test_active_rounds_all_and_default_follow_the_game():
    """'all' is the game's rounds; the default is its last two rounds (all of a short game)."""
    assert ActiveRounds.parse("all", load_game("leduc")) == ActiveRounds(0, 1)
    assert ActiveRounds.parse("1-2", load_game("leduc")) == ActiveRounds(0, 1)
    assert ActiveRounds.last_two(load_game("nolimit")) == ActiveRounds(2, 3)
    assert ActiveRounds.last_two(load_game("leduc")) == ActiveRounds(0, 1)
    assert ActiveRounds.last_two(load_game("kuhn")) == ActiveRounds(0, 0)


# -- raise sizes -------------------------------------------------------------------------


def test_fcpa_preflop_small_blind():
    """SB 50 vs BB 100: pot 150, asked 50, a = 200, so pot raise to 100 + 200 = 300; all-in 20000."""
    state = State(NOLIMIT)
    assert [a.text() for a in candidate_raises(state, BettingOptions.parse("fcpa"))] == [
        "r300",
        "r20000",
    ]
    assert raise_amount(state, Action.raise_to(300)) == 200


def test_fcpa_preflop_facing_a_raise():
    """BB 100 facing r300: pot 400, asked 200, a = 600, so raise to 300 + 600 = 900."""
    state = play(NOLIMIT, "r300")
    assert [a.text() for a in candidate_raises(state, BettingOptions.parse("fcpa"))] == [
        "r900",
        "r20000",
    ]


def test_fcpa_flop_first_to_act_and_facing_a_bet():
    """Flop pot 600: bet 600 (to 900); facing a bet to 750: pot 1050 + asked 450 = 1500, to 2250."""
    flop = play(NOLIMIT, "r300c/")
    assert [a.text() for a in candidate_raises(flop, BettingOptions.parse("fcpa"))] == [
        "r900",
        "r20000",
    ]
    facing = play(NOLIMIT, "r300c/r750")
    assert [a.text() for a in candidate_raises(facing, BettingOptions.parse("fcpa"))] == [
        "r2250",
        "r20000",
    ]


def test_small_and_huge_fractions_map_to_min_and_all_in():
    """On the flop (min raise-to 400) 0.1 pot (to 360) becomes 400; 100 pots become all-in."""
    flop = play(NOLIMIT, "r300c/")
    raises = candidate_raises(flop, BettingOptions.parse("0.1,100"))
    assert [a.text() for a in raises] == ["r400", "r20000"]


def test_duplicates_dropped_and_sorted():
    """Sizes that map to the same raise-to appear once, ascending, whatever the input order."""
    flop = play(NOLIMIT, "r300c/")
    raises = candidate_raises(flop, BettingOptions.parse("allin,2,0.01,min,0.02,1,50"))
    assert [a.text() for a in raises] == ["r400", "r900", "r1500", "r20000"]


def test_fractions_round_half_up_to_whole_chips():
    """Pot 1802 on the flop: 0.25 pot is 450.5 chips, rounded up to 451 (to 901 + 451 = 1352)."""
    flop = play(NOLIMIT, "r901c/")
    assert flop.pot == 1802
    assert [a.text() for a in candidate_raises(flop, BettingOptions.parse("0.25"))] == ["r1352"]


def test_56bets_sizes_are_legal_and_distinct():
    """Every 56bets candidate is a legal raise, sizes strictly increase, all-in last."""
    state = play(NOLIMIT, "r300c/")
    raises = candidate_raises(state, BettingOptions.parse("56bets"))
    assert all(state.is_legal(a) for a in raises)
    sizes = [a.size for a in raises]
    assert sizes == sorted(set(sizes))
    assert sizes[-1] == 20000 and sizes[0] == 400


def test_no_raise_when_opponent_is_all_in():
    """Facing an all-in no raise is legal: only fold/call remain."""
    assert candidate_raises(play(NOLIMIT, "r20000"), BettingOptions.parse("56bets")) == []


def test_limit_raise_is_the_fixed_one():
    """Limit: one candidate 'r' (a = 10 preflop for the SB: 5 in, raise to 20), none for fc or at the cap."""
    state = State(LIMIT)
    assert candidate_raises(state, BettingOptions.parse("fcpa")) == [Action.RAISE]
    assert raise_amount(state, Action.RAISE) == 10
    assert candidate_raises(state, BettingOptions.parse("fc")) == []
    capped = play(LIMIT, "rrr")  # maxRaises 3 preflop (the big blind is not a raise)
    assert candidate_raises(capped, BettingOptions.parse("fcpa")) == []


# -- decisions ---------------------------------------------------------------------------


def test_nut_hand_on_river_against_never_folding_range_goes_all_in():
    """Royal flush on the river (equity 1 on every hand), opponent never folds: largest raise wins."""
    board = cards_from_text("AhKhQhJh2c")
    hero = cards_from_text("Th9c")
    equity = equity_vector_small(NOLIMIT, hero, board)
    known = compatible_mask(NOLIMIT, hero + board)
    assert (equity[known] == 1.0).all() and (equity[~known] == 0).all()
    state = play(NOLIMIT, "r300c/cc/cc/")  # river, position 0 to act, pot 600
    raises = candidate_raises(state, BettingOptions.parse("56bets"))
    decision = decide(
        state, 0, equity, uniform_range(NOLIMIT, hero + board), {a: flat(0.0) for a in raises}
    )
    assert decision.action == Action.raise_to(20000)
    assert decision.reason == "best"
    assert decision.wp == pytest.approx(1.0)
    assert decision.utility(Action.raise_to(20000)) == pytest.approx(600 + 19700)
    assert decision.utility(Action.CALL) == pytest.approx(600)


def test_hopeless_hand_facing_a_bet_folds():
    """Equity 0 facing a river bet (pot 1200, asked 600), no fold equity: every U < 0, fold."""
    state = play(NOLIMIT, "r300c/cc/cc/r900")
    raises = candidate_raises(state, BettingOptions.parse("fcpa"))
    decision = decide(state, 1, flat(0.0), flat(1.0), {a: flat(0.0) for a in raises})
    assert decision.action == Action.FOLD and decision.reason == "fold"
    assert (decision.pot, decision.asked) == (1200, 600)
    assert decision.utility(Action.CALL) == pytest.approx(-600)
    for action in raises:
        assert decision.utility(action) == pytest.approx(-(600 + raise_amount(state, action)))


def test_certain_fold_makes_raise_worth_the_pot():
    """fp = 1 gives U(raise) = pot = 600 > U(call) = 300 at wp 1/2: the smallest raise (ties)."""
    state = play(NOLIMIT, "r300c/")
    raises = candidate_raises(state, BettingOptions.parse("fcpa"))
    decision = decide(state, 0, flat(0.5), flat(1.0), {a: flat(1.0) for a in raises})
    assert [u for _, u in decision.utilities] == pytest.approx([300, 600, 600])
    assert decision.action == Action.raise_to(900)
    assert decision.fold_probabilities[Action.raise_to(900)] == 1.0


def test_certain_fold_ties_with_a_sure_call():
    """With wp = 1, U(call) = pot = U(raise) when fp = 1: the tie goes to the call."""
    state = play(NOLIMIT, "r300c/r750")
    raises = candidate_raises(state, BettingOptions.parse("fcpa"))
    decision = decide(state, 1, flat(1.0), flat(1.0), {a: flat(1.0) for a in raises})
    # Exactly 1050 in real arithmetic; wp = sum(pi * e) comes out 1 - 2e-15 in floats.
    assert decision.utility(Action.CALL) == pytest.approx(1050, abs=1e-9)
    assert decision.utility(raises[0]) == 1050
    assert decision.action == Action.CALL


def test_nothing_positive_with_nothing_to_call_checks():
    """asked = 0 and every U <= 0: check, never fold."""
    state = play(NOLIMIT, "r300c/")
    raises = candidate_raises(state, BettingOptions.parse("56bets"))
    decision = decide(state, 0, flat(0.0), flat(1.0), {a: flat(0.0) for a in raises})
    assert max(u for _, u in decision.utilities) == 0.0
    assert decision.action == Action.CALL and decision.reason == "check"


def test_tie_between_call_and_raise_goes_to_call():
    """Kuhn, middle card, opponent never folds: U(call) = 1 = U(raise) (1/2*3 - 1/2*1), so check."""
    state = State(KUHN)
    hero = cards_from_text("Ks")
    equity = equity_vector_small(KUHN, hero, ())
    decision = decide(state, 0, equity, uniform_range(KUHN, hero), {Action.RAISE: flat(0.0, KUHN)})
    assert decision.utility(Action.CALL) == decision.utility(Action.RAISE) == 1.0
    assert decision.action == Action.CALL


def test_near_tie_within_rounding_goes_to_smaller_but_real_gap_does_not():
    """Utilities 1e-12 apart tie (call kept); a gap of a chip is not a tie."""
    state = State(KUHN)
    equity = np.array([1.0, 0.0, 0.0])
    pi = np.array([0.5, 0.0, 0.5])  # hero Ks: wp 1/2, U(call) = 1
    fold = np.array([0.0, 0.0, 1e-13])  # folds the ace a hair: U(raise) = 1 + ~1e-13
    decision = decide(state, 0, equity, pi, {Action.RAISE: fold})
    assert decision.utility(Action.RAISE) > decision.utility(Action.CALL)
    assert decision.action == Action.CALL
    fold = np.array([0.0, 0.0, 0.5])  # fp = 1/4, wp' = 2/3: U(raise) = 1/2 + 3/4 * 5/3 = 7/4
    decision = decide(state, 0, equity, pi, {Action.RAISE: fold})
    assert decision.utility(Action.RAISE) == pytest.approx(1.75)
    assert decision.action == Action.RAISE


def test_tie_between_raises_goes_to_smaller():
    """Two raises with equal utility (both always folded to): the smaller one is played."""
    state = play(NOLIMIT, "r300c/")
    raises = candidate_raises(state, BettingOptions.parse("0.5,1,2"))
    decision = decide(state, 0, flat(0.0), flat(1.0), {a: flat(1.0) for a in raises})
    assert decision.action == raises[0]


def test_utilities_match_naive_formula_on_random_inputs():
    """U(call) and every U(raise) equal a plain-Python restatement of lbr.md (seeded random inputs)."""
    rng = np.random.default_rng(2024)
    for betting, position in [
        ("", 1),
        ("r300", 0),
        ("r300c/", 0),
        ("r300c/r750", 1),
        ("r300c/cc/r1000", 1),
    ]:
        state = play(NOLIMIT, betting)
        raises = candidate_raises(state, BettingOptions.parse("0.5,1,2,min,allin"))
        pi = rng.random(NOLIMIT.num_hands) * (rng.random(NOLIMIT.num_hands) < 0.5)
        e = rng.random(NOLIMIT.num_hands)
        folds = {a: rng.random(NOLIMIT.num_hands) for a in raises}
        decision = decide(state, position, e, pi, folds)
        spent_i, spent_o = state.spent[position], state.spent[1 - position]
        pot, asked = spent_i + spent_o, spent_o - spent_i
        wp = float(np.dot(pi / pi.sum(), e))
        assert decision.wp == pytest.approx(wp)
        assert decision.utility(Action.CALL) == pytest.approx(wp * pot - (1 - wp) * asked)
        for action in raises:
            a = action.size - spent_o
            twin = utility_twin(pot, asked, a, pi.tolist(), e.tolist(), folds[action].tolist())
            assert decision.utility(action) == pytest.approx(twin, rel=1e-9)
        best = max(u for _, u in decision.utilities)
        assert (
            decision.utility(decision.action) == best
            if best > 0
            else decision.action
            in (
                Action.FOLD,
                Action.CALL,
            )
        )


def test_limit_decision_uses_fixed_raise_size():
    """Limit, SB preflop: a = 10, so with wp = 1 and no folds U(raise) = pot + 10 = 25."""
    state = State(LIMIT)
    decision = decide(
        state, 1, flat(1.0, LIMIT), flat(1.0, LIMIT), {Action.RAISE: flat(0.0, LIMIT)}
    )
    assert decision.utility(Action.RAISE) == pytest.approx(25.0)
    assert decision.action == Action.RAISE


def test_fold_call_only_when_no_raise_is_given():
    """With no candidate raise only call and fold compete (fc)."""
    state = play(NOLIMIT, "r20000")
    decision = decide(state, 0, flat(0.6), flat(1.0), {})
    # pot 20100, asked 19900: 0.6 * 20100 - 0.4 * 19900 = 4100 > 0
    assert decision.action == Action.CALL
    assert decision.utilities == ((Action.CALL, pytest.approx(4100.0)),)


def test_inactive_round_only_calls():
    """Outside the active rounds LBR checks/calls without computing anything."""
    state = play(NOLIMIT, "r300c/r750")
    decision = decide(state, 1, (), (), {}, active=False)
    assert decision.action == Action.CALL and decision.reason == "inactive"
    assert math.isnan(decision.wp)


def test_decide_rejects_bad_inputs():
    """Wrong seat, wrong shapes, an empty range and an illegal raise are errors."""
    state = State(NOLIMIT)
    with pytest.raises(ValueError):
        decide(state, 0, flat(0.5), flat(1.0), {})
    with pytest.raises(ValueError):
        decide(state, 1, np.ones(5), flat(1.0), {})
    with pytest.raises(ValueError):
        decide(state, 1, flat(0.5), flat(0.0), {})
    with pytest.raises(ValueError):
        decide(state, 1, flat(0.5), flat(1.0), {Action.raise_to(150): flat(0.0)})
    with pytest.raises(ValueError):
        decide(State(load_game("holdem.nolimit.3p")), 0, flat(0.5), flat(1.0), {})


# -- equity of small games ---------------------------------------------------------------


def test_equity_kuhn():
    """Kuhn: the middle card beats the low card only."""
    assert equity_vector_small(KUHN, cards_from_text("Ks"), ()).tolist() == [1.0, 0.0, 0.0]
    assert equity_vector_small(KUHN, cards_from_text("As"), ()).tolist() == [1.0, 1.0, 0.0]


def test_equity_leduc_by_hand():
    """Leduc (hands Qh Qs Kh Ks Ah As), hero Ah preflop: vs Kh 3/4 (loses only to board Ks), vs As 1/2."""
    equity = equity_vector_small(LEDUC, cards_from_text("Ah"), ())
    assert equity.tolist() == pytest.approx([0.75, 0.75, 0.75, 0.75, 0.0, 0.5])
    river = equity_vector_small(LEDUC, cards_from_text("Ah"), cards_from_text("Qs"))
    assert river.tolist() == [0.0, 0.0, 1.0, 1.0, 0.0, 1.0 / 2]


def test_holdem_equity_function_agrees_with_enumeration_on_the_river():
    """The compute core's hold'em equity equals plain enumeration on a river board."""
    pytest.importorskip("acpc_lbr.equity")
    board = cards_from_text("9s8s2d2cKh")
    hero = cards_from_text("Ts7s")
    fast = np.asarray(equity_function(NOLIMIT)(hero, board), dtype=np.float64)
    slow = equity_vector_small(NOLIMIT, hero, board)
    known = compatible_mask(NOLIMIT, hero + board)
    assert np.allclose(fast[known], slow[known])


# -- the player over a hand ---------------------------------------------------------------


def test_player_inactive_then_active():
    """LbrPlayer with rounds 2-2 in Leduc: calls in round 1, decides in round 2."""
    player = LbrPlayer(LEDUC, BettingOptions.parse("fcpa"), ActiveRounds.parse("2"))
    player.start_hand(0, cards_from_text("Ah"))
    state = State(LEDUC)
    assert player.candidates(state) == []
    assert player.decide(state, (), {}).reason == "inactive"
    state.apply(Action.RAISE)
    assert player.observe_opponent(np.full(6, 0.5))  # opponent re-raises
    state.apply(Action.RAISE)
    state.apply(Action.CALL)
    assert state.round == 1
    board = cards_from_text("As")
    assert player.candidates(state) == [Action.RAISE]
    decision = player.decide(state, board, {Action.RAISE: np.zeros(6)})
    # Pair of aces: beats every possible hand (Qh Qs Kh Ks); raise is worth more than checking.
    assert decision.wp == pytest.approx(1.0)
    assert decision.action == Action.RAISE
    assert player.range[[4, 5]].tolist() == [0.0, 0.0]


def test_player_counts_inconsistencies():
    """An opponent action with probability 0 on every possible hand is counted."""
    player = LbrPlayer(KUHN, BettingOptions.parse("fc"), ActiveRounds())
    player.start_hand(1, cards_from_text("Qs"))
    assert not player.observe_opponent([1.0, 0.0, 0.0])
    assert player.inconsistencies == 1
    assert player.range.tolist() == [0.0, 0.5, 0.5]
