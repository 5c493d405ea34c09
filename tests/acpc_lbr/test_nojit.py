"""The kernels' tests also pass with the JIT off (pure Python: coverage sees kernel lines)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize("files", [
    # In CI's fast subset: the LBR decision, the estimators and the statistics (about 15 s).
    ("test_estimators.py", "test_lbr.py", "test_stats.py"),
    # The evaluator and the equity tables enumerate many hands: about 30 s without the JIT,
    # so they run with ``pytest -m slow`` (README, "Tests").
    pytest.param(("test_evaluator.py", "test_equity.py", "test_preflop.py"), marks=pytest.mark.slow),
], ids=["decisions", "evaluator"])
def test_kernel_tests_pass_without_the_jit(files: tuple[str, ...]) -> None:
    """The tests of the kernel modules and of the estimators pass with NUMBA_DISABLE_JIT=1."""
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files],
        cwd=HERE, env=env, capture_output=True, text=True, timeout=900, check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:]
    assert " passed" in result.stdout.splitlines()[-1]
