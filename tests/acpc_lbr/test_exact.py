"""Exact best response and exact LBR value on Kuhn and Leduc, against oracles and slow twins.

Oracles: OpenSpiel 2.0.2 ``exploitability`` of the uniform random policy
(the project notes on OpenSpiel: Kuhn 0.458333, NashConv 0.916667; Leduc
2.373611, NashConv 4.747222; the same for the built-in games and the ACPC
gamedef versions); Kuhn's (1950) equilibrium value -1/18 for the first
player; hand derivations in the docstrings. Slow twins: a per-deal scalar
walk of two strategies, enumeration of every pure strategy as a best
response, and a per-deal replay of :class:`acpc_lbr.lbr.LbrPlayer`.
"""

from __future__ import annotations

import copy
import itertools
from math import comb
from pathlib import Path

import numpy as np
import pytest

from acpc_lbr.exact import (
    best_response,
    best_response_value,
    lbr_expected_value,
    lbr_value,
    strategy_value,
)
from acpc_lbr.lbr import ActiveRounds, BettingOptions, LbrPlayer
from acpc_lbr.policy import probabilities_at
from acpc_lbr.ranges import hand_table
from acpc_lbr.strategies import (
    always_call,
    always_fold,
    default_actions,
    from_answers,
    kuhn_equilibrium,
    random_table,
    table_strategy,
    uniform_random,
)
from protocol.cards import cards_to_text
from protocol.gamedef import load_game
from protocol.rules import Action, State

KUHN = load_game("kuhn")
LEDUC = load_game("leduc")
FCPA = BettingOptions.parse("fcpa")
FC = BettingOptions.parse("fc")


# -- helpers: a random table strategy and slow twins ------------------------------------------


def _child(state, action):
    child = state.clone()
    child.apply(action)
    return child


def public_nodes(game):
    """Every (state, board) where a player acts, over every board (a plain walk)."""
    found = []

    def walk(state, board):
        if state.finished:
            return
        need = game.board_cards_visible(state.round) - len(board)
        if need > 0:
            rest = [c for c in game.cards if c not in board]
            for cards in itertools.combinations(rest, need):
                walk(state, board + cards)
            return
        found.append((state, board))
        for action in default_actions(state):
            walk(_child(state, action), board)

    walk(State(game), ())
    return found


def deals(game):
    """Every (hole of seat 0, hole of seat 1, full board), equally likely."""
    hands = hand_table(game).hand_cards
    for h0, h1 in itertools.permutations(hands, 2):
        if set(h0) & set(h1):
            continue
        rest = [c for c in game.cards if c not in h0 + h1]
        for board in itertools.permutations(rest, game.total_board_cards):
            yield h0, h1, board


def hand_number(game, hole):
    return hand_table(game).hand_cards.index(tuple(sorted(hole)))


def deal_value(game, policies, seat, holes, board):
    """Seat's expected winnings on one deal, with scalar probabilities."""

    def walk(state, prob):
        if state.finished:
            return prob * state.values(holes, board)[seat]
        player = state.current_player
        shown = board[: game.board_cards_visible(state.round)]
        actions = default_actions(state)
        probs = probabilities_at(policies[player], state, shown, actions)[:, hand_number(game, holes[player])]
        return sum(walk(_child(state, a), prob * p) for a, p in zip(actions, probs) if p > 0)

    return walk(State(game), 1.0)


def naive_value(game, policies, seat):
    """Seat's expected winnings with policies[p] at seat p: the mean over every deal."""
    values = [deal_value(game, policies, seat, (h0, h1), board) for h0, h1, board in deals(game)]
    return sum(values) / len(values)


def pure_strategies_kuhn(seat):
    """Every deterministic strategy of one Kuhn seat (2^6 tables)."""
    # Seat 0 acts first (check/bet) and after check-bet (fold/call); seat 1
    # after a check (check/bet) and facing a bet (fold/call).
    first, facing = ("", "cr") if seat == 0 else ("c", "r")
    choices = []
    for card in (cards_to_text([c]) for c in KUHN.cards):
        choices.append((f"{card}:{first}", "cr"))
        choices.append((f"{card}:{facing}", "fc"))
    for picks in itertools.product(*[options for _, options in choices]):
        yield {key: {pick: 1.0} for (key, _), pick in zip(choices, picks)}


def deal_lbr_value(game, policy, options, rounds, seat, holes, board):
    """LBR's winnings in ``seat`` on one deal, replaying LbrPlayer (scalar opponent probabilities)."""
    opponent_hand = hand_number(game, holes[1 - seat])

    def walk(state, player, prob):
        if state.finished:
            return prob * state.values(holes, board)[seat]
        shown = board[: game.board_cards_visible(state.round)]
        if state.current_player == seat:
            folds = {
                a: probabilities_at(policy, _child(state, a), shown, [Action.FOLD])[0]
                for a in player.candidates(state)
            }
            decision = player.decide(state, shown, folds)
            return walk(_child(state, decision.action), player, prob)
        player.observe_board(shown)
        actions = default_actions(state)
        value = 0.0
        for action, row in zip(actions, probabilities_at(policy, state, shown, actions)):
            if row[opponent_hand] > 0:
                branch = copy.copy(player)
                branch.tracker = player.tracker.copy()
                branch.observe_opponent(row)
                value += walk(_child(state, action), branch, prob * row[opponent_hand])
        return value

    root = LbrPlayer(game, options, rounds)
    root.start_hand(seat, holes[seat])
    return walk(State(game), root, 1.0)


def naive_lbr_value(game, policy, options, rounds, seat):
    """LBR's value in ``seat``: the mean of :func:`deal_lbr_value` over every deal."""
    values = [
        deal_lbr_value(game, policy, options, rounds, seat, (h0, h1), board)
        for h0, h1, board in deals(game)
    ]
    return sum(values) / len(values)


# -- oracles --------------------------------------------------------------------------------------


def test_uniform_random_kuhn_matches_openspiel():
    """Uniform random in Kuhn: exploitability 0.458333, NashConv 0.916667 (OpenSpiel 2.0.2)."""
    result = best_response(KUHN, uniform_random(KUHN))
    assert result.exploitability == pytest.approx(0.458333, abs=1e-6)
    assert result.nash_conv == pytest.approx(0.916667, abs=1e-6)


def test_uniform_random_leduc_matches_openspiel():
    """Uniform random in Leduc: exploitability 2.373611, NashConv 4.747222 (OpenSpiel 2.0.2)."""
    result = best_response(LEDUC, uniform_random(LEDUC))
    assert result.exploitability == pytest.approx(2.373611, abs=1e-6)
    assert result.nash_conv == pytest.approx(4.747222, abs=1e-6)


def test_sdk_random_bot_has_the_same_exploitability():
    """The SDK's random bot, adapted, is uniform random in limit games: same OpenSpiel figures."""
    bots = pytest.importorskip("agents.bots")
    assert best_response_value(KUHN, bots.random_bot) == pytest.approx(
        0.458333, abs=1e-6
    )
    assert best_response_value(LEDUC, bots.random_bot) == pytest.approx(
        2.373611, abs=1e-6
    )
    assert best_response_value(KUHN, bots.always_call) == pytest.approx(1 / 3)


def test_kuhn_equilibrium_is_unexploitable():
    """Kuhn's equilibria (any alpha in [0, 1/3]): exploitability 0, first player's value -1/18."""
    for alpha in (0.0, 0.2, 1 / 3):
        policy = kuhn_equilibrium(KUHN, alpha)
        result = best_response(KUHN, policy)
        assert result.seat_values == pytest.approx((-1 / 18, 1 / 18), abs=1e-12)
        assert result.exploitability == pytest.approx(0.0, abs=1e-12)
        assert naive_value(KUHN, (policy, policy), 0) == pytest.approx(-1 / 18)


def test_kuhn_always_call_by_hand():
    """Always-call in Kuhn: BR 1/3 per seat, and LBR finds all of it.

    The opponent never bets and calls every bet. Holding the top card the
    best response bets and wins 2; the middle card wins 1 or loses 1 at
    showdown, or +-2 if it bets: 0 either way; the low card checks and loses
    1. So (2 + 0 - 1) / 3 = 1/3 in either seat (as seat 1 the opponent checks
    first, and the same choices remain). LBR: top card wp = 1, U(raise) = 3 >
    U(call) = 2, bets; middle card U(call) = 1 = U(raise), ties to check; low
    card U(call) = 0, U(raise) = -1, checks: the same 1/3.
    """
    policy = always_call(KUHN)
    assert best_response(KUHN, policy).seat_values == pytest.approx((1 / 3, 1 / 3))
    assert lbr_value(KUHN, policy, FCPA).seat_values == pytest.approx((1 / 3, 1 / 3))


def test_kuhn_always_fold_by_hand():
    """Always-fold in Kuhn: BR and LBR both win exactly the ante, 1 per hand.

    The opponent never bets and folds to any bet, so it never puts in more
    than its ante: no strategy wins more than 1, and betting always wins 1.
    LBR: fp = 1 makes U(bet) = pot = 2. The low and middle cards have
    U(check) = 0 or 1 < 2 and bet (+1); the top card has U(check) = wp*pot = 2,
    a tie that goes to the check, and wins the showdown (+1). Every hand: +1.
    """
    policy = always_fold(KUHN)
    assert best_response(KUHN, policy).seat_values == pytest.approx((1.0, 1.0))
    assert lbr_value(KUHN, policy, FCPA).seat_values == pytest.approx((1.0, 1.0))
    assert lbr_expected_value(KUHN, policy, FCPA) == pytest.approx(1.0)


def test_leduc_always_fold_by_hand():
    """Always-fold in Leduc: the opponent only ever loses its ante, so BR = LBR = 1."""
    policy = always_fold(LEDUC)
    assert best_response_value(LEDUC, policy) == pytest.approx(1.0)
    assert lbr_expected_value(LEDUC, policy, FCPA) == pytest.approx(1.0)


def test_fold_call_lbr_against_always_call_kuhn_is_showdown_value():
    """LBR restricted to fold/call against always-call only checks down: value 0 by symmetry."""
    assert lbr_expected_value(KUHN, always_call(KUHN), FC) == pytest.approx(0.0, abs=1e-12)


# -- slow twins ---------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kuhn_best_response_equals_best_pure_strategy(seed):
    """The tree-walk BR equals the best of all 64 pure strategies, per seat (random tables)."""
    sigma = table_strategy(KUHN, random_table(KUHN, seed))
    result = best_response(KUHN, sigma)
    for seat in (0, 1):
        best = max(
            naive_value(
                KUHN,
                (table_strategy(KUHN, pure), sigma)
                if seat == 0
                else (sigma, table_strategy(KUHN, pure)),
                seat,
            )
            for pure in pure_strategies_kuhn(seat)
        )
        assert result.seat_values[seat] == pytest.approx(best, abs=1e-12)


@pytest.mark.parametrize("game", [KUHN, LEDUC], ids=["kuhn", "leduc"])
def test_strategy_value_matches_per_deal_walk(game):
    """strategy_value equals the per-deal scalar walk, and is antisymmetric."""
    a = table_strategy(game, random_table(game, 11))
    b = uniform_random(game)
    slow = (naive_value(game, (a, b), 0) + naive_value(game, (b, a), 1)) / 2
    assert strategy_value(game, a, b) == pytest.approx(slow, abs=1e-12)
    assert strategy_value(game, b, a) == pytest.approx(-slow, abs=1e-12)
    assert strategy_value(game, a, a) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize(
    "game,options,rounds",
    [
        (KUHN, FCPA, ActiveRounds()),
        (LEDUC, FCPA, ActiveRounds()),
        (LEDUC, FCPA, ActiveRounds.parse("2")),
    ],
    ids=["kuhn", "leduc", "leduc-round2"],
)
def test_lbr_value_matches_per_deal_lbr_player(game, options, rounds):
    """The vector LBR walk equals replaying LbrPlayer deal by deal (a random table opponent)."""
    sigma = table_strategy(game, random_table(game, 5))
    exact = lbr_value(game, sigma, options, rounds)
    for seat in (0, 1):
        slow = naive_lbr_value(game, sigma, options, rounds, seat)
        assert exact.seat_values[seat] == pytest.approx(slow, abs=1e-12)
    assert exact.inconsistencies == 0


# -- the lower bound -------------------------------------------------------------------------------


def _strategies(game):
    found = [
        ("uniform", uniform_random(game)),
        ("always-call", always_call(game)),
        ("always-fold", always_fold(game)),
        ("table-7", table_strategy(game, random_table(game, 7))),
        ("table-8", table_strategy(game, random_table(game, 8))),
    ]
    if game is KUHN:
        found.append(("equilibrium", kuhn_equilibrium(game, 0.25)))
    return found


@pytest.mark.parametrize("game", [KUHN, LEDUC], ids=["kuhn", "leduc"])
def test_lbr_never_beats_best_response(game):
    """Exact LBR value <= exact BR value, per seat, for several strategies and LBR settings."""
    settings = [(FCPA, ActiveRounds()), (FC, ActiveRounds())]
    if game.num_rounds > 1:
        settings.append((FCPA, ActiveRounds.parse("2")))
    for name, policy in _strategies(game):
        br = best_response(game, policy)
        for options, rounds in settings:
            lbr = lbr_value(game, policy, options, rounds)
            for seat in (0, 1):
                assert lbr.seat_values[seat] <= br.seat_values[seat] + 1e-12, (
                    name,
                    options.name,
                    seat,
                )
            assert lbr.inconsistencies == 0


@pytest.mark.parametrize("game", [KUHN, LEDUC], ids=["kuhn", "leduc"])
def test_no_strategy_beats_best_response(game):
    """Any strategy's value against sigma is at most BR(sigma) (strategy_value vs exploitability)."""
    for _, sigma in _strategies(game):
        exploitability = best_response_value(game, sigma)
        for _, other in _strategies(game):
            assert strategy_value(game, other, sigma) <= exploitability + 1e-12


def test_lbr_beats_uniform_random_in_leduc():
    """LBR exploits uniform random in Leduc (positive value), below BR's 2.373611."""
    value = lbr_expected_value(LEDUC, uniform_random(LEDUC), FCPA)
    assert 0.5 < value < 2.373611


# -- errors -----------------------------------------------------------------------------------------


def test_policy_not_summing_to_one_is_an_error():
    """A policy that leaves probability mass off the walked actions is rejected."""

    @from_answers
    def broken(state, board, actions):
        return np.full((len(actions), KUHN.num_hands), 0.3)

    with pytest.raises(ValueError, match="sum to"):
        best_response(KUHN, broken)
    with pytest.raises(ValueError, match="sum to"):
        lbr_value(KUHN, broken, FCPA)


def test_policy_with_wrong_shape_is_an_error():
    """A policy answer of the wrong shape is rejected."""

    @from_answers
    def wrong(state, board, actions):
        return np.ones((len(actions), 2))

    with pytest.raises(ValueError, match="shape"):
        best_response(KUHN, wrong)


def test_three_player_games_are_refused():
    """The exact tools are heads-up only."""
    game = load_game("kuhn.limit.3p")
    with pytest.raises(ValueError):
        best_response(game, uniform_random(game))


def test_hand_pairs_count():
    """Sanity of the chance normalisation: Leduc has 6*5 ordered hole pairs and 4 boards each."""
    assert sum(1 for _ in deals(LEDUC)) == comb(6, 1) * comb(5, 1) * 4


# -- the simple strategies ------------------------------------------------------------------


def test_uniform_random_no_limit_is_uniform_over_types():
    """No-limit SB preflop: f, c 1/3 each; the raise third split between pot (r300) and all-in."""
    game = load_game("nolimit")
    actions = [
        Action.FOLD,
        Action.CALL,
        Action.raise_to(300),
        Action.raise_to(20000),
        Action.raise_to(500),
    ]
    probs = probabilities_at(uniform_random(game), State(game), (), actions)
    assert probs.shape == (5, 1326)
    assert probs[:, 0].tolist() == pytest.approx([1 / 3, 1 / 3, 1 / 6, 1 / 6, 0.0])
    facing_all_in = State(game)
    facing_all_in.apply(Action.raise_to(20000))
    probs = probabilities_at(uniform_random(game), facing_all_in, (), [Action.FOLD, Action.CALL])
    assert probs[:, 7].tolist() == [0.5, 0.5]


def test_always_fold_checks_when_it_cannot_fold():
    """always_fold checks at the first decision of Kuhn and folds facing a bet."""
    policy = always_fold(KUHN)
    state = State(KUHN)
    assert probabilities_at(policy, state, (), [Action.FOLD, Action.CALL, Action.RAISE])[:, 0].tolist() == [0, 1, 0]
    state.apply(Action.RAISE)
    assert probabilities_at(policy, state, (), [Action.FOLD, Action.CALL])[:, 0].tolist() == [1, 0]


def test_table_strategy_falls_back_for_missing_information_sets():
    """Rows come from the table by info key; missing keys use the default (uniform random)."""
    top = cards_to_text([KUHN.cards[2]])
    policy = table_strategy(KUHN, {f"{top}:": {"r": 1.0}})
    probs = probabilities_at(policy, State(KUHN), (), [Action.CALL, Action.RAISE])
    assert probs.tolist() == [[0.5, 0.5, 0.0], [0.5, 0.5, 1.0]]


def test_table_strategy_board_blocked_hands_are_zero():
    """In Leduc round 2, hands holding the board card get no row (all zeros)."""
    state = State(LEDUC)
    state.apply(Action.CALL)
    state.apply(Action.CALL)
    board = (LEDUC.cards[0],)
    probs = probabilities_at(table_strategy(LEDUC, {}), state, board, [Action.CALL, Action.RAISE])
    assert probs[:, 0].tolist() == [0.0, 0.0]
    assert probs[:, 1:].sum(axis=0) == pytest.approx(np.ones(5))


def test_exact_command_prints_the_figures(capsys):
    """acpc-lbr exact prints BR, exploitability and LBR for a named strategy."""
    from acpc_lbr.cli.exact import main

    assert main(["--game", "kuhn", "--strategy", "always-call", "--bets", "fcpa"]) == 0
    out = capsys.readouterr().out
    assert "exploitability 0.333333" in out
    assert "LBR value      0.333333" in out
    with pytest.raises(SystemExit):
        main(["--strategy", "no-such-strategy"])


BOT_FILES = Path(__file__).resolve().parents[1] / "data" / "bots"


@pytest.mark.parametrize("prefix", ["", "sdk:"])
def test_exact_command_takes_the_bot_specs_of_play(capsys, prefix):
    """--strategy takes what 'acpc-lbr play' takes: FILE.py:FUNCTION (with or without sdk:) and bot names;
    the file's figures are those of the same strategy loaded by hand."""
    from acpc_lbr.cli.exact import main
    from agents.players import load_strategy

    spec = f"{BOT_FILES / 'card_aware.py'}:strategy"
    assert main(["--game", "leduc", "--strategy", prefix + spec]) == 0
    out = capsys.readouterr().out
    policy = load_strategy(spec)
    assert f"exploitability {best_response(LEDUC, policy).exploitability:.6f}" in out
    assert f"LBR value      {lbr_value(LEDUC, policy, FCPA).value:.6f}" in out
    assert main(["--game", "leduc", "--strategy", prefix + "call-raise"]) == 0
    assert "exploitability 2.150000" in capsys.readouterr().out  # printed by --strategy sdk:call-raise before


def test_exact_command_refuses_bad_rounds_and_reports_a_failing_strategy(capsys):
    """Rounds beyond the game are a usage error; a strategy that raises is one line, exit 1."""
    from acpc_lbr.cli.exact import main

    with pytest.raises(SystemExit):
        main(["--game", "leduc", "--rounds", "3-4"])
    assert "beyond the last round" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--game", "leduc", "--strategy", "lbr"])
    assert main(["--game", "leduc", "--strategy", f"{BOT_FILES / 'broken_answers.py'}:strategy"]) == 1
    err = capsys.readouterr().err
    assert "raised RuntimeError" in err and "Traceback" not in err


@pytest.mark.parametrize("game", ["nolimit", "limit"])
def test_exact_command_refuses_holdem_at_once(capsys, game):
    """Hold'em's tree cannot be walked: a usage error naming the small games, not a walk that
    never ends (``acpc-lbr exact --game nolimit`` ran for ever)."""
    from acpc_lbr.cli.exact import main

    with pytest.raises(SystemExit) as stopped:
        main(["--game", game])
    assert stopped.value.code == 2
    assert "too large to walk exactly" in capsys.readouterr().err
    with pytest.raises(ValueError, match="too large"):
        best_response(load_game(game), uniform_random(load_game(game)))


# -- sampled play agrees with the exact value ---------------------------------------------------


def play_lbr_hand(game, policy, options, rounds, deal, seat, rng):
    """One hand of LbrPlayer against a sampled policy; LBR's winnings in chips."""
    opponent_hand = hand_number(game, deal.hole[1 - seat])
    lbr = LbrPlayer(game, options, rounds)
    lbr.start_hand(seat, deal.hole[seat])
    state = State(game)
    while not state.finished:
        shown = deal.board_cards[: game.board_cards_visible(state.round)]
        if state.current_player == seat:
            folds = {
                a: probabilities_at(policy, _child(state, a), shown, [Action.FOLD])[0] for a in lbr.candidates(state)
            }
            state.apply(lbr.decide(state, shown, folds).action)
        else:
            lbr.observe_board(shown)
            actions = default_actions(state)
            probs = probabilities_at(policy, state, shown, actions)
            j = rng.choice(len(actions), p=probs[:, opponent_hand])
            lbr.observe_opponent(probs[j])
            state.apply(actions[j])
    return state.values(deal.hole, deal.board_cards)[seat]


def test_sampled_lbr_play_agrees_with_exact_value():
    """1,500 dealt Leduc hands (seats alternating) average to the exact LBR value within 4 s.e."""
    from protocol.deal import DealSource

    sigma = table_strategy(LEDUC, random_table(LEDUC, 5))
    exact = lbr_value(LEDUC, sigma, FCPA).value
    source = DealSource(20261124)
    rng = np.random.default_rng(3)
    outcomes = [
        play_lbr_hand(LEDUC, sigma, FCPA, ActiveRounds(), source.deal(LEDUC), hand % 2, rng)
        for hand in range(1500)
    ]
    mean = float(np.mean(outcomes))
    error = float(np.std(outcomes, ddof=1)) / np.sqrt(len(outcomes))
    assert abs(mean - exact) < 4 * error, (mean, exact, error)


@pytest.mark.parametrize("name", ["nan_call", "negative_fold"])
def test_probabilities_that_are_not_probabilities_are_refused(
        name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: NaN passed the sum check (every comparison with NaN is false), and `acpc-lbr exact`
    printed 'exploitability nan' with exit 0; a fold of -0.5 beside a call of 1.5 summed to 1 and
    was walked as a strategy. Now: one line naming the state, exit 1, no figure."""
    from acpc_lbr.cli.exact import main as exact_main

    bots = Path(__file__).resolve().parents[1] / "data" / "bots" / "invalid_probabilities.py"
    assert exact_main(["--game", "kuhn", "--strategy", f"{bots}:{name}"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "are not all finite and in [0, 1]" in err
