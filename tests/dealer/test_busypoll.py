"""The dealer's busy poll (dealer/busypoll.py): the loop polls for a fast bot's
answer instead of sleeping, polls only for seats that answer within its budget,
and changes nothing of play."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import pytest_twisted
from twisted.internet import reactor as global_reactor

from acpc_lbr.runtime.reactor import event_loop_of
from dealer.busypoll import MAX_BUDGET_US, BusyPoll
from tests.dealer.bots import REFERENCE, TestBot, actions_from_log, replay_strategy
from tests.dealer.harness import call_bots, log_lines, make_config, play
from tests.dealer.test_cli import SOCKET_BOT, finish, start_bot, start_dealer


class FakeLoop:
    """A loop that only queues callbacks; :meth:`turn` runs the queued ones once."""

    def __init__(self) -> None:
        self.queued: list[Callable[[], None]] = []
        self.now = 0.0

    def call_soon(self, callback: Callable[[], None]) -> None:
        self.queued.append(callback)

    def turn(self) -> None:
        ready, self.queued = self.queued, []
        for callback in ready:
            callback()


def test_it_keeps_one_callback_queued_until_the_deadline_then_lets_the_loop_sleep() -> None:
    loop = FakeLoop()
    poll = BusyPoll(loop.call_soon, 50e-6, clock=lambda: loop.now)
    poll.arm()
    poll.arm()  # a second arm moves the deadline; it queues nothing more
    assert len(loop.queued) == 1 and poll.arms == 2
    loop.now = 30e-6
    loop.turn()
    assert len(loop.queued) == 1 and poll.spins == 1  # still polling
    loop.now = 49e-6
    poll.arm()  # a new wait: polling goes on until 99 us
    loop.now = 80e-6
    loop.turn()
    assert len(loop.queued) == 1 and poll.spins == 2
    loop.now = 100e-6
    loop.turn()
    assert loop.queued == [] and poll.spins == 2  # the deadline passed: nothing queued, the loop may sleep
    poll.arm()
    assert len(loop.queued) == 1  # armed again after it stopped


def test_it_is_worth_polling_only_for_a_seat_that_answered_within_the_budget() -> None:
    poll = BusyPoll(FakeLoop().call_soon, 100e-6)
    assert poll.worth_it(0.0) and poll.worth_it(100e-6)
    assert not poll.worth_it(101e-6) and not poll.worth_it(0.5)


def test_it_is_not_worth_polling_while_several_matches_play() -> None:
    """The loop's spare time is then the other matches', and a spin takes a processor from their bots."""
    poll = BusyPoll(FakeLoop().call_soon, 100e-6)
    for playing, worth in ((0, True), (1, True), (2, False), (4, False)):
        poll.playing.count = playing
        assert poll.worth_it(0.0) is worth, playing


def still() -> float:
    """A clock that stands still: the blocks' wall times tie, and the answer times decide."""
    return 0.0


def play_waits(poll: BusyPoll, waits: int, answer_s: Callable[[bool], float]) -> list[bool]:
    """``waits`` waits decided by ``poll``, each answered after ``answer_s(polled)``."""
    decided = []
    for _ in range(waits):
        polled = poll.decide()
        poll.record(polled, answer_s(polled))
        decided.append(polled)
    return decided


@pytest.mark.parametrize(("polled_s", "unpolled_s", "keeps_polling"),
                         [(20e-6, 60e-6, True),   # wake-ups are dear: polling pays
                          (40e-6, 30e-6, False),  # polling slows the bots down
                          (28e-6, 30e-6, False)])  # a gain under REQUIRED_GAIN: not worth the CPU
def test_it_polls_after_an_exploration_only_if_answers_came_sooner_with_polling(
        polled_s: float, unpolled_s: float, keeps_polling: bool) -> None:
    poll = BusyPoll(FakeLoop().call_soon, 100e-6, clock=still, block=4, explore_blocks=4, cycle_blocks=10)
    decided = play_waits(poll, 40, lambda polled: polled_s if polled else unpolled_s)
    # Each cycle of 40 waits: 16 exploring (4 polled, 4 not, 4 polled, 4 not), then 24 decided.
    assert decided[:16] == ([True] * 4 + [False] * 4) * 2
    assert decided[16:] == [keeps_polling] * 24
    assert poll.conclusions == 1 and poll.polling is keeps_polling


def test_it_does_not_poll_when_answers_come_sooner_but_hands_come_slower() -> None:
    """The fast Python bots' case (issue 33): polling read each answer sooner, but the spin took a
    processor from the bots, so the waits came further apart (fewer hands/s than without polling).
    The blocks' wall time shows it, and polling stays off; where both improve, it stays on."""
    for between_polled_s, keeps_polling in ((150e-6, False), (60e-6, True)):
        loop = FakeLoop()
        poll = BusyPoll(loop.call_soon, 100e-6, clock=lambda: loop.now, block=4, explore_blocks=4,
                        cycle_blocks=10)

        def answer_s(polled: bool, between: float = between_polled_s) -> float:
            answer = 20e-6 if polled else 60e-6  # polling reads the answer sooner...
            loop.now += answer + (between if polled else 80e-6)  # ...and the rest of the wait?
            return answer

        decided = play_waits(poll, 40, answer_s)
        assert decided[16:] == [keeps_polling] * 24
        assert poll.polling is keeps_polling


def test_each_cycle_explores_again_and_follows_a_change_of_machine() -> None:
    poll = BusyPoll(FakeLoop().call_soon, 100e-6, clock=still, block=4, explore_blocks=2, cycle_blocks=5)
    first = play_waits(poll, 20, lambda polled: 20e-6 if polled else 60e-6)
    assert first[8:] == [True] * 12
    second = play_waits(poll, 20, lambda polled: 60e-6 if polled else 20e-6)  # the load changed
    assert second[:8] == [True] * 4 + [False] * 4 and second[8:] == [False] * 12
    assert poll.conclusions == 2


def test_answers_outside_an_exploration_do_not_count() -> None:
    poll = BusyPoll(FakeLoop().call_soon, 100e-6, clock=still, block=2, explore_blocks=2, cycle_blocks=6)
    play_waits(poll, 4, lambda polled: 20e-6 if polled else 60e-6)  # the first exploration
    # The decided waits (polled) answer in 1 ms: counted in the next
    # exploration, they would make polling lose.
    assert play_waits(poll, 8, lambda polled: 1e-3) == [True] * 8
    play_waits(poll, 4, lambda polled: 20e-6 if polled else 60e-6)  # the second exploration
    poll.decide()
    assert poll.conclusions == 2 and poll.polling is True


@pytest.mark.parametrize("budget", [0.0, -1e-6])
def test_a_budget_must_be_positive(budget: float) -> None:
    with pytest.raises(ValueError, match="positive"):
        BusyPoll(FakeLoop().call_soon, budget)


@pytest.mark.parametrize(("block", "explore", "cycle"), [(0, 2, 4), (4, 3, 8), (4, 4, 4)])
def test_the_cycle_needs_whole_pairs_of_blocks_and_room_to_use_them(
        block: int, explore: int, cycle: int) -> None:
    with pytest.raises(ValueError, match="explore_blocks"):
        BusyPoll(FakeLoop().call_soon, 1e-4, block=block, explore_blocks=explore, cycle_blocks=cycle)


@pytest_twisted.ensureDeferred
async def test_a_reference_match_with_busy_polling_writes_the_reference_log(in_tmp: Path) -> None:
    """On the real loop: the poller spins while fast bots play, and the log is the reference's."""
    reference = REFERENCE / "logs" / "nl1000.log"
    config = make_config("nl1000", "holdem.nolimit.2p.reverse_blinds.game", hands=1000, seed=42,
                         names=("p1", "p2"), trace_messages=False)
    bots = [TestBot(config.game, replay_strategy(actions_from_log(reference))) for _ in range(2)]
    # A budget far above any in-process reply, so every wait after the first polls.
    poll = BusyPoll(event_loop_of(global_reactor).call_soon, 0.05)
    result = await play(config, bots, busy_poll=poll)
    assert result.completed and result.exit_code == 0
    assert log_lines(config) == reference.read_text().splitlines()
    # Every hand has a wait at least; each exploration polls for half of its waits.
    assert poll.conclusions >= 1
    assert poll.arms >= 1000 * 4 // 32 // 2
    assert poll.spins > 0


class SlowBot(TestBot):
    """An always-call bot that answers ``delay`` seconds after its state arrives."""

    def __init__(self, *args: object, delay: float, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.delay = delay

    def send(self, line: str) -> None:
        if line.startswith("VERSION"):
            super().send(line)
        else:
            global_reactor.callLater(self.delay, TestBot.send, self, line)


@pytest_twisted.ensureDeferred
async def test_a_seat_that_answers_slower_than_the_budget_is_not_polled_for(in_tmp: Path) -> None:
    config = make_config("slow", hands=6, trace_messages=False)
    poll = BusyPoll(event_loop_of(global_reactor).call_soon, 200e-6)
    slow = [SlowBot(config.game, delay=0.01) for _ in range(2)]
    result = await play(config, slow, busy_poll=poll)
    assert result.completed
    # Only each seat's first wait is considered (nothing known of it yet), and
    # polled (the first block of an exploration): every answer after it took
    # 10 ms, 50 times the budget.
    assert poll.arms == 2
    fast_config = make_config("fast", hands=6, trace_messages=False)
    fast_poll = BusyPoll(event_loop_of(global_reactor).call_soon, 0.05)
    result = await play(fast_config, call_bots(fast_config), busy_poll=fast_poll)
    assert result.completed
    assert fast_poll.arms > 6  # the same match with fast bots: every wait of the first block




def _cpu_seconds(pid: int) -> float:
    """User + system CPU of a live process so far (/proc/PID/stat: utime, stime in clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="reads a process's CPU from /proc")
@pytest.mark.parametrize("partial", [False, True])
def test_a_stalled_bot_costs_the_polling_dealer_no_cpu(tmp_path: Path, partial: bool) -> None:
    """The dealer, at the largest budget, waits for a bot that stalls 2 s on the match's first
    decision (a wait it polls for: nothing is known of the seat, and an exploration polls its
    first block), with half its answer sent or none: polling stops within the budget, so the
    dealer's CPU over the stall is near zero (a poll that kept spinning would take all 2 s;
    other load on the machine can only lower a process's own CPU time)."""
    proc, [ports] = start_dealer(["s", "nolimit", "3", "1", "a", "b", "-q", "--busy_poll",
                                  str(MAX_BUDGET_US)], tmp_path)
    # In hand 0 seat 2 (the button) acts first.
    stalling = subprocess.Popen([sys.executable, str(SOCKET_BOT), "127.0.0.1", str(ports[1]), "nolimit",
                                 "--stall-at", "0", "--stall", "2", *(["--partial"] if partial else [])],
                                stdout=subprocess.PIPE, text=True)
    bots = [start_bot(ports[0], "nolimit"), stalling]
    assert stalling.stdout is not None
    assert stalling.stdout.readline() == "stall\n"
    time.sleep(0.1)  # past any budget
    start, cpu = time.monotonic(), _cpu_seconds(proc.pid)
    assert stalling.stdout.readline() == "resume\n"
    wall, cpu = time.monotonic() - start, _cpu_seconds(proc.pid) - cpu
    code, _ = finish(proc, bots)
    assert code == 0
    assert sum(line.startswith("STATE:") for line in (tmp_path / "s.log").read_text().splitlines()) == 3
    assert wall > 1.5 and cpu < 0.3 * wall, f"dealer CPU {cpu:.2f} s over a {wall:.2f} s stall"
