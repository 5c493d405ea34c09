"""The kernels' tests also pass with the JIT off (pure Python: coverage sees kernel lines)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.mark.slow
def test_kernel_tests_pass_without_the_jit() -> None:
    """Evaluator, equity, preflop and estimator tests with NUMBA_DISABLE_JIT=1."""
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    files = ["test_evaluator.py", "test_equity.py", "test_preflop.py", "test_estimators.py"]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files],
        cwd=HERE, env=env, capture_output=True, text=True, timeout=900, check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:]
