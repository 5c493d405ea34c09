"""Fixtures of the dealer tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the test in a fresh directory (logs are written relative to it)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
