"""Variance reduction: interval widths of each estimator relative to raw, and AIVAT's cost.

LBR plays in process against a bot, every deal twice with the seats reversed,
through the dealer's own results pipeline (:func:`acpc_lbr.simulation.simulate_lbr_match`:
IO with :func:`acpc_lbr.results.outcomes.hand_io`, AIVAT with
:func:`acpc_lbr.results.outcomes.hand_aivat_value`, from the bot's range answers). For each
bot it prints each estimator's mean and 95% half-width in mbb/g and the width
ratio estimator/raw at equal hands (the duplicate ones use the same hands,
grouped in pairs), then the cost of AIVAT: hands/s of the same simulation with
AIVAT off and on, in alternating chunks of the same deals (so machine load hits
both alike), and with ``--evaluate-hands`` the same through real matches
(``acpc-lbr evaluate`` without and with ``--aivat``, alternating runs).

Bots: the SDK bots of :data:`agents.bots.BOTS`, ``threshold``
(:func:`agents.bots.threshold`, card-aware), and ``table`` (a card-aware random
table strategy, :func:`acpc_lbr.strategies.random_table` seed 5: the small
games' test policy).

Usage::

    .venv/bin/python bench/bench_variance.py [--game nolimit] [--deals 5000] [--seed 1]
        [--bots call-raise,threshold] [--rounds 3-4] [--cost-deals 400]
        [--evaluate-hands 300 --evaluate-pairs 2] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acpc_lbr.aivat import POT_SHARE, AivatSetup
from acpc_lbr.estimators import ESTIMATORS
from acpc_lbr.lbr import ActiveRounds, BettingOptions
from acpc_lbr.policy import Strategy
from acpc_lbr.results import estimates_from_outcomes, results_document
from acpc_lbr.simulation import simulate_lbr_match
from acpc_lbr.strategies import random_table, table_strategy
from agents.bots import BOTS, threshold
from agents.sdk import PublicView
from protocol.gamedef import GameDef, load_game
from protocol.rules import Action, State

Sampler = Callable[[State, Sequence[int], int, np.random.Generator], Action]


def opponent(game: GameDef, name: str) -> tuple[Strategy, Sampler | None]:
    """The bot's policy (its range answers) and how it samples its play (None: from the policy)."""
    if name == "table":
        return table_strategy(game, random_table(game, 5)), None
    strategy = threshold if name == "threshold" else BOTS[name]

    def sample(state: State, board: Sequence[int], hand: int, rng: np.random.Generator) -> Action:
        return strategy(PublicView(game, state, state.current_player, tuple(board))).sample(hand, rng)

    return strategy, sample


def run(bot: str, game_name: str, deals: int, seed: int, options: str, rounds: str,
        pot_share: bool = False) -> dict[str, Any]:
    """One bot's figures: each estimator's mean, half-width (mbb/g) and width ratio to raw.

    ``pot_share``: AIVAT with the plain pot share (no growth term), the unfitted baseline.
    """
    game = load_game(game_name)
    setup = AivatSetup.for_game(game)
    if pot_share:
        setup = AivatSetup(POT_SHARE, setup.opponent_from, setup.samples)
    policy, sample = opponent(game, bot)
    started = time.perf_counter()
    outcomes = simulate_lbr_match(game, policy, BettingOptions.parse(options), deals, seed, seed + 1,
                                  duplicate=True, sample=sample, active_rounds=ActiveRounds.parse(rounds),
                                  aivat=True, aivat_setup=setup)
    seconds = time.perf_counter() - started
    doc = results_document({"game": game_name, "players": ["lbr", bot], "measured": "lbr", "seed": seed,
                            "hands": deals, "duplicate": True, "lbr": {"bets": options, "rounds": rounds},
                            "aivat": setup.record()},
                           estimates_from_outcomes(outcomes), game.big_blind, timings={"seconds": seconds})
    raw_width = doc["estimators"]["raw"]["mbb_per_game"]["half_width_95"]
    figures: dict[str, Any] = {}
    for name in ESTIMATORS:
        mbb = doc["estimators"][name]["mbb_per_game"]
        figures[name] = {"n": mbb["n"], "mean": mbb["mean"], "half_width": mbb["half_width_95"],
                         "ratio": mbb["half_width_95"] / raw_width}
    flags = {name: doc["estimators"][name]["flagged"] for name in ("io_minus_raw", "aivat_minus_raw")}
    return {"bot": bot, "hands": 2 * deals, "seconds": seconds, "estimators": figures,
            "flagged": flags, "document": doc}


def cost(bot: str, game_name: str, deals: int, seed: int, options: str, rounds: str,
         chunk: int = 50) -> dict[str, float]:
    """Hands/s with AIVAT off and on: the same deals in alternating chunks (off, on, off, on, ...)."""
    game = load_game(game_name)
    policy, sample = opponent(game, bot)
    bets, active = BettingOptions.parse(options), ActiveRounds.parse(rounds)
    # warm-up: compile the kernels and load the tables outside the timing
    simulate_lbr_match(game, policy, bets, 5, seed, seed, sample=sample, active_rounds=active, aivat=True)
    seconds = {False: 0.0, True: 0.0}
    parts: dict[str, float] = {}
    hands = 0
    for start in range(0, deals, chunk):
        for aivat in (False, True):
            began = time.perf_counter()
            done = simulate_lbr_match(game, policy, bets, chunk, seed + start, seed + start + 1, duplicate=True,
                                      sample=sample, active_rounds=active, aivat=aivat,
                                      timings=parts if aivat else None)
            seconds[aivat] += time.perf_counter() - began
        hands += len(done)
    off, on = hands / seconds[False], hands / seconds[True]
    return {"hands": hands, "hands_per_second_off": off, "hands_per_second_on": on, "slowdown": off / on - 1.0,
            "ms_per_hand_off": 1000 / off, "aivat_compute_ms_per_hand": 1000 * parts.get("aivat_compute", 0.0) / hands,
            "aivat_answers_ms_per_hand": 1000 * parts.get("aivat_answers", 0.0) / hands}


def evaluate_cost(bot: str, game_name: str, hands: int, pairs: int, seed: int, options: str,
                  rounds: str) -> dict[str, float]:
    """Hands/s of ``acpc-lbr evaluate`` (dealer, LBR agent and bot over loopback TCP, IO on) without
    and with ``--aivat``: ``pairs`` runs of each, alternating (off, on, off, on, ...), the same deals."""
    import subprocess
    import tempfile

    exe = Path(sys.executable).with_name("acpc-lbr")
    seconds = {False: 0.0, True: 0.0}
    played = {False: 0, True: 0}
    queries = {False: 0, True: 0}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(pairs):
            for aivat in (False, True):
                out = Path(tmp) / f"{run}-{int(aivat)}.json"
                if bot in BOTS:
                    opponent_args = ["--opponent", bot]
                else:  # e.g. threshold: an SDK bot of agents/bots.py outside the registry
                    script = Path(__file__).resolve().parents[1] / "agents" / "bots.py"
                    opponent_args = ["--opponent-cmd", f"{exe} play {script}:{bot} --game {game_name} {{host}} {{port}}",
                                     "--opponent-name", bot]
                command = [str(exe), "evaluate", *opponent_args, "--game", game_name, "--bets", options,
                           "--rounds", rounds, "--hands", str(hands), "--seed", str(seed + run), "--quiet",
                           "--out", str(Path(tmp) / f"logs-{run}-{int(aivat)}"), "--json", str(out)]
                subprocess.run(command + (["--aivat"] if aivat else []), check=True, capture_output=True)
                doc = json.loads(out.read_text())
                seconds[aivat] += doc["timings"]["wall_seconds"]
                played[aivat] += doc["counts"]["hands"]
                queries[aivat] += doc["counts"]["queries"]
    off, on = played[False] / seconds[False], played[True] / seconds[True]
    return {"hands": played[True], "hands_per_second_off": off, "hands_per_second_on": on,
            "slowdown": off / on - 1.0, "queries_per_hand_off": queries[False] / played[False],
            "queries_per_hand_on": queries[True] / played[True]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deals", type=int, default=5000, help="deals per bot (each played twice)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--game", default="nolimit")
    parser.add_argument("--bets", default="fcpa", help="LBR's raises (default fcpa)")
    parser.add_argument("--rounds", default="3-4", help="LBR's active rounds (default 3-4)")
    parser.add_argument("--bots", default="call-raise,threshold")
    parser.add_argument("--cost-deals", type=int, default=400, help="deals per bot for the cost figure (0: skip)")
    parser.add_argument("--evaluate-hands", type=int, default=0, metavar="N",
                        help="also the cost through acpc-lbr evaluate: N deals per run (0: skip)")
    parser.add_argument("--evaluate-pairs", type=int, default=2, metavar="P",
                        help="runs without and with --aivat, alternating (default 2 of each)")
    parser.add_argument("--json", metavar="FILE", help="write every figure (and documents) as JSON")
    parser.add_argument("--pot-share", action="store_true",
                        help="AIVAT with the plain pot share instead of the fitted value function (the baseline)")
    args = parser.parse_args()
    results = []
    for bot in args.bots.split(","):
        result = run(bot, args.game, args.deals, args.seed, args.bets, args.rounds, args.pot_share)
        print(f"{args.game}: LBR ({args.bets}, rounds {args.rounds}) vs {bot}, {result['hands']} hands "
              f"({args.deals} duplicate deals), {result['seconds']:.1f} s")
        print(f"  {'estimator':<16} {'n':>7} {'mbb/g':>10} {'± 95%':>9} {'width/raw':>9}")
        for name, f in result["estimators"].items():
            print(f"  {name:<16} {f['n']:>7} {f['mean']:>10.1f} {f['half_width']:>9.1f} {f['ratio']:>9.3f}")
        print(f"  honesty checks flagged: {result['flagged']}")
        if args.cost_deals > 0:
            result["cost"] = cost(bot, args.game, args.cost_deals, args.seed + 7, args.bets, args.rounds)
            c = result["cost"]
            print(f"  AIVAT cost: {c['hands_per_second_off']:.0f} hands/s off, {c['hands_per_second_on']:.0f} on "
                  f"({100 * c['slowdown']:+.0f}%, {c['hands']} hands each, alternating chunks); per hand: "
                  f"{c['ms_per_hand_off']:.2f} ms without AIVAT, AIVAT's estimator {c['aivat_compute_ms_per_hand']:.2f} ms, "
                  f"the bot answering its rows {c['aivat_answers_ms_per_hand']:.2f} ms")
        if args.evaluate_hands > 0:
            result["evaluate_cost"] = evaluate_cost(bot, args.game, args.evaluate_hands, args.evaluate_pairs,
                                                    args.seed + 11, args.bets, args.rounds)
            e = result["evaluate_cost"]
            print(f"  AIVAT cost through acpc-lbr evaluate (loopback TCP, IO on, {e['hands']} hands each, "
                  f"alternating runs): {e['hands_per_second_off']:.1f} hands/s off, {e['hands_per_second_on']:.1f} on "
                  f"({100 * e['slowdown']:+.0f}%); range queries per hand {e['queries_per_hand_off']:.2f} off, "
                  f"{e['queries_per_hand_on']:.2f} on")
        results.append(result)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
