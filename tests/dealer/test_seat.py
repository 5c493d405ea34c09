"""SeatProtocol's framing: the same lines, limits and pauses as Twisted's LineReceiver."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.internet.testing import StringTransport
from twisted.protocols.basic import LineReceiver

from dealer.seat import SeatProtocol
from tests.work import Work, source_module, work_of


class _Recorder:
    """What a framing produced: ('line', bytes) and ('too long', bytes) in order."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, bytes]] = []


class _Admit:
    """A listener that seats every connection (the lines themselves are recorded)."""

    def candidate(self, protocol: SeatProtocol) -> bool:
        return True


class _Handlers:
    """The same line handlers on both framings, so that only the framing differs."""

    record: _Recorder

    def lineReceived(self, line: bytes) -> None:
        self.record.seen.append(("line", line))
        if line == b"feed":  # a handler that feeds data in (as a resume does)
            self.dataReceived(b"fed\nhalf")  # type: ignore[attr-defined]  # the framing's own

    def lineLengthExceeded(self, line: bytes) -> None:
        self.record.seen.append(("too long", line))


class _Seat(_Handlers, SeatProtocol):
    def __init__(self, limit: int) -> None:
        SeatProtocol.__init__(self, _Admit(), None, 0, limit)  # type: ignore[arg-type]  # only candidate is called
        self.record = _Recorder()


class _Twisted(_Handlers, LineReceiver):
    delimiter = b"\n"

    def __init__(self, limit: int) -> None:
        self.MAX_LENGTH = limit
        self.record = _Recorder()


def _run(protocol: Any, steps: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    protocol.makeConnection(StringTransport())
    for kind, data in steps:
        if kind == "data":
            protocol.dataReceived(data)
        elif kind == "pause":
            protocol.paused = True
        else:
            protocol.paused = False
            protocol.dataReceived(b"")
    seen: list[tuple[str, bytes]] = protocol.record.seen
    return seen


_steps = st.lists(
    st.one_of(
        st.tuples(st.just("data"), st.binary(max_size=40).map(lambda b: b.replace(b"\x00", b"\n"))),
        st.tuples(st.just("data"), st.just(b"feed\n")),
        st.tuples(st.just("pause"), st.just(b"")),
        st.tuples(st.just("resume"), st.just(b"")),
    ),
    max_size=25,
)


@settings(max_examples=400, deadline=None)
@given(_steps, st.integers(min_value=1, max_value=12))
def test_framing_matches_line_receiver(steps: list[tuple[str, bytes]], limit: int) -> None:
    """Any data in any chunks, with pauses and data fed in from a handler: the same lines
    and overlong lines, in order."""
    assert _run(_Seat(limit), steps) == _run(_Twisted(limit), steps)


def test_many_lines_in_one_chunk_are_split_in_order() -> None:
    """A chunk of many lines (a pipelining bot): every line, in order, and the partial rest kept."""
    seat = _Seat(4096)
    seat.makeConnection(StringTransport())
    lines = [f"MATCHSTATE:0:{i}::|:c".encode() for i in range(5000)]
    seat.dataReceived(b"\r\n".join(lines) + b"\r\nMATCH")
    assert seat.record.seen == [("line", line + b"\r") for line in lines[:-1]] + [("line", lines[-1] + b"\r")]
    seat.dataReceived(b"STATE\n")
    assert seat.record.seen[-1] == ("line", b"MATCHSTATE")


def test_lines_skip_the_python_call_only_when_line_received_is_the_seats_own() -> None:
    """The framing hands lines to ``seatio.line_received`` itself only for a class whose
    ``lineReceived`` is SeatProtocol's; a subclass that overrides it still gets every line."""
    assert SeatProtocol.direct_lines and not _Seat.direct_lines

    class Plain(SeatProtocol):
        pass

    assert Plain.direct_lines
    seat = _Seat(4096)
    seat.makeConnection(StringTransport())
    seat.dataReceived(b"one\n")
    assert seat.record.seen == [("line", b"one")]


class _SourceSeat(_Seat):
    """A seat framed by ``dealer/seatio.py`` run from its source, whose steps can be counted
    (the compiled build runs it as machine code: tests/work.py)."""

    def dataReceived(self, data: bytes) -> None:
        source_module("dealer.seatio").data_received(self.io, data)


def _drip(size: int, piece: int, join_each_read: bool = False) -> Work:
    """The work of framing one ``size``-byte line sent in ``piece``-byte reads (steps and
    allocated bytes, counted: tests/work.py). ``join_each_read`` joins what came so far
    before each read, as the framer once did: the quadratic twin of the check below."""
    seat = _SourceSeat(1 << 20)
    chunk = b"x" * piece

    def drip() -> None:
        seat.record = _Recorder()
        seat.makeConnection(StringTransport())
        so_far = b""
        for _ in range(size // piece):
            if join_each_read:
                so_far += chunk
            seat.dataReceived(chunk)
        seat.dataReceived(b"\n")

    work = work_of(drip)  # counted in a forked child: what it framed stays there
    drip()
    assert seat.record.seen == [("line", b"x" * (size // piece * piece))]
    return work


#: A line 8 times as long may cost at most 3 x 8 times the steps and bytes; a line copied on
#: each read costs about 8 x 8 times (the framer once did: seconds of the dealer's CPU for
#: one line of 1 MiB dripped 16 bytes at a time).
_FACTOR, _SMALL, _PIECE = 8, 1 << 12, 16


def test_a_line_sent_in_small_pieces_is_framed_in_linear_time() -> None:
    """A bot may drip a long line (up to 1 MiB once it answers range queries) a few bytes a
    read: each read must cost its own bytes, not the whole line again."""
    small, large = _drip(_SMALL, _PIECE), _drip(_FACTOR * _SMALL, _PIECE)
    assert large.within(small, _FACTOR), (small, large)


def test_the_linear_time_budget_catches_a_quadratic_framer() -> None:
    """The same budget refuses framing that copies the line on every read (so the test
    above can fail)."""
    small = _drip(_SMALL, _PIECE, join_each_read=True)
    large = _drip(_FACTOR * _SMALL, _PIECE, join_each_read=True)
    assert not large.within(small, _FACTOR), (small, large)
