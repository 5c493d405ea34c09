"""What mypyc buys: each compiled module's own hot operation, compiled against pure.

The modules of ``protocol._variant.GROUP`` are compiled with mypyc when the
package is installed; ``ACPC_LBR_PURE=1`` runs the same code from its ``.py``
sources. This bench times, for each module, the operation it is compiled for,
in both variants of the same install: each round runs this script once per
variant, in a fresh subprocess (with ``ACPC_LBR_PURE`` unset, then set;
alternating, so both see the same machine load), and the summary gives each
row's median time over the rounds and the ratio pure / compiled: the speed-up
compiling gives that operation (above 1.0: compiling pays). The spread of the
per-round ratios (lowest to highest) says how noisy the run was.

The workload is seeded random play (``--seed``; hands, deals and actions
fixed): mostly calls, some raises, a few folds. Rows, per hand:

* ``protocol.cards``: each card of the deal printed and read back;
* ``protocol.ranking``: every player's 7-card showdown rank (a hand that ends
  in a fold ranks too, so that each hand costs the same);
* ``protocol.deal``: dealing the hand from the match's generator;
* ``protocol.rules``: the hand's actions applied to a fresh ``State`` (each
  checked, the player to act moved on);
* ``protocol.wire: MATCHSTATE lines``: every line the dealer sends in the hand
  (``HandLines``: each decision point, each position, then the end);
* ``protocol.wire: reply``: each reply, ``<state>:c`` with the state echoed,
  read as the dealer reads it (the echo check, then ``read_reply_action``)
  and in full by ``parse_reply`` (a reply that does not echo the sent line);
* ``protocol.wire: log line``: the hand's ``STATE`` line (``log_state_text``);
* ``protocol.wire: parse_matchstate``: each line read back as an agent reads it;
* ``protocol.lines``: the decision points of each position on the hand's line;
* ``dealer.match + dealer.seatio``: the dealer's own work for a hand in memory
  (``bench/bench_dealer_work.py``: a ``Match`` on in-memory transports,
  fake clock, two bots in-process; their time is not counted).

Usage::

    .venv/bin/python bench/bench_protocol.py [--game nolimit] [--hands 2000]
        [--repeats 5] [--rounds 5] [--seed 1] [--dealer-hands 1000]
    .venv/bin/python bench/bench_protocol.py --variant-run [--json]  # one variant, here

Times are the best of ``--repeats`` runs in process CPU time, in µs per hand.
The install must have compiled the group (``acpc-lbr --version`` says
``compiled (mypyc)``). docs/performance.md, "What mypyc buys", gives the
figures and what was decided from them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import protocol
from protocol._variant import PURE_ENV
from protocol.cards import card_from_text, cards_to_text
from protocol.deal import Deal, DealSource
from protocol.gamedef import GameDef, load_game
from protocol.lines import decision_points
from protocol.ranking import rank_hand
from protocol.rules import Action, ActionType, State
from protocol.wire import (
    HandLines,
    log_state_for,
    log_state_text,
    matchstate_text,
    parse_matchstate,
    parse_reply,
    read_reply_action,
)

BENCH = Path(__file__).resolve().parent


@dataclass
class Hand:
    """One scripted hand: its deal and the actions played."""

    hand_id: int
    deal: Deal
    actions: list[Action] = field(default_factory=list)


def random_hands(game: GameDef, count: int, seed: int) -> list[Hand]:
    """Seeded random legal play: mostly calls, some raises, a few folds."""
    rng = random.Random(seed)
    deals = DealSource(seed)
    hands = []
    for hand_id in range(count):
        hand = Hand(hand_id, deals.deal(game))
        state = State(game, hand_id)
        while not state.finished:
            legal = state.legal_actions()
            roll = rng.random()
            if ActionType.FOLD in legal and roll < 0.1:
                action = Action.FOLD
            elif ActionType.RAISE in legal and roll < 0.35:
                bounds = state.raise_range()
                assert bounds is not None
                action = Action.RAISE if game.is_limit else Action.raise_to(
                    rng.randint(bounds[0], min(bounds[1], bounds[0] * 3)))
            else:
                action = Action.CALL
            hand.actions.append(state.apply(action))
        hands.append(hand)
    return hands


def best_time(run: Callable[[], object], repeats: int) -> float:
    """The fastest of ``repeats`` runs, in CPU seconds (steadier on a shared machine)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best


def operations(game: GameDef, hands: Sequence[Hand], seed: int) -> dict[str, Callable[[], object]]:
    """Each row's operation over all ``hands``, by row name."""
    n = game.num_players
    positions = range(n)
    names = tuple(f"p{p + 1}" for p in positions)
    # Per hand: the state before each action and at the end (copies, played once here).
    states: list[list[State]] = []
    for hand in hands:
        state = State(game, hand.hand_id)
        played = [state.clone()]
        for action in hand.actions:
            state.apply(action)
            played.append(state.clone())
        states.append(played)
    cards = [cards_to_text(c for cards in (*h.deal.hole, *h.deal.board) for c in cards) for h in hands]
    sevens = [[(*h.deal.hole[p], *h.deal.board_cards) for p in positions] for h in hands]
    lines = [[matchstate_text(s, h.deal, p) for s in played for p in positions]
             for h, played in zip(hands, states)]
    replies = [[(matchstate_text(s, h.deal, s.current_player) + ":", "c") for s in played[:-1]]
               for h, played in zip(hands, states)]
    finals = [(h, played[-1], played[-1].values(h.deal.hole, h.deal.board_cards))
              for h, played in zip(hands, states)]
    records = [log_state_for(final, h.deal, values, names) for h, final, values in finals]

    def card_text() -> None:
        for text in cards:
            for i in range(0, len(text), 2):
                card_from_text(text[i : i + 2])
        for hand in hands:
            for hole in hand.deal.hole:
                cards_to_text(hole)
            cards_to_text(hand.deal.board_cards)

    def ranking() -> None:
        for hand_sevens in sevens:
            for seven in hand_sevens:
                rank_hand(seven)

    def deal() -> None:
        source = DealSource(seed)
        for _ in hands:
            source.deal(game)

    def apply() -> None:
        for hand in hands:
            state = State(game, hand.hand_id)
            for action in hand.actions:
                state.apply(action)

    def matchstate_lines() -> None:
        for hand in hands:
            state = State(game, hand.hand_id)
            hand_lines = HandLines(state, hand.deal)
            hand_lines.texts()
            for action in hand.actions:
                state.apply(action)
                hand_lines.texts()

    def reply_echo() -> None:
        for hand_replies in replies:
            for sent, action in hand_replies:
                line = sent + action
                if line.startswith(sent):
                    read_reply_action(line[len(sent):], game)

    def reply_full() -> None:
        for hand_replies in replies:
            for sent, action in hand_replies:
                parse_reply(sent + action, game)

    def log_line() -> None:
        for hand, final, values in finals:
            log_state_text(final, hand.deal, values, names)

    def read_lines() -> None:
        for hand_lines in lines:
            for line in hand_lines:
                parse_matchstate(line, game)

    def walk_lines() -> None:
        for record in records:
            for p in positions:
                for _ in decision_points(game, record, p):
                    pass

    return {
        "protocol.cards: card text": card_text,
        "protocol.ranking: rank_hand": ranking,
        "protocol.deal: DealSource.deal": deal,
        "protocol.rules: State.apply": apply,
        "protocol.wire: MATCHSTATE lines": matchstate_lines,
        "protocol.wire: reply, echo check": reply_echo,
        "protocol.wire: reply, parse_reply": reply_full,
        "protocol.wire: log line": log_line,
        "protocol.wire: parse_matchstate": read_lines,
        "protocol.lines: decision_points": walk_lines,
    }


#: The row of the dealer's own work (bench/bench_dealer_work.py).
DEALER_ROW = "dealer.match + dealer.seatio: dealer work"


def variant_run(options: argparse.Namespace) -> dict[str, float]:
    """Every row in this process's variant: µs per hand, by row."""
    game = load_game(options.game)
    hands = random_hands(game, options.hands, options.seed)
    scale = 1e6 / len(hands)
    times = {name: best_time(run, options.repeats) * scale
             for name, run in operations(game, hands, options.seed).items()}
    if options.dealer_hands:
        sys.path.insert(0, str(BENCH))  # bench_dealer_work imports bench_dealer from here
        from bench_dealer_work import best_of

        times[DEALER_ROW] = best_of(options.dealer_hands, options.seed, options.repeats)["us_per_hand"]
    return times


def compare_variants(options: argparse.Namespace) -> int:
    """Run every row per variant in subprocesses, alternating; print medians, ratios, spread."""
    if not protocol.COMPILED:
        raise SystemExit(f"the compiled group is not in use here ({protocol.variant()}); "
                         "install without ACPC_LBR_PURE to build it")
    clean = {k: v for k, v in os.environ.items() if k != PURE_ENV}
    args = [sys.executable, __file__, "--variant-run", "--json", "--game", options.game,
            "--hands", str(options.hands), "--repeats", str(options.repeats),
            "--seed", str(options.seed), "--dealer-hands", str(options.dealer_hands)]
    times: dict[str, dict[str, list[float]]] = {"compiled": {}, "pure": {}}
    for round_ in range(options.rounds):
        for variant in ("compiled", "pure"):
            env = {**clean, PURE_ENV: "1"} if variant == "pure" else clean
            done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"the {variant} run failed: {done.stderr.strip()[-2000:]}")
            report = json.loads(done.stdout.splitlines()[-1])
            if report["compiled"] != (variant == "compiled"):
                raise SystemExit(f"the {variant} run ran {report['variant']}")
            for row, took in report["us_per_hand"].items():
                times[variant].setdefault(row, []).append(took)
        print(f"round {round_ + 1}/{options.rounds} done", file=sys.stderr, flush=True)
    print(f"{options.game}, {options.hands} hands ({options.dealer_hands} for the dealer's work), "
          f"best of {options.repeats}, {options.rounds} rounds alternating; µs per hand, "
          f"median of the rounds; pure/compiled: median (lowest-highest of the rounds)")
    print(f"{'':46s} {'compiled':>9s} {'pure':>9s}  pure/compiled")
    for row, compiled_times in times["compiled"].items():
        pure_times = times["pure"][row]
        ratios = sorted(p / c for p, c in zip(pure_times, compiled_times))
        print(f"{row:46s} {statistics.median(compiled_times):9.2f} "
              f"{statistics.median(pure_times):9.2f}  x{statistics.median(ratios):.2f} "
              f"({ratios[0]:.2f}-{ratios[-1]:.2f})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--game", default="nolimit")
    parser.add_argument("--hands", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5, help="runs of each variant, alternating")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dealer-hands", dest="dealer_hands", type=int, default=1000,
                        help="hands of the in-memory dealer row (0: leave it out)")
    parser.add_argument("--variant-run", dest="variant_run", action="store_true",
                        help="time every row in this process's variant only")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if not options.variant_run:
        return compare_variants(options)
    times = variant_run(options)
    if options.json:
        print(json.dumps({"compiled": protocol.COMPILED, "variant": protocol.variant(),
                          "us_per_hand": times}))
    else:
        print(f"{options.game}, {options.hands} hands, best of {options.repeats}; "
              f"{protocol.variant()}; µs per hand")
        for row, took in times.items():
            print(f"{row:46s} {took:9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
