"""The writers alone (dealer/writers.py): the .log and .tlog through an in-memory opener."""

from __future__ import annotations

from pathlib import Path

import pytest

from dealer.config import MatchAborted
from dealer.events import Cause, WriteFailed
from dealer.writers import MatchWriters, parse_tlog_line
from protocol.deal import DealSource
from protocol.rules import Action, State
from protocol.wire import log_header
from tests.dealer.harness import make_config
from tests.dealer.parts import MemoryOpener, Parts


def _writers(opener: MemoryOpener, **options: object) -> tuple[MatchWriters, Parts]:
    config = make_config("w", hands=3, seed=7, names=("alice", "bob"), **options)
    parts = Parts(config)
    return MatchWriters(config, opener, parts.trace, parts.events), parts


def test_the_log_has_the_header_each_hand_and_the_score() -> None:
    """The .log: the reference's header, a STATE line per hand (names in position order),
    then the ending's lines; every hand is on 'disk' once written."""
    opener = MemoryOpener()
    writers, parts = _writers(opener)
    writers.open()
    config = parts.config
    header = log_header("w", "nolimit", 3, 7, config.t_response_ms, config.t_hand_ms, config.t_per_hand_ms)
    assert opener.text("w.log") == "".join(line + "\n" for line in header)
    game = config.game
    state, deal = State(game, 1), DealSource(7).deal(game)
    state.apply(Action.FOLD)
    writers.write_hand(state, deal, state.values(deal.hole, deal.board_cards), [1, 0])
    last = opener.text("w.log").splitlines()[-1]
    assert last.startswith("STATE:1:f:") and last.endswith(":50|-50:bob|alice"), last
    writers.write_error("seat 2 (bob) disconnected")
    writers.write_score("SCORE:-50|50:alice|bob")
    assert writers.close() is None
    assert opener.text("w.log").splitlines()[-2:] == ["# ERROR: seat 2 (bob) disconnected",
                                                      "SCORE:-50|50:alice|bob"]


def test_the_tlog_has_one_line_per_action_and_reads_back() -> None:
    """Each action is one .tlog line (action, hand, sent, received); read_tlog_line reads it."""
    opener = MemoryOpener()
    writers, parts = _writers(opener, write_tlog=True)
    writers.open()
    writers.write_action("r300", 0, 1.5, 1.75)
    writers.write_action("c", 0, 2.0, 2.0000005)
    writers.close()
    lines = opener.text("w.tlog").splitlines(keepends=True)
    assert lines == ["r300 0 1.500000 1.750000\n", "c 0 2.000000 2.000001\n"]
    assert parse_tlog_line(lines[0], parts.config.game) == (Action.raise_to(300), 0, 1.5, 1.75)
    with pytest.raises(ValueError):
        parse_tlog_line("c 0 1.0\n", parts.config.game)


def test_a_log_that_cannot_be_opened_is_a_startup_failure() -> None:
    """An opener that fails makes open() raise MatchAborted(startup, exit 1), naming the file."""
    def failing(path: Path, append: bool) -> object:
        raise WriteFailed(path, OSError(28, "No space left on device"))

    writers, _ = _writers(MemoryOpener())
    writers.opener = failing  # type: ignore[assignment]
    with pytest.raises(MatchAborted) as raised:
        writers.open()
    assert raised.value.cause is Cause.STARTUP and raised.value.exit_code == 1
    assert "w.log" in raised.value.message


def test_resume_reads_the_logged_hands_and_the_tlog(in_tmp: Path) -> None:
    """read_resume finds the hands in the .log and every whole .tlog line (a cut one is left)."""
    Path("w.log").write_text("# header\nSTATE:0:f:Td4d|As9d:-50|50:a|b\nSTATE:1:f:x|y:50|-50:b|a\n")
    Path("w.tlog").write_text("f 0 1.0 1.5\nf 1 2.0 2.5\nc 2 3.0")
    writers, parts = _writers(MemoryOpener(), resume=True)
    logged, records = writers.read_resume(parts.config.game)
    assert logged == {0, 1}
    assert records == [(Action.FOLD, 0, 1.0, 1.5), (Action.FOLD, 1, 2.0, 2.5)]
    Path("w.tlog").write_text("f 0 1.0 1.5\nzz 1 2.0 2.5\n")
    with pytest.raises(MatchAborted) as raised:
        writers.read_resume(parts.config.game)
    assert raised.value.message.startswith("w.tlog:2: ")
