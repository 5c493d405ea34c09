"""The dealer's record of one seat in play: its player, its connection, its clock and its counts.

One :class:`Seat` per seat of a match, shared by the parts of the dealer: the
seating (:mod:`dealer.seating`) gives it its connection, the hand loop
(:mod:`dealer.handloop`) sends through it and queues the lines it sends out of
turn, and the turn policy (:mod:`dealer.turns`) charges its time. It holds no
behaviour beyond its own bookkeeping; compiled with the hot path (every action
reads it), so a plain class with slots.
"""

from __future__ import annotations

from collections import deque

from dealer.seat import SeatProtocol


class Seat:
    """The dealer's view of one seat (not the connection itself).

    Args:
        index: the seat (0-based, command-line order).
        name: the player's name.
    """

    __slots__ = (
        "connected",
        "corrections",
        "hand_time",
        "ignored",
        "index",
        "last_reply_s",
        "lost",
        "match_time",
        "name",
        "protocol",
        "queue",
        "queued_bytes",
        "trace_bytes",
        "untraced",
    )

    def __init__(self, index: int, name: str) -> None:
        self.index = index
        self.name = name
        #: The connection that holds the seat (set by the seating once its VERSION line is read).
        self.protocol: SeatProtocol | None = None
        #: Lines the seat sent while it was not to act (the next decision reads them first).
        self.queue: deque[str] = deque()
        self.queued_bytes = 0
        self.connected = False
        self.lost = False
        #: Time charged to the seat in the match and in this hand (dealer/turns.py).
        self.match_time = 0.0
        self.hand_time = 0.0
        self.corrections = 0
        self.ignored = 0
        self.trace_bytes = 0  # FROM trace bytes in this hand
        self.untraced = 0  # lines not traced in this hand (over the budget)
        #: How long its last action took from the send (0 before the first): the
        #: busy poll polls only for a seat that answered within its budget.
        self.last_reply_s = 0.0

    def label(self) -> str:
        """``seat 2 (bob)``: how messages name the seat."""
        return f"seat {self.index + 1} ({self.name})"

    def queue_line(self, line: str) -> int:
        """Keep ``line`` for the seat's next decision; returns the lines now waiting."""
        self.queue.append(line)
        self.queued_bytes += len(line) + 1
        return len(self.queue)

    def pop_queued(self) -> str:
        """The oldest line the seat sent out of turn."""
        line = self.queue.popleft()
        self.queued_bytes -= len(line) + 1
        return line
