"""The real ``acpc-lbr dealer`` command in a subprocess, with bots in subprocesses."""

from __future__ import annotations

import json
import math
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from acpc_lbr.estimators import estimator_figures
from acpc_lbr.stats import RunningMean
from protocol.gamedef import load_game
from protocol.wire import parse_log_state, parse_score
from tests.dealer.bots import REFERENCE, reference_lines

ACPC_LBR = Path(sys.executable).parent / "acpc-lbr"
SOCKET_BOT = Path(__file__).with_name("socket_bot.py")
TIMEOUT = 120


def start_dealer(args: list[str], cwd: Path) -> tuple[subprocess.Popen[str], list[list[int]]]:
    """Start the dealer; return it and its port lines (one per match)."""
    stderr = open(cwd / "dealer.err", "w")  # noqa: SIM115 (the dealer subprocess holds it)
    proc = subprocess.Popen([str(ACPC_LBR), "dealer", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=stderr, text=True)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert re.fullmatch(r"\d+( \d+)+\n", first), first
    lines = [first]
    matches = len([a for a in args if a == "--match"]) + (1 if not args[0].startswith("-") else 0)
    for _ in range(matches - 1):
        lines.append(proc.stdout.readline())
    return proc, [[int(p) for p in line.split()] for line in lines]


def start_bot(port: int, game: str, *extra: str) -> subprocess.Popen[bytes]:
    """A socket bot subprocess on 127.0.0.1:``port``."""
    return subprocess.Popen([sys.executable, str(SOCKET_BOT), "127.0.0.1", str(port), game, *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def finish(proc: subprocess.Popen[str], bots: list[subprocess.Popen[bytes]]) -> tuple[int, str]:
    """Wait for the dealer and the bots; return the dealer's exit code and stdout rest."""
    out, _ = proc.communicate(timeout=TIMEOUT)
    for bot in bots:
        bot.wait(timeout=TIMEOUT)
    return proc.returncode, out


@pytest.mark.parametrize(("name", "game", "busy_poll"),
                         [("nl1000", "holdem.nolimit.2p.reverse_blinds.game", "100"),
                          ("nl1000", "holdem.nolimit.2p.reverse_blinds.game", "0"),
                          ("lim1000", "holdem.limit.2p.reverse_blinds.game", "1000")])
def test_cli_replays_reference_match_byte_for_byte(tmp_path: Path, name: str, game: str,
                                                   busy_poll: str) -> None:
    """`acpc-lbr dealer` with bots replaying a reference log writes that .log exactly
    (busy polling on, the default, or off)."""
    reference = REFERENCE / "logs" / f"{name}.log"
    proc, [ports] = start_dealer([name, game, "1000", "42", "p1", "p2", "-q",
                                  "--busy_poll", busy_poll], tmp_path)
    bots = [start_bot(port, game, "--replay", str(reference)) for port in ports]
    code, out = finish(proc, bots)
    assert code == 0
    assert reference_lines(tmp_path / f"{name}.log") == reference_lines(reference)
    assert (tmp_path / f"{name}.log").read_text() == reference.read_text()
    assert out.strip().splitlines()[-1] == reference_lines(reference)[-1]


def test_cli_killed_dealer_resumes_to_the_same_score(tmp_path: Path) -> None:
    """A dealer killed (SIGKILL) midway and rerun with -a -T ends with the reference's SCORE."""
    reference = REFERENCE / "logs" / "nl1000.log"
    game = "holdem.nolimit.2p.reverse_blinds.game"
    args = ["nl1000", game, "1000", "42", "p1", "p2", "-q", "-T"]
    proc, [ports] = start_dealer(args, tmp_path)
    bots = [start_bot(port, game, "--replay", str(reference)) for port in ports]
    log = tmp_path / "nl1000.log"
    deadline = time.monotonic() + TIMEOUT
    while not log.exists() or log.read_text().count("STATE:") < 300:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.02)
    proc.kill()
    proc.wait(timeout=TIMEOUT)
    for bot in bots:
        bot.wait(timeout=TIMEOUT)
    logged = log.read_text().count("STATE:")
    assert 300 <= logged < 1000
    proc, [ports] = start_dealer([*args, "-a"], tmp_path)
    bots = [start_bot(port, game, "--replay", str(reference)) for port in ports]
    code, out = finish(proc, bots)
    assert code == 0
    assert reference_lines(log) == reference_lines(reference)  # every hand once, in order
    assert out.strip().splitlines()[-1] == reference_lines(reference)[-1]
    assert log.read_text().count("# name/game/hands/seed") == 2


def test_cli_game_path_is_recorded_as_typed(tmp_path: Path) -> None:
    """A game given as a path loads, and the header shows the path as typed."""
    game = str(REFERENCE / "games" / "holdem.limit.2p.reverse_blinds.game")
    proc, [ports] = start_dealer(["lim", game, "20", "1", "a", "b", "-q"], tmp_path)
    code, _ = finish(proc, [start_bot(port, "limit") for port in ports])
    assert code == 0
    assert (tmp_path / "lim.log").read_text().splitlines()[0] == f"# name/game/hands/seed lim {game} 20 1"


def test_cli_bot_failure_exit_code(tmp_path: Path) -> None:
    """A bot that leaves mid-match: exit 3, the message names the seat, finished hands and SCORE kept."""
    proc, [ports] = start_dealer(["m", "nolimit", "50", "3", "a", "b"], tmp_path)
    bots = [start_bot(ports[0], "nolimit"), start_bot(ports[1], "nolimit", "--close-at", "7")]
    code, out = finish(proc, bots)
    assert code == 3
    lines = (tmp_path / "m.log").read_text().splitlines()
    assert sum(line.startswith("STATE:") for line in lines) == 7
    assert lines[-2].startswith("# ERROR: seat 2 (b) disconnected")
    assert out.strip().splitlines()[-1] == lines[-1]
    assert "ERROR: seat 2 (b) disconnected" in (tmp_path / "dealer.err").read_text()


def test_cli_usage_errors_exit_1(tmp_path: Path) -> None:
    """Too few arguments or an unknown game: usage on stdout and exit 1, as the reference."""
    for args in (["m", "nolimit", "10"], ["m", "no-such-game", "10", "1", "a", "b"],
                 ["m", "nolimit", "0", "1", "a", "b"],
                 ["m", "nolimit", "10", "1", "a", "b", "--busy_poll", "-1"],
                 ["m", "nolimit", "10", "1", "a", "b", "--busy_poll", "1001"],
                 ["m", "nolimit", "10", "1", "a", "b", "-p", "99999"],
                 ["m", "nolimit", "10", "1", "a", "b", "-p", "0,-1"],
                 ["m", "nolimit", "10", "1", "a", "b", "--metrics-port", "65536"],
                 ["m", "nolimit", "10", "1", "a|x", "b"], ["m", "nolimit", "10", "1", "a", "b:x"],
                 ["m", "nolimit", "10", "1", "a b", "c"], ["m", "nolimit", "10", "1", "", "b"],
                 *(["m", "nolimit", "10", "1", "a", "b", flag, value]
                   for flag in ("--t_response", "--t_hand", "--t_per_hand", "--t_query", "--t_handshake")
                   for value in ("0", "-1")),
                 ["m", "nolimit", "10", "1", "a", "b", "--max_ignored", "-1"],
                 ["m", "nolimit", "10", "1", "a", "b", "--max_queries", "-1"]):
        done = subprocess.run([str(ACPC_LBR), "dealer", *args], cwd=tmp_path, capture_output=True,
                              text=True, timeout=TIMEOUT, check=False)
        assert done.returncode == 1
        assert done.stdout.startswith("usage:")
        assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr


def test_cli_results_json_that_cannot_be_written_says_so(tmp_path: Path) -> None:
    """--results-json in a missing folder: one 'ERROR: cannot write' line and exit 1 before the
    match; a folder that goes away during the match: the same line at the end and exit 4 (the
    match's own ending still stands), never a silent exit or a traceback."""
    done = subprocess.run([str(ACPC_LBR), "dealer", "m", "nolimit", "5", "1", "a", "b", "-q",
                           "--results-json", "missing/r.json"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=TIMEOUT, check=False)
    assert done.returncode == 1
    assert done.stderr.splitlines() == ["ERROR: cannot write missing/r.json: No such file or directory"]
    (tmp_path / "gone").mkdir()
    proc, _ = start_dealer(["m", "nolimit", "5", "1", "a", "b", "-q", "--start_timeout", "500",
                            "--results-json", "gone/r.json"], tmp_path)
    (tmp_path / "gone").rmdir()
    code, out = finish(proc, [])
    err = (tmp_path / "dealer.err").read_text()
    assert code == 4
    assert "ERROR: cannot write gone/r.json: No such file or directory" in err.splitlines()
    assert "Traceback" not in err and "SCORE:0|0:a|b" in out


def test_cli_start_timeout(tmp_path: Path) -> None:
    """--start_timeout: no bot connects, the match ends with exit 3 and the reference's message."""
    proc, _ = start_dealer(["m", "nolimit", "5", "1", "a", "b", "--start_timeout", "200"], tmp_path)
    code, _ = finish(proc, [])
    assert code == 3
    assert "timed out waiting for seat 1 (a) to connect" in (tmp_path / "dealer.err").read_text()


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def test_cli_fixed_ports_and_seats(tmp_path: Path) -> None:
    """-p sets the ports in seat order; -f fixes the seats."""
    wanted = _free_ports(2)
    proc, [ports] = start_dealer(["m", "limit", "6", "1", "a", "b", "-p", ",".join(map(str, wanted)),
                                  "-f", "-q"], tmp_path)
    assert ports == wanted
    code, _ = finish(proc, [start_bot(port, "limit") for port in ports])
    assert code == 0
    names = {line.rsplit(":", 1)[1] for line in (tmp_path / "m.log").read_text().splitlines()
             if line.startswith("STATE:")}
    assert names == {"a|b"}


def _play(bot: str, port: int, game: str, seed: int) -> subprocess.Popen[bytes]:
    """`acpc-lbr play BOT` on 127.0.0.1:``port`` with its own ``--seed``."""
    return subprocess.Popen([str(ACPC_LBR), "play", bot, "127.0.0.1", str(port), "--game", game,
                             "--seed", str(seed)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_cli_duplicate_match(tmp_path: Path) -> None:
    """--duplicate: four ports, both logs with mirrored seats, and a paired result in mbb/g
    (the unit of every other figure) with its interval; bots seeded apart get no warning."""
    proc, [ports] = start_dealer(["d", "nolimit", "40", "5", "a", "b", "--duplicate", "-q"], tmp_path)
    assert len(ports) == 4
    # NAME1's ports are the 1st and 3rd, NAME2's the 2nd and 4th.
    bots = [_play("random", port, "nolimit", seed) for seed, port in enumerate(ports, 1)]
    code, out = finish(proc, bots)
    assert code == 0
    game = load_game("nolimit")
    main = [parse_log_state(l, game) for l in (tmp_path / "d.log").read_text().splitlines() if l.startswith("STATE:")]
    mirror = [parse_log_state(l, game) for l in (tmp_path / "d.dup.log").read_text().splitlines() if l.startswith("STATE:")]
    assert len(main) == len(mirror) == 40
    pairs = []
    for m, d in zip(main, mirror):
        assert m.hole == d.hole  # same cards by position (the boards as far as each hand went)
        assert all(x == y for x, y in zip(m.board, d.board))
        assert m.names == d.names[::-1]  # seats reversed
        pairs.append((m.values[m.names.index("a")] + d.values[d.names.index("a")]) / 2)
    line = next(l for l in out.splitlines() if l.startswith("DUPLICATE"))
    # The pair's mean in mbb/g (1000 chips per big blind), as the results table's duplicate row.
    mbb = 1000.0 / game.big_blind
    mean = statistics.fmean(pairs) * mbb
    # the interval is the results document's (low_95, high_95 of the duplicate row) for the same pairs
    stat = RunningMean()
    stat.add_many(pairs)
    figures = estimator_figures(stat, game.big_blind)["mbb_per_game"]
    low, high = figures["low_95"], figures["high_95"]
    assert low is not None and high is not None
    assert f"DUPLICATE d: a {mean:+.1f} mbb/g, 95% interval [{low:+.1f}, {high:+.1f}]" in line, line
    assert "40 pairs" in line
    assert "WARNING" not in (tmp_path / "dealer.err").read_text()


def test_cli_duplicate_warns_when_every_pair_has_two_identical_halves(tmp_path: Path) -> None:
    """Four bot processes seeded alike play each pair's two halves the same: the duplicate result
    is 0 by construction. The dealer says so, and names the likely cause (issue 31)."""
    proc, [ports] = start_dealer(["s", "kuhn", "30", "5", "a", "b", "--duplicate", "-q"], tmp_path)
    code, out = finish(proc, [_play("random", port, "kuhn", 7) for port in ports])
    assert code == 0
    assert "DUPLICATE s: a +0.0 mbb/g, 95% interval [+0.0, +0.0]" in out
    warning = next(l for l in (tmp_path / "dealer.err").read_text().splitlines() if l.startswith("WARNING"))
    assert "the two halves of all 30 pairs are the same hand" in warning
    assert "seeded alike" in warning and "--seed" in warning


@pytest.mark.parametrize("second_pair", ["a b", "c d"])
def test_cli_several_duplicate_matches_write_a_document_per_match(tmp_path: Path, second_pair: str) -> None:
    """--results-json with several --duplicate matches: one document per match beside FILE (it
    wrote the first match's only), and FILE the merge when the matches merge (one pairing,
    other seeds), else no FILE and a line saying why."""
    args = ["--match", "m1 kuhn 20 1 a b", "--match", f"m2 kuhn 20 2 {second_pair}", "--duplicate", "-q",
            "--results-json", "all.json"]
    proc, port_lines = start_dealer(args, tmp_path)
    bots = [_play("random", port, "kuhn", 10 * k + i) for k, ports in enumerate(port_lines)
            for i, port in enumerate(ports)]
    code, _ = finish(proc, bots)
    assert code == 0
    docs = {name: json.loads((tmp_path / f"all.{name}.json").read_text()) for name in ("m1", "m2")}
    for name, doc in docs.items():
        assert doc["config"]["matches"] == [name, f"{name}.dup"]
        assert doc["estimators"]["duplicate"]["chips"]["n"] == 20
    line = next(l for l in (tmp_path / "dealer.err").read_text().splitlines() if l.startswith("RESULTS JSON"))
    assert "all.m1.json, all.m2.json" in line
    if second_pair == "a b":
        merged = json.loads((tmp_path / "all.json").read_text())
        assert merged["config"]["matches"] == ["m1", "m1.dup", "m2", "m2.dup"]
        assert merged["estimators"]["duplicate"]["chips"]["n"] == 40
    else:
        assert not (tmp_path / "all.json").exists()
        assert "do not merge" in line


def _reference_quiet_header(match: str, game: str, hands: int, seed: int) -> list[str]:
    """The header the reference writes on stderr under -q (probes/N_pql.err, its time limits)."""
    probe = (REFERENCE / "probes" / "N_pql.err").read_text().splitlines()
    assert probe[0].startswith("# name/game/hands/seed N_pql ") and probe[-1].startswith("SCORE:")
    assert all(l.startswith(("#", "WARNING:", "SCORE:")) for l in probe)  # nothing else under -q
    return [f"# name/game/hands/seed {match} {game} {hands} {seed}", *probe[1:4]]


@pytest.mark.parametrize("extras", [False, True])
def test_cli_quiet_prints_what_the_reference_prints(tmp_path: Path, extras: bool) -> None:
    """Under -q stderr is the reference's: header and SCORE (no STARTED, timing lines, events or
    results table) and stdout the port line and SCORE; --console --table bring our extras back."""
    args = ["q", "nolimit", "250", "7", "a", "b", "-q"] + (["--console", "--table"] if extras else [])
    proc, [ports] = start_dealer(args, tmp_path)
    code, out = finish(proc, [start_bot(port, "nolimit") for port in ports])
    assert code == 0
    score = (tmp_path / "q.log").read_text().splitlines()[-1]
    assert out.splitlines() == [score]  # after the port line, which start_dealer read
    err = (tmp_path / "dealer.err").read_text().splitlines()
    expected = [*_reference_quiet_header("q", "nolimit", 250, 7), score]
    if not extras:
        assert err == expected
    else:
        assert [l for l in err if l.startswith(("#", "SCORE:"))] == expected
        assert any("match_finished" in l for l in err) and "RESULTS q" in err
        assert not any(l.startswith(("STARTED", "FINISHED", "Seconds")) for l in err)


def test_cli_without_quiet_prints_the_progress_lines(tmp_path: Path) -> None:
    """Without -q the reference's STARTED, timing lines (hands 0, 100, 200) and FINISHED are there."""
    proc, [ports] = start_dealer(["v", "nolimit", "250", "7", "a", "b"], tmp_path)
    code, _ = finish(proc, [start_bot(port, "nolimit") for port in ports])
    assert code == 0
    err = (tmp_path / "dealer.err").read_text().splitlines()
    assert sum(l.startswith("STARTED at") for l in err) == 1
    assert sum(l.startswith("Seconds cumulatively spent") for l in err) == 6
    assert sum(l.startswith("FINISHED at") for l in err) == 1


def test_cli_several_matches_in_one_process(tmp_path: Path) -> None:
    """Several --match options: one port line each, all matches complete, logs independent."""
    args = ["--match", "x nolimit 30 1 a b", "--match", "y limit 30 2 c d", "--match", "z kuhn.limit.3p 30 3 e f g", "-q"]
    proc, port_lines = start_dealer(args, tmp_path)
    assert [len(p) for p in port_lines] == [2, 2, 3]
    games = ["nolimit", "limit", "kuhn.limit.3p"]
    bots = [start_bot(port, game) for ports, game in zip(port_lines, games) for port in ports]
    code, out = finish(proc, bots)
    assert code == 0
    for name in "xyz":
        lines = (tmp_path / f"{name}.log").read_text().splitlines()
        assert sum(line.startswith("STATE:") for line in lines) == 30
        assert f"{name} {lines[-1]}" in out
        parse_score(lines[-1])


def test_cli_three_player_match_gives_each_players_raw_result(tmp_path: Path) -> None:
    """A 3-player match gets results, live and from the files alike: each player's raw result
    (mean of its chips per hand, 95% interval) in the table and the JSON, and one line saying
    why duplicate, IO and AIVAT are not there (issue 31: it printed and wrote nothing)."""
    from acpc_lbr.results import results_from_files

    args = ["k", "kuhn.limit.3p", "60", "5", "a", "b", "c", "-q", "--table", "--results-json", "k.json"]
    proc, [ports] = start_dealer(args, tmp_path)
    code, _ = finish(proc, [start_bot(port, "kuhn.limit.3p") for port in ports])
    assert code == 0
    game = load_game("kuhn.limit.3p")
    states = [parse_log_state(l, game) for l in (tmp_path / "k.log").read_text().splitlines()
              if l.startswith("STATE:")]
    doc = json.loads((tmp_path / "k.json").read_text())
    err = (tmp_path / "dealer.err").read_text()
    assert "not computed for 3 players" in err
    for name in "abc":
        values = [s.values[s.names.index(name)] for s in states]
        figures = doc["players"][name]
        assert figures["chips"]["n"] == 60
        assert figures["chips"]["mean"] == pytest.approx(statistics.fmean(values), abs=1e-12)
        half = 1.96 * statistics.stdev(values) / math.sqrt(60)
        assert figures["mbb_per_game"]["half_width_95"] == pytest.approx(1000 * half / game.big_blind, rel=1e-3)
        row = next(l for l in err.splitlines() if l.startswith(f"{name} "))
        assert row.split()[1:4] == ["60", f"{1000 * statistics.fmean(values) / game.big_blind:.1f}",
                                    f"{figures['mbb_per_game']['half_width_95']:.1f}"]
    assert doc["estimators"]["raw"] == doc["players"]["a"]  # the measured player's, the first name
    from_files = results_from_files([tmp_path / "k.log"])
    assert from_files["players"] == doc["players"]
    assert from_files["estimators"] == doc["estimators"]


@pytest.mark.parametrize(("bot1", "bot2", "game"), [
    ("always-call", "always-call", "nolimit"),
    ("always-raise", "call-raise", "limit"),
    ("random", "random", "nolimit"),
])
def test_cli_with_agents_play_bots(tmp_path: Path, bot1: str, bot2: str, game: str) -> None:
    """End to end: `acpc-lbr play` reference bots against `acpc-lbr dealer`, both as subprocesses."""
    proc, [ports] = start_dealer(["e", game, "100", "9", "x", "y", "-q"], tmp_path)
    bots = [
        subprocess.Popen([str(ACPC_LBR), "play", bot, "127.0.0.1", str(port), "--game", game,
                          "--seed", str(seed)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for bot, port, seed in ((bot1, ports[0], 1), (bot2, ports[1], 2))
    ]
    code, out = finish(proc, [])
    assert code == 0
    assert [bot.wait(timeout=TIMEOUT) for bot in bots] == [0, 0]
    lines = (tmp_path / "e.log").read_text().splitlines()
    states = [parse_log_state(line, load_game(game)) for line in lines if line.startswith("STATE:")]
    assert len(states) == 100
    totals = {"x": 0.0, "y": 0.0}
    for state in states:
        for name, value in zip(state.names, state.values):
            totals[name] += value
    assert parse_score(lines[-1]).totals == (totals["x"], totals["y"])
    assert out.strip().splitlines()[-1] == lines[-1]


def test_cli_one_failing_match_leaves_the_others_alone(tmp_path: Path) -> None:
    """In one dealer process, a match whose bot leaves ends (exit 3); the other plays to the end."""
    args = ["--match", "bad nolimit 40 1 a b", "--match", "good limit 200 2 c d", "-q"]
    proc, (bad_ports, good_ports) = start_dealer(args, tmp_path)
    bots = [start_bot(bad_ports[0], "nolimit"), start_bot(bad_ports[1], "nolimit", "--close-at", "4")]
    bots += [start_bot(port, "limit") for port in good_ports]
    code, out = finish(proc, bots)
    assert code == 3
    bad = (tmp_path / "bad.log").read_text().splitlines()
    good = (tmp_path / "good.log").read_text().splitlines()
    assert sum(line.startswith("STATE:") for line in bad) == 4
    assert bad[-2].startswith("# ERROR: seat 2 (b) disconnected")
    assert sum(line.startswith("STATE:") for line in good) == 200
    assert f"good {good[-1]}" in out and f"bad {bad[-1]}" in out


def test_cli_port_in_use_and_missing_match_file_exit_1(tmp_path: Path) -> None:
    """A port that cannot be opened, or an unreadable --matches file, is a startup failure (1)."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run([str(ACPC_LBR), "dealer", "m", "nolimit", "5", "1", "a", "b", "-p", f"0,{port}"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert done.returncode == 1
    assert f"cannot listen on port {port} for seat 2 (b)" in done.stderr
    done = subprocess.run([str(ACPC_LBR), "dealer", "--matches", "nope.txt"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert done.returncode == 1 and "cannot read --matches file" in done.stderr


def play_sdk_match(args: list[str], tmp_path: Path) -> dict[str, Any]:
    """A dealer with ``args`` (which write r.json) against two SDK bots; its results document."""
    import json

    proc, [ports] = start_dealer(args, tmp_path)
    bots = [
        subprocess.Popen([str(ACPC_LBR), "play", bot, "127.0.0.1", str(port), "--game", "nolimit",
                          "--seed", str(seed)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for bot, port, seed in (("always-call", ports[0], 1), ("call-raise", ports[1], 2))
    ]
    code, _ = finish(proc, [])
    assert code == 0
    assert [bot.wait(timeout=TIMEOUT) for bot in bots] == [0, 0]
    document: dict[str, Any] = json.loads((tmp_path / "r.json").read_text())
    return document


@pytest.mark.parametrize("io", [True, False])
def test_cli_io_queries_can_be_turned_off(tmp_path: Path, io: bool) -> None:
    """By default the dealer asks an SDK bot for its range after each showdown; with --no-io it does not."""

    args = ["e", "nolimit", "60", "9", "x", "y", "-q", "--results-json", "r.json"]
    document = play_sdk_match(args + ([] if io else ["--no-io"]), tmp_path)
    assert document["estimators"]["raw"]["chips"]["n"] == 60
    io_units = document["estimators"]["io"]["chips"]["n"]
    assert (io_units == 60) if io else (io_units == 0)
    assert (document["counts"]["dealer_queries"] > 0) == io
    # With or without IO the dealer counts the showdowns, as `acpc-lbr results` does from the files.
    from acpc_lbr.results import results_from_files

    offline = results_from_files([tmp_path / "e.log"])
    assert document["counts"]["showdowns"] == offline["counts"]["showdowns"] > 0
    assert document["counts"]["dealer_queries"] == offline["counts"]["dealer_queries"]


def test_cli_start_timeout_defaults_to_a_minute_and_can_wait_forever() -> None:
    """Bots must connect within 60 s unless told otherwise; 0 or -1 waits forever (the
    reference's behaviour); --idle_timeout is off by default and must be positive."""
    from acpc_lbr.cli.dealer import _UsageError, parse_configs

    words = ["m", "nolimit", "5", "1", "a", "b"]
    assert parse_configs(words)[0][0][0].start_timeout_ms == 60_000
    assert parse_configs([*words, "--start_timeout", "-1"])[0][0][0].start_timeout_ms is None
    assert parse_configs([*words, "--start_timeout", "0"])[0][0][0].start_timeout_ms is None
    assert parse_configs(words)[0][0][0].idle_timeout_ms is None
    assert parse_configs([*words, "--idle_timeout", "30000"])[0][0][0].idle_timeout_ms == 30_000
    with pytest.raises(_UsageError, match="--idle_timeout"):
        parse_configs([*words, "--idle_timeout", "0"])


def test_cli_aivat_computes_aivat_for_every_hand(tmp_path: Path) -> None:
    """``--aivat``: every hand of the match gets an AIVAT value from the dealer's queries, and
    ``acpc-lbr results`` on the files reproduces the dealer's estimators."""

    from acpc_lbr.results import dumps
    from acpc_lbr.results import results_from_files

    args = ["v", "nolimit", "40", "5", "x", "y", "-q", "--results-json", "r.json", "--aivat"]
    document = play_sdk_match(args, tmp_path)
    assert document["estimators"]["aivat"]["chips"]["n"] == 40
    assert document["counts"]["aivat_fallbacks"] == 0 and document["counts"]["dealer_queries"] > 0
    offline = results_from_files([tmp_path / "v.log"])
    assert dumps(offline["estimators"]) == dumps(document["estimators"])


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_cli_sigterm_ends_the_match_cleanly_on_either_loop(tmp_path: Path, loop: str) -> None:
    """SIGTERM while waiting for the bots: exit 4, the ERROR and SCORE lines, no traceback,
    on uvloop's event loop (the dealer's default) and on the standard library's."""
    import os
    import signal

    env = {**os.environ, "ACPC_LBR_EVENT_LOOP": loop}
    proc = subprocess.Popen([str(ACPC_LBR), "dealer", "m", "nolimit", "10", "1", "a", "b", "-q"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    assert proc.stdout is not None
    assert re.fullmatch(r"\d+ \d+\n", proc.stdout.readline())
    time.sleep(1.0)  # the port line comes just before the reactor (and its signal handlers) runs
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 4, err
    assert "Traceback" not in err, err
    assert "ERROR: the dealer was stopped" in err + out
    assert out.strip().splitlines()[-1] == "SCORE:0|0:a|b"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_cli_dealer_runs_on_one_thread(tmp_path: Path) -> None:
    """The dealer process has no thread besides its own once it listens: OpenBLAS, loaded
    with numpy, starts none (they spun at start-up, ~0.13 s of CPU per dealer)."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    proc = subprocess.Popen([str(ACPC_LBR), "dealer", "m", "nolimit", "10", "1", "a", "b"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env=env)
    try:
        assert proc.stdout is not None
        assert re.fullmatch(r"\d+ \d+\n", proc.stdout.readline())
        tasks = Path(f"/proc/{proc.pid}/task")
        names = [(task / "comm").read_text().strip() for task in tasks.iterdir()]
        assert len(names) == 1, names
    finally:
        proc.kill()
        proc.wait(timeout=TIMEOUT)
