"""What one bot may cost the dealer: the per-bot budget (docs/dealer.md, "Budgets").

A dealer seats bots written by strangers, so everything a bot can make the
dealer hold or do is bounded, per bot. :class:`BotBudget` gathers the limits
that are not among the reference's options (those stay in
:class:`dealer.config.MatchConfig`: ``max_line``, ``max_ignored`` and the time
limits). Going over a limit ends that bot's match cleanly with a message that
names the bot and the limit; other matches of the process never notice.

>>> BotBudget().max_queries
128
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, StrEnum

KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True)
class BotBudget:
    """Per-bot limits of a match.

    Attributes:
        handshake_s: a new connection to a seat's port must send its VERSION
            line within this many seconds, or it is closed (the seat goes on
            waiting for another connection).
        max_candidates: connections that may wait on one seat's port before
            sending VERSION; one more closes the oldest of them.
        max_queued_lines: lines a bot may send while it is not its turn
            (they wait for its next turn).
        max_queued_bytes: bytes of such lines.
        max_unsent_bytes: output the dealer holds for a bot that does not
            read it; the dealer stops reading from a bot once its unsent
            output passes the transport's buffer size (64 KiB) and drops the
            bot at this limit.
        close_grace_s: when a match ends, how long a bot has to take its
            last output before its connection is dropped anyway.
        send_buffer_bytes: the kernel send buffer of each seat's socket
            (``SO_SNDBUF``), so that a bot that does not read holds a known
            amount of kernel memory too.
        max_queries: range queries an agent may have out at once.
        max_query_bytes: the longest ``QUERY`` line an agent may send; a
            longer one is refused before it is parsed.
        query_pause_decision_s: the most its range queries may pause an
            agent's clock within one decision.
        query_pause_hand_s: the same, within one hand.
        trace_bytes_per_hand: ``FROM`` trace bytes of one seat in one hand;
            beyond them the lines are counted, not traced.
        logged_drops: unsolicited or late ``RANGE`` answers of a seat logged
            one by one; later ones are only counted (``query_answers_dropped``).
        max_unusable_decision: lines of a seat that cost the dealer work and
            gave nothing (:class:`LineKind`: refused queries, ignored replies,
            dropped answers) within one decision point of a hand; one more ends
            its match. (Ignored replies alone also meet ``--max_ignored``.)
        max_unusable_hand: the same within one hand.
        logged_per_hand: such lines of one kind logged one by one per seat and
            hand (events and the stderr trace); past them they are counted, and
            one ``lines_not_logged`` event per kind gives the count at the hand's end.
        unusable_line_hold_s: past those first few, the dealer reads nothing more
            from the seat for this long after each such line (the rest waits in
            its buffer). A dealer serves all its matches from one thread: held
            back so, one bot's unusable lines take at most a few percent of it,
            and slow its own match, on its own clock, instead of the others
            (issue 33: at most 10%). A line's instructions are few (about 47 k,
            15-25 us), but each hold also costs the process wake-ups, a timer and
            two changes of what the loop polls: at 5 ms (200 lines a second) the
            honest match beside bots just under the budgets ran 1.11-1.18x slower
            than beside the same bots without the lines (7 runs); at 20 ms,
            0.98-1.06x (docs/reliability.md, round four).
        query_seconds_match: the most wall time a bot may spend answering range
            queries (time with at least one query out to it) in one match; past it
            the match ends, charged to it. Default one hour: a bot that answers
            every query just inside ``t_query`` cannot stretch a 10,000-hand match
            by more than an hour (``--t_query_match``).
    """

    handshake_s: float = 10.0
    max_candidates: int = 16
    max_queued_lines: int = 1000
    max_queued_bytes: int = 256 * KIB
    max_unsent_bytes: int = 4 * MIB
    close_grace_s: float = 5.0
    send_buffer_bytes: int = 256 * KIB
    max_queries: int = 128
    max_query_bytes: int = 4 * KIB
    query_pause_decision_s: float = 30.0
    query_pause_hand_s: float = 120.0
    trace_bytes_per_hand: int = 64 * KIB
    logged_drops: int = 10
    max_unusable_decision: int = 64
    max_unusable_hand: int = 256
    logged_per_hand: int = 5
    unusable_line_hold_s: float = 0.02
    query_seconds_match: float = 3600.0


class LineKind(StrEnum):
    """The kinds of unusable lines a seat can send, each charged to its :class:`LineCosts`."""

    QUERY_REFUSED = "query_refused"
    REPLY_IGNORED = "reply_ignored"
    ANSWER_DROPPED = "answer_dropped"


class Charge(IntEnum):
    """What to do with one unusable line (:meth:`LineCosts.charge`)."""

    #: Log it (an event, a trace line) as before.
    LOG = 0
    #: Count it only: this hand's lines of its kind were logged up to ``logged_per_hand``.
    COUNT = 1
    #: It is one too many: end the match, charged to the seat (:meth:`LineCosts.over`).
    OVER = 2


class LineCosts:
    """One seat's unusable lines: budgets per decision and per hand, logging past the first few.

    Counters reset when a line comes for another hand or decision than the last
    one (nothing runs per hand when a bot sends no such line). The lines of one
    kind past ``logged_per_hand`` in a hand are gathered: :meth:`not_logged`
    gives their count once that hand is over.
    """

    __slots__ = ("_decision", "_hand", "_in_decision", "_in_hand", "_kind_counts", "budget", "gathered")

    def __init__(self, budget: BotBudget) -> None:
        self.budget = budget
        self._hand = -1
        self._decision = -1
        self._in_hand = 0
        self._in_decision = 0
        self._kind_counts: dict[LineKind, int] = {}
        #: (hand, kind, lines not logged) of finished hands, waiting to be reported.
        self.gathered: list[tuple[int, LineKind, int]] = []

    def charge(self, kind: LineKind, hand: int, decision: int | None) -> Charge:
        """Count one line of ``kind`` sent at ``decision`` (actions played so far) of ``hand``
        (``decision`` None: the line counts in the hand only; ignored replies have ``--max_ignored``)."""
        if hand != self._hand:
            self._close_hand()
            self._hand, self._decision, self._in_hand, self._in_decision = hand, -1, 0, 0
        self._in_hand += 1
        if decision is not None:
            if decision != self._decision:
                self._decision, self._in_decision = decision, 0
            self._in_decision += 1
        seen = self._kind_counts.get(kind, 0) + 1
        self._kind_counts[kind] = seen
        budget = self.budget
        if self._in_decision > budget.max_unusable_decision or self._in_hand > budget.max_unusable_hand:
            return Charge.OVER
        return Charge.LOG if seen <= budget.logged_per_hand else Charge.COUNT

    def over(self) -> str:
        """What went over, for the message that ends the match (after :attr:`Charge.OVER`)."""
        budget = self.budget
        counts = ", ".join(f"{n} {kind.value}" for kind, n in sorted(self._kind_counts.items()))
        if self._in_decision > budget.max_unusable_decision:
            return (f"sent {self._in_decision} unusable lines at one decision of hand {self._hand} "
                    f"({counts} in the hand; limit max_unusable_decision {budget.max_unusable_decision})")
        return (f"sent {self._in_hand} unusable lines in hand {self._hand} "
                f"({counts}; limit max_unusable_hand {budget.max_unusable_hand})")

    def not_logged(self, final: bool = False) -> list[tuple[int, LineKind, int]]:
        """The (hand, kind, count) of lines not logged one by one in finished hands (``final``: the
        current hand too, at the match's end); each is given once."""
        if final:
            self._close_hand()
            self._hand = -1
        gathered, self.gathered = self.gathered, []
        return gathered

    def _close_hand(self) -> None:
        logged = self.budget.logged_per_hand
        for kind, n in sorted(self._kind_counts.items()):
            if n > logged:
                self.gathered.append((self._hand, kind, n - logged))
        self._kind_counts = {}
