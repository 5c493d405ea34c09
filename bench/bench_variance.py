"""Variance reduction in hold'em: interval widths of each estimator relative to raw.

LBR (``fcpa`` raises, every round active) plays in process against an SDK
bot (``call-raise`` and ``random`` by default) in no-limit hold'em, every
deal twice with the seats reversed, through the dealer's own results
pipeline (:func:`acpc_lbr.results.simulate_lbr_match`, which computes IO
with :func:`dealer.results.hand_io` from the bot's range answers). For each
bot it prints each estimator's mean and 95% half-width in mbb/g and the
width ratio estimator/raw at equal hands (the duplicate ones use the same
hands, grouped in pairs). The paper (Bowling et al. 2008) reports about 0.8
for duplicate + IO.

Usage::

    .venv/bin/python bench/bench_variance.py [--deals 5000] [--seed 1] [--bots call-raise,random] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acpc_lbr.lbr import BettingOptions
from acpc_lbr.results import estimates_from_outcomes, results_document, simulate_lbr_match
from acpc_lbr.strategies import from_sdk
from agents.bots import BOTS
from agents.sdk import PublicView
from protocol.gamedef import load_game
from protocol.rules import Action, State

ESTIMATORS = ("raw", "duplicate", "io", "duplicate_io")


def run(bot: str, game_name: str, deals: int, seed: int, options: str) -> dict[str, Any]:
    """One bot's figures: each estimator's mean, half-width (mbb/g) and width ratio to raw."""
    game = load_game(game_name)
    strategy = BOTS[bot]
    policy = from_sdk(game, strategy)

    def sample(state: State, board: Sequence[int], hand: int, rng: np.random.Generator) -> Action:
        return strategy(PublicView(game, state, state.current_player, tuple(board))).sample(hand, rng)

    started = time.perf_counter()
    outcomes = simulate_lbr_match(game, policy, BettingOptions.parse(options), deals, seed, seed + 1,
                                  duplicate=True, sample=sample)
    seconds = time.perf_counter() - started
    doc = results_document({"game": game_name, "players": ["lbr", bot], "measured": "lbr", "seed": seed,
                            "hands": deals, "duplicate": True, "lbr": {"bets": options}},
                           estimates_from_outcomes(outcomes), game.big_blind, timings={"seconds": seconds})
    raw_width = doc["estimators"]["raw"]["mbb_per_game"]["half_width_95"]
    figures: dict[str, Any] = {}
    for name in ESTIMATORS:
        mbb = doc["estimators"][name]["mbb_per_game"]
        figures[name] = {"n": mbb["n"], "mean": mbb["mean"], "half_width": mbb["half_width_95"],
                         "ratio": mbb["half_width_95"] / raw_width}
    check = doc["estimators"]["io_minus_raw"]
    return {"bot": bot, "hands": 2 * deals, "seconds": seconds, "estimators": figures,
            "io_minus_raw_flagged": check["flagged"], "document": doc}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deals", type=int, default=5000, help="deals per bot (each played twice)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--game", default="nolimit")
    parser.add_argument("--bets", default="fcpa", help="LBR's raises (default fcpa)")
    parser.add_argument("--bots", default="call-raise,random")
    parser.add_argument("--json", metavar="FILE", help="write every figure (and documents) as JSON")
    args = parser.parse_args()
    results = []
    for bot in args.bots.split(","):
        result = run(bot, args.game, args.deals, args.seed, args.bets)
        results.append(result)
        print(f"{args.game}: LBR ({args.bets}) vs {bot}, {result['hands']} hands "
              f"({args.deals} duplicate deals), {result['seconds']:.1f} s")
        print(f"  {'estimator':<14} {'n':>7} {'mbb/g':>10} {'± 95%':>9} {'width/raw':>9}")
        for name, f in result["estimators"].items():
            print(f"  {name:<14} {f['n']:>7} {f['mean']:>10.1f} {f['half_width']:>9.1f} {f['ratio']:>9.3f}")
        print(f"  honesty check flagged: {result['io_minus_raw_flagged']}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
