"""What a match is and how it ended: its definition, its result, and the failure that ends it early.

:class:`MatchConfig` is the dealer's command line for one match, :class:`MatchResult`
what :class:`dealer.match.Match` returns, and :class:`MatchAborted` what every part of
the dealer raises (or hands to ``Match.abort``) when the match cannot go on. They are
shared by all the parts (seating, the hand loop, the turn policy, the writers), so they
live apart from any one of them; ``dealer.match`` re-exports them. The module imports no
Twisted: the dealer reads its command line into these, and prints its port line, before
Twisted is loaded (dealer/startup.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from acpc_lbr.runtime.exit_codes import EXIT_BOT_FAILURE, EXIT_OK
from dealer.budget import BotBudget
from dealer.sendstates import MEASURED
from dealer.sendstates import check_mode as check_send_mode
from protocol.gamedef import GameDef

if TYPE_CHECKING:
    # Named in annotations only: dealer.events (its 29 dataclasses, ~20 ms) loads after the port line.
    from dealer.events import Cause


#: Default line limit of a seat (``--max_line``): the reference's buffer is 4 KiB too.
DEFAULT_MAX_LINE = 4096
#: The largest line limit a seat may be given (range-query answers are ~13 KB).
LARGEST_MAX_LINE = 1 << 20
#: Default per-query time limit of a bot, in milliseconds (``--t_query``).
DEFAULT_T_QUERY_MS = 10_000

#: The command line's default ``--start_timeout``: bots must connect within a
#: minute (the reference waits forever; ``--start_timeout -1`` does too).
DEFAULT_START_TIMEOUT_MS = 60_000


@dataclass(frozen=True)
class MatchConfig:
    """Everything that defines one match (the dealer's command line).

    Attributes:
        name: the match name; the logs are ``<name>.log`` etc.
        game_arg: the game as typed (bundled name or path), for the header.
        game: the loaded game definition.
        hands: the number of hands.
        seed: the deal seed (unsigned 32-bit).
        names: one player name per seat.
        ports: one port per seat (0 or missing: any free port).
        bind: the interface to listen on.
        t_response_ms, t_hand_ms, t_per_hand_ms: time limits, as the reference's.
        start_timeout_ms: how long to wait for every seat to connect (None: forever).
        idle_timeout_ms: end the match when the seat the dealer waits for has
            sent no line at all for this long (None: off). Not a rule of the
            match (the ``.log`` header does not record it): a watchdog for a bot
            that is stuck or cannot read the states (started for another game).
        fixed_seats: ``-f``, seat s is always position s.
        write_log: write ``<name>.log``.
        keep_hand_values: keep every hand's values in ``MatchResult.hand_values``
            (the duplicate line, ``evaluate`` and the seatings read them); the
            dealer command keeps them only with ``--duplicate``, so that its
            memory does not grow with the hands played.
        write_tlog: write ``<name>.tlog`` (``-T``).
        resume: ``-a``: append to the logs and resume from the tlog.
        trace_messages: write the TO/FROM trace (False with ``-q``).
        max_line: the line limit of each seat, in bytes.
        max_ignored: unparsable or stale lines tolerated while one decision is
            pending; one more ends the match (cause ``garbage``).
        events: write ``<name>.events.jsonl``.
        t_query_ms: a bot's time limit per range query (dealer/relay.py).
        queryable: names of players that answer range queries without
            announcing it (``--queryable``).
        send_states: when a decision point's states go to the seats not to act
            (``--send_states``, :mod:`dealer.sendstates`): ``measured``, ``on_turn``
            (with their next send) or ``at_once`` (as the reference).
        budget: what one bot may cost the dealer (dealer/budget.py).
    """

    name: str
    game_arg: str
    game: GameDef
    hands: int
    seed: int
    names: tuple[str, ...]
    ports: tuple[int, ...] = ()
    bind: str = "127.0.0.1"
    t_response_ms: int = 600_000
    t_hand_ms: int = 600_000
    t_per_hand_ms: int = 7_000
    start_timeout_ms: int | None = None
    idle_timeout_ms: int | None = None
    fixed_seats: bool = False
    write_log: bool = True
    write_tlog: bool = False
    resume: bool = False
    trace_messages: bool = True
    max_line: int = DEFAULT_MAX_LINE
    max_ignored: int = 100
    events: bool = True
    t_query_ms: int = DEFAULT_T_QUERY_MS
    queryable: tuple[str, ...] = ()
    send_states: str = MEASURED
    budget: BotBudget = field(default_factory=BotBudget)
    keep_hand_values: bool = True

    def __post_init__(self) -> None:
        if len(self.names) != self.game.num_players:
            raise ValueError(
                f"{self.game.num_players} player names needed, got {len(self.names)}"
            )
        if self.hands < 1:
            raise ValueError(f"the number of hands must be positive, got {self.hands}")
        if not 0 <= self.seed < 2**32:
            raise ValueError(f"the seed must be an unsigned 32-bit integer, got {self.seed}")
        check_send_mode(self.send_states)

    @property
    def log_path(self) -> Path:
        return Path(f"{self.name}.log")

    @property
    def tlog_path(self) -> Path:
        return Path(f"{self.name}.tlog")

    @property
    def events_path(self) -> Path:
        return Path(f"{self.name}.events.jsonl")


class MatchAborted(Exception):
    """The match cannot go on.

    Args:
        cause: a short code (``disconnect``, ``timeout``, ``out_of_time``,
            ``garbage``, ``line_too_long``, ``over_budget``, ``not_reading``,
            ``no_connection``, ``write_failed``, ``startup``, ``interrupted``,
            ``internal``).
        message: what happened, naming the seat.
        seat: the seat at fault (0-based), if any.
        exit_code: the exit code this ending maps to.
    """

    def __init__(
        self, cause: Cause, message: str, seat: int | None = None, exit_code: int = EXIT_BOT_FAILURE
    ) -> None:
        super().__init__(message)
        self.cause = cause
        self.message = message
        self.seat = seat
        self.exit_code = exit_code


@dataclass
class MatchResult:
    """How a match ended.

    Attributes:
        name: the match name.
        names: player names in seat order.
        totals: chips won by each seat over the finished hands.
        hand_values: per finished hand, each seat's value (seat order), by hand id
            (empty unless the match's ``keep_hand_values``).
        finished: the hands finished.
        completed: every hand was played.
        exit_code: see the module docstring.
        cause: None, or the failure code (see :class:`MatchAborted`).
        message: None, or the failure message.
        seat: the seat at fault, if any.
        corrections: corrected actions per seat.
        ignored: ignored (unparsable or stale) lines per seat.
    """

    name: str
    names: tuple[str, ...]
    totals: list[float]
    hand_values: dict[int, tuple[float, ...]] = field(default_factory=dict)
    completed: bool = False
    exit_code: int = EXIT_OK
    cause: Cause | None = None
    message: str | None = None
    seat: int | None = None
    corrections: list[int] = field(default_factory=list)
    ignored: list[int] = field(default_factory=list)
    finished: int = 0

    @property
    def hands_played(self) -> int:
        return self.finished

    def score_line(self) -> str:
        """The ``SCORE:`` line over the finished hands."""
        from protocol.wire import Score  # lazy: the wire formats load after the port line (dealer/startup.py)

        return Score(tuple(self.totals), self.names).text()
