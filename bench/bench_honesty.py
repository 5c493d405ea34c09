"""The error rates of the honesty checks and of the printed intervals, from exact laws (Kuhn, Leduc).

For each strategy, :func:`acpc_lbr.calibration.match_laws` enumerates every hand
LBR (fcpa) can play against it, with its raw, IO and AIVAT values, and the
law of a duplicate pair; matches of 200 and 1,000 deals are then sampled from
those laws, with and without duplicate play, and counted:

* each check's false alarms (p < 0.001, the flag, and p < 0.05) against honest
  bots, and its power (flags at p < 0.001) against lying ones;
* each printed 95% interval's misses of LBR's exact value: two-sided, "above" (the
  interval wholly above it: the lower bound overstates, nominal 2.5%) and "below"
  (nominal 2.5%); with ``--plain``, those of the symmetric normal interval printed
  before the skewness-corrected one (:func:`acpc_lbr.calibration.interval_misses`).

Rates are per match; the JSON has every count. docs/results.md ("The honesty
check") quotes the output of

    .venv/bin/python bench/bench_honesty.py --matches 100000
    .venv/bin/python bench/bench_honesty.py --matches 40000 --honest-only   # the intervals' miss rates
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acpc_lbr.calibration import AIVAT, IO, PRINTED, RAW, error_counts, match_laws
from acpc_lbr.lbr import BettingOptions
from acpc_lbr.strategies import (
    from_answers,
    kuhn_equilibrium,
    random_table,
    table_strategy,
    uniform_random,
)
from agents.sdk import PublicView, Strategy
from protocol.arrays import FloatArray
from protocol.gamedef import GameDef, load_game
from protocol.rules import Action, State

REPO = Path(__file__).resolve().parents[1]
FCPA = BettingOptions.parse("fcpa")


def played_policy(game: GameDef, strategy: Strategy) -> Strategy:
    """How an SDK bot plays (its ``sample``), as a strategy: for bots whose play is a function of the hand."""
    rng = np.random.default_rng(0)

    def policy(state: State, board: Sequence[int], actions: Sequence[Action]) -> FloatArray:
        view = PublicView(game, state, state.current_player, tuple(board))
        played = strategy(view)
        result = np.zeros((len(actions), game.num_hands))
        for hand in range(game.num_hands):
            action = played.sample(hand, rng)
            if not state.is_legal(action):  # as the client plays it: an illegal fold is a call
                action = Action.CALL
            for row, candidate in enumerate(actions):
                result[row, hand] += candidate == action
        return result

    return from_answers(policy)


def _sdk_bot(path: Path, name: str = "strategy") -> Strategy:
    import importlib.util

    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    strategy: Strategy = getattr(module, name)
    return strategy


def _leduc_cfr(game: GameDef) -> Strategy:
    from tests.acpc_lbr.openspiel_twin import fixed_table, our_policy
    from tests.acpc_lbr.test_openspiel import leduc_cfr_table

    return our_policy(game, fixed_table(leduc_cfr_table(200)))


def honest_cases() -> dict[str, Callable[[], tuple[GameDef, Strategy, Strategy]]]:
    """name -> (game, how the bot plays, what it answers): honest bots."""
    kuhn, leduc = load_game("kuhn"), load_game("leduc")

    def same(game: GameDef, policy: Strategy) -> tuple[GameDef, Strategy, Strategy]:
        return game, policy, policy

    return {
        "kuhn uniform": lambda: same(kuhn, uniform_random(kuhn)),
        "kuhn table:5": lambda: same(kuhn, table_strategy(kuhn, random_table(kuhn, 5))),
        "kuhn equilibrium": lambda: same(kuhn, kuhn_equilibrium(kuhn, 0.2)),
        "leduc uniform": lambda: same(leduc, uniform_random(leduc)),
        "leduc table:5": lambda: same(leduc, table_strategy(leduc, random_table(leduc, 5))),
        "leduc CFR-200": lambda: same(leduc, _leduc_cfr(leduc)),
    }


def liar_cases() -> dict[str, Callable[[], tuple[GameDef, Strategy, Strategy]]]:
    """name -> (game, how the bot plays, what it answers): bots whose answers are not their play."""
    kuhn, leduc = load_game("kuhn"), load_game("leduc")
    liar = _sdk_bot(REPO / "tests" / "data" / "bots" / "uniform_liar.py")
    card_aware = table_strategy(leduc, random_table(leduc, 5))
    return {
        "kuhn uniform_liar.py": lambda: (kuhn, played_policy(kuhn, liar), liar),
        "leduc uniform_liar.py": lambda: (leduc, played_policy(leduc, liar), liar),
        "leduc table:5 answering uniform": lambda: (leduc, card_aware, uniform_random(leduc)),
        "leduc table:5 answering table:6": lambda: (leduc, card_aware,
                                                    table_strategy(leduc, random_table(leduc, 6))),
    }


def wilson(count: int, total: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The 95% Wilson interval of a binomial proportion."""
    p = count / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return max(centre - half, 0.0), min(centre + half, 1.0)


def _row(name: str, play: str, deals: int, counts: dict[str, int], liar: bool, plain: bool = False) -> str:
    m = counts["matches"]
    cells = [name, play, f"{deals:,}", f"{m:,}"]
    for check in ("io_minus_raw", "aivat_minus_raw"):
        flags = counts[f"{check} p<0.001"]
        at_5 = counts[f"{check} p<0.05"]
        cells.append(f"{100 * flags / m:.1f}%" if liar else f"{1000 * flags / m:.2f}‰ ({100 * at_5 / m:.1f}%)")
    if not liar:
        for estimator, _ in PRINTED[play == "duplicate"][:3]:
            suffix = " plain" if plain else ""
            above, below = counts[f"{estimator} above{suffix}"], counts[f"{estimator} below{suffix}"]
            cells.append(f"{100 * (above + below) / m:.2f} / {100 * above / m:.2f} / {100 * below / m:.2f}")
    return "| " + " | ".join(cells) + " |"


def print_biases() -> int:
    """Each liar's exact E and standard deviation of IO − raw and AIVAT − raw: per hand at each of LBR's
    positions, and per duplicate pair."""
    print("| liar | unit | IO − raw: mean (sd) | AIVAT − raw: mean (sd) |")
    print("|---|---|---|---|")
    for name, build in liar_cases().items():
        game, play, answers = build()
        laws = match_laws(game, play, FCPA, answers=answers)
        for unit, law in (("hand, LBR at position 0", laws.hands[0]), ("hand, position 1", laws.hands[1]),
                          ("pair", laws.pair)):
            cells = []
            for column in (IO, AIVAT):
                difference = law.values[:, column] - law.values[:, RAW]
                mean = float(law.probability @ difference)
                spread = math.sqrt(max(float(law.probability @ difference**2) - mean * mean, 0.0))
                cells.append(f"{mean:+.3f} ({spread:.2f})")
            print(f"| {name} | {unit} | {cells[0]} | {cells[1]} |", flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--matches", type=int, default=100_000,
                        help="matches of 200 deals per case (of more deals: as many units in all)")
    parser.add_argument("--deals", default="200,1000")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", default="", help="comma-separated case names (default: all)")
    parser.add_argument("--json", type=Path, help="also write every count here")
    parser.add_argument("--plain", action="store_true",
                        help="the intervals' columns for the symmetric normal interval printed before (not in use)")
    parser.add_argument("--honest-only", action="store_true", help="skip the lying bots")
    parser.add_argument("--biases", action="store_true",
                        help="only the lying bots' exact mean and spread of each check's unit (no sampling)")
    args = parser.parse_args(argv)
    if args.biases:
        return print_biases()
    deals_list = [int(d) for d in args.deals.split(",")]
    rng = np.random.default_rng(args.seed)
    wanted = {name.strip() for name in args.only.split(",") if name.strip()}
    report: list[dict[str, object]] = []
    groups = ((False, honest_cases()),) if args.honest_only else ((False, honest_cases()), (True, liar_cases()))
    for liar, cases in groups:
        if liar:
            print("\n| liar | play | deals | matches | IO − raw flagged | AIVAT − raw flagged |")
            print("|---|---|---|---|---|---|")
        else:
            print("| bot | play | deals | matches | IO − raw: p < 0.001 (p < 0.05) "
                  "| AIVAT − raw: p < 0.001 (p < 0.05) "
                  "| raw / duplicate: miss / above / below, % | IO | AIVAT |")
            print("|---|---|---|---|---|---|---|---|---|")
        for name, build in cases.items():
            if wanted and name not in wanted:
                continue
            began = time.perf_counter()
            game, play, answers = build()
            laws = match_laws(game, play, FCPA, answers=answers)
            for deals in deals_list:
                matches = args.matches if deals <= 200 else max(args.matches * 200 // deals, 1)
                for duplicate in (False, True):
                    counts = error_counts(laws, deals, duplicate, matches, rng)
                    play_name = "duplicate" if duplicate else "hands"
                    print(_row(name, play_name, deals, counts, liar, args.plain), flush=True)
                    report.append({"case": name, "liar": liar, "deals": deals, "duplicate": duplicate,
                                   "exact": laws.value, "counts": counts})
            print(f"<!-- {name}: {time.perf_counter() - began:.0f} s -->", file=sys.stderr)
    honest = [row for row in report if not row["liar"]]
    if honest and not args.plain:  # the same matches' misses of the normal interval printed before
        print("\n(the same matches, the symmetric normal interval mean ± 1.96·s/√n)\n")
        print("| bot | play | deals | matches | raw / duplicate: miss / above / below, % | IO | AIVAT |")
        print("|---|---|---|---|---|---|---|")
        for row in honest:
            row_counts = row["counts"]
            assert isinstance(row_counts, dict)
            line = _row(str(row["case"]), "duplicate" if row["duplicate"] else "hands", int(str(row["deals"])),
                        row_counts, False, plain=True)
            print("| " + " | ".join(cell for k, cell in enumerate(line[2:-2].split(" | ")) if k not in (4, 5)) + " |")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
