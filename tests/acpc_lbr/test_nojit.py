"""The kernels' tests also pass with the JIT off (pure Python: coverage sees kernel lines)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_kernel_tests_pass_without_the_jit() -> None:
    """The tests of every kernel module (evaluator, equity with preflop, lbr, stats) and of the
    estimators pass with NUMBA_DISABLE_JIT=1 (about 45 s; in CI's fast subset, so it runs)."""
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    files = ["test_evaluator.py", "test_equity.py", "test_preflop.py", "test_estimators.py",
             "test_lbr.py", "test_stats.py"]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files],
        cwd=HERE, env=env, capture_output=True, text=True, timeout=900, check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:]
