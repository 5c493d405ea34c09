"""A table's two matches on the real dealer, over loopback: the baseline follows the person.

The person's seat is driven directly (``HumanSeat.act``), the bots are the
built-in ones in this process; every wait is bounded.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest_twisted
from twisted.internet import reactor, task

from acpc_lbr.app.table.offers import games_offered, players_offered
from acpc_lbr.app.table.session import Status, TableSession, TableSpec

NOLIMIT = "holdem.nolimit.2p.reverse_blinds"


async def _until(test: Callable[[], bool], seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not test():
        assert time.monotonic() < deadline, "timed out"
        await task.deferLater(reactor, 0.005, lambda: None)


def _session(tmp_path: Path, baseline: str | None) -> TableSession:
    players = players_offered([], [])
    spec = TableSpec(games_offered([], tmp_path)[NOLIMIT], players["always-call"],
                     players[baseline] if baseline else None, hands=50, seed=3, action_seconds=5.0)
    session = TableSession(1, spec, reactor, tmp_path, lambda: None)  # type: ignore[arg-type]
    session.start()
    return session


async def _play(session: TableSession, hands: int) -> None:
    """Check or call at every decision until ``hands`` hands are finished."""
    seat = session.seat
    while len(seat.log.hands) < hands:
        await _until(lambda: seat.decision is not None or len(seat.log.hands) >= hands)
        if seat.decision is not None and len(seat.log.hands) < hands:
            seat.act(seat.decision.hand, seat.decision.betting, "c", None)


def _states(path: Path) -> list[str]:
    return [line.split(":")[1] for line in path.read_text().splitlines() if line.startswith("STATE:")]


@pytest_twisted.ensureDeferred
async def test_leaving_early_leaves_two_logs_of_the_same_hands(tmp_path: Path) -> None:
    """The person leaves after some hands: both logs hold those hands, then the reason and a SCORE."""
    session = _session(tmp_path, "always-raise")
    await _play(session, 3)
    session.leave()
    await _until(lambda: session.status is Status.OVER)
    person = Path(session.name + ".log")
    baseline = Path(session.name + ".baseline.log")
    played = _states(person)
    assert len(played) >= 3 and _states(baseline) == played
    assert person.read_text().splitlines()[-2] == "# ERROR: the person left the table"
    assert baseline.read_text().splitlines()[-1].startswith("SCORE:")
    shown = session.snapshot()
    assert shown["played"] == len(played)
    assert shown["result"]["you"]["n"] == shown["result"]["baseline"]["n"] == shown["result"]["difference"]["n"]
    assert "ended after" in shown["message"]


def test_session_result_shows_the_documents_interval() -> None:
    """The table's result rows show the printed 95% interval a results document gives the same hands."""
    from acpc_lbr.app.table.session import mbb
    from acpc_lbr.estimators import estimator_figures
    from acpc_lbr.stats import RunningMean

    stat = RunningMean()
    stat.add_many([0.0] * 30 + [-2.0] * 6 + [40.0] * 4)
    shown = mbb(stat, 2)
    document = estimator_figures(stat, 2)["mbb_per_game"]
    assert (shown["low"], shown["high"]) == (document["low_95"], document["high_95"])
    assert shown["high"] - shown["mean"] != shown["mean"] - shown["low"]  # skewed: not mean ± a half-width
    one = RunningMean()
    one.add(1.0)
    assert mbb(one, 2)["low"] is None


@pytest_twisted.ensureDeferred
async def test_leaving_before_the_first_hand_ends_starts_no_baseline(tmp_path: Path) -> None:
    """Leaving during hand 0: the baseline's match never starts (no log), the table is over."""
    session = _session(tmp_path, "always-raise")
    await _until(lambda: session.seat.decision is not None)
    session.leave()
    await _until(lambda: session.status is Status.OVER)
    assert _states(Path(session.name + ".log")) == []
    assert not Path(session.name + ".baseline.log").exists()


@pytest_twisted.ensureDeferred
async def test_no_baseline_plays_one_match(tmp_path: Path) -> None:
    """Without a baseline there is one match, and the page's baseline lines stay empty."""
    session = _session(tmp_path, None)
    await _play(session, 2)
    session.leave()
    await _until(lambda: session.status is Status.OVER)
    assert session.base_match is None and not Path(session.name + ".baseline.log").exists()
    assert session.snapshot()["result"]["baseline"]["n"] == 0
