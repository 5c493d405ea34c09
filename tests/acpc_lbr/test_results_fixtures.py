"""``acpc-lbr results`` on recorded matches: the same bytes as recorded, and the dealer's own figures.

Each folder under ``tests/data/results/matches/`` holds the files of one match the
dealer played against SDK bots (``acpc-lbr dealer ... -q --results-json dealer.json``,
each seat's bot ``acpc-lbr play BOT 127.0.0.1 PORT --game GAME --seed 11+i``, i the
seat's place in the port line):

* ``leduc-dup-aivat``: ``dup leduc 24 5 rnd cr --duplicate --aivat`` (random
  against call-raise; IO and AIVAT, both halves of each pair);
* ``nolimit-io``: ``nl nolimit 30 9 x y`` (always-call against call-raise; IO on
  hold'em, which the live dealer computes with the fast equity vectors);
* ``kuhn3``: ``k kuhn.limit.3p 30 5 a b c`` (random, call-raise, random: three
  players, each player's raw result).

``from-files.json`` and ``from-files.txt`` are what ``acpc-lbr results --json``
and ``acpc-lbr results`` printed for those files. The first recording (before
the results moved to ``acpc_lbr/results/``) checked that move byte for byte; its
documents were rewritten once when issue 34 added fields (``low_95``, ``high_95``
and the exact third and fourth sums), and the matches were recorded again on
2026-11-28 when issue 34 took the interval over hands within seats (``by_seat``;
heads-up only) and the trajectory's points gained their intervals. A change to
where the results code lives, or to how a hand becomes its outcome, must leave
them byte for byte as they are; and the document recomputed from the files must
hold the figures the dealer wrote while it played (all but the relay's query
count and the timings, which the files do not record).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from acpc_lbr.results import dumps, software_version

MATCHES = Path(__file__).resolve().parents[1] / "data" / "results" / "matches"
ACPC_LBR = Path(sys.executable).parent / "acpc-lbr"
#: The logs of each recorded match, as given to ``acpc-lbr results``.
LOGS = {
    "leduc-dup-aivat": ["dup.log", "dup.dup.log"],
    "nolimit-io": ["nl.log"],
    "kuhn3": ["k.log"],
}


def _this_version(text: str) -> str:
    """``text`` (a recorded document) with this installation's ``software.version``."""
    doc = json.loads(text)
    doc["software"]["version"] = software_version()
    return dumps(doc)


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    """Per match, what ``acpc-lbr results LOGS -o FILE`` wrote (the JSON) and printed (the table):
    one run each, read by both tests."""
    out: dict[str, tuple[str, str]] = {}
    for match, logs in LOGS.items():
        written = tmp_path_factory.mktemp(match) / "doc.json"
        done = subprocess.run([str(ACPC_LBR), "results", *logs, "-o", str(written)], cwd=MATCHES / match,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        out[match] = (written.read_text(), done.stdout)
    return out


@pytest.mark.parametrize("match", sorted(LOGS))
def test_results_from_recorded_files_are_byte_for_byte_as_recorded(
        match: str, printed: dict[str, tuple[str, str]]) -> None:
    """``acpc-lbr results`` writes the JSON and prints the table exactly as when recorded."""
    document, table = printed[match]
    assert document == _this_version((MATCHES / match / "from-files.json").read_text())
    assert table == (MATCHES / match / "from-files.txt").read_text()


@pytest.mark.parametrize("match", sorted(LOGS))
def test_results_from_files_hold_the_document_the_dealer_wrote(
        match: str, printed: dict[str, tuple[str, str]]) -> None:
    """The document recomputed from the files is the one the dealer wrote as it played, byte for
    byte in every part the files record (the relay's query count and the timings they do not)."""
    written = json.loads((MATCHES / match / "dealer.json").read_text())
    recomputed = json.loads(printed[match][0])
    for doc in (written, recomputed):
        doc["timings"] = {}
        doc["counts"]["queries"] = 0
    assert recomputed["estimators"]["raw"]["chips"]["n"] > 0
    assert dumps(recomputed) == dumps(written)
