"""The next state made ready while a bot thinks (dealer.seatio.Ahead), sent by the read step.

The CLI reactor's read step sends it before the reply goes through the framing
and the rules; in memory, MemoryTable(read_step=True) delivers bytes the same
way. What the bots receive, and what is logged, must be the same as without it,
and only exact, canonical replies may be answered ahead. It is done while the match is the
process's only one playing, for every wait, polled for or not.
"""

from __future__ import annotations

import dataclasses
import io
import random
import re
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from twisted.internet.testing import StringTransport

from acpc_lbr.runtime.exit_codes import EXIT_INTERNAL, EXIT_OK
from dealer import seatio
from dealer.busypoll import BusyPoll, MatchesPlaying
from dealer.match import MatchConfig
from dealer.seat import SeatProtocol
from dealer.sendstates import SendStates
from protocol.rules import Action, ActionType, State
from protocol.wire import parse_matchstate
from tests.dealer.harness import AlwaysPoll, MemoryTable, make_config
from tests.dealer.test_memory import _play_out, _reference_lines
from tests.dealer.test_seatio import _Reactor, _seat, _Transport, _wait_readable

#: An action in a betting string.
_ACTION = re.compile(r"[fc]|r[0-9]*")


def _example_mix(seed: int) -> Callable[[State], Action]:
    """The reference example player's mix: fold 0.06 when legal, else call or raise evenly,
    the raise size uniform over the legal range (every line new)."""
    rng = random.Random(seed)

    def policy(state: State) -> Action:
        kinds = [ActionType.FOLD, ActionType.CALL, ActionType.RAISE]
        weights = [0.06 if state.can_fold() else 0.0, 0.47, 0.47 if state.can_raise() else 0.0]
        kind = rng.choices(kinds, weights=weights)[0]
        if kind is ActionType.RAISE:
            low, high = state.raise_range() or (0, 0)
            return Action.RAISE if state.game.is_limit else Action.raise_to(rng.randint(low, high))
        return Action.FOLD if kind is ActionType.FOLD else Action.CALL

    return policy


@pytest.mark.parametrize("game", ["nolimit", "limit", "leduc"])
def test_states_sent_ahead_are_the_states_the_rules_give(in_tmp: Path, game: str) -> None:
    """Varied play through the read step: each seat receives the reference's lines in
    order, the .log is the one written without the read step, and most replies (the
    calls and raises that do not end a hand) were answered ahead."""
    logs = []
    for read_step in (True, False):
        config = make_config(f"m{read_step}", game=game, hands=60, seed=3)
        table = MemoryTable(config, read_step=read_step)
        received = _play_out(table, _example_mix(9))
        assert table.done.result.exit_code == EXIT_OK
        assert received == _reference_lines(config, _example_mix(9))
        logs.append(Path(config.log_path).read_text().splitlines()[1:])  # past the header's name
        if read_step:
            # Every reply is answered ahead but a hand's last when nothing follows it
            # yet: the match's last hand, and a hand ended by its first reply (the
            # next hand is drawn at the second wait).
            replies = [len(_ACTION.findall(line.split(":")[2])) for line in logs[-1]
                       if line.startswith("STATE:")]
            assert len(replies) == 60
            not_ahead = replies.count(1) + (replies[-1] != 1)
            assert table.sent_ahead == sum(replies) - not_ahead
            assert sum(replies) > 2 * 60
        else:
            assert table.sent_ahead == 0
    assert logs[0] == logs[1]


def test_a_reply_that_ends_a_hand_is_answered_with_the_next_hands_first_state(in_tmp: Path) -> None:
    """A fold that ends hand 0: the seat to act first in hand 1 (here the folder) gets its
    final state and its first state of hand 1 in one send, the other seat its own two
    lines; as without the read step."""
    outputs = []
    for read_step in (True, False):
        table = MemoryTable(make_config("m", hands=2, seed=42, names=("p1", "p2")), read_step=read_step)
        table.feed(0, b"VERSION:2.0.0\n")
        table.feed(1, b"VERSION:2.0.0\n")
        assert table.take(0) == ["MATCHSTATE:0:0::7d3d|"]
        assert table.take(1) == ["MATCHSTATE:1:0::|2hAc"]
        table.feed(1, b"MATCHSTATE:1:0::|2hAc:r300\n")
        assert table.take(0) == ["MATCHSTATE:0:0:r300:7d3d|"]
        table.feed(0, b"MATCHSTATE:0:0:r300:7d3d|:f\n")
        assert table.sent_ahead == (2 if read_step else 0)
        folder, other = table.take(0), table.take(1)
        assert folder[0] == "MATCHSTATE:0:0:r300f:7d3d|" and folder[1].startswith("MATCHSTATE:1:1::")
        assert other[-2] == "MATCHSTATE:1:0:r300f:|2hAc" and other[-1].startswith("MATCHSTATE:0:1::")
        outputs.append((folder, other))
    assert outputs[0] == outputs[1]


def _at_a_raise_decision(in_tmp: Path, **options: Any) -> tuple[MemoryTable, str]:
    """A fresh one-hand match (with ``options``) whose seat 2 is to act first
    (pre-flop), with its state."""
    table = MemoryTable(make_config("m", hands=1, seed=42, names=("p1", "p2"), **options),
                        read_step=True)
    table.feed(0, b"VERSION:2.0.0\n")
    table.feed(1, b"VERSION:2.0.0\n")
    assert table.take(0) == ["MATCHSTATE:0:0::7d3d|"]
    [state] = table.take(1)
    assert state == "MATCHSTATE:1:0::|2hAc"
    return table, state


@pytest.mark.parametrize("reply", [
    b"r200\n", b"r300\r\n", b"r20000\n", b"c\n", b"c\r\n",
])
def test_exact_replies_are_answered_ahead(in_tmp: Path, reply: bytes) -> None:
    table, state = _at_a_raise_decision(in_tmp)
    table.feed(1, state.encode() + b":" + reply)
    assert table.sent_ahead == 1
    action = reply.strip().decode()
    assert table.take(0) == [f"MATCHSTATE:0:0:{action}:7d3d|"]
    assert table.take(1) == []


@pytest.mark.parametrize("reply", [
    b"r0300\n",  # a leading zero: not the canonical text
    b"r+300\n", b"r 300\n", b"r-300\n", b"r3e2\n", b"r\n",
    b"r199\n",  # under the smallest raise (to 200): the rules correct it
    b"r20001\n",  # over the stack: the rules correct it
    b"r1000000000\n",  # ten digits
    b"C\n", b"cc\n", b"c \n", b"c\r\r\n", b"k\n",
    b"f\n",  # it ends the match's last hand: no state follows
    b"c\nMATCHSTATE:1:0::|2hAc:c\n",  # two lines at once
    b"c",  # no end of line yet
])
def test_other_replies_take_the_usual_path_and_give_the_same_lines(in_tmp: Path, reply: bytes) -> None:
    """Nothing but an exact, canonical call or legal raise is answered ahead; the usual
    path then gives exactly what it gives without the read step."""
    outputs = []
    for read_step in (True, False):
        table, state = _at_a_raise_decision(in_tmp)
        table.read_step = read_step
        table.feed(1, state.encode() + b":" + reply)
        assert table.sent_ahead == 0
        outputs.append((table.take(0), table.take(1), table.done.called))
    assert outputs[0] == outputs[1]


def test_a_reply_over_the_line_limit_is_not_answered_ahead(in_tmp: Path) -> None:
    """A line over the seat's limit ends the match (line too long) before anything is sent."""
    table, state = _at_a_raise_decision(in_tmp, max_line=20)
    assert len(state) > 20 and table.protocols[1].ahead is not None
    table.feed(1, state + ":c\n")
    assert table.sent_ahead == 0
    assert table.take(0) == []
    assert table.done.called and "longer than 20 bytes" in table.done.result.message


def test_a_reply_with_another_echo_is_not_answered_ahead(in_tmp: Path) -> None:
    table, _ = _at_a_raise_decision(in_tmp)
    table.feed(1, b"MATCHSTATE:1:0::|2hAd:c\n")  # not the state sent
    assert table.sent_ahead == 0
    assert table.take(0) == []


def test_a_seat_found_not_reading_by_a_send_ahead_ends_the_match_as_without_it(in_tmp: Path) -> None:
    """The send made ahead of a reply that ends a hand finds its seat not reading (its
    unsent output over the limit): the match ends as it would at the match's own send,
    after the reply is played, so the hand it ended is in the .log."""
    outputs = []
    for read_step in (True, False):
        config = make_config(f"m{read_step}", hands=2, seed=42, names=("p1", "p2"))
        table = MemoryTable(config, read_step=read_step)
        table.feed(0, b"VERSION:2.0.0\n")
        table.feed(1, b"VERSION:2.0.0\n")
        table.take(0)
        [state] = table.take(1)
        table.feed(1, state + ":c\n")
        *_, state = table.take(0)
        table.feed(0, state + ":r300\n")
        *_, state = table.take(1)
        # Seat 1 acts first in hand 1, so the fold's next send is its: from now on every
        # send to it is over its limit (a StringTransport holds what it is sent).
        ahead = table.protocols[1].ahead
        assert (ahead is not None and ahead.fold_to is table.protocols[0].io) == read_step
        table.protocols[0].budget = dataclasses.replace(table.protocols[0].budget,
                                                        max_unsent_bytes=-1)
        before = table.sent_ahead
        table.feed(1, state + ":f\n")  # ends hand 0
        assert table.sent_ahead - before == read_step
        result = table.done.result
        assert "does not read what it is sent" in result.message
        hands = [line for line in Path(config.log_path).read_text().splitlines()
                 if line.startswith("STATE:")]
        outputs.append((result.exit_code, result.message, hands))
    assert outputs[0] == outputs[1]
    assert outputs[1][2] == ["STATE:0:cr300f:7d3d|2hAc:100|-100:p1|p2"]


def test_a_reply_within_a_millisecond_of_the_deadline_takes_the_usual_path(in_tmp: Path) -> None:
    """The time checks see a late reply before anything is sent for it."""
    table, state = _at_a_raise_decision(in_tmp, t_response_ms=1000)
    table.clock.advance(0.9995)
    table.feed(1, state + ":c\n")
    assert table.sent_ahead == 0
    assert table.take(0) == ["MATCHSTATE:0:0:c:7d3d|"]  # still on time: the usual path takes it


def test_a_wrong_state_made_ready_ends_the_match_as_a_dealer_error(in_tmp: Path) -> None:
    """The match checks what was sent ahead against the rules: a difference (a dealer
    bug) ends the match with the internal-error exit code, never silently."""
    table, state = _at_a_raise_decision(in_tmp)
    ahead = table.protocols[1].ahead
    assert ahead is not None and ahead.call_text == "MATCHSTATE:0:0:c:7d3d|"
    ahead.call_text = "MATCHSTATE:0:0:c:7d3d|Kh"
    table.feed(1, state + ":c\n")
    assert table.sent_ahead == 1
    result = table.done.result
    assert result.exit_code == EXIT_INTERNAL
    assert "state sent ahead" in result.message and "7d3d|Kh" in result.message


def test_nothing_is_left_ready_once_the_match_is_aborted(in_tmp: Path) -> None:
    """A timeout ends the wait: a reply that comes after it is not answered ahead."""
    table, state = _at_a_raise_decision(in_tmp, t_response_ms=1000)
    assert table.protocols[1].ahead is not None
    table.clock.advance(1.5)
    assert table.done.called
    assert [protocol.ahead for protocol in table.protocols] == [None, None]
    table.feed(1, state + ":c\n")
    assert table.sent_ahead == 0


def test_a_state_is_made_ready_without_polling_too(in_tmp: Path) -> None:
    """Without polling (--busy_poll 0, or a slow bot) the dealer sleeps until the reply, and
    the state made ready keeps the rules off the path from the reply to the next send."""
    table = MemoryTable(make_config("m", hands=1, seed=42, names=("p1", "p2")), read_step=True,
                        busy_poll=None, poll=False)
    table.feed(0, b"VERSION:2.0.0\n")
    table.feed(1, b"VERSION:2.0.0\n")
    assert table.match.busy_poll is None and table.match.playing.count == 1
    assert table.protocols[1].ahead is not None
    table.take(0)
    [state] = table.take(1)
    table.feed(1, state + ":c\n")
    assert table.sent_ahead == 1
    assert table.protocols[0].ahead is not None  # and for the next wait


def test_matches_without_polling_share_the_count_of_matches_playing(in_tmp: Path) -> None:
    """The process's matches share one count with polling off (dealer/process.py): no
    state is made ready while another match plays."""
    playing = MatchesPlaying()
    first, second = (MemoryTable(make_config(f"m{i}", hands=1, seed=42, names=("p1", "p2")),
                                 read_step=True, poll=False, playing=playing) for i in range(2))
    for table in (first, second):
        table.feed(0, b"VERSION:2.0.0\n")
        table.feed(1, b"VERSION:2.0.0\n")
    assert playing.count == 2 and first.match.busy_poll is None
    assert first.protocols[1].ahead is not None  # made ready while it played alone
    assert [p.ahead for p in second.protocols] == [None, None]


def test_no_state_is_made_ready_while_another_match_of_the_process_plays(in_tmp: Path) -> None:
    """With several matches in one process, the time a bot thinks is the other matches';
    a wait that begins while the process's last match plays alone is made ready again."""
    poll = AlwaysPoll()
    first, second = (MemoryTable(make_config(f"m{i}", hands=1 + i, seed=42, names=("p1", "p2")),
                                 read_step=True, busy_poll=poll) for i in range(2))
    first.feed(0, b"VERSION:2.0.0\n")
    first.feed(1, b"VERSION:2.0.0\n")
    assert poll.playing.count == 1 and first.protocols[1].ahead is not None  # alone: made ready
    second.feed(0, b"VERSION:2.0.0\n")
    second.feed(1, b"VERSION:2.0.0\n")
    assert poll.playing.count == 2 and [p.ahead for p in second.protocols] == [None, None]
    first.take(0)
    [state] = first.take(1)
    first.feed(1, state + ":r300\n")
    assert first.sent_ahead == 1  # made ready before the second match began
    assert [p.ahead for p in first.protocols] == [None, None]  # not now
    [state] = first.take(0)
    first.feed(0, state + ":f\n")  # the first match's only hand ends
    assert first.done.called and poll.playing.count == 1
    second.take(0)
    [state] = second.take(1)
    second.feed(1, state + ":r300\n")
    assert second.sent_ahead == 0
    assert second.protocols[0].ahead is not None  # alone again


def test_no_state_is_made_ready_with_the_trace_or_range_queries(in_tmp: Path) -> None:
    """The trace lists each line before the send it causes, and range queries share the
    connections: with either, replies take the usual path."""
    for options in ({"trace_messages": True}, {"queryable": ("p1", "p2")}):
        table = MemoryTable(make_config("m", hands=1, seed=42, names=("p1", "p2"), **options),
                            stderr=io.StringIO(), read_step=True)
        table.feed(0, b"VERSION:2.0.0\n")
        table.feed(1, b"VERSION:2.0.0\n")
        assert [protocol.ahead for protocol in table.protocols] == [None, None]


def test_a_seat_that_announces_range_queries_while_a_state_is_ready_gets_every_state_at_once(
        in_tmp: Path) -> None:
    """Seat 2 announces range queries while seat 1's reply is made ready: from then on every
    seat gets every state at once, with the read step as without it (the announcement came
    after the state was made ready, which then goes out to seat 1 as made)."""
    outputs = []
    for read_step in (True, False):
        table = MemoryTable(make_config("m", hands=2, seed=42, names=("p1", "p2")), read_step=read_step)
        table.feed(0, b"VERSION:2.0.0\n")
        table.feed(1, b"VERSION:2.0.0\n")
        table.take(0), table.take(1)
        table.feed(1, b"MATCHSTATE:1:0::|2hAc:r300\n")
        assert table.take(0) == ["MATCHSTATE:0:0:r300:7d3d|"]
        assert (table.protocols[0].ahead is not None) is read_step
        table.feed(1, b"# range-query 2\n")
        assert table.take(1) == ["MATCHSTATE:1:0:r300:|2hAc", "# range-query-version 2"]
        table.feed(0, b"MATCHSTATE:0:0:r300:7d3d|:c\n")
        assert table.sent_ahead == (2 if read_step else 0)  # the raise, and this call
        outputs.append((table.take(0), table.take(1)))
    assert outputs[0] == outputs[1] == (["MATCHSTATE:0:0:r300c/:7d3d|/5sKs7s"],
                                        ["MATCHSTATE:1:0:r300c/:|2hAc/5sKs7s"])


@pytest.fixture
def two_pairs() -> Iterator[list[tuple[socket.socket, socket.socket]]]:
    """Two loopback TCP connections: (the dealer's end, non-blocking; the bot's end) each."""
    pairs = []
    for _ in range(2):
        server = socket.create_server(("127.0.0.1", 0))
        bot = socket.create_connection(server.getsockname())
        dealer, _ = server.accept()
        server.close()
        dealer.setblocking(False)
        pairs.append((dealer, bot))
    yield pairs
    for dealer, bot in pairs:
        dealer.close()
        bot.close()


def test_the_read_step_sends_the_state_made_ready_before_the_line_is_handled(
        two_pairs: list[tuple[socket.socket, socket.socket]]) -> None:
    """On real sockets: the reply read by read_ready sends the other seat its state (with
    what was queued for it, in order), and then the line reaches the match as usual."""
    (dealer_a, bot_a), (_, _) = two_pairs
    acting, listener = _seat()
    acting.accepted = True
    other = SeatProtocol(listener, listener, 1)  # type: ignore[arg-type]
    other_transport = StringTransport()
    other.makeConnection(other_transport)
    other.accepted = True
    seatio.queue_line(other.io, "MATCHSTATE:0:0::Kh|")

    class _Clock:
        @staticmethod
        def seconds() -> float:
            return 10.0

    ahead = seatio.Ahead(b"MATCHSTATE:1:0::|Qs:", 20.0, _Clock())
    ahead.call_to, ahead.call_text = other.io, "MATCHSTATE:0:0:c:Kh|"
    acting.ahead = ahead
    sent_before_line: list[bytes] = []
    listener.seat_line = lambda seat, line: sent_before_line.append(other_transport.value())  # type: ignore[method-assign]
    bot_a.sendall(b"MATCHSTATE:1:0::|Qs:c\r\n")
    _wait_readable(dealer_a)
    seatio.read_ready(_Reactor(), _Transport(dealer_a, acting))
    assert sent_before_line == [b"MATCHSTATE:0:0::Kh|\r\nMATCHSTATE:0:0:c:Kh|\r\n"]
    assert ahead.sent_to is other.io and ahead.heard == 10.0


def _hostile_reply(line: str, state: State, rng: random.Random) -> tuple[bytes, int, float]:
    """A reply to ``line`` as a careless or hostile bot writes it: (its bytes, the size of
    the pieces it arrives in (0: at once), the seconds the bot takes first)."""
    action = rng.choice(["c", "c", "f", "r"])  # "f" and "r" also where they are not legal
    sizes = state.raise_range()
    if action == "r" and sizes is not None and not state.game.is_limit:
        low, high = sizes
        action += str(rng.choice([low, high, low - 1, high + 1, rng.randint(low, high)]))
        if rng.random() < 0.05:
            action = "r0" + action[1:]
    end = rng.choice(["\n", "\r\n", "\r\n", " \n", "\r\r\n"])
    data = f"{line}:{action}{end}".encode()
    if rng.random() < 0.05:
        data = b"# a comment first\n" + data
    if rng.random() < 0.05:
        data += b"# a comment after\n"
    wait = 0.1001 if rng.random() < 0.002 else rng.choice([0.0] * 30 + [0.05, 0.0985, 0.0999])
    return data, rng.choice([0] * 8 + [3, 7]), wait


def _play_hostile(config: MatchConfig, read_step: bool, seed: int,
                  send_states: Callable[[MatchesPlaying, BusyPoll | None], SendStates] | None = None,
                  ) -> tuple[object, ...]:
    """Play ``config`` with a hostile bot in every seat (each reply a function of the
    line it answers only); what each seat received, the .log and how the match ended.
    ``send_states``: makes the match's way of sending states (the configured one if None)."""
    table = MemoryTable(config, read_step=read_step, send_states=send_states)
    game, seats = config.game, range(len(config.names))
    for seat in seats:
        table.feed(seat, b"VERSION:2.0.0\n")
    received: list[list[str]] = [[] for _ in seats]
    while not table.done.called:
        acted = False
        for seat in seats:
            lines = table.take(seat)
            received[seat] += lines
            if lines and not table.done.called:
                view = parse_matchstate(lines[-1], game)
                state = view.to_state(game)
                if not state.finished and state.current_player == view.position:
                    rng = random.Random(f"{seed}|{lines[-1]}")
                    data, chunk, wait = _hostile_reply(lines[-1], state, rng)
                    table.clock.advance(wait)
                    if not table.done.called:
                        table.feed(seat, data, chunk)
                    acted = True
        if not acted:
            table.clock.advance(0.05)  # a comment left the seat to act: its clock runs
    for seat in seats:
        received[seat] += table.take(seat)
    result = table.done.result
    log = Path(config.log_path).read_text().splitlines()[1:]  # past the header's name
    return received, log, result.exit_code, result.message, table.sent_ahead


@pytest.mark.parametrize("game", ["nolimit", "limit", "leduc", "holdem.nolimit.3p",
                                  "holdem.limit.3p", "kuhn.limit.3p"])
def test_hostile_replies_give_what_they_give_without_the_read_step(in_tmp: Path, game: str) -> None:
    """Replies near canonical and not (sizes at and past the ends of the range, illegal
    folds, leading zeros, stray blanks and CRs, comments before and after, pieces, replies
    near the deadline and past it), two and three players: each seat receives the same
    lines, the .log is the same and the match ends the same way with the read step."""
    names = ("a", "b", "c") if game.endswith("3p") else ("a", "b")
    ahead = 0
    for seed in range(3):
        played = []
        for read_step in (True, False):
            config = make_config(f"m{read_step}", game=game, hands=40, seed=seed, names=names,
                                 t_response_ms=100, t_hand_ms=400, max_ignored=50)
            played.append(_play_hostile(config, read_step, seed))
        assert played[0][:4] == played[1][:4]
        assert played[1][4] == 0
        ahead += played[0][4]
    assert ahead > 0


def test_the_dealers_work_on_a_reply_is_not_charged_to_the_next_seat(in_tmp: Path) -> None:
    """The read step sent seat 1 its state before the reply was played; the dealer's time
    playing it (a subscriber that takes 0.25 s, as a slow disk would) is not charged to
    seat 1, as it is not without the read step: its clock starts when the dealer is done,
    the match ends the same either way (here t_hand 0.2 s would end it)."""
    outcomes = []
    for read_step in (True, False):
        config = make_config(f"m{read_step}", hands=1, seed=42, names=("p1", "p2"), t_hand_ms=200)
        table = MemoryTable(config, read_step=read_step)
        table.feed(0, b"VERSION:2.0.0\n")
        table.feed(1, b"VERSION:2.0.0\n")
        table.take(0)
        [state] = table.take(1)

        def slow_subscriber(event: Any, table: MemoryTable = table) -> None:
            table.clock.advance(0.25)

        table.match.events.subscribe(slow_subscriber)
        done_at = table.clock.seconds() + 0.25
        table.feed(1, state + ":r300\n")
        assert table.sent_ahead == read_step
        turn = table.match.policy.wait_turn
        assert turn is not None and turn.seat.index == 0 and turn.sent == done_at
        [line] = table.take(0)
        table.match.events.hooks.clear()
        table.feed(0, line + ":c\n")
        outcomes.append((table.match.seats[0].hand_time, table.done.called, table.take(0), table.take(1)))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] == 0.0 and not outcomes[0][1]



def test_the_dealer_gives_its_matches_one_count_of_matches_playing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """dealer/process.py builds every match of the process with one shared count, with busy
    polling on or off (two --match groups: no state is made ready while both play)."""
    import argparse

    from dealer import process

    built: list[dict[str, Any]] = []

    class Recorder:
        def __init__(self, config: MatchConfig, reactor: Any, **kwargs: Any) -> None:
            self.config = config
            built.append(kwargs)

        def listen(self, sockets: Any) -> list[int]:
            return [0, 0]

    class NoProgress:
        def proxy(self, stream: Any) -> Any:
            return stream

    monkeypatch.setattr(process, "Match", Recorder)
    monkeypatch.setattr(process, "port_line", lambda ports: "")
    monkeypatch.setattr(process, "event_loop_of", lambda reactor: type("Loop", (), {"call_soon": print})())
    for busy_poll in (0, 100):
        built.clear()
        options = argparse.Namespace(busy_poll=busy_poll, quiet=True, silent=False, console=False)
        groups = [[make_config(f"m{i}", hands=1, seed=i)] for i in range(2)]
        process._listen_groups(groups, [], None, options, NoProgress(), True)
        assert len(built) == 2
        playing = built[0]["playing"]
        assert built[1]["playing"] is playing and playing.count == 0, busy_poll
        poll = built[0]["busy_poll"]
        assert (poll is None) == (busy_poll == 0) and (poll is None or poll.playing is playing)


def test_a_match_counts_itself_out_when_it_ends_and_never_in_when_seating_fails(in_tmp: Path) -> None:
    """The count of matches playing goes back when a match is aborted mid-hand (a bot gone),
    and a match whose seats never fill is never counted: neither leaves the process
    thinking another match plays."""
    playing = MatchesPlaying()
    aborted = MemoryTable(make_config("a", hands=3, seed=1, names=("p1", "p2")), read_step=True,
                          poll=False, playing=playing)
    aborted.feed(0, b"VERSION:2.0.0\n")
    aborted.feed(1, b"VERSION:2.0.0\n")
    assert playing.count == 1
    aborted.transports[1].loseConnection()
    aborted.protocols[1].connectionLost(None)  # type: ignore[arg-type]
    aborted.clock.advance(1000)
    assert aborted.done.called and playing.count == 0
    unseated = MemoryTable(make_config("b", hands=3, seed=1, names=("p1", "p2"), start_timeout_ms=100),
                           read_step=True, poll=False, playing=playing)
    unseated.feed(0, b"VERSION:2.0.0\n")
    unseated.clock.advance(1)
    assert unseated.done.called and playing.count == 0


def test_a_match_refuses_a_busy_poll_that_counts_other_matches(in_tmp: Path) -> None:
    """The poll and the match must read one count, or the poll would go on polling while
    several matches play (its worth_it) and the match count itself alone."""
    from dealer.match import Match

    poll = AlwaysPoll()
    with pytest.raises(ValueError, match="count the matches playing"):
        Match(make_config("m", hands=1, seed=1), reactor=None, busy_poll=poll,
              playing=MatchesPlaying())
    assert Match(make_config("n", hands=1, seed=1), reactor=None, busy_poll=poll,
                 playing=poll.playing).playing is poll.playing


@pytest.mark.parametrize("game", ["nolimit", "limit"])
def test_a_poll_that_explores_leaves_the_play_and_the_states_made_ready_alone(
        in_tmp: Path, game: str) -> None:
    """A real busy poll exploring in small blocks (polled for, then not, in turn): every seat
    gets the reference's lines, the .log is the one without a poll, and as many replies are
    answered ahead as without one (the state is made ready whether the wait is polled for
    or not, so the exploration compares the spin alone)."""

    class Exploring(BusyPoll):
        def __init__(self) -> None:
            super().__init__(lambda _: None, 1.0, clock=lambda: 0.0, block=3,
                             explore_blocks=2, cycle_blocks=4)
            self.decisions: list[bool] = []

        def decide(self) -> bool:
            decision = super().decide()
            self.decisions.append(decision)
            return decision

    logs, sent = [], []
    for exploring in (True, False):
        config = make_config(f"m{exploring}", game=game, hands=60, seed=3)
        poll = Exploring() if exploring else None
        table = MemoryTable(config, read_step=True, busy_poll=poll, poll=exploring)
        received = _play_out(table, _example_mix(9))
        assert table.done.result.exit_code == EXIT_OK
        assert received == _reference_lines(config, _example_mix(9))
        logs.append(Path(config.log_path).read_text().splitlines()[1:])
        sent.append(table.sent_ahead)
        if poll is not None:
            assert True in poll.decisions and False in poll.decisions
    assert logs[0] == logs[1]
    assert sent[0] == sent[1] > 60
