"""Where the ACPC reference dealer's recorded output lives in this repository.

``tests/data/acpc-reference`` holds what the reference C dealer (and its
ranker) printed: match logs, message transcripts, probe runs and rank vectors.
It is data, not code: the oracle the protocol, dealer and evaluator tests
replay. It ships with the tests so that a plain clone can run them.
"""

from __future__ import annotations

from pathlib import Path

REFERENCE_DIR = Path(__file__).resolve().parent / "data" / "acpc-reference"
