"""When the states of the seats not to act are sent (dealer/sendstates.py): one send per
action or every state at once, fixed when asked, else measured on the machine at hand from
the round trips of each way; and either way the bots get the same lines and the logs are
the same."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import pytest

from acpc_lbr.cli.dealer import _UsageError, parse_configs
from acpc_lbr.runtime.exit_codes import EXIT_OK
from dealer.busypoll import BusyPoll, MatchesPlaying
from dealer.config import MatchConfig
from dealer.sendstates import (
    AT_ONCE,
    LONGEST_CYCLE,
    MEASURED,
    MODES,
    ON_TURN,
    REQUIRED_GAIN,
    SendStates,
    typical,
)
from tests.dealer.harness import MemoryTable, make_config
from tests.dealer.test_ahead import _ACTION as _ACTION_IN_BETTING
from tests.dealer.test_ahead import _example_mix, _play_hostile
from tests.dealer.test_memory import _log_writes, _play_out, _reference_lines


class Clock:
    """A clock the test moves on."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def decide(ways: SendStates, clock: Clock, points: int, cost_s: Callable[[bool], float],
           hand: int = 0, hand_end_s: Callable[[bool], float] = lambda at_once: 0.0) -> list[bool]:
    """``points`` decision points decided by ``ways``, each round trip taking
    ``cost_s(at_once)``; with ``hand``, every ``hand``-th one is a hand's first (forced),
    reached after ``hand_end_s`` of the way before."""
    decided = []
    last = False
    for i in range(points):
        first = hand > 0 and i % hand == 0
        if first and i:
            clock.now += hand_end_s(last)
        at_once = ask(ways, first, 10.0)  # a seat too slow for the busy poll
        if not first:
            decided.append(at_once)
        clock.now += cost_s(at_once)
        last = at_once
    return decided


def ask(ways: SendStates, forced: bool, last_reply_s: float) -> bool:
    """As the hand loop asks (dealer/handloop.py, _begin_turn): not in the rest of a cycle
    whose exploration chose one send per action (``unasked``)."""
    if ways.unasked:
        ways.unasked -= 1
        return forced
    return ways.at_once(forced, last_reply_s)


def measured(clock: Clock, playing: MatchesPlaying | None = None, poll: BusyPoll | None = None,
             **shape: int) -> SendStates:
    shape = {"block": 4, "explore_blocks": 4, "cycle_blocks": 10, **shape}
    return SendStates(MEASURED, playing or MatchesPlaying(1), poll, clock=clock, **shape)


def by_way(on_turn_s: float, at_once_s: float) -> Callable[[bool], float]:
    return lambda at_once: at_once_s if at_once else on_turn_s


@pytest.mark.parametrize(("on_turn_s", "at_once_s", "chosen"),
                         [(70e-6, 55e-6, True),    # wake-ups are dear: the reference's way pays
                          (50e-6, 60e-6, False),   # cheap wake-ups: one send per action
                          (60e-6, 60e-6 * (1 - REQUIRED_GAIN) + 1e-7, False)])  # a gain too small
def test_every_state_goes_at_once_after_an_exploration_only_if_its_round_trips_were_shorter(
        on_turn_s: float, at_once_s: float, chosen: bool) -> None:
    clock = Clock()
    ways = measured(clock)
    decided = decide(ways, clock, 40, by_way(on_turn_s, at_once_s))
    # Each cycle of 40: 16 exploring (4 one send per action, 4 at once, twice), then 24 decided.
    assert decided[:16] == ([False] * 4 + [True] * 4) * 2
    assert decided[16:] == [chosen] * 24
    assert ways.conclusions == 1 and ways.at_once_chosen is chosen


def test_a_hands_end_and_first_decision_count_for_neither_way() -> None:
    """Round trips that end a hand are not counted, and a hand's first decision point
    (every state at once anyway) is not a trial: a dear hand's end after blocks sent at
    once does not make that way look slower."""
    clock = Clock()
    ways = measured(clock)
    decided = decide(ways, clock, 60, by_way(70e-6, 55e-6), hand=5,
                     hand_end_s=lambda at_once: 5e-3 if at_once else 0.0)
    assert decided[:16] == ([False] * 4 + [True] * 4) * 2
    assert ways.conclusions == 1 and ways.at_once_chosen
    assert decided[16:40] == [True] * 24 and decided[40:] == [False] * 4 + [True] * 4


def test_a_bots_slow_answers_are_left_out_with_the_slowest_tenth() -> None:
    assert typical([5.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]) == 1.0
    assert typical([2.0, 1.0]) == 1.5
    clock = Clock()
    ways = measured(clock, block=10, explore_blocks=2, cycle_blocks=4)
    slow = iter([1.0] + [0.0] * 100)  # one slow answer in the blocks sent at once

    def cost_s(at_once: bool) -> float:
        return 55e-6 + (next(slow) if at_once else 0.0) if at_once else 70e-6

    decide(ways, clock, 21, cost_s)
    assert ways.conclusions == 1 and ways.at_once_chosen


def test_each_cycle_measures_again_and_follows_a_change_of_machine() -> None:
    clock = Clock()
    ways = measured(clock, explore_blocks=2, cycle_blocks=5)
    first = decide(ways, clock, 20, by_way(70e-6, 50e-6))
    assert first[8:] == [True] * 12
    second = decide(ways, clock, 20, by_way(50e-6, 70e-6))
    assert second[:8] == [False] * 4 + [True] * 4 and second[8:] == [False] * 12
    assert ways.conclusions == 2


def test_it_stands_aside_while_several_matches_play_and_counts_nothing_meanwhile() -> None:
    """With several matches of the process playing, one send per action, and no round trip
    counted (their time is partly the other matches'); then the exploration goes on."""
    clock, playing = Clock(), MatchesPlaying(1)
    ways = measured(clock, playing)
    cost_s = by_way(70e-6, 50e-6)
    decide(ways, clock, 6, cost_s)  # into the exploration's second block (at once)
    playing.count = 2
    assert decide(ways, clock, 50, lambda at_once: 1.0) == [False] * 50  # a slow stretch, unmeasured
    playing.count = 1
    decided = decide(ways, clock, 34, cost_s)
    assert decided[:10] == [True] * 2 + [False] * 4 + [True] * 4 and decided[10:] == [True] * 24
    assert ways.conclusions == 1


def test_it_stands_aside_for_the_waits_the_busy_poll_takes() -> None:
    """A busy poll measures its own waits, and a dealer that spins pays no wake-up: one send
    per action for a wait it takes (a fast seat's, while it explores or polls), nothing of
    it counted. The waits of a slow seat, which it does not decide, the dealer sleeps
    through: those are measured. In the hand loop's order: the way is chosen at the
    decision point, then the poll decides the wait (TurnPolicy.wait)."""
    def play(ways: SendStates, poll: BusyPoll, clock: Clock, seats: list[float],
             polled_s: float) -> list[bool]:
        decided = []
        for last_reply_s in seats:
            at_once = ask(ways, False, last_reply_s)
            if poll.worth_it(last_reply_s):
                polled = poll.decide()
                poll.record(polled, polled_s if polled else 60e-6)
            else:
                poll.pass_wait()
            # A round trip the poll took would make at once look slow, were it counted.
            clock.now += 1.0 if poll.busy else (50e-6 if at_once else 70e-6)
            decided.append(at_once)
        return decided

    clock = Clock()
    poll = BusyPoll(lambda callback: None, 100e-6, clock=lambda: 0.0, block=2, explore_blocks=2,
                    cycle_blocks=64)
    ways = measured(clock, poll=poll)
    # Two fast seats: the poll explores 4 waits, finds no gain at the fifth (taken too: what
    # it concludes is not known before), and stops polling.
    decided = play(ways, poll, clock, [0.0] * 24, polled_s=60e-6)
    assert decided[:5] == [False] * 5 and not poll.polling and poll.conclusions == 1
    assert decided[5:21] == ([False] * 4 + [True] * 4) * 2 and decided[21:] == [True] * 3
    assert ways.conclusions == 1 and ways.at_once_chosen
    # A fast seat and a slow one (the LBR agent's case), polling paying for the fast one:
    # its waits stand aside, the slow seat's are measured.
    clock = Clock()
    poll = BusyPoll(lambda callback: None, 100e-6, clock=lambda: 0.0, block=2, explore_blocks=2,
                    cycle_blocks=64)
    ways = measured(clock, poll=poll)
    decided = play(ways, poll, clock, [0.0, 10.0] * 24, polled_s=20e-6)
    assert poll.polling and not any(decided[0::2])
    assert decided[1:33:2] == ([False] * 4 + [True] * 4) * 2
    assert ways.conclusions == 1 and ways.at_once_chosen and decided[33::2] == [True] * 8


@pytest.mark.parametrize("mode", [ON_TURN, AT_ONCE])
def test_a_fixed_way_is_kept(mode: str) -> None:
    clock = Clock()
    ways = SendStates(mode, MatchesPlaying(1), clock=clock, block=1, explore_blocks=2, cycle_blocks=3)
    slower = by_way(1e-6, 1.0) if mode == AT_ONCE else by_way(1.0, 1e-6)
    assert decide(ways, clock, 20, slower, hand=4) == [mode == AT_ONCE] * 15
    assert ways.conclusions == 0


def test_a_way_must_be_known_and_the_cycle_sound() -> None:
    with pytest.raises(ValueError, match="one of measured, on_turn, at_once"):
        SendStates("sometimes", MatchesPlaying())
    with pytest.raises(ValueError, match="even explore_blocks"):
        SendStates(MEASURED, MatchesPlaying(), explore_blocks=3)
    with pytest.raises(ValueError, match="send_states must be one of"):
        make_config("m", send_states="sometimes")
    assert MatchConfig.__dataclass_fields__["send_states"].default == MEASURED
    assert MODES == (MEASURED, ON_TURN, AT_ONCE)


def test_the_command_line_chooses_the_way() -> None:
    words = ["m", "kuhn", "10", "1", "a", "b"]
    assert parse_configs(words)[0][0][0].send_states == MEASURED
    for way in (ON_TURN, AT_ONCE):
        assert parse_configs([*words, "--send_states", way])[0][0][0].send_states == way
    with pytest.raises((_UsageError, SystemExit)):
        parse_configs([*words, "--send_states", "sometimes"])


class TimedSendStates(SendStates):
    """Measured on small blocks, on a clock that each decision point asked moves on by what
    its way costs (every state at once the faster, unless ``at_once_slower``)."""

    __slots__ = ("asked", "test_clock")
    made: ClassVar[list[TimedSendStates]] = []
    at_once_slower: ClassVar[bool] = False

    def __init__(self, playing: MatchesPlaying, busy_poll: BusyPoll | None) -> None:
        self.test_clock = Clock()
        self.asked = 0
        super().__init__(MEASURED, playing, busy_poll, clock=self.test_clock, block=4,
                         explore_blocks=2, cycle_blocks=8)
        TimedSendStates.made.append(self)

    def at_once(self, forced: bool, last_reply_s: float) -> bool:
        decided = super().at_once(forced, last_reply_s)
        self.asked += 1
        self.test_clock.now += (50e-6 if decided else 70e-6) * (1.6 if self.at_once_slower and decided else 1)
        return decided


@pytest.mark.parametrize("game", ["nolimit", "limit"])
def test_a_measured_match_that_turns_to_every_state_at_once_gives_the_same_lines_and_log(
        in_tmp: Path, game: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole match, the process's only one, whose measure finds every state at once
    faster: it explores, then sends at once (more sends than one per action, fewer than
    at once throughout), the read step still sends the states made ready, and every seat
    gets the reference's lines in order, with the same .log as either fixed way."""
    monkeypatch.setattr(TimedSendStates, "made", [])
    logs, sends = [], []
    for way in (MEASURED, ON_TURN, AT_ONCE):
        config = make_config(f"m{way}", game=game, hands=40, seed=3, send_states=way)
        table = MemoryTable(config, read_step=True, poll=False, playing=MatchesPlaying(),
                            send_states=TimedSendStates if way == MEASURED else None)
        writes = _log_writes(table)
        received = _play_out(table, _example_mix(9))
        assert table.done.result.exit_code == EXIT_OK
        assert received == _reference_lines(config, _example_mix(9))
        assert table.sent_ahead > 0
        logs.append(Path(config.log_path).read_text().splitlines()[1:])
        sends.append(len(writes))
    assert logs[0] == logs[1] == logs[2]
    (ways,) = TimedSendStates.made
    assert ways.conclusions >= 3 and ways.at_once_chosen
    assert sends[1] < sends[0] < sends[2]


def test_a_match_with_a_real_busy_poll_measures_once_the_poll_stands_down(in_tmp: Path) -> None:
    """With the process's busy poll (answers in memory come at once, so polling gains nothing
    and the poll concludes not to poll), the ways are measured after its exploration, and the
    match gives the reference's lines."""
    poll = BusyPoll(lambda callback: None, 100e-6, block=8, explore_blocks=2, cycle_blocks=64)
    made: list[SendStates] = []

    def ways(playing: MatchesPlaying, busy_poll: BusyPoll | None) -> SendStates:
        made.append(SendStates(MEASURED, playing, busy_poll, block=4, explore_blocks=2,
                               cycle_blocks=8))
        return made[-1]

    config = make_config("m", hands=40, seed=3)
    table = MemoryTable(config, read_step=True, busy_poll=poll, send_states=ways)
    assert _play_out(table, _example_mix(9)) == _reference_lines(config, _example_mix(9))
    assert table.done.result.exit_code == EXIT_OK
    assert made[0].busy_poll is poll and made[0].playing is poll.playing
    assert poll.conclusions >= 1 and not poll.polling
    assert made[0].conclusions >= 1


def test_a_match_measures_with_its_busy_poll_and_count_and_refuses_others(in_tmp: Path) -> None:
    poll = BusyPoll(lambda callback: None, 100e-6)
    table = MemoryTable(make_config("m", hands=1, send_states=ON_TURN), read_step=True, busy_poll=poll)
    ways = table.match.send_states
    assert (ways.mode, ways.busy_poll, ways.playing) == (ON_TURN, poll, poll.playing)
    with pytest.raises(ValueError, match="must measure with its busy poll"):
        MemoryTable(make_config("n", hands=1), read_step=True, busy_poll=poll,
                    send_states=lambda playing, busy_poll: SendStates(MEASURED, playing, None))


def test_a_way_found_again_lengthens_the_cycle_and_a_change_starts_over() -> None:
    """Cycles of 4 decision points at first (explorations of 2): each exploration that
    finds the way found before doubles the cycle, up to LONGEST_CYCLE (8) times; a change
    of way goes back to the first cycle's length."""
    clock = Clock()
    ways = measured(clock, block=1, explore_blocks=2, cycle_blocks=4)
    concluded: list[int] = []

    def play(points: range, cost_s: Callable[[bool], float]) -> None:
        for i in points:
            before = ways.conclusions
            decide(ways, clock, 1, cost_s)
            if ways.conclusions != before:
                concluded.append(i)

    play(range(200), by_way(70e-6, 50e-6))
    # Cycles begin at 0, 4, 12, 28, 60, 92, ... (4, 8, 16, 32, then 32 = 8 x 4 on end).
    assert LONGEST_CYCLE == 8
    assert concluded == [2, 6, 14, 30, 62, 94, 126, 158, 190] and ways.at_once_chosen
    play(range(200, 260), by_way(50e-6, 70e-6))  # the machine changed
    assert concluded[9:] == [222, 226, 234, 250] and not ways.at_once_chosen


def test_a_match_that_keeps_one_send_per_action_is_not_asked_in_the_rest_of_each_cycle(
        in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where every state at once is slower, each exploration keeps one send per action and
    the hand loop does not ask the measure again until the cycle's end (``unasked``): far
    fewer calls than decision points, and the reference's lines and the same .log."""
    monkeypatch.setattr(TimedSendStates, "made", [])
    monkeypatch.setattr(TimedSendStates, "at_once_slower", True)
    logs = []
    for way in (MEASURED, ON_TURN):
        config = make_config(f"m{way}", hands=60, seed=3, send_states=way)
        table = MemoryTable(config, read_step=True, poll=False, playing=MatchesPlaying(),
                            send_states=TimedSendStates if way == MEASURED else None)
        assert _play_out(table, _example_mix(9)) == _reference_lines(config, _example_mix(9))
        assert table.done.result.exit_code == EXIT_OK
        logs.append(Path(config.log_path).read_text().splitlines()[1:])
    assert logs[0] == logs[1]
    (ways,) = TimedSendStates.made
    assert ways.conclusions >= 3 and not ways.at_once_chosen
    decisions = sum(len(_ACTION_IN_BETTING.findall(line.split(":")[2]))
                    for line in logs[0] if line.startswith("STATE:"))
    assert ways.asked < decisions / 2


@pytest.mark.parametrize("game", ["nolimit", "limit", "holdem.nolimit.3p", "holdem.limit.3p",
                                  "kuhn.limit.3p"])
def test_any_mix_of_ways_gives_each_seat_the_same_lines_and_the_same_match(
        in_tmp: Path, game: str) -> None:
    """A random way at each decision point (the measure's bookkeeping kept), hostile
    replies (sizes at and past the range's ends, illegal folds, comments, pieces, late
    replies), two and three players, with and without the read step: each seat receives
    the same lines, the .log is the same and the match ends the same way as with one send
    per action throughout, and as with every state at once."""
    names = ("a", "b", "c") if game.endswith("3p") else ("a", "b")
    rng = random.Random(1)
    drawn: list[bool] = []

    class RandomWays(SendStates):
        """Measured as usual, then overruled: a random way at each decision point."""

        def __init__(self, playing: MatchesPlaying, busy_poll: BusyPoll | None) -> None:
            super().__init__(MEASURED, playing, busy_poll)

        def at_once(self, forced: bool, last_reply_s: float) -> bool:
            super().at_once(forced, last_reply_s)
            if forced:
                return True
            drawn.append(rng.random() < 0.5)
            return drawn[-1]

    played = []
    for way, read_step in ((ON_TURN, False), (MEASURED, False), (MEASURED, True), (ON_TURN, True),
                           (AT_ONCE, True)):
        config = make_config(f"m{way}{read_step}", game=game, hands=40, seed=2, names=names,
                             t_response_ms=100, t_hand_ms=400, max_ignored=50, send_states=way)
        played.append(_play_hostile(config, read_step, 2,
                                    send_states=RandomWays if way == MEASURED else None)[:4])
    assert all(match == played[0] for match in played[1:])
    assert drawn.count(True) > 20 and drawn.count(False) > 20  # both ways, mixed
