"""Busy polling: the event loop keeps polling for a short while after the dealer
asks a fast bot to act, instead of going to sleep at once -- when, and only
when, that is measured to bring the answers sooner.

Why. With fast bots a match is a chain of round trips, dealer -> bot -> dealer,
and on a virtual machine much of each trip can be wake-ups rather than work: a
processor with nothing to run halts, and waking it again (an interrupt through
the hypervisor) can cost tens of microseconds, after which the dealer's
interpreter runs on cold caches. ``python bench/bench_wakeup.py`` shows it on
the machine at hand: a line echoed by a C process that sleeps in ``read``
against one that polls. When the dealer keeps its processor busy for the few
tens of microseconds a fast bot takes to answer, the answer is read without a
wake-up. On a machine where wake-ups are cheap, or where the cores are
shared with other work, polling only takes processor time from the bots.

How. :meth:`BusyPoll.arm` keeps a callback queued on the asyncio loop under
Twisted's reactor (``call_soon``) until a deadline ``budget_s`` ahead: with a
callback ready, the loop polls its sockets without blocking, so a reply is
dispatched by the reactor as usual, only sooner. The reactor still owns every
socket, timer and callback; play, time limits and logs are unchanged (the
tests compare the logs with and without it).

When. Only for a seat whose last action came within the budget (a slow bot,
such as the LBR agent, is never polled for), only while one match of the
process plays (with several, the spare time is the other matches'), and only while polling is
measured to pay (:meth:`BusyPoll.decide`): the waits come in cycles; each
begins with an exploration, blocks of waits with and without polling in turn,
and the rest of the cycle polls if the median time to the answer was at least
:data:`REQUIRED_GAIN` shorter with polling than without, *and* the blocks polled
for went no slower than the others: a block's wall time, from its first wait to
the next block's, holds the bots' own work and the dealer's, so it shows what
the answer times alone do not -- a spin that reads each answer sooner while it
takes a processor from the bots, and costs hands per second (fast Python bots on
two shared cores, issue 33, when only the answer times were compared). So the
dealer follows the machine it runs on, and a change of load, within one cycle.

What it costs. At most ``budget_s`` of CPU per wait it polls for. Every match
of a process shares one poller, and it does not poll while several play.
``--busy_poll 0`` turns it off. (The way the states of the seats not to act are sent,
:class:`dealer.sendstates.SendStates`, is measured too, and stands aside for the waits
this takes, :meth:`BusyPoll.takes`. The next state made ready ahead of a reply,
:func:`dealer.turns.make_ahead`, does not follow it: it is made for every wait while
one match plays, polled for or not, so the exploration compares the spin alone.)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

from protocol._variant import mypyc_attr  # mypy_extensions' to mypyc, a no-op at run time

#: The dealer's default polling budget per wait, in microseconds (``--busy_poll``).
DEFAULT_BUDGET_US: Final = 100
#: The largest budget ``--busy_poll`` takes: a millisecond of polling per wait is
#: already more than any wake-up costs.
MAX_BUDGET_US: Final = 1000
#: Polling is kept on only if it cuts the median time to an answer by this share.
REQUIRED_GAIN: Final = 0.1


def check_cycle(block: int, explore_blocks: int, cycle_blocks: int) -> None:
    """The shape of an exploring cycle (this poll's, and
    :class:`dealer.sendstates.SendStates`'): blocks of ``block`` waits, an exploration of
    ``explore_blocks`` blocks taking each way in turn, then the rest of ``cycle_blocks``.

    Raises:
        ValueError: a block is empty, the exploration is not whole pairs of blocks, or it
            leaves no room in the cycle.
    """
    if block < 1 or explore_blocks < 2 or explore_blocks % 2 or cycle_blocks <= explore_blocks:
        raise ValueError("need block >= 1, an even explore_blocks >= 2 and "
                         "cycle_blocks > explore_blocks")


class MatchesPlaying:
    """How many matches of one dealer process are playing now (:class:`dealer.match.Match`
    counts its own in and out). The dealer's time while a bot thinks is its own only while
    one is: with several, it is the other matches'. The busy poll (:meth:`BusyPoll.worth_it`)
    and the next state made ready ahead of a reply
    (:meth:`dealer.turns.TurnPolicy.ahead_wanted`) use that time only then; the matches
    of a process share one count, polling or not. ``count``: where it starts (one for a
    process whose bots play in it too: the time they think is theirs)."""

    __slots__ = ("count",)

    def __init__(self, count: int = 0) -> None:
        self.count = count


@mypyc_attr(allow_interpreted_subclasses=True)  # tests and benches decide every wait their way
class BusyPoll:
    """Keep an event loop polling, without sleeping, until a moving deadline,
    and find out whether doing so pays.

    Args:
        call_soon: the loop's ``call_soon`` (a callable queued there runs on
            the loop's next turn, and a loop with one queued does not block).
        budget_s: how long after :meth:`arm` the loop keeps polling.
        clock: a monotonic clock in seconds.
        block: waits per exploration block (polled, then not, in turn).
        explore_blocks: blocks in an exploration (even: as many of each).
        cycle_blocks: blocks in a cycle, the exploration included.
        playing: the process's count of matches playing (its own when not given).
    """

    __slots__ = (
        "_block",
        "_block_start",
        "_block_times",
        "_call_soon",
        "_clock",
        "_cycle",
        "_deciding",
        "_explore",
        "_exploring",
        "_queued",
        "_samples",
        "_trials",
        "_until",
        "arms",
        "budget_s",
        "conclusions",
        "playing",
        "polling",
        "spins",
    )

    def __init__(self, call_soon: Callable[[Callable[[], None]], object], budget_s: float,
                 clock: Callable[[], float] = time.perf_counter, block: int = 32,
                 explore_blocks: int = 4, cycle_blocks: int = 32,
                 playing: MatchesPlaying | None = None) -> None:
        if budget_s <= 0.0:
            raise ValueError(f"the busy-poll budget must be positive, not {budget_s}")
        check_cycle(block, explore_blocks, cycle_blocks)
        self.budget_s = budget_s
        #: Waits polled for, and loop turns spent polling (figures for tests and benchmarks).
        self.arms = 0
        self.spins = 0
        #: Whether the waits after the last exploration are polled for, and the
        #: explorations concluded so far.
        self.polling = False
        self.conclusions = 0
        #: Matches of the process (sharing this poll) playing now.
        self.playing = playing if playing is not None else MatchesPlaying()
        self._call_soon = call_soon
        self._clock = clock
        self._block = block
        self._explore = block * explore_blocks
        self._cycle = block * cycle_blocks
        self._trials = 0
        self._exploring = False
        #: Whether it decided the last wait (:meth:`decide`, :meth:`pass_wait`).
        self._deciding = False
        #: The times to an answer seen while exploring: [not polled, polled].
        self._samples: tuple[list[float], list[float]] = ([], [])
        #: The wall time of each exploration block: [not polled, polled]; and when this one began.
        self._block_times: tuple[list[float], list[float]] = ([], [])
        self._block_start = 0.0
        self._queued = False
        self._until = 0.0

    @property
    def busy(self) -> bool:
        """Whether the waits are its own now: it decided the last one (its seat is fast,
        :meth:`worth_it`) and it explores, or polls after exploring
        (:class:`dealer.sendstates.SendStates` stands aside meanwhile)."""
        return self._deciding and (self._exploring or self.polling)

    def takes(self, last_reply_s: float) -> bool:
        """Whether it will decide the next wait, for a seat whose last action took
        ``last_reply_s``, and explore or may poll in it (the wait that ends an exploration
        counts as taken: what the exploration concludes is not known before it)."""
        if not self.worth_it(last_reply_s):
            return False
        return self._trials % self._cycle <= self._explore or self.polling

    def pass_wait(self) -> None:
        """A wait it does not decide (a slow seat, several matches playing): the dealer
        sleeps through it, whatever the last exploration concluded."""
        self._deciding = False

    def worth_it(self, last_reply_s: float) -> bool:
        """Whether polling can help for a seat whose last action took ``last_reply_s``: a fast
        seat, while at most one match of the process plays. With several, the loop's spare
        time is the other matches' and a spin takes a processor from their bots (four
        matches on two cores: 8,511 against 9,290 hands/s without polling, docs/dealer.md)."""
        return self.playing.count <= 1 and last_reply_s <= self.budget_s

    def decide(self) -> bool:
        """Whether to poll for this wait (for a seat :meth:`worth_it`); counts the wait."""
        self._deciding = True
        phase = self._trials % self._cycle
        self._trials += 1
        if phase <= self._explore and phase % self._block == 0:  # a block of the exploration ends or begins
            now = self._clock()
            if phase:
                self._block_times[((phase - 1) // self._block) % 2 == 0].append(now - self._block_start)
            self._block_start = now
        if phase == self._explore:
            self._conclude()
        self._exploring = phase < self._explore
        if self._exploring:
            return (phase // self._block) % 2 == 0
        return self.polling

    def record(self, polled: bool, answer_s: float) -> None:
        """The time from the send to the answer of a wait :meth:`decide` decided."""
        if self._exploring:
            samples = self._samples[polled]
            if len(samples) < self._explore:
                samples.append(answer_s)

    def _conclude(self) -> None:
        # statistics (with fractions and decimal) loads when the first exploration ends, not
        # in every dealer's start-up (docs/dealer.md, "Start-up").
        import statistics  # lazy: off the start-up path (above)

        without, with_ = self._samples
        slow, fast = self._block_times  # (not polled, polled): named for what polling should give
        if without and with_:
            sooner = statistics.median(with_) < (1.0 - REQUIRED_GAIN) * statistics.median(without)
            no_slower = not (slow and fast) or statistics.median(fast) <= statistics.median(slow)
            self.polling = sooner and no_slower
            self.conclusions += 1
        for samples in (without, with_, slow, fast):
            samples.clear()

    def arm(self) -> None:
        """Poll until ``budget_s`` from now (a later deadline than any armed before)."""
        self._until = self._clock() + self.budget_s
        self.arms += 1
        if not self._queued:
            self._queued = True
            self._call_soon(self._spin)

    def _spin(self) -> None:
        if self._clock() < self._until:
            self.spins += 1
            self._call_soon(self._spin)
        else:
            self._queued = False
