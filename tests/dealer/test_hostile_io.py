"""Hostile bots against the dealer's own IO queries (QueryRelay.ask_all from MatchResults.after_hand).

A hand's IO queries go to the queryable opponent in one write, each with its
own t_query deadline; the first failure leaves the hand without IO. These
tests answer such a batch the way a hostile bot author would (out of order,
wrong/duplicate/unknown qids, partly, with garbage, by leaving, too late, with
a flood of comments) and check that the match ends within its limits, every
finished hand is on disk, the files give the figures the dealer reported
(``results_from_files``, what ``acpc-lbr results`` prints) and nothing raises.

Match: no-limit hold'em, seed 42, seats ``lbr`` (measured) and ``bot`` (announces
``# range-query 1``); both check/call, so every hand is a showdown with one
bot decision per round (4 IO queries per hand).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from twisted.python.failure import Failure

from acpc_lbr.runtime.exit_codes import EXIT_BOT_FAILURE, EXIT_OK
from acpc_lbr.results import dumps, results_from_files
from acpc_lbr.results.outcomes import hand_io
from acpc_lbr.results.querylog import read_query_log
from dealer.match import MatchResult
from dealer.results import ResultsGroup
from protocol.gamedef import load_game
from protocol.wire import parse_log_state
from tests.dealer.harness import MemoryTable, call_round, make_config

N = 1326
T_QUERY_MS = 500


class IoTable:
    """An in-memory match with results attached (IO on), both seats past VERSION."""

    def __init__(self, name: str = "io", hands: int = 3, **options: Any) -> None:
        options.setdefault("t_query_ms", T_QUERY_MS)
        self.name = name
        self.t = MemoryTable(make_config(name, hands=hands, seed=42, names=("lbr", "bot"), **options))
        self.group = ResultsGroup([self.t.match], measured="lbr", keep_outcomes=True)
        self.t.feed(0, "VERSION:2.0.0\r\n")
        self.t.feed(1, "VERSION:2.0.0\r\n# range-query 1\r\n")

    @property
    def done(self) -> bool:
        return bool(self.t.done.called)

    def play_until_queried(self, rounds: int = 200) -> list[str]:
        """Both seats check/call until the bot gets QUERY lines (returned); [] if the match ends first."""
        for _ in range(rounds):
            queries, moved = call_round(self.t)
            if queries:
                return queries
            if not moved:
                if self.done:
                    return []
                calls = self.t.clock.getDelayedCalls()
                assert calls, "nothing moves and nothing is scheduled: the match is stuck"
                self.t.clock.advance(min(c.getTime() for c in calls) - self.t.clock.seconds())
        raise AssertionError("no query came")

    def result(self) -> MatchResult:
        assert self.done, "the match should have ended"
        result: MatchResult = self.t.done.result
        return result

    def hands_on_disk(self) -> list[int]:
        lines = Path(f"{self.name}.log").read_text().splitlines()
        return [parse_log_state(line, self.t.match.game).hand_id for line in lines if line.startswith("STATE:")]

    def check_files_agree(self) -> dict[str, Any]:
        """Every finished hand is on disk, and the files give the dealer's own figures."""
        result = self.result()
        assert self.hands_on_disk() == list(range(result.hands_played))
        live = self.group.document([result])
        self.group.close()
        offline = results_from_files([Path(f"{self.name}.log")])
        assert dumps(offline["estimators"]) == dumps(live["estimators"])
        for key in ("hands", "showdowns", "dealer_queries", "io_fallbacks"):
            assert offline["counts"][key] == live["counts"][key], key
        return live


def qid_of(query: str) -> str:
    return query.split(":")[1]


def row(k: int) -> np.ndarray:
    """A hand-dependent row, different for each k (so a mixed-up answer changes IO)."""
    return np.where(np.arange(N) % (k + 2) == 0, 1.0, 0.125)


def answer(query: str, values: np.ndarray) -> str:
    action = query.rsplit(":", 1)[1]
    return f"RANGE:{qid_of(query)}:{action}=" + ",".join(f"{v:g}" for v in values) + "\r\n"


def expected_io(table: IoTable, hand: int, rows: list[np.ndarray]) -> float:
    game = table.t.match.game
    line = next(line for line in Path(f"{table.name}.log").read_text().splitlines()
                if line.startswith("STATE:") and parse_log_state(line, game).hand_id == hand)
    record = parse_log_state(line, game)
    return float(hand_io(game, record, record.names.index("lbr"), rows).io_chips)


# -- out of order, wrong / duplicate / unknown qids ----------------------------------


def test_a_batch_answered_in_reverse_order_gives_each_row_its_decision(in_tmp: Path) -> None:
    """Answers in reverse order are matched by qid: each hand's IO is that of the rows in decision order."""
    table = IoTable(hands=2)
    sent: list[list[np.ndarray]] = []
    while (queries := table.play_until_queried()):
        assert len(queries) == 4  # one write: the whole hand's batch at once
        rows = [row(k) for k in range(len(queries))]
        sent.append(rows)
        table.t.feed(1, "".join(answer(q, r) for q, r in reversed(list(zip(queries, rows)))))
    assert table.result().exit_code == EXIT_OK
    outcomes = table.group.results[0].outcomes
    assert [o.io_chips for o in outcomes] == [expected_io(table, h, rows) for h, rows in enumerate(sent)]
    assert all(r is not None for r in read_query_log(Path("io.queries")).rows.values())
    table.check_files_agree()


def test_unknown_duplicate_and_foreign_qids_are_dropped(in_tmp: Path) -> None:
    """Unknown qids, a second answer to a qid, and the bot's qid answered by the other seat are
    dropped and counted; the bot's first answer to each qid is the one used."""
    table = IoTable(hands=1)
    queries = table.play_until_queried()
    rows = [row(k) for k in range(len(queries))]
    first = queries[0]
    junk = ["RANGE:d99999:c=0.5\r\n", "RANGE::\r\n", "RANGE:\r\n", "RANGEERROR:nope:x\r\n",
            "RANGE:" + "q" * 5000 + ":c=1\r\n"]
    table.t.feed(0, answer(first, np.zeros(N)))  # the other seat answers the bot's qid
    table.t.feed(1, "".join(junk))
    table.t.feed(1, answer(first, rows[0]))
    table.t.feed(1, answer(first, np.full(N, 0.5)))  # duplicate
    table.t.feed(1, "".join(answer(q, r) for q, r in zip(queries[1:], rows[1:])))
    assert table.play_until_queried() == []
    assert table.result().exit_code == EXIT_OK
    relay = table.t.match.relay
    assert (relay.dropped[0], relay.dropped[1]) == (1, len(junk) + 1)
    assert relay.counts[1].answered == 4 and relay.counts[1].errors == 0
    (outcome,) = table.group.results[0].outcomes
    assert outcome.io_chips == expected_io(table, 0, rows)
    table.check_files_agree()


# -- answering part of a batch ----------------------------------------------------------


def test_one_answer_and_silence_costs_at_most_t_query_per_hand(in_tmp: Path) -> None:
    """A bot answering only the first query of each batch: the rest time out, the hands have no
    IO, the match completes, and it ends t_query after the last batch went out."""
    hands = 3
    table = IoTable(hands=hands)
    last_sent = 0.0
    batches = 0
    while (queries := table.play_until_queried()):
        batches += 1
        last_sent = table.t.clock.seconds()
        table.t.feed(1, answer(queries[0], row(0)))
    result = table.result()
    assert result.exit_code == EXIT_OK and result.hands_played == hands and batches == hands
    assert table.t.clock.seconds() - last_sent <= T_QUERY_MS / 1000 + 1e-9
    counts = table.t.match.relay.counts[1]
    assert counts.answered == hands and counts.failed == {"timeout": 3 * hands}
    part = table.group.results[0]
    assert part.tally.query_errors == hands
    assert all(o.io_chips is not None for o in part.outcomes)  # fall back to the raw value
    assert read_query_log(Path("io.queries")).rows == dict.fromkeys(range(hands))
    table.check_files_agree()


def test_a_later_failure_in_the_batch_counts_no_dealer_queries_for_the_hand(in_tmp: Path) -> None:
    """Three answers then a RANGEERROR on the last decision: the hand has no IO, and the dealer's
    dealer_queries agrees with the query log (which records no rows for the hand)."""
    table = IoTable(hands=1)
    queries = table.play_until_queried()
    table.t.feed(1, "".join(answer(q, row(k)) for k, q in enumerate(queries[:-1])))
    table.t.feed(1, f"RANGEERROR:{qid_of(queries[-1])}:no\r\n")
    assert table.play_until_queried() == []
    assert table.result().exit_code == EXIT_OK
    live = table.check_files_agree()
    assert live["counts"]["dealer_queries"] == 0


def test_garbage_mid_batch_fails_only_that_hand(in_tmp: Path) -> None:
    """A malformed answer, a junk line and a bad RANGEERROR in mid-batch: that hand has no IO,
    the other answers are still read, the next hand's batch gets IO."""
    table = IoTable(hands=2)
    queries = table.play_until_queried()
    table.t.feed(1, answer(queries[0], row(0)))
    table.t.feed(1, f"RANGE:{qid_of(queries[1])}:c=garbage,1,2\r\n")
    table.t.feed(1, "hello there\r\n" + f"RANGEERROR:{qid_of(queries[2])}\r\n")  # no qid: dropped
    table.t.feed(1, answer(queries[3], row(3)))
    relay = table.t.match.relay
    assert relay.counts[1].answered == 2 and relay.counts[1].failed == {"malformed": 1}
    assert relay.dropped[1] == 1
    second = table.play_until_queried()
    rows = [row(k) for k in range(len(second))]
    table.t.feed(1, "".join(answer(q, r) for q, r in zip(second, rows)))
    assert table.play_until_queried() == []
    assert table.result().exit_code == EXIT_OK
    assert relay.counts[1].failed == {"malformed": 1, "timeout": 1}  # queries[2], never answered
    _, last = table.group.results[0].outcomes
    assert read_query_log(Path("io.queries")).rows[0] is None
    assert last.io_chips == expected_io(table, 1, rows)
    table.check_files_agree()


def test_an_oversized_line_mid_batch_ends_the_match_charged_to_the_bot(in_tmp: Path) -> None:
    """A line over the queryable seat's 1 MiB limit in mid-batch: the match ends at once, charged
    to the bot; the finished hand is on disk and the files agree with the dealer."""
    table = IoTable(hands=3)
    queries = table.play_until_queried()
    table.t.feed(1, answer(queries[0], row(0)))
    table.t.feed(1, b"RANGE:" + qid_of(queries[1]).encode() + b":c=" + b"1," * (1 << 19) + b"1\r\n")
    result = table.result()
    assert (result.exit_code, result.seat) == (EXIT_BOT_FAILURE, 1)
    assert result.hands_played >= 1
    table.check_files_agree()


def test_disconnect_mid_batch_ends_the_match_at_once(in_tmp: Path) -> None:
    """The bot answers one query of the batch and leaves: the match ends without waiting t_query."""
    table = IoTable(hands=3)
    queries = table.play_until_queried()
    table.t.feed(1, answer(queries[0], row(0)))
    now = table.t.clock.seconds()
    table.t.protocols[1].connectionLost(Failure(ConnectionError("gone")))
    result = table.result()
    assert result.cause == "disconnect" and table.t.clock.seconds() == now
    assert table.group.results[0].tally.query_errors == 1
    table.check_files_agree()


def test_answers_after_the_match_ended_are_dropped(in_tmp: Path) -> None:
    """The last hand's batch times out and the match ends; the answers that come after change nothing."""
    table = IoTable(hands=1)
    queries = table.play_until_queried()
    assert table.play_until_queried() == []  # the clock runs to the deadlines
    result = table.result()
    assert result.exit_code == EXIT_OK
    before = table.check_files_agree()
    table.t.feed(1, "".join(answer(q, row(0)) for q in queries) + "QUERY:x:1:0::|:c\r\n")
    assert table.t.match.relay.counts[1].answered == 0
    assert table.group.document([result])["counts"] == before["counts"]


def test_comments_between_answers_within_the_budget_are_skipped(in_tmp: Path) -> None:
    """Comment lines between the answers of a batch (hand 1 is already dealt and the bot is to act
    in it, so they count against --max_ignored 100): within it, the batch is still read, the
    hand gets its IO, the match completes."""
    table = IoTable(hands=2)
    queries = table.play_until_queried()
    rows = [row(k) for k in range(len(queries))]
    flood = "# " + "z" * 60 + "\r\n"
    for q, r in zip(queries, rows):
        table.t.feed(1, flood * 20 + answer(q, r))
    while (queries := table.play_until_queried()):
        table.t.feed(1, "".join(answer(q, row(k)) for k, q in enumerate(queries)))
    result = table.result()
    assert result.exit_code == EXIT_OK, result.message
    assert table.group.results[0].outcomes[0].io_chips == expected_io(table, 0, rows)
    table.check_files_agree()


def test_a_comment_flood_mid_batch_ends_the_match_charged_to_the_bot(in_tmp: Path) -> None:
    """100,000 comment lines in mid-batch (hand 1 dealt, the bot to act): the match ends at the
    101st, charged to the bot (--max_ignored); the finished hand is on disk, the files agree."""
    table = IoTable(hands=3)
    queries = table.play_until_queried()
    table.t.feed(1, answer(queries[0], row(0)) + ("# " + "z" * 60 + "\r\n") * 100_000)
    result = table.result()
    assert (result.cause, result.seat) == ("garbage", 1)
    assert "(limit --max_ignored 100; last: a comment line)" in (result.message or "")
    assert table.group.results[0].tally.query_errors == 1  # the rest of the batch: "the match is over"
    table.check_files_agree()


def test_a_comment_flood_in_the_last_hands_batch_is_charged_to_the_bot(in_tmp: Path) -> None:
    table = IoTable(hands=1)
    queries = table.play_until_queried()
    table.t.feed(1, answer(queries[0], row(0)) + ("# " + "z" * 60 + "\r\n") * 100_000)
    table.play_until_queried()
    result = table.result()
    assert (result.cause, result.seat) == ("over_budget", 1)


def test_leaving_during_the_last_hands_batch_still_completes_the_match(in_tmp: Path) -> None:
    """Bots close after the last state; that costs the last hand's IO, not the match."""
    table = IoTable(hands=1)
    table.play_until_queried()
    table.t.protocols[1].connectionLost(Failure(ConnectionError("gone")))
    table.play_until_queried()
    result = table.result()
    assert (result.completed, result.exit_code, result.hands_played) == (True, EXIT_OK, 1)
    assert table.hands_on_disk() == [0]


def test_a_hostile_bot_leaves_the_other_match_untouched(in_tmp: Path) -> None:
    """Two matches side by side: one bot floods mid-batch (its match ends at its budget of
    unusable lines a hand) and leaves; the other match's hands, IO and files are those of the
    same match played alone."""
    def honest(name: str, other: IoTable | None) -> IoTable:
        table = IoTable(name=name, hands=3)
        while (queries := table.play_until_queried()):
            if other is not None and not other.done:  # interleave the attack
                other.t.feed(1, "RANGE:zz:c=1\r\n" * 1000)
                other.t.protocols[1].connectionLost(Failure(ConnectionError("gone")))
            table.t.feed(1, "".join(answer(q, row(k)) for k, q in enumerate(queries)))
        return table

    alone = honest("alone", None)
    hostile = IoTable(name="hostile", hands=3)
    hostile.play_until_queried()
    beside = honest("beside", hostile)
    assert hostile.result().cause == "over_budget"
    assert beside.result().exit_code == EXIT_OK
    assert beside.check_files_agree() == alone.check_files_agree() | {
        "config": beside.group.document([beside.result()])["config"],
        "timings": beside.group.document([beside.result()])["timings"]}
    hostile.check_files_agree()


# -- a real dealer on uvloop: signals mid-match -------------------------------------------------

ACPC_LBR = Path(sys.executable).parent / "acpc-lbr"
BOT = """
import socket, sys
sys.path.insert(0, {root!r})
from protocol.gamedef import load_game
from protocol.wire import parse_matchstate
game = load_game("nolimit")
sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
sock.sendall(b"VERSION:2.0.0\\r\\n# range-query 1\\r\\n")
for raw in sock.makefile("rb"):
    line = raw.decode("ascii").rstrip("\\r\\n")
    if not line.startswith("MATCHSTATE:"):
        continue  # queries: never answered
    view = parse_matchstate(line, game)
    state = view.to_state(game)
    if not state.finished and state.current_player == view.position:
        sock.sendall((line + ":c\\r\\n").encode())
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_mid_match_on_uvloop_ends_cleanly_with_the_logs_flushed(tmp_path: Path, signum: int) -> None:
    """SIGTERM/SIGINT while hands are played and IO queries are out (uvloop): exit 4, no traceback,
    every hand in the .log complete and in the query log's order."""
    root = str(Path(__file__).resolve().parents[2])
    (tmp_path / "bot.py").write_text(BOT.format(root=root))
    env = {**os.environ, "ACPC_LBR_EVENT_LOOP": "uvloop"}
    dealer = subprocess.Popen([str(ACPC_LBR), "dealer", "m", "nolimit", "100000", "1", "a", "b", "-q",
                               "--t_query", "200"],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert dealer.stdout is not None
    first = dealer.stdout.readline()
    assert re.fullmatch(r"\d+ \d+\n", first), first
    bots = [subprocess.Popen([sys.executable, str(tmp_path / "bot.py"), port], cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for port in first.split()]
    try:
        deadline = time.monotonic() + 30
        log = tmp_path / "m.log"
        while time.monotonic() < deadline and (not log.exists() or log.read_text().count("STATE:") < 3):
            time.sleep(0.1)
        dealer.send_signal(signum)
        out, err = dealer.communicate(timeout=60)
    finally:
        for bot in bots:
            bot.kill()
            bot.wait()
    assert dealer.returncode == 4, err
    assert "Traceback" not in err, err
    assert "ERROR: the dealer was stopped" in err + out
    game_lines = log.read_text().splitlines()
    assert game_lines[-1].startswith("SCORE:"), game_lines[-3:]
    game = load_game("nolimit")
    hands = [parse_log_state(line, game) for line in game_lines if line.startswith("STATE:")]
    assert [h.hand_id for h in hands] == list(range(len(hands))) and len(hands) >= 3
    queries = (tmp_path / "m.queries").read_text()
    assert queries.endswith("\n")
    logged = sorted(read_query_log(tmp_path / "m.queries").rows)
    assert logged == list(range(len(logged))) and len(logged) <= len(hands)


def test_hands_without_rows_do_not_load_the_compute_core(in_tmp: Path) -> None:
    """Only a showdown with the opponent's rows reads the equity function (numba: about half a
    second of the dealer's one thread to load, once). Before, every hand the dealer could ask made
    it: a bot slow on every query (issue 33's slow_query, beside an honest match) had the process
    load the compute core for hands whose queries had all timed out."""
    table = IoTable(hands=3)
    accountant = table.group.results[0].accountant
    for _ in range(2):  # two hands, every query left to time out
        assert table.play_until_queried()
    assert table.t.match.relay.counts[1].failed.get("timeout", 0) >= 1
    assert accountant.equity is None
    queries = table.play_until_queried()
    rows = [row(k) for k in range(len(queries))]
    table.t.feed(1, "".join(answer(q, r) for q, r in zip(queries, rows)))
    assert table.play_until_queried() == []
    assert table.result().exit_code == EXIT_OK
    assert accountant.equity is not None  # the answered hand read it
    assert table.group.results[0].outcomes[-1].io_chips == expected_io(table, 2, rows)
