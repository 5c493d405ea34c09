"""``acpc-lbr exact``: exact best response and exact LBR value of a strategy in Kuhn or Leduc.

The maths is in :mod:`acpc_lbr.exact`; this module names the strategies
(the exact tools' own, the bots of ``acpc-lbr play``, a strategy file) and
prints the figures.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from functools import partial

from acpc_lbr import strategies
from acpc_lbr.exact import aivat_moments, best_response, check_walkable, lbr_value
from acpc_lbr.runtime.exit_codes import EXIT_FAILED, EXIT_OK
from acpc_lbr.lbr import ActiveRounds, BettingOptions
from acpc_lbr.policy import PublicView, Rows, Strategy, probabilities_at
from acpc_lbr.strategies import default_actions
from agents.bots import BOTS
from agents.players import load_strategy
from protocol.arrays import FloatArray
from protocol.errors import ProtocolError
from protocol.gamedef import GameDef, load_game
from protocol.rules import Action

#: The exact tools' own strategies (``--strategy NAME``).
_SIMPLE = ("uniform", "always-call", "always-fold", "kuhn-equilibrium")


class StrategyFailed(Exception):
    """The strategy under study raised while the exact walk asked it for probabilities."""


def _named_policy(game: GameDef, name: str) -> Strategy:
    """A strategy by name: one of :data:`_SIMPLE`, or any bot spec ``acpc-lbr play`` takes.

    Bot specs: a built-in bot (``random``, ``call-raise``, ...), or a strategy
    function ``FILE.py:FUNCTION`` / ``MODULE:FUNCTION`` (docs/bot-sdk.md);
    each may carry an ``sdk:`` prefix. ``table:SEED``: a card-aware random
    table strategy (:func:`acpc_lbr.strategies.random_table`).

    Raises:
        ValueError: an unknown name, or a strategy that cannot be loaded.
    """
    simple = {
        "uniform": strategies.uniform_random,
        "always-call": strategies.always_call,
        "always-fold": strategies.always_fold,
        "kuhn-equilibrium": strategies.kuhn_equilibrium,
    }
    if name in simple:
        return simple[name](game)
    if name.startswith("table:"):
        try:
            seed = int(name[6:])
        except ValueError:
            raise ValueError(f"table:<seed> needs an integer seed, not {name[6:]!r}") from None
        return strategies.table_strategy(game, strategies.random_table(game, seed))
    spec = name.removeprefix("sdk:")
    if spec in BOTS:
        return BOTS[spec]
    if ":" not in spec:
        raise ValueError(f"unknown strategy {name!r}; known: {', '.join(dict.fromkeys((*_SIMPLE, *BOTS)))}, "
                         "or FILE.py:FUNCTION / MODULE:FUNCTION (an SDK strategy)")
    try:
        strategy = load_strategy(spec)
    except (ImportError, OSError, SyntaxError) as error:
        raise ValueError(f"cannot load {spec}: {error}") from None

    def guarded(view: PublicView) -> Rows:
        state = view.state

        def rows(actions: Sequence[Action]) -> FloatArray:
            try:
                return probabilities_at(strategy, state, view.board, actions)
            except Exception as error:
                raise StrategyFailed(
                    f"{spec} raised {type(error).__name__}: {error} at betting "
                    f"{state.betting_string()!r}") from error

        return Rows(partial(default_actions, state), rows)

    return guarded


def main(argv: Sequence[str] | None = None) -> int:
    """``acpc-lbr exact``: exact BR and LBR values of a strategy in a small game."""
    parser = argparse.ArgumentParser(
        prog="acpc-lbr exact",
        description="Exact best-response and LBR values (chips per hand) in Kuhn/Leduc.",
    )
    parser.add_argument("--game", default="leduc", help="game name or .game file (default leduc)")
    parser.add_argument(
        "--strategy",
        default="uniform",
        help="uniform, always-call, always-fold, kuhn-equilibrium, a bot of 'acpc-lbr play' "
        "(random, call-raise, ...) or your strategy as FILE.py:FUNCTION or MODULE:FUNCTION, "
        "optionally prefixed sdk:, or table:SEED (a card-aware random table; default uniform)",
    )
    parser.add_argument("--aivat", action="store_true",
                        help="also the exact mean and spread of raw and AIVAT per seat (every hand enumerated)")
    parser.add_argument("--answers", default=None, metavar="STRATEGY",
                        help="with --aivat: the range answers, when they differ from the play (a liar)")
    parser.add_argument("--bets", default="fcpa", help="LBR betting options (default fcpa)")
    parser.add_argument("--rounds", default="all",
                        help="LBR active rounds, 1-based, within the game's (default all)")
    args = parser.parse_args(argv)
    try:
        game = load_game(args.game)
        check_walkable(game)
        policy = _named_policy(game, args.strategy)
        options = BettingOptions.parse(args.bets)
        rounds = ActiveRounds.parse(args.rounds, game)
        answers = _named_policy(game, args.answers) if args.answers else None
    except (ValueError, ProtocolError, OSError) as error:
        parser.error(str(error))
    started = time.perf_counter()
    try:
        br = best_response(game, policy)
        lbr = lbr_value(game, policy, options, rounds)
    except (StrategyFailed, ValueError) as error:  # ValueError: probabilities that are not a strategy
        print(f"acpc-lbr exact: {args.strategy}: {error}" if isinstance(error, ValueError) else
              f"acpc-lbr exact: {error}", file=sys.stderr)
        return EXIT_FAILED
    elapsed = time.perf_counter() - started
    print(f"game {args.game}, strategy {args.strategy}, LBR {options.name} rounds {rounds.text()}")
    print(f"best response  seat0 {br.seat_values[0]:.6f}  seat1 {br.seat_values[1]:.6f}")
    print(f"exploitability {br.exploitability:.6f}  NashConv {br.nash_conv:.6f}")
    print(f"LBR            seat0 {lbr.seat_values[0]:.6f}  seat1 {lbr.seat_values[1]:.6f}")
    print(
        f"LBR value      {lbr.value:.6f}  ({lbr.value / br.exploitability:.1%} of BR)"
        if br.exploitability > 1e-9
        else f"LBR value      {lbr.value:.6f}"
    )
    print(f"range inconsistencies {lbr.inconsistencies}; {elapsed:.2f} s")
    if args.aivat:
        for seat in (0, 1):
            m = aivat_moments(game, policy, options, seat, rounds, answers=answers)
            print(f"seat {seat}: E[raw] {m['raw']:.6f}  E[AIVAT] {m['aivat']:.6f}  "
                  f"difference {m['aivat'] - m['raw']:+.2e}  std raw {m['raw_std']:.4f}  "
                  f"std AIVAT {m['aivat_std']:.4f}  ratio {m['aivat_std'] / m['raw_std']:.3f}  "
                  f"std (AIVAT - raw) {m['diff_std']:.4f}")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
