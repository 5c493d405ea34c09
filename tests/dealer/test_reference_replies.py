"""The dealer reads odd replies as the reference dealer does: the probes' lines, fed to a match.

Each probe (``tests/data/acpc-reference/probes/<name>.{err,log}``) is a run of
the reference dealer against scripted bots; its trace's ``FROM`` lines are
the replies in the order the reference read them. Fed in that order to an
in-memory match, with and without the read step that answers replies ahead
(:class:`dealer.seatio.Ahead`), they must give the reference's ``.log``.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from acpc_lbr.runtime.exit_codes import EXIT_OK
from tests.dealer.harness import MemoryTable, log_lines, make_config
from tests.reference import REFERENCE_DIR

PROBES = REFERENCE_DIR / "probes"


def _replies(name: str) -> tuple[int, int, list[tuple[int, str]]]:
    """Hands, seed and the (0-based seat, line) replies of a probe, in the order read."""
    err = (PROBES / f"{name}.err").read_text().split("\n")
    _, _, _, _, hands, seed = err[0].split(" ")
    replies = []
    for line in err:
        if line.startswith("FROM "):
            _, seat, _at, _time, text = line.split(" ", 4)
            replies.append((int(seat) - 1, text))
    return int(hands), int(seed), replies


@pytest.mark.parametrize("read_step", [False, True])
@pytest.mark.parametrize("name", [
    "V_raise_overflow",  # raise sizes past 32 bits: glibc's %d keeps the low 32 bits
    "W_lenient_echo",  # echoes the reference reads as the state sent, and text before the ':'
    "X_max_actions",  # min-raises up to the actions cap of a round: the cap's warning
])
def test_probe_replies_give_the_reference_log(in_tmp: Path, name: str, read_step: bool) -> None:
    """The .log, and the WARNING lines of stderr under -q, are the reference's."""
    hands, seed, replies = _replies(name)
    config = make_config("m", hands=hands, seed=seed, names=("a", "b"), trace_messages=False)
    stderr = io.StringIO()
    table = MemoryTable(config, read_step=read_step, stderr=stderr)
    table.feed(0, b"VERSION:2.0.0\n")
    table.feed(1, b"VERSION:2.0.0\n")
    for seat, text in replies:
        table.feed(seat, text.encode("latin-1") + b"\n")
    assert table.done.called and table.done.result.exit_code == EXIT_OK
    expected = (PROBES / f"{name}.log").read_text().splitlines()
    assert log_lines(config)[4:] == expected[4:]
    warnings = [line for line in (PROBES / f"{name}.err").read_text().splitlines()
                if line.startswith("WARNING: ")]
    assert [line for line in stderr.getvalue().splitlines() if line.startswith("WARNING: ")] == warnings
