"""acpc-lbr tournament: what a new user's first events found (issue 28's follow-up).

Names that would give two pairings one folder, a driver that dies uncleanly,
crosstable columns that run together, output paths found unwritable only at
the end, event files whose stray tables were ignored, a leader named before
any match was scored, and smaller option checks. Each test fails without its fix.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from acpc_lbr.app.tournament.event import TOML_KEYS, EventError, build_event, parse_entrant, read_toml
from acpc_lbr.app.tournament.report import format_tables, leader
from acpc_lbr.app.tournament.seating import TAG_VARIABLE, kill_tagged, seating_tag

ACPC_LBR = [sys.executable, "-m", "acpc_lbr.cli", "tournament"]


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ACPC_LBR, *args], capture_output=True, text=True, timeout=timeout, check=False)


# -- 1. two pairings never share a folder ----------------------------------------------


@pytest.mark.parametrize(("names", "game"), [
    (["a", "b-vs-c", "a-vs-b", "c"], "kuhn"),   # (a, b-vs-c) and (a-vs-b, c): a-vs-b-vs-c
    (["x-vs", "y", "x", "vs-y"], "kuhn"),       # (x-vs, y) and (x, vs-y): x-vs-vs-y
    (["A", "a", "c"], "kuhn"),                  # A-vs-c and a-vs-c: one folder where case is ignored
    (["p", "q-vs-r", "p-vs-q", "r", "s"], "kuhn.limit.3p"),  # (p, q-vs-r, s) and (p-vs-q, r, s)
])
def test_names_that_would_give_two_pairings_one_folder_are_refused_at_the_start(names: list[str], game: str) -> None:
    with pytest.raises(EventError, match=r"^pairings \(.*\) and \(.*\) would share the match folder '.*'; "
                                         r"rename an entrant$"):
        build_event(game, [f"{n}=random" for n in names], matches=1, hands=1, seed=1)


def test_every_match_of_an_accepted_event_has_a_key_of_its_own() -> None:
    names = ["a", "b-vs-c", "a-vs", "vs-b", "c"]
    for chosen in itertools.combinations(names, 4):
        try:
            event = build_event("kuhn", [f"{n}=random" for n in chosen], matches=2, hands=1, seed=1)
        except EventError:
            continue
        keys = [job.key.casefold() for job in event.schedule()]
        assert len(set(keys)) == len(keys)


def test_a_clash_of_folders_is_refused_by_the_command_with_one_line(tmp_path: Path) -> None:
    done = run("--game", "kuhn", "--entrant", "a=random", "--entrant", "b-vs-c=random", "--entrant",
               "a-vs-b=call-raise", "--entrant", "c=always-call", "--matches", "1", "--hands", "5",
               "--out", str(tmp_path / "event"), "-q")
    assert done.returncode == 2
    assert done.stderr == ("acpc-lbr tournament: pairings (a, b-vs-c) and (a-vs-b, c) would share the match "
                           "folder 'a-vs-b-vs-c'; rename an entrant\n")
    assert not (tmp_path / "event").exists()


# -- 2. a driver that dies uncleanly leaves nothing running ------------------------------


def tagged(prefix: Path) -> list[int]:
    """Processes carrying the seating tag of the event directory ``prefix``."""
    needle = f"{TAG_VARIABLE}={seating_tag(prefix)}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as handle:
                    if any(item.startswith(needle) for item in handle.read().split(b"\0")):
                        found.append(int(entry))
            except OSError:
                continue
    return found


def wait_for(predicate: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def sleepy_bot(folder: Path) -> Path:
    """A bot that never connects (it sleeps) until the file GO exists; then it plays call-raise."""
    path = folder / "sleepy.sh"
    path.write_text(f"#!/bin/sh\nif [ -e {folder}/GO ]; then\n"
                    f'  exec {sys.executable} -m acpc_lbr.cli play call-raise "$1" "$2" --game kuhn\nfi\n'
                    f"exec {sys.executable} -c 'import time; time.sleep(120)'\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def event_dir(tmp_path: Path) -> Iterator[Path]:
    out = tmp_path / "event"
    yield out
    kill_tagged(seating_tag(out))  # whatever the test found, it leaves nothing behind


def sleepy_event(tmp_path: Path, out: Path) -> list[str]:
    return [*ACPC_LBR, "--game", "kuhn", "--entrant", "r=random", "--entrant",
            f"sleepy={sleepy_bot(tmp_path)} {{host}} {{port}}", "--matches", "1", "--hands", "10",
            "--start-timeout", "60000", "--out", str(out), "-q"]


def started_bot(out: Path) -> bool:
    return any((out / "matches").glob("*/m000/s*/try0/sleepy.out")) and len(tagged(out)) >= 3


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_sigkill_of_the_driver_leaves_no_dealer_or_bot_running(tmp_path: Path, event_dir: Path) -> None:
    driver = subprocess.Popen(sleepy_event(tmp_path, event_dir), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: started_bot(event_dir), 60), "the seating never started"
    finally:
        driver.kill()  # the driver alone: no clean-up of its own
        driver.wait()
    assert wait_for(lambda: tagged(event_dir) == [], 5), f"still running: {tagged(event_dir)}"


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_sighup_stops_the_event_like_sigterm_and_the_same_command_resumes(tmp_path: Path, event_dir: Path) -> None:
    command = sleepy_event(tmp_path, event_dir)
    driver = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert wait_for(lambda: started_bot(event_dir), 60), "the seating never started"
    driver.send_signal(signal.SIGHUP)
    _, stderr = driver.communicate(timeout=60)
    assert driver.returncode == 1, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "stopped by SIGHUP" in lines[0], stderr
    assert wait_for(lambda: tagged(event_dir) == [], 5), f"still running: {tagged(event_dir)}"
    (tmp_path / "GO").touch()
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads((event_dir / "results.json").read_text())["matches"]["played"] == 1


# -- 3. the crosstable's columns never run together ------------------------------------


def heads_up_document(figures: dict[tuple[str, str], tuple[float, float]]) -> dict[str, Any]:
    """The parts of a results document the terminal tables read (heads-up)."""
    names = list(dict.fromkeys(n for pair in figures for n in pair))
    ranking = [{"name": n, "rank": i + 1, "p_rank": None, "separated_from_next": False, "mbb_per_game": 0.0}
               for i, n in enumerate(names)]
    return {"entrants": [{"name": n, "faults": {}} for n in names], "headline": "raw",
            "game": {"players": 2}, "event": {"matches": 1}, "disqualified": [],
            "pairings": [{"a": a, "b": b, "names": [a, b], "mbb_per_game": {"mean": m, "half_width_95": h}}
                         for (a, b), (m, h) in figures.items()],
            "rankings": {"bankroll": ranking, "instant_runoff": ranking},
            "p_above": {"bankroll": None, "instant_runoff": None}}


def test_crosstable_columns_are_as_wide_as_their_widest_value() -> None:
    document = heads_up_document({("a", "b"): (-1227.1, 177.1), ("a", "long-named-bot"): (77.5, 77.6),
                                  ("b", "long-named-bot"): (-1874.6, 212.6), ("a", "c"): (123456789.0, 98765.4),
                                  ("b", "c"): (0.1, 0.1), ("long-named-bot", "c"): (-5.0, 1.0)})
    lines = format_tables(document).splitlines()
    table = lines[1:6]
    names = ["a", "b", "long-named-bot", "c"]
    assert len({len(line) for line in table}) == 1, table  # right-aligned columns: equal lengths
    assert re.fullmatch(r"\s+" + r"\s+".join(map(re.escape, names)), table[0]), table[0]
    for line in table[1:]:
        assert not re.search(r"\d[-+]\d", line), line  # a number never runs into the next
    assert re.split(r"\s{2,}", table[1].strip()) == ["a", "-1227.1 ± 177.1", "+77.5 ± 77.6", "+123456789.0 ± 98765.4"]
    assert re.split(r"\s{2,}", table[2].strip()) == ["b", "+1227.1 ± 177.1", "-1874.6 ± 212.6", "+0.1 ± 0.1"]


# -- 4. an unwritable --json is refused at the start -----------------------------------


def test_an_unwritable_json_path_is_refused_at_the_start_with_its_path(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder\n")
    target = tmp_path / "file" / "results.json"
    started = time.monotonic()
    done = run("--game", "kuhn", "--entrant", "r=random", "--entrant", "cr=call-raise", "--matches", "2",
               "--hands", "50", "--out", str(tmp_path / "event"), "--json", str(target), "-q")
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"acpc-lbr tournament: cannot write --json {target}: Not a directory\n"
    assert not list((tmp_path / "event").glob("matches/*/*/record.json"))  # nothing was played
    assert time.monotonic() - started < 30
    assert not (tmp_path / "event" / "results.json").exists()


# -- 5. the event file's stray keys and tables are refused -------------------------------


@pytest.mark.parametrize(("text", "unknown"), [
    ('[event]\ngame = "kuhn"\n[entrants]\nr = "random"\ncr = "call-raise"\n', "entrants"),
    ('game = "leduc"\n[event]\nmatches = 2\n[event.entrants]\nr = "random"\ncr = "call-raise"\n', "game"),
    ('hands = 5\nseed = 3\n[event]\ngame = "kuhn"\n', "hands, seed"),
])
def test_keys_outside_the_event_table_are_refused_with_the_known_ones(tmp_path: Path, text: str, unknown: str) -> None:
    event = tmp_path / "event.toml"
    event.write_text(text)
    with pytest.raises(EventError) as caught:
        read_toml(event)
    message = str(caught.value)
    assert message.startswith(f"{event}: unknown top-level key(s) {unknown}; the settings go in [event]")
    assert "\n" not in message and all(key in message for key in TOML_KEYS)


def test_a_flat_event_file_without_an_event_table_is_still_read(tmp_path: Path) -> None:
    event = tmp_path / "event.toml"
    event.write_text('game = "kuhn"\nhands = 5\n[entrants]\nr = "random"\ncr = "call-raise"\n')
    assert read_toml(event) == {"game": "kuhn", "hands": 5, "entrants": ["r=random", "cr=call-raise"]}


# -- 6. the progress line's leader has played --------------------------------------------


def test_the_leader_is_named_only_among_entrants_with_a_scored_match() -> None:
    document = heads_up_document({("a", "b"): (0.0, 0.0), ("a", "c"): (0.0, 0.0), ("b", "c"): (0.0, 0.0)})
    for row in document["pairings"]:
        row.update(matches=0, disqualified=[])
    document["rankings"]["bankroll"][0]["mbb_per_game"] = float("nan")
    assert leader(document) == "-"  # nothing scored yet
    document["pairings"][2]["matches"] = 1  # only b against c was scored; a's matches all failed
    document["rankings"]["bankroll"][1]["mbb_per_game"] = 12.4
    assert leader(document) == "b +12 mbb/g"
    document["pairings"][2]["disqualified"] = ["c"]  # a pairing the rankings leave out
    assert leader(document) == "-"


# -- 7. smaller checks -------------------------------------------------------------------


@pytest.mark.parametrize(("resamples", "message"), [
    (-1, "--resamples must be at least 0, got -1"),
    (1_000_001, "--resamples must be at most 1,000,000, got 1000001 (each resample ranks the whole event "
                "again; 0: no bootstrap)"),
])
def test_resamples_out_of_bounds_are_refused(resamples: int, message: str) -> None:
    with pytest.raises(EventError) as caught:
        build_event("kuhn", ["a=random", "b=call-raise"], matches=2, hands=1, seed=1, resamples=resamples)
    assert str(caught.value) == message


def test_no_resamples_says_so_instead_of_blaming_the_matches() -> None:
    document = heads_up_document({("a", "b"): (1.0, 1.0)})
    document["event"].update(matches=5, resamples=0)
    text = format_tables(document)
    assert text.count("(no bootstrap: --resamples 0; places are not tested)") == 2, text


@pytest.mark.parametrize("name", ["my bot", "a/b", "", " ", "a\tb"])
def test_a_name_with_a_blank_a_slash_or_nothing_is_refused_as_a_name(name: str) -> None:
    for spec in ("random", "./bot {host} {port}"):
        with pytest.raises(EventError) as caught:
            parse_entrant(f"{name}={spec}")
        assert str(caught.value) == f"entrant name {name!r}: use 1 to 40 of A-Z a-z 0-9 _ . + - (NAME=SPEC)"


def test_an_equals_sign_inside_a_spec_is_not_taken_for_a_name() -> None:
    assert parse_entrant("/tmp/a=b/bot.py:strategy").spec == "/tmp/a=b/bot.py:strategy"
    assert parse_entrant("c=./bot --x=1 {host} {port}").spec == "./bot --x=1 {host} {port}"
    with pytest.raises(EventError, match="a command needs a name"):
        parse_entrant("./bot {host} --x=1 {port}")


@pytest.mark.parametrize("command", ["tournament", "report"])
def test_help_prints_a_single_percent_sign(command: str) -> None:
    done = subprocess.run([sys.executable, "-m", "acpc_lbr.cli", command, "--help"], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0
    assert "95%" in done.stdout and "%%" not in done.stdout


def test_a_results_file_that_cannot_be_written_at_the_end_is_named(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    target = tmp_path / "sub" / "results.json"
    bot = tmp_path / "remover.sh"  # takes the --json folder away once the event has started
    bot.write_text(f'#!/bin/sh\nrm -rf {tmp_path / "sub"}\n'
                   f'exec {sys.executable} -m acpc_lbr.cli play call-raise "$1" "$2" --game kuhn\n')
    bot.chmod(0o755)
    done = run("--game", "kuhn", "--entrant", "r=random", "--entrant", f"rm={bot} {{host}} {{port}}",
               "--matches", "1", "--hands", "5", "--out", str(tmp_path / "event"), "--json", str(target), "-q")
    assert done.returncode == 1, done.stderr
    assert done.stderr == (f"acpc-lbr tournament: cannot write the results to {target}: No such file or directory; "
                           f"the matches are kept in {tmp_path / 'event'}: run the same command to write them\n")
