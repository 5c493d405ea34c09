"""Micro-benchmarks of the protocol core's hot path, each against its slow twin.

What the dealer does per hand, timed call by call on seeded random play
(hands, deals and actions fixed by ``--seed``), each fast path next to the
implementation it replaced, measured in the same run:

* ``MATCHSTATE text``: every line the dealer sends in a hand (each decision
  point, each position, and the final state): the previous printer
  (``MatchState`` record, ``Action.type.value``, one ``card_to_text`` per card)
  vs ``matchstate_for(...).text()`` vs ``matchstate_text(...)``;
* ``reply``: reading the acting player's reply ``<state>:c``: ``parse_reply``
  (replays the betting) vs the dealer's echo check plus ``read_reply_action``;
* ``State.apply``: a hand's actions from a fresh state, the previous
  ``State`` (kept below as ``PreviousState``) vs ``State``;
* ``log line``: ``log_state_for(...).text()`` vs ``log_state_text(...)``;
* ``dealer protocol work``: all of the above as the dealer combines them,
  plus ``correct_action`` and ``values``, previous vs current.

Usage::

    .venv/bin/python bench/bench_protocol.py [--game nolimit] [--hands 2000]
        [--repeats 5] [--seed 1] [--variants compiled,pure [--rounds 3]]

``--variants compiled,pure`` times the protocol core both ways in one run: each
round runs this script once per variant, alternating, in a subprocess with
``ACPC_LBR_PURE`` set or not, and the summary gives each row's median over the
rounds and the pure/compiled ratio (see docs/architecture.md, "Compiled core").

Times are the best of ``--repeats`` in process CPU time, per hand (µs);
ratios are previous / this. Measured 2026-11-24 on the shared 2-vCPU machine
(load average ~4), defaults (no-limit, 2000 hands, 7.9 actions and 17.8
MATCHSTATE lines per hand)::

    MATCHSTATE text   previous 116.8; matchstate_for().text() 54.1 (x2.2);
                      matchstate_text() 16.4 (x7.1)
    reply             parse_reply() 187.3; echo + read_reply_action() 1.3
    State.apply       PreviousState 26.7; State 19.2 (x1.4)
    log line          previous 9.6; log_state_text() 4.9 (x2.0)
    dealer protocol   previous 208.8; current 83.9 (x2.5)

``parse_reply`` itself went from ~32 to ~24 µs per line (card table,
whole-round betting regex, faster State), measured separately.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import protocol
from protocol._variant import PURE_ENV
from protocol.cards import card_to_text
from protocol.deal import Deal, DealSource
from protocol.errors import IllegalActionError
from protocol.gamedef import GameDef, load_game
from protocol.ranking import rank_hand
from protocol.rules import (
    MAX_NUM_ACTIONS,
    Action,
    ActionType,
    State,
    correct_action,
    showdown_values,
)
from protocol.wire import (
    INVALID,
    MatchState,
    log_state_for,
    log_state_text,
    matchstate_for,
    matchstate_text,
    parse_reply,
    read_reply_action,
)

# -- slow twins: the implementations the fast paths replaced -----------------


def previous_action_text(action: Action) -> str:
    """``Action.text`` as it was: through ``Enum.value``."""
    if action.type is ActionType.RAISE and action.size:
        return f"r{action.size}"
    return action.type.value


def previous_cards_text(cards: Sequence[int]) -> str:
    """``cards_to_text`` as it was: one ``card_to_text`` call per card."""
    return "".join(card_to_text(c) for c in cards)


def previous_matchstate_text(state: State | PreviousState, deal: Deal, position: int) -> str:
    """``matchstate_for(state, deal, position).text()`` as it was."""
    showdown = state.is_showdown
    hole = tuple(
        deal.hole[p] if p == position or (showdown and not state.folded[p]) else ()
        for p in range(state.num_players)
    )
    board = tuple(deal.board[r] for r in range(state.round + 1))
    view = MatchState(position, state.hand_id, tuple(tuple(a) for a in state.actions), hole, board)
    betting = "/".join("".join(previous_action_text(a) for a in acts) for acts in view.betting)
    cards = "|".join(previous_cards_text(h) for h in view.hole)
    for round_, round_cards in enumerate(view.board):
        if round_:
            cards += "/"
        cards += previous_cards_text(round_cards)
    return f"MATCHSTATE:{view.position}:{view.hand_id}:{betting}:{cards}"


def previous_log_text(state: State | PreviousState, deal: Deal, values: Sequence[float],
                      names: Sequence[str]) -> str:
    """``log_state_for(...).text()`` as it was (card and action text the old way)."""
    betting = "/".join("".join(previous_action_text(a) for a in acts) for acts in state.actions)
    cards = "|".join(previous_cards_text(h) for h in deal.hole)
    for round_ in range(state.round + 1):
        cards += ("/" if round_ else "") + previous_cards_text(deal.board[round_])
    chips = "|".join(f"{v:.6f}".rstrip("0").rstrip(".") for v in values)
    return f"STATE:{state.hand_id}:{betting}:{cards}:{chips}:{'|'.join(names)}"


_REPLY_KINDS = {"f": ActionType.FOLD, "c": ActionType.CALL, "k": ActionType.CALL,
                "r": ActionType.RAISE, "b": ActionType.RAISE}


def previous_read_reply_action(text: str, game: GameDef) -> tuple[Action | None, str | None]:
    """``read_reply_action`` as it was for size-less letters (a new record each time)."""
    kind = _REPLY_KINDS.get(text[:1].lower()) if text else None
    if kind is None:
        return None, INVALID
    if kind is not ActionType.RAISE or game.is_limit:
        return Action(kind), None
    return read_reply_action(text, game)


# The previous rules.State, verbatim but for its name: the slow twin of
# State.apply (recomputes the player to act on every query, re-joins the
# betting string, deep-copies on clone).
@dataclass
class PreviousState:
    """The public state of one hand (betting only; cards live in a ``Deal``).

    Args:
        game: the frozen game definition.
        hand_id: the hand's number in the match.
    """

    game: GameDef
    hand_id: int = 0
    round: int = 0
    finished: bool = False
    spent: list[int] = field(default_factory=list)
    folded: list[bool] = field(default_factory=list)
    max_spent: int = 0
    min_raise_to: int = 0
    #: Actions of each round reached, and who made them.
    actions: list[list[Action]] = field(default_factory=list)
    actors: list[list[int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        game = self.game
        if not self.spent:
            self.spent = list(game.blind)
            self.folded = [False] * game.num_players
            self.max_spent = max(game.blind)
            if game.is_limit:
                self.min_raise_to = 0
            else:
                self.min_raise_to = 2 * self.max_spent if self.max_spent else 1
            self.actions = [[]]
            self.actors = [[]]

    # -- queries -----------------------------------------------------------

    def clone(self) -> PreviousState:
        """An independent copy."""
        return copy.deepcopy(self)

    @property
    def num_players(self) -> int:
        return self.game.num_players

    def _can_act(self, p: int) -> bool:
        return not self.folded[p] and self.spent[p] < self.game.stack[p]

    def _next_player(self, p: int) -> int:
        n = p
        for _ in range(self.num_players):
            n = (n + 1) % self.num_players
            if self._can_act(n):
                return n
        return n  # unreachable while the hand is live

    @property
    def current_player(self) -> int:
        """The position to act.

        Raises:
            IllegalActionError: the hand is over.
        """
        if self.finished:
            raise IllegalActionError("the hand is over; nobody is to act")
        actors = self.actors[self.round]
        if actors:
            return self._next_player(actors[-1])
        first = self.game.first_player[self.round]
        return self._next_player(first + self.num_players - 1)

    @property
    def num_folded(self) -> int:
        return sum(self.folded)

    @property
    def num_active(self) -> int:
        """Players who have neither folded nor gone all-in."""
        return sum(1 for p in range(self.num_players) if self._can_act(p))

    def _num_raises(self) -> int:
        return sum(1 for a in self.actions[self.round] if a.type is ActionType.RAISE)

    def _num_called(self) -> int:
        called = 0
        for action, p in zip(reversed(self.actions[self.round]), reversed(self.actors[self.round])):
            if action.type is ActionType.RAISE:
                return called + (1 if self.spent[p] < self.game.stack[p] else 0)
            if action.type is ActionType.CALL and self.spent[p] < self.game.stack[p]:
                called += 1
        return called

    @property
    def pot(self) -> int:
        """Chips committed by everyone so far."""
        return sum(self.spent)

    def amount_to_call(self) -> int:
        """Chips the player to act must add to call (0 when checking)."""
        p = self.current_player
        return min(self.max_spent, self.game.stack[p]) - self.spent[p]

    def can_fold(self) -> bool:
        """Folding is legal only when facing a bet (and not all-in)."""
        if self.finished:
            return False
        p = self.current_player
        return self.spent[p] < self.max_spent and self.spent[p] < self.game.stack[p]

    def raise_range(self) -> tuple[int, int] | None:
        """The smallest and largest legal raise-to, or None if no raise is legal.

        In limit games both ends are the one raise-to the fixed size gives.
        """
        if self.finished:
            return None
        game = self.game
        if self._num_raises() >= game.max_raises[self.round]:
            return None
        if len(self.actions[self.round]) + game.num_players > MAX_NUM_ACTIONS:
            return None
        if self.num_active <= 1:
            return None
        p = self.current_player
        stack = game.stack[p]
        if game.is_limit:
            to = min(self.max_spent + game.raise_size[self.round], stack)
            return (to, to)
        low, high = self.min_raise_to, stack
        if low > stack:
            if self.max_spent >= stack:
                return None
            low = high
        return (low, high)

    def can_raise(self) -> bool:
        return self.raise_range() is not None

    def legal_actions(self) -> list[ActionType]:
        """The legal action types, in the order fold, call, raise."""
        if self.finished:
            return []
        legal = [ActionType.CALL]
        if self.can_fold():
            legal.insert(0, ActionType.FOLD)
        if self.can_raise():
            legal.append(ActionType.RAISE)
        return legal

    def is_legal(self, action: Action) -> bool:
        """True when :meth:`apply` would accept ``action`` unchanged."""
        try:
            self.check(action)
        except IllegalActionError:
            return False
        return True

    def check(self, action: Action) -> None:
        """Raise :class:`IllegalActionError` unless ``action`` is legal as given."""
        if self.finished:
            raise IllegalActionError("the hand is over", action.text())
        if action.type is ActionType.FOLD:
            if not self.can_fold():
                raise IllegalActionError("fold is not allowed when not facing a bet", "f")
            if action.size:
                raise IllegalActionError("a fold has no size", action.text())
        elif action.type is ActionType.CALL:
            if action.size:
                raise IllegalActionError("a call has no size", action.text())
        else:
            bounds = self.raise_range()
            if bounds is None:
                raise IllegalActionError("no raise is allowed here", action.text())
            if self.game.is_limit:
                if action.size:
                    raise IllegalActionError("a limit raise has no size", action.text())
            elif not bounds[0] <= action.size <= bounds[1]:
                raise IllegalActionError(
                    f"raise-to must be in [{bounds[0]}, {bounds[1]}]", action.text()
                )

    # -- apply -------------------------------------------------------------

    def apply(self, action: Action) -> Action:
        """Check ``action``, apply it, and return it.

        Raises:
            IllegalActionError: the action is not legal; the state is unchanged.
        """
        self.check(action)
        game = self.game
        p = self.current_player
        self.actions[self.round].append(action)
        self.actors[self.round].append(p)
        if action.type is ActionType.FOLD:
            self.folded[p] = True
        elif action.type is ActionType.CALL:
            self.spent[p] = min(self.max_spent, game.stack[p])
        else:
            if game.is_limit:
                self.max_spent = min(self.max_spent + game.raise_size[self.round], game.stack[p])
            else:
                self.min_raise_to = max(self.min_raise_to, 2 * action.size - self.max_spent)
                self.max_spent = action.size
            self.spent[p] = self.max_spent
        self._close_round_if_done()
        return action

    def _close_round_if_done(self) -> None:
        game = self.game
        if self.num_folded + 1 >= game.num_players:
            self.finished = True
        elif self._num_called() >= self.num_active:
            if self.num_active > 1:
                if self.round + 1 < game.num_rounds:
                    self.round += 1
                    self.actions.append([])
                    self.actors.append([])
                    self.min_raise_to = max(max(game.blind), 1) + self.max_spent
                else:
                    self.finished = True
            else:
                # Everyone left is all-in (or one can act against all-ins):
                # jump to the last round for the showdown.
                while self.round + 1 < game.num_rounds:
                    self.round += 1
                    self.actions.append([])
                    self.actors.append([])
                self.finished = True

    # -- results -----------------------------------------------------------

    @property
    def is_showdown(self) -> bool:
        """True when the hand is over and two or more players did not fold."""
        return self.finished and self.num_folded + 1 < self.num_players

    def betting_string(self) -> str:
        """The ACPC betting string, e.g. ``'r300c/cr900f'``."""
        text = "/".join("".join(a.text() for a in acts) for acts in self.actions)
        return text

    def values(self, hole: Sequence[Sequence[int]], board: Sequence[int]) -> tuple[float, ...]:
        """Each position's winnings in chips at the end of the hand.

        Args:
            hole: hole cards of each position (needed only at a showdown).
            board: the board cards of the whole hand (the showdown uses those of
                every round; a finished hand always reaches the last round).

        Raises:
            IllegalActionError: the hand is not over.
        """
        if not self.finished:
            raise IllegalActionError("values exist only at the end of a hand")
        n = self.num_players
        if self.num_folded + 1 == n:
            winner = self.folded.index(False)
            total = sum(self.spent)
            return tuple(
                float(total - self.spent[p]) if p == winner else float(-self.spent[p])
                for p in range(n)
            )
        ranks = [
            -1 if self.folded[p] else rank_hand(list(hole[p]) + list(board)) for p in range(n)
        ]
        return showdown_values(self.spent, ranks)


# -- the workload --------------------------------------------------------------


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


def previous_correct_action(state: PreviousState, action: Action) -> tuple[Action, None]:
    """``correct_action`` on a PreviousState for the bench's legal play (the
    compiled ``correct_action`` takes only a ``State``): the same legality check."""
    return (action if state.is_legal(action) else Action.CALL), None


def decision_states(game: GameDef, hands: Sequence[Hand], cls: type) -> list[list[Any]]:
    """Per hand, a copy of the state at each decision point and at the end."""
    per_hand = []
    for hand in hands:
        state = cls(game, hand.hand_id)
        states = [state.clone()]
        for action in hand.actions:
            state.apply(action)
            states.append(state.clone())
        per_hand.append(states)
    return per_hand


def best_time(run: Callable[[], object], repeats: int) -> float:
    """The fastest of ``repeats`` runs, in CPU seconds (steadier on a shared machine)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best


def main(argv: Sequence[str] | None = None) -> int:
    """Run every benchmark and print per-hand times and previous/current ratios."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--game", default="nolimit")
    parser.add_argument("--hands", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--variants", default=None,
                        help="compare protocol cores in subprocesses: compiled,pure")
    parser.add_argument("--rounds", type=int, default=3,
                        help="with --variants: runs of each variant, alternating")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.variants:
        return compare_variants(options, sys.argv[1:] if argv is None else argv)
    game = load_game(options.game)
    hands = random_hands(game, options.hands, options.seed)
    n = game.num_players
    positions = range(n)
    names = tuple(f"p{p + 1}" for p in positions)
    new_states = decision_states(game, hands, State)
    old_states = decision_states(game, hands, PreviousState)
    decisions = sum(len(h.actions) for h in hands)
    if not options.json:
        print(f"{options.game}: {len(hands)} hands, {decisions / len(hands):.2f} actions/hand, "
              f"{(decisions + len(hands)) * n / len(hands):.1f} MATCHSTATE lines/hand; "
              f"best of {options.repeats}; protocol core {protocol.variant()}", flush=True)

    def text_previous() -> None:
        for hand, states in zip(hands, old_states):
            for state in states:
                for p in positions:
                    previous_matchstate_text(state, hand.deal, p)

    def text_record() -> None:
        for hand, states in zip(hands, new_states):
            for state in states:
                for p in positions:
                    matchstate_for(state, hand.deal, p).text()

    def text_fast() -> None:
        for hand, states in zip(hands, new_states):
            for state in states:
                for p in positions:
                    matchstate_text(state, hand.deal, p)

    # The actor's reply to every decision point: its state echoed, then ':c'.
    replies = []
    for hand, states in zip(hands, new_states):
        for state in states[:-1]:
            prefix = matchstate_text(state, hand.deal, state.current_player) + ":"
            replies.append((prefix, prefix + "c"))

    def reply_parse() -> None:
        for _, line in replies:
            parse_reply(line, game)

    def reply_echo() -> None:
        for prefix, line in replies:
            if line.startswith(prefix):
                read_reply_action(line[len(prefix):], game)

    def apply_previous() -> None:
        for hand in hands:
            state = PreviousState(game, hand.hand_id)
            for action in hand.actions:
                state.apply(action)

    def apply_fast() -> None:
        for hand in hands:
            state = State(game, hand.hand_id)
            for action in hand.actions:
                state.apply(action)

    finals = [(hand, states[-1]) for hand, states in zip(hands, new_states)]
    values = [final.values(hand.deal.hole, hand.deal.board_cards) for hand, final in finals]

    def log_previous() -> None:
        for (hand, final), vals in zip(finals, values):
            previous_log_text(final, hand.deal, vals, names)

    def log_record() -> None:
        for (hand, final), vals in zip(finals, values):
            log_state_for(final, hand.deal, vals, names).text()

    def log_fast() -> None:
        for (hand, final), vals in zip(finals, values):
            log_state_text(final, hand.deal, vals, names)

    def dealer(state_cls: type, text: Callable[..., str], read: Callable[..., object],
               correct: Callable[..., tuple[Action, object]],
               log: Callable[..., str]) -> Callable[[], None]:
        def run() -> None:
            for hand in hands:
                deal = hand.deal
                state = state_cls(game, hand.hand_id)
                for action in hand.actions:
                    actor = state.current_player
                    prefix = ""
                    for p in positions:
                        line = text(state, deal, p)
                        if p == actor:
                            prefix = line + ":"
                    read(action.text(), game)
                    applied, _ = correct(state, action)
                    state.apply(applied)
                    assert prefix
                for p in positions:
                    text(state, deal, p)
                log(state, deal, state.values(deal.hole, deal.board_cards), names)
        return run

    rows = [
        ("MATCHSTATE text", ("previous printer", text_previous),
         [("matchstate_for().text()", text_record), ("matchstate_text()", text_fast)]),
        ("reply", ("parse_reply()", reply_parse),
         [("echo + read_reply_action()", reply_echo)]),
        ("State.apply", ("PreviousState", apply_previous), [("State", apply_fast)]),
        ("log line", ("previous printer", log_previous),
         [("log_state_for().text()", log_record), ("log_state_text()", log_fast)]),
        ("dealer protocol work",
         ("previous", dealer(PreviousState, previous_matchstate_text,
                             previous_read_reply_action, previous_correct_action,
                             previous_log_text)),
         [("current", dealer(State, matchstate_text, read_reply_action, correct_action,
                             log_state_text))]),
    ]
    scale = 1e6 / len(hands)
    results: dict[str, float] = {}
    if not options.json:
        print(f"{'':32s} {'µs/hand':>9s}  previous/this")
    for name, (base_label, baseline), variants in rows:
        base = best_time(baseline, options.repeats)
        results[f"{name}: {base_label}"] = base * scale
        if not options.json:
            print(f"{name}\n    {base_label:28s} {base * scale:9.1f}", flush=True)
        for label, run in variants:
            took = best_time(run, options.repeats)
            results[f"{name}: {label}"] = took * scale
            if not options.json:
                print(f"    {label:28s} {took * scale:9.1f}  x{base / took:.2f}", flush=True)
    if options.json:
        print(json.dumps({"compiled": protocol.COMPILED, "us_per_hand": results}))
    return 0


def compare_variants(options: argparse.Namespace, argv: Sequence[str]) -> int:
    """Run this benchmark per protocol variant in subprocesses, alternating; print medians."""
    wanted = options.variants.split(",")
    if not set(wanted) <= {"compiled", "pure"}:
        raise SystemExit("--variants takes compiled and/or pure")
    if "compiled" in wanted and not protocol.COMPILED and not os.environ.get(PURE_ENV):
        raise SystemExit(f"the compiled protocol core is not in use here ({protocol.variant()})")
    args = list(argv)
    at = args.index("--variants")
    del args[at : at + 2]
    clean = {k: v for k, v in os.environ.items() if k != PURE_ENV}
    times: dict[str, dict[str, list[float]]] = {v: {} for v in wanted}
    for round_ in range(options.rounds):
        for variant in wanted:
            env = {**clean, PURE_ENV: "1"} if variant == "pure" else clean
            done = subprocess.run([sys.executable, __file__, *args, "--json"], env=env,
                                  capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"the {variant} run failed: {done.stderr.strip()[-2000:]}")
            report = json.loads(done.stdout.splitlines()[-1])
            if report["compiled"] != (variant == "compiled"):
                raise SystemExit(f"the {variant} run did not run {variant}: {done.stderr}")
            for row, took in report["us_per_hand"].items():
                times[variant].setdefault(row, []).append(took)
            print(f"round {round_ + 1} {variant:8}: dealer protocol work, current "
                  f"{report['us_per_hand']['dealer protocol work: current']:.1f} µs/hand",
                  flush=True)
    print(f"\n{options.game}, {options.hands} hands, best of {options.repeats}, "
          f"median of {options.rounds} rounds, µs/hand")
    print(f"{'':52s} " + " ".join(f"{v:>9s}" for v in wanted)
          + ("  pure/compiled" if len(wanted) == 2 else ""))
    for row in times[wanted[0]]:
        medians = [statistics.median(times[v][row]) for v in wanted]
        ratio = f"  x{medians[-1] / medians[0]:.2f}" if len(wanted) == 2 else ""
        print(f"{row:52s} " + " ".join(f"{m:9.1f}" for m in medians) + ratio)
    return 0


if __name__ == "__main__":
    sys.exit(main())
