"""Shared test fixtures: where the reference runs live, and the hypothesis profiles.

The reference material (logs, traces, probes of the ACPC reference dealer)
lives in ``tests/data/acpc-reference`` (see ``tests/reference.py``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.reference import REFERENCE_DIR

# "ci" keeps the whole protocol suite well under a minute on two shared cores;
# "thorough" is for a deliberate long run: HYPOTHESIS_PROFILE=thorough pytest ...
settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("thorough", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    """The reference dealer's logs, traces and probes (they ship with the tests)."""
    assert REFERENCE_DIR.is_dir(), f"reference material missing: {REFERENCE_DIR}"
    return REFERENCE_DIR
