"""What one bot may cost the dealer: the per-bot budget (docs/dealer.md, "Budgets").

A dealer seats bots written by strangers, so everything a bot can make the
dealer hold or do is bounded, per bot. :class:`BotBudget` gathers the limits
that are not among the reference's options (those stay in
:class:`dealer.match.MatchConfig`: ``max_line``, ``max_ignored`` and the time
limits). Going over a limit ends that bot's match cleanly with a message that
names the bot and the limit; other matches of the process never notice.

>>> BotBudget().max_queries
128
"""

from __future__ import annotations

from dataclasses import dataclass

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
