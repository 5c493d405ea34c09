"""Fit the growth coefficients of AIVAT's value function on pilot data (never on a reported run).

AIVAT is linear in its value function v, so with v = v₀ + Σ_k c_k·v_k (v₀ the
pot share, v_k = (2·wp − 1)·feature_k, :class:`acpc_lbr.aivat.ValueFunction`)
a hand's estimate is ``A₀ + Σ_k c_k·C_k`` where ``C_k`` is the sum of the
corrections computed with v_k alone: a zero-mean control variate. The
coefficients that minimise the variance are a least-squares fit of ``A₀`` on
``−C``. This script computes that fit:

* hold'em (``--game nolimit``): sampled duplicate matches of LBR against the
  bots (:mod:`bench.bench_variance`'s set-up) on the pilot seed, fitted on
  the pair means, every bot's rows scaled by its raw spread so that each bot
  weighs alike;
* Leduc (``--game leduc``): exactly, over every hand of both seats
  (:func:`acpc_lbr.exact.lbr_histories`) against the pilot strategies,
  each scaled by its raw spread.

It prints the fitted coefficients (for :data:`acpc_lbr.aivat.FITTED`) and
the spread ratios with v₀ and with the fit, on the pilot data and, with
``--check-seed``, on a second pilot seed.

Usage::

    .venv/bin/python bench/fit_aivat_value.py --game nolimit --deals 1500 --seed 1001 --check-seed 1002
    .venv/bin/python bench/fit_aivat_value.py --game leduc --strategies uniform,table:7,table:11
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import acpc_lbr.aivat
import acpc_lbr.results.outcomes as outcomes_module
from acpc_lbr.simulation import simulate_lbr_match
from acpc_lbr.aivat import DEFAULT_SAMPLES, POT_SHARE, ValueFunction, hand_aivat
from acpc_lbr.cli.exact import _named_policy as parse_policy
from acpc_lbr.exact import lbr_histories
from acpc_lbr.lbr import ActiveRounds, BettingOptions, candidate_raises, equity_function
from protocol.gamedef import GameDef, load_game

KINDS = ("level", "pot", "room", "acting")


def unit_functions(game: GameDef) -> list[tuple[str, ValueFunction]]:
    """One value function per coefficient: pot_growth[r] and room_growth[r] for each round."""
    units = []
    for r in range(game.num_rounds):
        for kind in KINDS:
            coefs = [0.0] * game.num_rounds
            coefs[r] = 1.0
            fields = {f"{k}_growth": tuple(coefs) if k == kind else (0.0,) * game.num_rounds for k in KINDS}
            units.append((f"{kind}_growth[{r}]", ValueFunction(**fields)))
    return units


def components(game: GameDef, args: dict[str, Any], units: list[ValueFunction]) -> np.ndarray:
    """(A₀, C_1, ..., C_K) of one hand: AIVAT with v₀, and each v_k's corrections."""
    base = hand_aivat(game, **args, value=POT_SHARE).chips
    return np.array([base] + [hand_aivat(game, **args, value=u).chips - base for u in units])


def holdem_rows(game: GameDef, bot: str, deals: int, seed: int, bets: str, rounds: str,
                units: list[ValueFunction]) -> tuple[np.ndarray, np.ndarray]:
    """Pair means of (A₀, C_k) and of raw, for one bot's duplicate pilot match."""
    from bench.bench_variance import opponent

    captured: list[dict[str, Any]] = []
    original = outcomes_module.hand_aivat_value

    def capture(game_: GameDef, hand: Any, position: int, rows: Any, equity: Any, setup: Any = None,
                seed: int = 0) -> tuple[float, bool]:
        captured.append({"betting": hand.betting, "board": hand.board, "hole": hand.hole[position],
                         "position": position, "rows": rows, "equity": equity, "hand_id": hand.hand_id,
                         "samples": DEFAULT_SAMPLES, "seed": seed})
        return original(game_, hand, position, rows, equity, setup, seed)

    policy, sample = opponent(game, bot)
    outcomes_module.hand_aivat_value = capture  # type: ignore[assignment]
    try:
        outcomes = simulate_lbr_match(
            game, policy, BettingOptions.parse(bets), deals, seed, seed + 1, duplicate=True, sample=sample,
            active_rounds=ActiveRounds.parse(rounds), aivat=True)
    finally:
        outcomes_module.hand_aivat_value = original  # type: ignore[assignment]
    comps = np.array([components(game, a, units) for a in captured])
    raw = np.array([o.chips for o in outcomes])
    return comps.reshape(-1, 2, comps.shape[1]).mean(axis=1), raw.reshape(-1, 2).mean(axis=1)


def fit(blocks: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Least squares over every block (rows scaled by weight): c minimising Σ w·Var(A₀ + C·c)."""
    xs, ys = [], []
    for comps, weights in blocks:
        centred = comps - np.average(comps, axis=0, weights=weights)
        root = np.sqrt(weights)[:, None]
        xs.append(centred[:, 1:] * root)
        ys.append(centred[:, 0] * root[:, 0])
    x, y = np.vstack(xs), np.concatenate(ys)
    coef, *_ = np.linalg.lstsq(x, -y, rcond=None)
    return np.asarray(coef)


def spread(comps: np.ndarray, weights: np.ndarray, coef: np.ndarray) -> float:
    values = comps[:, 0] + comps[:, 1:] @ coef
    mean = np.average(values, weights=weights)
    return float(np.sqrt(np.average((values - mean) ** 2, weights=weights)))


def leduc_blocks(game: GameDef, strategies: list[str], bets: str, rounds: str,
                 units: list[ValueFunction]) -> list[tuple[str, np.ndarray, np.ndarray, float]]:
    equity = equity_function(game)
    blocks = []
    for name in strategies:
        policy = parse_policy(game, name)
        for seat in (0, 1):
            comps, probs, raws = [], [], []
            for h in lbr_histories(game, policy, BettingOptions.parse(bets), seat, ActiveRounds.parse(rounds)):
                args = {"betting": h.betting, "board": h.board, "hole": h.hole[seat], "position": seat,
                        "rows": h.rows, "equity": equity}
                comps.append(components(game, args, units))
                probs.append(h.probability)
                raws.append(h.values[seat])
            p, r = np.array(probs), np.array(raws)
            raw_std = float(np.sqrt(np.average((r - np.average(r, weights=p)) ** 2, weights=p)))
            blocks.append((f"{name} seat {seat}", np.array(comps), p, raw_std))
    return blocks


def report(label: str, comps: np.ndarray, weights: np.ndarray, raw_std: float, coef: np.ndarray) -> None:
    zero = np.zeros_like(coef)
    print(f"  {label:<24} pot share {spread(comps, weights, zero) / raw_std:.3f}   "
          f"fitted {spread(comps, weights, coef) / raw_std:.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default="nolimit")
    parser.add_argument("--bots", default="call-raise,threshold")
    parser.add_argument("--strategies", default="uniform,table:7,table:11", help="Leduc: the pilot strategies")
    parser.add_argument("--deals", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=1001)
    parser.add_argument("--check-seed", type=int, default=0, help="hold'em: a second pilot seed to check the fit on")
    parser.add_argument("--bets", default="fcpa")
    parser.add_argument("--rounds", default=None, help="LBR's active rounds (default: 3-4 hold'em, 1-2 Leduc)")
    parser.add_argument("--kinds", default="pot,room", help="the coefficients fitted, per round (of " + ",".join(KINDS) + ")")
    parser.add_argument("--weights", default="", help="hold'em: extra weight per bot, e.g. threshold:4")
    parser.add_argument("--cache", default="", help="hold'em: an .npz of the pilot components, made on first use")
    parser.add_argument("--opponent-from", type=int, default=None,
                        help="correct opponent decisions from this round on (default: first_opponent_round)")
    parser.add_argument("--list-raises", default="", help="no-limit: also list these raises (BettingOptions text, e.g. pa)")
    args = parser.parse_args()
    game = load_game(args.game)
    if args.list_raises:
        listed = BettingOptions.parse(args.list_raises)
        plain = acpc_lbr.aivat.correction_actions

        def with_raises(state: Any) -> list[Any]:
            return plain(state) + ([] if state.game.is_limit else candidate_raises(state, listed))

        for module in (acpc_lbr.aivat, outcomes_module):
            module.correction_actions = with_raises  # type: ignore[attr-defined]
    if args.opponent_from is not None:  # both the rows asked for and the estimator
        for module in (acpc_lbr.aivat, outcomes_module):
            module.first_opponent_round = lambda _game: args.opponent_from  # type: ignore[attr-defined]
    rounds = args.rounds or ("1-2" if game.num_rounds == 2 else "3-4")
    named = unit_functions(game)
    units = [u for _, u in named]
    kinds = args.kinds.split(",")
    chosen = [0] + [1 + j for j, (name, _) in enumerate(named) if name.split("_")[0] in kinds]
    extra = {bot: float(w) for bot, w in (item.split(":") for item in args.weights.split(",") if item)}
    if game.is_limit and game.num_hands < 100:  # Leduc: exact
        blocks = [(label, c[:, chosen], w, s)
                  for label, c, w, s in leduc_blocks(game, args.strategies.split(","), args.bets, rounds, units)]
        coef = fit([(c, w / s**2) for _, c, w, s in blocks])
        for label, c, w, s in blocks:
            report(label, c, w, s, coef)
    else:
        seeds = [args.seed] + ([args.check_seed] if args.check_seed else [])
        pilots: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = {}
        stored = dict(np.load(args.cache)) if args.cache and Path(args.cache).exists() else {}
        for seed in seeds:
            for bot in args.bots.split(","):
                key = f"{bot}-{seed}-{args.deals}"
                if key + "-c" not in stored:
                    c, raw = holdem_rows(game, bot, args.deals, seed, args.bets, rounds, units)
                    stored[key + "-c"], stored[key + "-r"] = c, raw
                pilots[bot, seed] = stored[key + "-c"][:, chosen], stored[key + "-r"]
        if args.cache:
            np.savez(args.cache, **stored)
        stds = {key: float(raw.std()) for key, (_, raw) in pilots.items()}
        coef = fit([(c, np.full(len(c), extra.get(bot, 1.0) / stds[bot, seed] ** 2))
                    for (bot, seed), (c, _) in pilots.items() if seed == args.seed])
        for (bot, seed), (c, _) in pilots.items():
            report(f"{bot} (seed {seed})", c, np.ones(len(c)), stds[bot, seed], coef)
    names = [named[j - 1][0] for j in chosen[1:]]
    for name, value in zip(names, coef):
        print(f"  {name} = {value:.6g}")
    fields = []
    for kind in KINDS:
        if kind in kinds:
            values = tuple(round(float(coef[names.index(f"{kind}_growth[{r}]")]), 4) for r in range(game.num_rounds))
            fields.append(f"{kind}_growth={values}")
    print(f"ValueFunction({', '.join(fields)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
