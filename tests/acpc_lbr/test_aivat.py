"""Tests of AIVAT (acpc_lbr/aivat.py): exact unbiasedness on Kuhn and Leduc by enumerating
every hand, the identities its chance terms rest on, the sampled flop equity, liars, and
the per-hand function's edges."""

from __future__ import annotations

import json
import math
from itertools import combinations

import numpy as np
import pytest

from acpc_lbr.aivat import (
    FITTED,
    POT_SHARE,
    AivatSetup,
    ValueFunction,
    completion_estimate,
    correction_actions,
    hand_aivat,
    value_function,
)
from acpc_lbr.estimators import HandOutcome
from acpc_lbr.exact import lbr_histories, lbr_value
from acpc_lbr.lbr import ActiveRounds, BettingOptions, equity_function
from acpc_lbr.ranges import compatible_mask, remove_cards
from acpc_lbr.results import (
    SCHEMA_VERSION,
    estimates_from_outcomes,
    results_document,
)
from acpc_lbr.simulation import simulate_lbr_match
from acpc_lbr.strategies import kuhn_equilibrium, random_table, table_strategy, uniform_random
from protocol.gamedef import load_game
from protocol.rules import Action, State

KUHN = load_game("kuhn")
LEDUC = load_game("leduc")
FCPA = BettingOptions.parse("fcpa")


def expectations(game, policy, options, position, answers=None, rounds=None, opponent_from=None, value=None):
    """Exact E[raw], E[AIVAT], their second moments and E[(AIVAT - raw)^2] over every hand."""
    equity = equity_function(game)
    total = raw = aivat = raw2 = aivat2 = diff2 = 0.0
    for h in lbr_histories(game, policy, options, position, rounds, answers=answers):
        rows = h.rows
        if opponent_from is not None:  # before that round, only the played action's row
            rows = _played_rows_only(game, h, position, opponent_from)
        value_ = hand_aivat(game, h.betting, h.board, h.hole[position], position, rows, equity,
                            opponent_from=opponent_from, value=value).chips
        r = h.values[position]
        p = h.probability
        total += p
        raw += p * r
        aivat += p * value_
        raw2 += p * r * r
        aivat2 += p * value_ * value_
        diff2 += p * (value_ - r) ** 2
    return {"total": total, "raw": raw, "aivat": aivat, "raw_std": math.sqrt(raw2 - raw**2),
            "aivat_std": math.sqrt(max(aivat2 - aivat**2, 0.0)),
            "diff_std": math.sqrt(max(diff2 - (aivat - raw) ** 2, 0.0))}


def _played_rows_only(game, history, position, first):
    """The history's rows, keeping only the played action's row at opponent decisions before ``first``."""
    state = State(game)
    rows = list(history.rows)
    used = 0
    for round_actions in history.betting:
        for action in round_actions:
            if state.current_player != position:
                if state.round < first:
                    rows[used] = {action.text(): rows[used][action.text()]}
                used += 1
            state.apply(action)
    return rows


def _policies(game):
    named = [("uniform", uniform_random(game)), ("card-aware", table_strategy(game, random_table(game, 5)))]
    if game is KUHN:
        named.append(("kuhn-equilibrium", kuhn_equilibrium(game, 0.2)))
    return named


# -- 1. exact unbiasedness ----------------------------------------------------------------


@pytest.mark.parametrize("game", [KUHN, LEDUC], ids=["kuhn", "leduc"])
@pytest.mark.parametrize("options", ["fcpa", "fc"])
def test_aivat_expectation_equals_raw_exactly(game, options) -> None:
    """Over every deal, board and opponent action (the policy's probabilities), E[AIVAT] equals
    E[raw] to floating-point precision, for uniform random and card-aware policies, both seats;
    E[raw] is LBR's exact value from the independent tree walk (acpc_lbr.exact.lbr_value)."""
    bets = BettingOptions.parse(options)
    for name, policy in _policies(game):
        exact = lbr_value(game, policy, bets)
        for position in (0, 1):
            e = expectations(game, policy, bets, position)
            assert e["total"] == pytest.approx(1.0, abs=1e-12), name
            assert e["raw"] == pytest.approx(exact.seat_values[position], abs=1e-12), name
            assert abs(e["aivat"] - e["raw"]) < 1e-12, (name, position, e)


#: Value functions for the exactness checks: the plain pot share, Leduc's fitted one, and
#: arbitrary coefficients (negative ones, the acting term) that no fit would choose.
VALUE_FUNCTIONS = {
    "pot-share": POT_SHARE,
    "fitted-leduc": FITTED["leduc"],
    "arbitrary": ValueFunction(pot_growth=(-0.7, 2.5), room_growth=(3.0, -1.25), acting_growth=(1.5, 4.0)),
}


@pytest.mark.parametrize("game", [KUHN, LEDUC], ids=["kuhn", "leduc"])
@pytest.mark.parametrize("value", list(VALUE_FUNCTIONS), ids=list(VALUE_FUNCTIONS))
def test_aivat_is_unbiased_for_every_value_function(game, value) -> None:
    """The growth term (2 wp - 1) g(state) keeps AIVAT exactly unbiased whatever its coefficients:
    uniform, card-aware (and Kuhn's equilibrium) policies, both seats; and it changes the estimate."""
    v = VALUE_FUNCTIONS[value]
    for name, policy in _policies(game):
        for position in (0, 1):
            e = expectations(game, policy, FCPA, position, value=v)
            assert abs(e["aivat"] - e["raw"]) < 1e-11, (name, position, e)
            if v != POT_SHARE:
                plain = expectations(game, policy, FCPA, position, value=POT_SHARE)
                assert abs(e["aivat_std"] - plain["aivat_std"]) > 1e-6, (name, position)


def test_fitted_leduc_value_narrows_the_spread_against_the_test_policy() -> None:
    """Leduc's fitted value function (fitted on uniform, table:7 and table:11 only) against
    table:5, exactly: spread ratio AIVAT/raw under 0.38 per seat (docs/results.md: 0.366 and
    0.365), where the pot share gives 0.412 and 0.443."""
    assert value_function(LEDUC) == FITTED["leduc"] and value_function(KUHN) == POT_SHARE
    policy = table_strategy(LEDUC, random_table(LEDUC, 5))
    for position in (0, 1):
        fitted = expectations(LEDUC, policy, FCPA, position)
        plain = expectations(LEDUC, policy, FCPA, position, value=POT_SHARE)
        assert fitted["aivat_std"] < 0.38 * fitted["raw_std"], (position, fitted)
        assert fitted["aivat_std"] < plain["aivat_std"] - 0.1, position


def test_growth_term_is_zero_once_the_hand_is_over() -> None:
    """g is 0 at a finished state (the showdown value stays the imaginary observation), and
    the room is what each player can still put in (no-limit) or the round's bet (limit)."""
    v = ValueFunction(pot_growth=(0.0,) * 4, room_growth=(1.0,) * 4)
    nolimit = load_game("nolimit")
    state = State(nolimit)
    assert v.growth(state) == nolimit.stack[0] - 100  # the big blind is in
    state.apply(Action.FOLD)
    assert v.growth(state) == 0.0
    leduc = State(LEDUC)
    assert ValueFunction(room_growth=(1.0, 1.0)).growth(leduc) == LEDUC.raise_size[0]


def test_aivat_is_unbiased_with_inactive_rounds() -> None:
    """LBR that only calls in round 1 (active in round 2 only): still exactly unbiased."""
    policy = table_strategy(LEDUC, random_table(LEDUC, 9))
    for position in (0, 1):
        e = expectations(LEDUC, policy, FCPA, position, rounds=ActiveRounds.parse("2"))
        assert abs(e["aivat"] - e["raw"]) < 1e-12


def test_aivat_is_unbiased_with_opponent_corrections_in_late_rounds_only() -> None:
    """Opponent decisions of round 1 without a correction (and without rows beyond the played
    action's), as hold'em's preflop and flop: still exactly unbiased, and a different estimator."""
    for name, policy in _policies(LEDUC):
        for position in (0, 1):
            late = expectations(LEDUC, policy, FCPA, position, opponent_from=1)
            every = expectations(LEDUC, policy, FCPA, position, opponent_from=0)
            assert abs(late["aivat"] - late["raw"]) < 1e-12, (name, position)
            assert abs(late["aivat_std"] - every["aivat_std"]) > 1e-6, (name, position)


@pytest.mark.parametrize("name", ["uniform", "card-aware"])
def test_aivat_narrows_the_spread_exactly(name) -> None:
    """The exact standard deviation of AIVAT per hand is well under raw's in Leduc (figures of
    docs/results.md): below 0.4x against uniform random, below 0.5x against the card-aware table."""
    policy = dict(_policies(LEDUC))[name]
    bound = 0.4 if name == "uniform" else 0.5
    for position in (0, 1):
        e = expectations(LEDUC, policy, FCPA, position)
        assert e["aivat_std"] < bound * e["raw_std"], (position, e)


# -- 2. a bot that lies in its range answers -----------------------------------------------


@pytest.mark.parametrize("claim", ["uniform", "other-table"])
def test_a_liar_biases_aivat_and_the_check_has_a_nonzero_mean(claim) -> None:
    """A card-aware Leduc bot answering with another strategy: E[AIVAT] != E[raw] exactly, so
    the honesty check AIVAT - raw has a nonzero mean (it is caught given enough hands)."""
    played = table_strategy(LEDUC, random_table(LEDUC, 5))
    answers = uniform_random(LEDUC) if claim == "uniform" else table_strategy(LEDUC, random_table(LEDUC, 6))
    biases = []
    needed = []
    for position in (0, 1):
        e = expectations(LEDUC, played, FCPA, position, answers=answers)
        biases.append(e["aivat"] - e["raw"])
        # hands for the check (p < 0.001, |z| > 3.29) to flag about half of the time: (3.29 s / bias)^2
        needed.append((3.29 * e["diff_std"] / abs(biases[-1])) ** 2)
    assert min(abs(b) for b in biases) > 0.05
    assert min(needed) < 3000, needed  # docs/results.md: ~1,200 and ~2,500 hands


def test_liar_is_flagged_by_the_sampled_check() -> None:
    """Sampled through the results pipeline, the same liar is flagged by AIVAT - raw."""
    played = table_strategy(LEDUC, random_table(LEDUC, 5))
    outcomes = simulate_lbr_match(LEDUC, played, FCPA, 3000, 11, 12, answers=uniform_random(LEDUC),
                                  aivat=True)
    doc = results_document({"game": "leduc"}, estimates_from_outcomes(outcomes), LEDUC.big_blind)
    assert doc["estimators"]["aivat_minus_raw"]["flagged"] is True


def test_honest_card_aware_bot_is_unbiased_when_sampled() -> None:
    """Sampled duplicate LBR vs the card-aware table: AIVAT and duplicate + AIVAT contain the
    exact value (lbr_value), and the check is not flagged; AIVAT's interval is the narrowest."""
    policy = table_strategy(LEDUC, random_table(LEDUC, 5))
    exact = lbr_value(LEDUC, policy, FCPA).value
    outcomes = simulate_lbr_match(LEDUC, policy, FCPA, 1500, 21, 22, duplicate=True, aivat=True)
    estimates = estimates_from_outcomes(outcomes)
    for name in ("aivat", "duplicate_aivat"):
        stat = estimates.estimator(name)
        assert abs(stat.mean - exact) < 3.3 * stat.half_width / 1.96, name  # 3.3 sigma
    doc = results_document({"game": "leduc"}, estimates, LEDUC.big_blind)
    assert doc["estimators"]["aivat_minus_raw"]["flagged"] is False
    assert estimates.aivat.half_width < 0.6 * estimates.raw.half_width


# -- 3. the identities behind the chance terms --------------------------------------------


def test_board_card_expectation_is_the_value_before_holdem_turn() -> None:
    """Chance terms are v(before) - v(after) because, with the range's Bayes update on a board
    card, E over the next card (drawn as the cards are, given LBR's information) of wp after
    equals wp before. Checked on a hold'em turn against a random range, over all 46 rivers."""
    equity = equity_function(load_game("nolimit"))
    game = load_game("nolimit")
    hole, board = (0, 13), (20, 30, 40, 50)
    known = compatible_mask(game, hole + board)
    rng = np.random.default_rng(3)
    range_ = np.where(known, rng.random(game.num_hands) ** 3, 0.0)
    range_ /= range_.sum()
    before = float(range_ @ equity(hole, board))
    unseen = [c for c in range(52) if c not in hole + board]
    hands = game.hand_cards
    expected = 0.0
    for card in unseen:
        # P(card) = sum_h pi(h) [card not in h] / (cards left once h is out)
        holds = np.array([card in h for h in hands])
        p = float(range_[~holds].sum()) / (len(unseen) - 2)
        after, _ = remove_cards(range_, game, [card], compatible_mask(game, hole + board + (card,)))
        expected += p * float(after @ equity(hole, board + (card,)))
    assert expected == pytest.approx(before, abs=1e-12)


@pytest.mark.parametrize("count", [1, 2])
def test_sampled_flop_equity_is_unbiased(count) -> None:
    """The sampled flop estimate averaged over every possible completion (a turn card; a turn
    and a river, as AIVAT samples) equals the exact flop equity vector of the equity engine, for
    every hand; a wrong scale factor would not."""
    from itertools import combinations

    game = load_game("nolimit")
    equity = equity_function(game)
    hole, flop = (4, 29), (1, 17, 44)
    unseen = [c for c in range(52) if c not in hole + flop]
    completions = list(combinations(unseen, count))
    mean = np.mean([completion_estimate(game, equity, hole, flop, [w]) for w in completions], axis=0)
    exact = equity(hole, flop)
    np.testing.assert_allclose(mean, exact, rtol=0, atol=1e-12)
    assert np.abs(exact).max() > 0.5
    # Several completions at once: the mean of their single estimates.
    pair = completion_estimate(game, equity, hole, flop, completions[:2])
    np.testing.assert_allclose(pair, np.mean([completion_estimate(game, equity, hole, flop, [w])
                                              for w in completions[:2]], axis=0), rtol=0, atol=1e-12)


# -- 4. the per-hand function ---------------------------------------------------------------


def _history(game, policy, position, index):
    return list(lbr_histories(game, policy, FCPA, position))[index]


def test_fold_hand_value_and_parts() -> None:
    """A Kuhn hand the opponent folds: the terminal value is the outcome, and the parts add up."""
    policy = uniform_random(KUHN)
    equity = equity_function(KUHN)
    for h in lbr_histories(KUHN, policy, FCPA, 0):
        value = hand_aivat(KUHN, h.betting, h.board, h.hole[0], 0, h.rows, equity)
        assert value.chips == pytest.approx(value.terminal + value.deal + value.chance + value.opponent)
        if h.betting[-1][-1] == Action.FOLD:
            assert value.terminal == h.values[0]


def test_missing_rows_are_errors() -> None:
    """A decision without its rows, or a row missing for a listed action, is refused."""
    h = next(h for h in lbr_histories(LEDUC, uniform_random(LEDUC), FCPA, 1) if len(h.rows) >= 2)
    equity = equity_function(LEDUC)
    with pytest.raises(ValueError):
        hand_aivat(LEDUC, h.betting, h.board, h.hole[1], 1, h.rows[:-1], equity)
    with pytest.raises(ValueError):
        hand_aivat(LEDUC, h.betting, h.board, h.hole[1], 1, (*h.rows, h.rows[0]), equity)
    partial = [dict(r) for r in h.rows]
    partial[0].pop(next(iter(partial[0])))
    with pytest.raises(KeyError):
        hand_aivat(LEDUC, h.betting, h.board, h.hole[1], 1, partial, equity)


def test_correction_actions() -> None:
    """Limit: every legal action; no-limit: fold and call (every raise size is the lumped event)."""
    state = State(LEDUC)
    assert [a.text() for a in correction_actions(state)] == ["c", "r"]  # antes: no bet to fold to
    state.apply(Action.RAISE)
    assert [a.text() for a in correction_actions(state)] == ["f", "c", "r"]
    nolimit = State(load_game("nolimit"))
    assert [a.text() for a in correction_actions(nolimit)] == ["f", "c"]
    nolimit.apply(Action.CALL)  # the big blind, nothing to call: no fold
    assert [a.text() for a in correction_actions(nolimit)] == ["c"]


def test_estimates_carry_aivat_through_pairs_and_merges() -> None:
    """AIVAT values pair like the others and survive a document round trip and split batches."""
    from acpc_lbr.estimators import MatchEstimates
    from acpc_lbr.results import document_estimates, merge_documents

    outcomes = [HandOutcome(d, h, float(d + h), None, float(d - h)) for d in range(5) for h in (0, 1)]
    whole = estimates_from_outcomes(outcomes)
    assert whole.aivat.n == 10 and whole.duplicate_aivat.n == 5
    assert whole.duplicate_aivat.mean == pytest.approx(np.mean([d - 0.5 for d in range(5)]))
    first = estimates_from_outcomes([o for o in outcomes if (o.deal, o.half) < (2, 1)])
    second = estimates_from_outcomes([o for o in outcomes if (o.deal, o.half) >= (2, 1)])
    assert first.pending and second.pending  # deal 2 is split across the batches
    setup = AivatSetup.for_game(KUHN).record()
    docs = [results_document({"game": "kuhn", "aivat": setup}, part, 1) for part in (first, second)]
    merged_doc = merge_documents(docs)
    assert merged_doc["config"]["aivat"] == setup
    merged = document_estimates(merged_doc)
    assert isinstance(merged, MatchEstimates)
    assert merged.duplicate_aivat.to_dict() == whole.duplicate_aivat.to_dict()
    assert merged.aivat_minus_raw.to_dict() == whole.aivat_minus_raw.to_dict()


def _aivat_batches() -> tuple[dict[str, object], dict[str, object]]:
    """Two Kuhn batches with AIVAT figures (deal 2's pair split across them), no setup recorded yet."""
    outcomes = [HandOutcome(d, h, float(d + h), float(d), float(d - h)) for d in range(5) for h in (0, 1)]
    first = estimates_from_outcomes([o for o in outcomes if (o.deal, o.half) < (2, 1)])
    second = estimates_from_outcomes([o for o in outcomes if (o.deal, o.half) >= (2, 1)])
    return results_document({"game": "kuhn"}, first, 1), results_document({"game": "kuhn"}, second, 1)


@pytest.mark.parametrize("case", ["other coefficients", "other samples", "unrecorded", "altered", "not computed"])
def test_merge_refuses_aivat_across_value_functions(case: str) -> None:
    """The exact merge gives no AIVAT figure (trajectory and pending halves included) when the
    batches do not all record the same AIVAT setup, says why, and merges every other estimator."""
    from acpc_lbr.results import format_table, merge_documents

    a, b = _aivat_batches()
    setup = AivatSetup.for_game(KUHN)
    a["config"]["aivat"] = setup.record()  # type: ignore[index]
    other = setup.record()
    if case == "other coefficients":
        other = AivatSetup(ValueFunction(room_growth=(0.5,)), setup.opponent_from, setup.samples).record()
    elif case == "other samples":
        other = AivatSetup(setup.value, setup.opponent_from, setup.samples + 1).record()
    elif case == "unrecorded":  # a version-3 document
        other = None
        b["version"] = 3
    elif case == "altered":
        other["value_function"]["room_growth"] = [0.25]
    else:
        other = {"not_computed": "m.queries: records no AIVAT value function"}
    b["config"]["aivat"] = other  # type: ignore[index]
    together = merge_documents([a, b])
    same = {**b, "config": {**b["config"], "aivat": setup.record()}}  # type: ignore[dict-item]
    assert merge_documents([a, same])["config"]["aivat"] == setup.record()  # the same setup merges
    reason = together["config"]["aivat"]["not_computed"]
    expected = {"other coefficients": "different AIVAT setups", "other samples": "different AIVAT setups",
                "unrecorded": "version 3 document: its AIVAT value function is not recorded",
                "altered": "digest does not match", "not computed": "records no AIVAT value function"}[case]
    assert expected in reason and reason.startswith(("batch 2", "batches 1 and 2"))
    estimators = together["estimators"]
    for name in ("aivat", "duplicate_aivat", "aivat_minus_raw"):
        assert estimators[name]["chips"]["n"] == 0
        assert name not in together["trajectory"]["estimators"]
    assert all(item["aivat_chips"] is None for item in estimators["pending_halves"])
    assert estimators["raw"]["chips"]["n"] == 10 and estimators["duplicate_io"]["chips"]["n"] == 5
    assert together["counts"]["aivat_fallbacks"] == 0
    assert f"AIVAT not computed: {reason}" in format_table(together)


def test_value_function_identity_round_trips_and_catches_edits() -> None:
    """A value function's record gives back the same function; an unknown form or an edited
    coefficient is refused."""
    for value in (POT_SHARE, *FITTED.values(), ValueFunction((1.0,), (-0.25,), (0.1, 0.2), (3.0,))):
        record = value.identity()
        assert ValueFunction.from_identity(record) == value
        assert ValueFunction.from_identity(json.loads(json.dumps(record))) == value
    assert FITTED["nolimit"].identity()["digest"] != FITTED["leduc"].identity()["digest"]
    record = FITTED["nolimit"].identity()
    with pytest.raises(ValueError, match="unknown value function form"):
        ValueFunction.from_identity({**record, "form": "pot-share/0"})
    with pytest.raises(ValueError, match="digest"):
        ValueFunction.from_identity({**record, "room_growth": [0.5, 0.4, 0.4, 0.3]})
    with pytest.raises(ValueError, match="not a list of numbers"):
        ValueFunction.from_identity({**record, "pot_growth": "0.1"})
    with pytest.raises(ValueError, match="no AIVAT value function"):
        AivatSetup.from_record({"opponent_from": 1, "samples": 4})


def test_version_1_documents_still_merge() -> None:
    """A version-1 document (no AIVAT) merges with a version-2 one; its AIVAT n counts 0."""
    from acpc_lbr.results import merge_documents

    outcomes = [HandOutcome(d, 0, 1.0, None, 0.5) for d in range(4)]
    setup = AivatSetup.for_game(KUHN).record()
    new = results_document({"game": "kuhn", "aivat": setup}, estimates_from_outcomes(outcomes), 1)
    old = results_document({"game": "kuhn"}, estimates_from_outcomes([HandOutcome(d, 0, 1.0) for d in range(4)]), 1)
    old["version"] = 1
    for name in ("aivat", "duplicate_aivat", "aivat_minus_raw"):
        del old["estimators"][name]
    for item in old["estimators"]["pending_halves"]:
        del item["aivat_chips"]
    merged = merge_documents([old, new])
    assert merged["version"] == SCHEMA_VERSION == 4
    assert merged["estimators"]["raw"]["chips"]["n"] == 8
    assert merged["estimators"]["aivat"]["chips"]["n"] == 4
    assert merged["config"]["aivat"] == setup


def test_kuhn_enumeration_covers_every_deal() -> None:
    """Kuhn: 6 ordered deals, each with the policy's full action tree."""
    deals = {(h.hole[0], h.hole[1]) for h in lbr_histories(KUHN, uniform_random(KUHN), FCPA, 0)}
    assert len(deals) == len([(a, b) for a, b in combinations(range(3), 2)]) * 2
