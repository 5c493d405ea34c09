"""Shared test fixtures: where the reference runs live, and the hypothesis profiles.

The reference material (logs, traces, probes of the ACPC reference dealer)
lives in ``tests/data/acpc-reference`` (see ``tests/reference.py``).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from protocol import _variant
from tests.reference import REFERENCE_DIR

# A source of the compiled group edited since the build (an editable checkout):
# this process said so once and runs the pure sources; the dealers and bots the
# tests start run them too, told so by ACPC_LBR_PURE, so their stderr carries no notice.
if _variant.choose(_variant.ROOT)[2] is not None:
    os.environ[_variant.PURE_ENV] = "1"

# Tests interrupt the dealer and evaluate with SIGINT. A run started in the
# background by a non-interactive shell (`pytest &`, as a CI script may do)
# inherits SIGINT ignored, and every process it starts would too: Python and
# Twisted then install no SIGINT handler and the process rightly ignores the
# signal, so those tests would hang. A handler here is reset to the default
# action in each process the tests start (exec keeps only an ignored signal).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

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
