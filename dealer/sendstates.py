"""When a decision point's states go to the seats that are not to act: with their next
send (one send per action), or at once, as the reference sends them -- measured on the
machine at hand unless asked.

Why. After a hand's first decision point only the seat to act needs its state; the
others' can wait for their next send (:meth:`dealer.handloop.HandLoop._begin_turn`).
That is one send per action instead of one per seat, and no wake-up of a bot that is
not to act: the least work, and the faster way where a wake-up is cheap. On a virtual
machine whose idle processor halts to the hypervisor, a wake-up costs tens of
microseconds and where the woken bot runs is the scheduler's choice; there, waking the
bot that is not to act at every action, as the reference does, has made matches
without busy polling faster, while with every process on one processor it made them
slower (docs/dealer.md, "One send per action"). Which way is faster is a fact of the
machine, so by default the dealer measures it.

How. ``measured`` explores as :class:`dealer.busypoll.BusyPoll` does: the decision
points after a hand's first come in cycles; each begins with blocks sent one way and
the other in turn, and the rest of the cycle sends every state at once only if that
way's round trips -- from a decision point's sends to the next decision point of the
same hand, which holds the bots' work and the dealer's, so what a woken bot costs the
others is in it -- took at least :data:`REQUIRED_GAIN` less time on average, the
slowest tenth of each way left out (a bot's slow answer is not the way's doing). A
round trip that ends a hand is not counted (the hand's end is the same either way). A
way found again makes the next cycle twice as long, up to :data:`LONGEST_CYCLE` times the
first: on a steady machine the blocks sent the slower way cost less and less.
It stands aside, one send per action and nothing counted, for a wait the busy poll
takes to explore or poll (its own measure; a dealer that spins pays no wake-up: a fast
seat's, when polling pays) and while several matches of the process play (their time
would be in the round trips).
``on_turn`` and ``at_once`` fix the way.

The bots get the same lines in the same order either way, and the logs are the same.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

from dealer.busypoll import BusyPoll, MatchesPlaying, check_cycle
from protocol._variant import mypyc_attr  # mypy_extensions' to mypyc, a no-op at run time

#: Every state to every seat at once only if its round trips took this share less time.
REQUIRED_GAIN: Final = 0.05
#: The most a cycle grows, in first cycles, while explorations keep finding the same way.
LONGEST_CYCLE: Final = 8
#: The ways (``--send_states``).
MEASURED: Final = "measured"
ON_TURN: Final = "on_turn"
AT_ONCE: Final = "at_once"
MODES: Final = (MEASURED, ON_TURN, AT_ONCE)


def check_mode(mode: str) -> None:
    """``mode`` is one of :data:`MODES` (``--send_states``, :class:`dealer.config.MatchConfig`).

    Raises:
        ValueError: it is not.
    """
    if mode not in MODES:
        raise ValueError(f"send_states must be one of {', '.join(MODES)}, not {mode!r}")


def typical(times: list[float]) -> float:
    """The mean of ``times`` without its slowest tenth (sorts ``times``)."""
    times.sort()
    kept = times[:len(times) - len(times) // 10]
    return sum(kept) / len(kept)


@mypyc_attr(allow_interpreted_subclasses=True)  # tests time each way on a clock of their own
class SendStates:
    """Whether a decision point's states go to every seat at once, measured
    (``measured``) or fixed.

    Args:
        mode: ``measured``, ``on_turn`` or ``at_once`` (:data:`MODES`).
        playing: the process's count of matches playing.
        busy_poll: the process's poller, if any (this stands aside while it explores or polls).
        clock: a monotonic clock in seconds.
        block: decision points per exploration block (one way, then the other, in turn).
        explore_blocks: blocks in an exploration (even: as many of each).
        cycle_blocks: blocks in the first cycle, the exploration included (twice the busy
            poll's: a block sent the slower way costs more than one polled for in vain; a
            cycle is about 300 hands of two fast bots); each exploration that finds the way
            found before doubles it, up to :data:`LONGEST_CYCLE` times.
    """

    __slots__ = ("_block", "_clock", "_cycle", "_explore", "_first_cycle", "_last", "_last_at",
                 "_samples", "_trials", "at_once_chosen", "busy_poll", "conclusions", "mode",
                 "playing", "unasked")

    def __init__(self, mode: str, playing: MatchesPlaying, busy_poll: BusyPoll | None = None,
                 clock: Callable[[], float] = time.perf_counter, block: int = 32,
                 explore_blocks: int = 4, cycle_blocks: int = 64) -> None:
        check_mode(mode)
        check_cycle(block, explore_blocks, cycle_blocks)
        self.mode = mode
        self.playing = playing
        self.busy_poll = busy_poll
        #: What the last exploration concluded, and how many have concluded.
        self.at_once_chosen = False
        self.conclusions = 0
        #: Decision points the hand loop answers one send per action without asking: the
        #: rest of a cycle whose exploration chose that way (the answer whatever happens,
        #: standing aside included; a call saved at each of them).
        self.unasked = 0
        self._clock = clock
        self._block = block
        self._explore = block * explore_blocks
        self._cycle = self._first_cycle = block * cycle_blocks
        self._trials = 0
        #: The exploration's round trips of each way: [one send per action, at once].
        self._samples: tuple[list[float], list[float]] = ([], [])
        #: The way of the last decision point while its round trip is counted (None: not
        #: counted), and when it was sent.
        self._last: int | None = None
        self._last_at = 0.0

    def at_once(self, forced: bool, last_reply_s: float) -> bool:
        """Whether this decision point's states go to every seat now. ``forced``: they do
        anyway (a hand's first decision point, range queries in play); its round trip is
        not counted, nor the one that led to it. ``last_reply_s``: how long the seat to
        act took last time (whether the busy poll will take its wait)."""
        mode = self.mode
        if mode != MEASURED:
            return forced or mode == AT_ONCE
        poll = self.busy_poll
        last = self._last
        if last is not None:
            # The round trip that led here, unless it ended a hand or the busy poll took
            # its wait after all (the poll decides a wait after this choice, at the wait).
            if not forced and (poll is None or not poll.busy):
                self._samples[last].append(self._clock() - self._last_at)
            self._last = None
        if forced:
            return True
        if self.playing.count > 1 or (poll is not None and poll.takes(last_reply_s)):
            return False
        phase = self._trials
        self._trials += 1
        if phase == self._explore:
            self._conclude()
            if not self.at_once_chosen:  # the rest of the cycle, unasked
                self.unasked = self._cycle - self._trials
                self._trials = self._cycle
        if self._trials >= self._cycle:  # the next decision point begins a cycle
            self._trials = 0
        if phase < self._explore:
            way = (phase // self._block) % 2
            self._last, self._last_at = way, self._clock()
            return way == 1
        return self.at_once_chosen

    def _conclude(self) -> None:
        on_turn, at_once = self._samples
        if on_turn and at_once:
            chosen = typical(at_once) < (1.0 - REQUIRED_GAIN) * typical(on_turn)
            # A way found again lasts twice as long before the next exploration (up to
            # LONGEST_CYCLE times the first cycle): its blocks sent the slower way cost less
            # on a steady machine; a change of way starts over from the first cycle.
            if self.conclusions and chosen == self.at_once_chosen:
                self._cycle = min(2 * self._cycle, LONGEST_CYCLE * self._first_cycle)
            else:
                self._cycle = self._first_cycle
            self.at_once_chosen = chosen
            self.conclusions += 1
        for samples in self._samples:
            samples.clear()
