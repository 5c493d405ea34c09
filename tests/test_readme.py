"""The README's shell match runs as written, and again in the same folder."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Only a hang detector: a healthy run takes a few seconds.
HANG = 300


def shell_match() -> str:
    """The first ``sh`` block under "Run a match from the shell"."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Run a match from the shell"):]
    found = re.search(r"```sh\n(.*?)```", section, flags=re.DOTALL)
    assert found is not None
    return found.group(1)


def test_shell_match_runs_twice_and_with_a_stale_ports_file(tmp_path: Path) -> None:
    """Run with a stale ports.txt (dead ports) already there, then again over the first run's
    files: both runs play all 1000 hands and end with a SCORE line."""
    (tmp_path / "ports.txt").write_text("1 2\n")  # ports nothing listens on
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    for run in range(2):
        result = subprocess.run(["sh", "-c", shell_match()], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=HANG, check=False)
        assert result.returncode == 0, (run, result.stderr[-2000:])
        log = (tmp_path / "demo.log").read_text().splitlines()
        assert sum(line.startswith("STATE:") for line in log) == 1000, run
        assert log[-1].startswith("SCORE:") and log[-1].endswith(":alice|bob")
        assert result.stdout.splitlines()[-1] == log[-1]
