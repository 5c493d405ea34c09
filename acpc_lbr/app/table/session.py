"""One person's table: the person's match, the baseline's match, and what the page shows.

A table is two matches of the real dealer (:class:`dealer.match.Match`) with
the same game and the same seed, so the same cards by position in every hand:

- ``NAME``: the person (seat 1, ``human``) against the opponent (seat 2);
- ``NAME.baseline``: the baseline bot in the person's seat against the same
  opponent. It starts when the person has finished hand 0, and its hand *h*
  is played only once the person has finished hand *h* (a hand hook of the
  dealer holds it), so its ``.log`` never holds a hand the person did not
  play, and once both matches are over the two logs hold the same hands.

This is the dealer's duplicate idea (same seed, cards dealt by position) with
the person's seat kept rather than mirrored: hand *h*'s difference, person
minus baseline, cancels the luck of the cards the two seats shared. The figures
(mean and 95% interval, :class:`acpc_lbr.stats.RunningMean`) come from the
dealer's own hand values (its ``HandFinished`` events), the ones its ``.log``
records; ``acpc-lbr results NAME.log`` and ``acpc-lbr results NAME.baseline.log``
give the same.
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from twisted.internet import defer, error
from twisted.python.failure import Failure

from acpc_lbr.app.evaluate.processes import (
    EvaluateReactor,
    OpponentProcess,
    exited_before_connecting,
)
from acpc_lbr.app.table.seat import HandRecord, HumanSeat
from acpc_lbr.runtime.exit_codes import EXIT_OK
from acpc_lbr.stats import RunningMean, SeatedMean
from agents.client import AcpcClient, BotFactory, StrategyBot, seeded_rng
from agents.sdk import Strategy
from dealer.busypoll import MatchesPlaying
from dealer.events import Cause, EventRecord, HandFinished
from dealer.match import Match, MatchAborted, MatchConfig, MatchResult
from dealer.metrics import DealerMetrics, MatchMetrics
from protocol.cards import cards_to_text
from protocol.deal import Deal
from protocol.gamedef import GameDef
from protocol.rules import ActionType, State

#: The person's player name in the logs (seat 1 of the person's match).
HUMAN = "human"
#: The baseline's player name (seat 1 of the baseline's match).
BASELINE = "baseline"
#: Hands of history a snapshot carries (the page's list; the .log has them all).
HISTORY_SHOWN = 60
#: The dealer's own limit on a reply is the person's clock plus this (a backstop:
#: the seat answers for a late person first).
DEALER_MARGIN_S = 15.0


class Status(StrEnum):
    """Where a table is (the page shows each its own way)."""

    STARTING = "starting"
    PLAYING = "playing"
    #: The person's match is over; the baseline plays the person's last hand.
    FINISHING = "finishing"
    OVER = "over"


@dataclass(frozen=True)
class Player:
    """A bot the page may choose, as the server's command line gave it.

    Attributes:
        key: what the page sends.
        name: the player name in the logs.
        strategy: an SDK strategy (built-in or ``file.py:function``), or None.
        command: an ACPC program with ``{host}`` and ``{port}`` (and maybe ``{game}``), or None.
    """

    key: str
    name: str
    strategy: Strategy | None = None
    command: str | None = None


@dataclass(frozen=True)
class GameChoice:
    """A game the page may choose: its key, the game as typed for the log header, the game."""

    key: str
    arg: str
    game: GameDef
    path: Path


@dataclass(frozen=True)
class TableSpec:
    """What one table plays."""

    game: GameChoice
    opponent: Player
    baseline: Player | None
    hands: int
    seed: int
    action_seconds: float


def mbb(stat: RunningMean, big_blind: int) -> dict[str, float | int | None]:
    """A running mean in milli-big-blinds per hand, with its printed 95% interval (``low``, ``high``: the
    results document's, :meth:`acpc_lbr.stats.RunningMean.interval`; None below two hands)."""
    scale = 1000.0 / big_blind
    low, high = stat.interval()
    return {"n": stat.n, "mean": stat.mean * scale if stat.n else None,
            "low": low * scale if stat.n > 1 else None, "high": high * scale if stat.n > 1 else None}


class TableSession:
    """One person's table, from sitting down to the last hand.

    Args:
        number: the table's number (the log names).
        spec: what it plays.
        reactor: the running reactor.
        out: the folder of the logs.
        changed: called when the page should be sent a new snapshot.
        playing: the count of the process's matches playing (dealer.busypoll.MatchesPlaying),
            shared by every table of the server; when not given, its own, started at one
            because the opponent may play in this process (the time it thinks is then its
            own, not the dealer's to make the next state ready ahead of its reply).
    """

    def __init__(self, number: int, spec: TableSpec, reactor: EvaluateReactor, out: Path,
                 changed: Callable[[], None], metrics: DealerMetrics | None = None,
                 playing: MatchesPlaying | None = None) -> None:
        self.number = number
        self.playing = playing if playing is not None else MatchesPlaying(count=1)
        self.spec = spec
        self.reactor = reactor
        self.changed = changed
        game = spec.game.game
        self.name = str(out / f"table{number}-{spec.opponent.name}")
        self.seat = HumanSeat(game, reactor, spec.action_seconds, changed)
        # Over hands, as the results document of each match takes them: the spread within
        # seats (the seat is the hand number's parity: the dealer moves the players each hand).
        self.person = SeatedMean()
        self.baseline = SeatedMean()
        self.difference = RunningMean()
        self._person_values: dict[int, float] = {}
        self._baseline_values: dict[int, float] = {}
        self._person_hand_done: dict[int, defer.Deferred[None]] = {}
        self.status = Status.STARTING
        self.message = ""
        self.result: MatchResult | None = None
        self.base_result: MatchResult | None = None
        self.processes: list[OpponentProcess] = []
        self.match = self._match(self.name, HUMAN, start_timeout_ms=60_000)
        self.base_match = (self._match(self.name + ".baseline", BASELINE, start_timeout_ms=60_000)
                           if spec.baseline is not None else None)
        self._baseline_started = False
        #: The Prometheus series of each match (``--metrics-port``), as the dealer's.
        self.series: list[MatchMetrics] = []
        for match in (self.match, self.base_match):
            if metrics is not None and match is not None:
                self.series.append(metrics.match(Path(match.config.name).name, match.config.names))
                match.events.subscribe(self.series[-1].observe)

    def _match(self, name: str, seat_one: str, start_timeout_ms: int | None) -> Match:
        spec = self.spec
        limit_ms = int((spec.action_seconds + DEALER_MARGIN_S) * 1000)
        config = MatchConfig(
            name=name, game_arg=spec.game.arg, game=spec.game.game, hands=spec.hands, seed=spec.seed,
            names=(seat_one, spec.opponent.name), bind="127.0.0.1", t_response_ms=limit_ms,
            t_hand_ms=limit_ms * 50, t_per_hand_ms=limit_ms * 10, trace_messages=False,
            start_timeout_ms=start_timeout_ms,
        )
        return Match(config, self.reactor, stderr=None, playing=self.playing)

    # -- start and end ------------------------------------------------------

    def start(self) -> None:
        """Listen, start both matches and seat the person and the opponent (the baseline later)."""
        ports = self.match.listen()
        self.match.events.subscribe(self._person_event)
        self.match.start().addCallback(self._person_match_ended)
        self._connect(ports[0], lambda: self.seat)
        self._seat_bot(self.match, 1, ports[1], self.spec.opponent, rng_seed=self.spec.seed + 1)
        self.status = Status.PLAYING

    def _start_baseline(self) -> None:
        """Start the baseline's match once the person has finished hand 0 (its hands follow the person's)."""
        match, baseline = self.base_match, self.spec.baseline
        if match is None or baseline is None:
            return
        try:
            ports = match.listen()
        except MatchAborted as failure:
            self.message = f"no baseline: {failure.message}"
            return
        self._baseline_started = True
        match.events.subscribe(self._baseline_event)
        match.hand_hooks.append(self._hold_baseline)
        match.start().addCallback(self._baseline_ended)
        self._seat_bot(match, 0, ports[0], baseline, self.spec.seed + 2)
        self._seat_bot(match, 1, ports[1], self.spec.opponent, self.spec.seed + 1)

    def _connect(self, port: int, make: Callable[[], AcpcClient]) -> None:
        self.reactor.connectTCP("127.0.0.1", port, _SeatFactory(make))

    def _seat_bot(self, match: Match, seat: int, port: int, player: Player, rng_seed: int) -> None:
        """Connect a bot (an SDK strategy here, or a program it starts) to ``port``, seat ``seat``.

        A program that exits before it connects ends the match at once, saying so
        (as in ``acpc-lbr evaluate``), instead of after the start timeout."""
        game = self.spec.game
        if player.strategy is not None:
            bot = StrategyBot(game.game, player.strategy, seeded_rng(rng_seed))
            self._connect(port, lambda: bot)
            return
        command = (player.command or "").format(host="127.0.0.1", port=port,
                                                game=shlex.quote(str(game.path)))
        argv = shlex.split(command)
        argv[0] = shutil.which(argv[0]) or argv[0]
        log = Path(f"{match.config.name}.{player.name}.out")
        process = OpponentProcess(self.reactor, argv, log)
        process.seat = match.seats[seat]
        process.ended.addCallback(exited_before_connecting, match, seat, process.command, log)
        self.processes.append(process)

    def leave(self, why: str = "the person left the table") -> None:
        """The person leaves: the match ends now, its finished hands logged."""
        self.match.abort(MatchAborted(Cause.INTERRUPTED, why, 0, EXIT_OK))

    def _person_match_ended(self, result: MatchResult) -> None:
        self.result = result
        self.seat.leave()
        for waiting in self._person_hand_done.values():
            if not waiting.called:
                waiting.callback(None)  # the baseline's next hand will not come
        if self.base_result is not None or not self._baseline_started:
            self._over()
        else:
            self.status = Status.FINISHING  # the baseline plays the person's last hand
            self.changed()

    def _baseline_ended(self, result: MatchResult) -> None:
        self.base_result = result
        if self.result is not None:
            self._over()
        else:
            self.changed()

    def _over(self) -> None:
        """Both matches are over: the page shows the final figures."""
        result = self.result
        assert result is not None
        self.status = Status.OVER
        self.message = (f"The match is over: {result.hands_played} hands played." if result.completed
                        else f"The match ended after {result.hands_played} hands: {result.message}.")
        base = self.base_result
        if base is not None and base.hands_played < result.hands_played:
            self.message += f" The baseline's match ended after {base.hands_played} hands: {base.message}."
        self._stop_processes_later()
        self.changed()

    def _stop_processes_later(self) -> None:
        """Opponent programs see their match end and exit; any still running after a grace is killed."""
        def stop() -> None:
            for process in self.processes:
                defer.ensureDeferred(process.finish(self.reactor, 10.0))
        self.reactor.callLater(1.0, stop)

    # -- the hands ----------------------------------------------------------

    def _person_event(self, event: EventRecord) -> None:
        if not isinstance(event, HandFinished):
            return
        value = float(event.values[0])
        self._person_values[event.hand] = value
        self.person.add(value, event.hand % 2)
        self._pair(event.hand)
        if event.hand == 0:
            self._start_baseline()
        waiting = self._person_hand_done.pop(event.hand, None)
        if waiting is not None:
            waiting.callback(None)
        self.changed()

    def _baseline_event(self, event: EventRecord) -> None:
        if isinstance(event, HandFinished):
            value = float(event.values[0])
            self._baseline_values[event.hand] = value
            self.baseline.add(value, event.hand % 2)
            self._pair(event.hand)
            self.changed()

    def _pair(self, hand: int) -> None:
        if hand in self._person_values and hand in self._baseline_values:
            self.difference.add(self._person_values[hand] - self._baseline_values[hand])

    async def _hold_baseline(self, state: State, deal: Deal, seats: list[int]) -> None:
        """A hand hook of the baseline's match: its next hand waits for the person's."""
        following = state.hand_id + 1
        if following >= self.spec.hands:
            return
        if following not in self._person_values and self.result is None:
            waiting = self._person_hand_done.setdefault(following, defer.Deferred())
            await waiting
        if following not in self._person_values:
            raise MatchAborted(Cause.INTERRUPTED, f"the person's match ended after {following} hands",
                               None, EXIT_OK)

    # -- what the page shows --------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """Everything the page shows, as JSON-ready data."""
        spec, game = self.spec, self.spec.game.game
        hands = self.seat.log.hands
        big = game.big_blind
        return {
            "table": self.number, "status": self.status, "message": self.message,
            "game": {"key": spec.game.key, "limit": game.is_limit, "bigBlind": big,
                     "hands": spec.hands},
            "names": {"you": HUMAN, "opponent": spec.opponent.name,
                      "baseline": spec.baseline.name if spec.baseline is not None else None},
            "played": len(hands), "hand": self._hand_view(), "decision": self._decision_view(),
            "history": [_record_view(r) for r in hands[-HISTORY_SHOWN:]],
            "result": {"you": mbb(self.person, big), "baseline": mbb(self.baseline, big),
                       "difference": mbb(self.difference, big),
                       "chips": sum(self._person_values.values())},
            "seconds": spec.action_seconds,
            "logs": {"match": self.name + ".log",
                     "baseline": self.name + ".baseline.log" if self.base_match is not None else None},
        }

    def _hand_view(self) -> dict[str, Any] | None:
        view = self.seat.log.view
        if view is None:
            return None
        state, me = view.state, view.position
        other = 1 - me
        stacks = [game_stack - spent for game_stack, spent in zip(state.game.stack, state.spent)]
        acting = None if state.finished else ("you" if state.current_player == me else "opponent")
        last = self.seat.log.hands[-1] if self.seat.log.hands else None
        shown = last.hole[other] if last is not None and last.hand == view.hand_id else ""
        return {
            "id": view.hand_id, "position": me, "blinds": [state.game.blind[me], state.game.blind[other]],
            "hole": cards_to_text(view.hole), "opponentHole": shown, "board": cards_to_text(view.board),
            "betting": state.betting_string(), "pot": state.pot, "spent": [state.spent[me], state.spent[other]],
            "stacks": [stacks[me], stacks[other]], "acting": acting, "finished": state.finished,
            "round": state.round, "actions": readable_actions(state, me),
        }

    def _decision_view(self) -> dict[str, Any] | None:
        decision, view = self.seat.decision, self.seat.log.view
        if decision is None or view is None:
            return None
        state = view.state
        limits = state.raise_range()
        to_call = state.amount_to_call()
        raising = None
        if limits is not None:
            low, high = limits
            pot_after_call = state.pot + to_call
            presets = {"half": state.max_spent + pot_after_call // 2, "pot": state.max_spent + pot_after_call,
                       "allin": high}
            raising = {"min": low, "max": high,
                       "presets": {k: min(max(v, low), high) for k, v in presets.items()}}
        return {
            "hand": decision.hand, "betting": decision.betting,
            "left": max(0.0, decision.deadline - self.reactor.seconds()),
            "fold": ActionType.FOLD in state.legal_actions(), "call": to_call, "raise": raising,
        }


class _SeatFactory(BotFactory):
    """A seat's client factory that leaves the reporting of a lost connection to the dealer.

    When a match ends early (the person leaves, a bot fails) the dealer closes
    the seats and its log and events say why; the clients in this process
    would each add a "connection lost" error line to the server's output.
    """

    def clientConnectionLost(self, connector: Any, reason: Failure) -> None:
        """The status only (see the class)."""
        self._finish(0 if reason.check(error.ConnectionDone) else 1)  # type: ignore[no-untyped-call]


def readable_actions(state: State, me: int) -> list[list[list[str]]]:
    """Each round's actions as ``[who, what]`` pairs (``you``/``opp``; ``fold``, ``check``,
    ``call 100``, ``raise to 300``), replayed through the rules to tell a check from a call.

    >>> from protocol.gamedef import load_game
    >>> from protocol.wire import parse_betting
    >>> state = State(load_game("nolimit"))
    >>> for action in parse_betting("r300c/c", state.game)[0] + parse_betting("r300c/c", state.game)[1]:
    ...     _ = state.apply(action)
    >>> readable_actions(state, 0)
    [[['opp', 'raise to 300'], ['you', 'call 200']], [['you', 'check']]]
    """
    replay = State(state.game, state.hand_id)
    rounds: list[list[list[str]]] = []
    for round_actions, round_actors in zip(state.actions, state.actors):
        said = []
        for action, actor in zip(round_actions, round_actors):
            to_call = replay.amount_to_call()
            if action.type is ActionType.FOLD:
                what = "fold"
            elif action.type is ActionType.CALL:
                what = f"call {to_call}" if to_call else "check"
            else:
                limits = replay.raise_range()  # a limit raise's token has no size: the rules know it
                what = f"raise to {action.size or (limits[0] if limits else '?')}"
            said.append(["you" if actor == me else "opp", what])
            replay.apply(action)
        rounds.append(said)
    return rounds


def _record_view(record: HandRecord) -> dict[str, Any]:
    return {"hand": record.hand, "position": record.position, "betting": record.betting,
            "hole": list(record.hole), "board": record.board,
            "value": record.value if record.value == record.value else None,
            "showdown": record.showdown, "timedOut": record.timed_out}
