"""The person's seat: an ACPC client inside the table's server.

The browser never speaks ACPC. Its seat is an ordinary
:class:`~agents.client.AcpcClient` connected to the dealer over loopback TCP,
like any bot's; only its decision comes from a person. So the dealer, its time
limits and its logs treat a person exactly as they treat a bot.

When it is the person's turn, :meth:`HumanSeat.choose_action` returns a
Deferred and starts the person's clock. :meth:`HumanSeat.act` checks a
proposed action with the rules (:mod:`protocol.rules`) and, when it is legal
at the decision it names, answers the Deferred; anything else is refused with
a :class:`Refusal` and changes nothing. When the clock runs out the seat
checks if it can and folds otherwise, as the ACPC's competitions did for a
late bot, and says so in the hand's record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from twisted.internet import defer

from agents.client import AcpcClient
from agents.tracking import SeatView
from dealer.interfaces import Clock, DelayedCall
from protocol.cards import cards_to_text
from protocol.errors import ProtocolError
from protocol.gamedef import GameDef
from protocol.rules import Action, ActionType, State
from protocol.wire import parse_matchstate_replayed


class Refusal(Exception):
    """An action or message the table will not take; ``status`` is the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class HandRecord:
    """One finished hand as the person's seat saw it (the page's hand history).

    Attributes:
        hand: the hand's number in the match (the ``.log``'s).
        position: the person's position in the hand.
        betting: the ACPC betting string.
        hole: each position's hole cards as text ("" where not shown).
        board: the board cards, as text.
        value: the person's winnings in chips.
        showdown: the hand went to a showdown.
        timed_out: the person's actions the clock made (check or fold).
    """

    hand: int
    position: int
    betting: str
    hole: tuple[str, ...]
    board: str
    value: float
    showdown: bool
    timed_out: int


@dataclass
class Decision:
    """The person's pending decision: the Deferred the client waits on, and its clock."""

    hand: int
    betting: str
    answer: defer.Deferred[Action]
    deadline: float
    timer: DelayedCall


@dataclass
class SeatLog:
    """What the seat has seen: the live view, the finished hands, the timeouts of this hand."""

    view: SeatView | None = None
    hands: list[HandRecord] = field(default_factory=list)
    timed_out: int = 0


def timeout_action(state: State) -> Action:
    """What the clock plays for a late person: a check when nothing is to call, else a fold.

    >>> from protocol.gamedef import load_game
    >>> timeout_action(State(load_game("nolimit"))).text()  # the small blind faces a call
    'f'
    """
    return Action.FOLD if state.can_fold() else Action.CALL


class HumanSeat(AcpcClient):
    """The ACPC client of a person's seat.

    Args:
        game: the match's game.
        clock: the reactor's clock (a ``task.Clock`` in tests).
        action_seconds: the person's time for one decision.
        changed: called after every change the page should show.
    """

    def __init__(self, game: GameDef, clock: Clock, action_seconds: float,
                 changed: Callable[[], None]) -> None:
        super().__init__(game)
        self.clock = clock
        self.action_seconds = action_seconds
        self.changed = changed
        self.log = SeatLog()
        self.decision: Decision | None = None

    def state_received(self, view: SeatView) -> None:
        """Keep the view; a finished hand becomes a :class:`HandRecord`."""
        self.log.view = view
        if view.state.finished:
            self.log.hands.append(self._record(view))
            self.log.timed_out = 0
        if not view.to_act:
            self.changed()

    def _record(self, view: SeatView) -> HandRecord:
        try:
            shown, state = parse_matchstate_replayed(view.line, self.game)
        except ProtocolError:  # the tracker read the same line: cannot happen, but never lose a hand
            shown, state = None, view.state
        holes = shown.hole if shown is not None else ((),) * self.game.num_players
        board = shown.board_cards if shown is not None else view.board
        values = state.values(holes, board) if not state.is_showdown or all(holes) else None
        return HandRecord(
            hand=view.hand_id, position=view.position, betting=state.betting_string(),
            hole=tuple(cards_to_text(h) for h in holes), board=cards_to_text(board),
            value=values[view.position] if values is not None else float("nan"),
            showdown=state.is_showdown, timed_out=self.log.timed_out,
        )

    def choose_action(self, view: SeatView) -> defer.Deferred[Action]:
        """Wait for the person (or the clock)."""
        answer: defer.Deferred[Action] = defer.Deferred()
        timer = self.clock.callLater(self.action_seconds, self._late)
        self.decision = Decision(view.hand_id, view.state.betting_string(), answer,
                                 self.clock.seconds() + self.action_seconds, timer)
        self.changed()
        return answer

    def act(self, hand: int, betting: str, kind: str, size: int | None) -> Action:
        """Play the person's action at the decision named by ``hand`` and ``betting``.

        Raises:
            Refusal: no decision is pending, it is another one, or the action is not legal.
        """
        decision, view = self.decision, self.log.view
        if decision is None or view is None:
            raise Refusal(409, "it is not your turn")
        if (hand, betting) != (decision.hand, decision.betting):
            raise Refusal(409, "that decision has passed: the page was behind; it shows the hand now")
        action = _legal_action(view.state, kind, size)
        self._answer(action)
        return action

    def _late(self) -> None:
        view = self.log.view
        if self.decision is None or view is None:
            return
        self.log.timed_out += 1
        self._answer(timeout_action(view.state))

    def _answer(self, action: Action) -> None:
        decision, self.decision = self.decision, None
        if decision is None:
            return
        if decision.timer.active():
            decision.timer.cancel()
        decision.answer.callback(action)
        self.changed()

    def leave(self) -> None:
        """Stop the clock (the session is over)."""
        if self.decision is not None and self.decision.timer.active():
            self.decision.timer.cancel()
        self.decision = None


def _legal_action(state: State, kind: str, size: int | None) -> Action:
    """The action ``kind`` (``f``, ``c`` or ``r``, with a raise-to ``size``) if legal at ``state``.

    Raises:
        Refusal: it is not.
    """
    if kind == "f":
        if not state.can_fold():
            raise Refusal(400, "fold is not legal here: there is nothing to call (check instead)")
        return Action.FOLD
    if kind == "c":
        if size is not None:
            raise Refusal(400, "a check or call takes no amount")
        return Action.CALL
    if kind != "r":
        raise Refusal(400, "the action must be f (fold), c (check/call) or r (raise)")
    limits = state.raise_range()
    if limits is None:
        raise Refusal(400, "raising is not legal here")
    low, high = limits
    if state.game.is_limit:  # one raise size: the wire's "r" carries none
        if size is not None and size != low:
            raise Refusal(400, f"in limit the only raise is to {low}, not {size}")
        return Action(ActionType.RAISE, 0)
    if size is None:
        raise Refusal(400, f"a raise needs an amount: raise to {low}..{high}")
    if not low <= size <= high:
        raise Refusal(400, f"raise to {size} is outside the legal range {low}..{high}")
    action = Action.raise_to(size)
    if not state.is_legal(action):  # the rules are the judge; the range above says why
        raise Refusal(400, f"raise to {size} is not legal here")
    return action
