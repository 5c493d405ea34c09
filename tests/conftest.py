"""Shared test fixtures: where the reference runs live, and the hypothesis profiles.

The reference material (logs, traces, probes of the ACPC reference dealer)
lives in ``shared/acpc-reference`` beside the repository, both on the
developer machines and in CI, which clones the repository next to it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

#: ``<repo>/../shared/acpc-reference``.
REFERENCE_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "acpc-reference"

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
    """The reference dealer's logs, traces and probes; skips the test if absent."""
    if not REFERENCE_DIR.is_dir():
        pytest.skip(f"reference material not found at {REFERENCE_DIR}")
    return REFERENCE_DIR
