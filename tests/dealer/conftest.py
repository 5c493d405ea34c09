"""Fixtures of the dealer tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dealer.match import MatchAborted
from tests.dealer.harness import OPEN_MATCHES


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the test in a fresh directory (logs are written relative to it)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(autouse=True)
def _abort_unfinished() -> Iterator[None]:
    """End any in-memory match a test leaves running, so its coroutine closes cleanly."""
    yield
    for match in OPEN_MATCHES:
        match.abort(MatchAborted("internal", "test over", None))
    OPEN_MATCHES.clear()
