"""acpc-lbr tournament: what a new user's first events found (issue 28's follow-up).

Names that would give two pairings one folder, a driver that dies uncleanly,
crosstable columns that run together, output paths found unwritable only at
the end, event files whose stray tables were ignored, a leader named before
any match was scored, and smaller option checks. Each test fails without its fix.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest

from acpc_lbr.app.tournament.event import EventError, build_event

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
