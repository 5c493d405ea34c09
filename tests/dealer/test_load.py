"""Bounded load: many concurrent matches in one dealer process all finish with correct logs."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest_twisted
from twisted.internet import defer
from twisted.protocols.basic import LineReceiver

from protocol.deal import DealSource
from protocol.gamedef import load_game
from protocol.wire import parse_log_state, parse_score
from tests.dealer.bots import connect

ACPC_LBR = Path(sys.executable).parent / "acpc-lbr"


class FastCaller(LineReceiver):
    """Always call, for heads-up reverse-blinds hold'em, without parsing the state.

    With only calls the turn follows from the betting: the button (position 1)
    opens preflop, position 0 every later round.
    """

    delimiter = b"\n"

    def __init__(self) -> None:
        self.closed: defer.Deferred[None] = defer.Deferred()

    def connectionMade(self) -> None:
        assert self.transport is not None
        self.transport.write(b"VERSION:2.0.0\r\n")

    def lineReceived(self, line: bytes) -> None:
        line = line.rstrip(b"\r")
        _, position, _, betting, _ = line.split(b":", 4)
        rounds = betting.split(b"/")
        done = len(rounds[-1])
        if len(rounds) == 4 and done == 2:
            return
        if ((1 if len(rounds) == 1 else 0) + done) % 2 == int(position):
            assert self.transport is not None
            self.transport.write(line + b":c\r\n")

    def connectionLost(self, reason: object = None) -> None:
        self.closed.callback(None)


async def run_load(tmp_path: Path, matches: int, hands: int) -> float:
    """Run ``matches`` matches of ``hands`` hands in one dealer subprocess; check every log."""
    from twisted.internet import reactor

    games = ["nolimit", "limit"]
    lines = [f"m{i} {games[i % 2]} {hands} {100 + i} a{i} b{i}" for i in range(matches)]
    (tmp_path / "matches.txt").write_text("# load test\n" + "\n".join(lines) + "\n")
    # Starting the dealer blocks the reactor for a moment; nothing else runs yet.
    err = open(tmp_path / "dealer.err", "w")  # noqa: SIM115, ASYNC230
    dealer = subprocess.Popen(  # noqa: ASYNC220
        [str(ACPC_LBR), "dealer", "--matches", "matches.txt", "-q", "--no_events"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=err, text=True,
    )
    assert dealer.stdout is not None
    port_lines = [dealer.stdout.readline().split() for _ in range(matches)]
    start = time.perf_counter()
    bots = [FastCaller() for _ in range(2 * matches)]
    for bot, port in zip(bots, (int(p) for ports in port_lines for p in ports)):
        await connect(reactor, port, bot)
    await defer.gatherResults([bot.closed for bot in bots])
    elapsed = time.perf_counter() - start
    for _ in range(200):
        if dealer.poll() is not None:
            break
        await deferLater(0.05)
    out = dealer.communicate(timeout=60)[0]
    assert dealer.returncode == 0
    for i in range(matches):
        game = load_game(games[i % 2])
        deals = DealSource(100 + i)
        log = (tmp_path / f"m{i}.log").read_text().splitlines()
        states = [parse_log_state(line, game) for line in log if line.startswith("STATE:")]
        assert len(states) == hands
        totals = {f"a{i}": 0.0, f"b{i}": 0.0}
        for hand_id, state in enumerate(states):
            deal = deals.deal(game)
            assert state.hand_id == hand_id
            assert (state.hole, state.board) == (deal.hole, deal.board)
            assert "".join(a.text() for r in state.betting for a in r) == "cccccccc"
            for name, value in zip(state.names, state.values):
                totals[name] += value
        score = parse_score(log[-1])
        assert score.totals == (totals[f"a{i}"], totals[f"b{i}"])
        assert f"m{i} {log[-1]}" in out
    return elapsed


def deferLater(seconds: float) -> defer.Deferred[None]:
    from twisted.internet import reactor, task

    return task.deferLater(reactor, seconds)


@pytest_twisted.ensureDeferred
async def test_four_concurrent_matches(tmp_path: Path) -> None:
    """CI-sized load: 4 concurrent matches of 200 hands in one dealer process."""
    await run_load(tmp_path, matches=4, hands=200)


@pytest_twisted.ensureDeferred
async def test_sixteen_concurrent_matches_of_1000_hands(tmp_path: Path) -> None:
    """16 concurrent matches of 1,000 hands each in one dealer process finish with correct logs.

    About 15 s here (2 shared cores), so it is not marked slow.
    """
    elapsed = await run_load(tmp_path, matches=16, hands=1000)
    assert elapsed < 300
