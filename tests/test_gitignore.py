"""Running the README's commands in a clone leaves `git status` clean (issue 31: the snippet left
demo.* and ports.txt untracked in the repository's root)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def files_the_readme_writes() -> set[str]:
    """The files the shell commands of the README and docs/usage.md write where they run: a dealer match's
    logs (MATCH.log, .events.jsonl, .queries), redirections (> FILE), --json / --report / -o FILE."""
    text = "".join((ROOT / name).read_text() for name in ("README.md", "docs/usage.md"))
    written: set[str] = set()
    for match in re.findall(r"acpc-lbr dealer (\w+) ", text):
        written |= {f"{match}.log", f"{match}.events.jsonl", f"{match}.queries"}
    written |= set(re.findall(r"(?<![0-9&])> ([\w.-]+)", text))
    written |= set(re.findall(r"(?:--json|--report|--out|-o) ([\w.-]+\.(?:json|html))", text))
    written |= set(re.findall(r"cc [^\n]*-o ([\w.-]+)", text))
    return written


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")
def test_what_the_readme_writes_is_ignored_by_git() -> None:
    """Every file the README's commands make is covered by .gitignore."""
    written = files_the_readme_writes()
    assert {"demo.log", "ports.txt", "result.json"} <= written
    done = subprocess.run(["git", "check-ignore", "--no-index", *sorted(written)], cwd=ROOT,
                          capture_output=True, text=True, check=False, timeout=30)
    ignored = set(done.stdout.split())
    assert ignored == written, f"not in .gitignore: {sorted(written - ignored)}"
