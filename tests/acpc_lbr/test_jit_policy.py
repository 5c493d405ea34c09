"""The JIT policy lives in one place: ``acpc_lbr/jit.py``."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import numba
import pytest

from acpc_lbr import jit

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("acpc_lbr", "protocol", "dealer", "agents")
POLICY_FILE = REPO / "acpc_lbr" / "jit.py"
# Modules that hold kernels (house style: evaluator, equity, lbr, stats).
KERNEL_MODULES = ("acpc_lbr.evaluator", "acpc_lbr.equity", "acpc_lbr.lbr", "acpc_lbr.stats")

BARE_JIT = re.compile(
    r"@\s*(?:numba\s*\.\s*|nb\s*\.\s*)?(?:n|generated_)?jit\b"
    r"|\b(?:numba|nb)\s*\.\s*(?:n|generated_)?jit\s*\("
    r"|from\s+numba(?:\.core\.decorators)?\s+import\s+[^\n]*\b(?:n|generated_)?jit\b"
)


def _python_files() -> list[Path]:
    files: list[Path] = []
    for pkg in PACKAGES:
        root = REPO / pkg
        if root.is_dir():
            files.extend(p for p in root.rglob("*.py") if ".venv" not in p.parts)
    return files


@pytest.mark.parametrize(
    "line",
    [
        "@njit",
        "@njit(cache=True)",
        "@numba.njit",
        "@numba.jit(nopython=True)",
        "f = numba.njit(g)",
        "from numba import njit",
        "from numba import prange, jit",
        "@nb.njit",
    ],
)
def test_pattern_catches_bare_jit(line: str) -> None:
    """The policy regex recognises every spelling of a direct numba JIT."""
    assert BARE_JIT.search(line)


@pytest.mark.parametrize(
    "line", ["@kernel", "from acpc_lbr.jit import kernel", "numba.prange(n)", "# no jit here"]
)
def test_pattern_allows_policy_use(line: str) -> None:
    """Using the project decorator or other numba names is not flagged."""
    assert not BARE_JIT.search(line)


def test_no_bare_jit_outside_policy_module() -> None:
    """No package module except acpc_lbr/jit.py calls numba.njit/jit directly."""
    offenders = []
    for path in _python_files():
        if path.resolve() == POLICY_FILE.resolve():
            continue
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if BARE_JIT.search(line):
                offenders.append(f"{path.relative_to(REPO)}:{lineno}: {line.strip()}")
    assert not offenders, "use acpc_lbr.jit.kernel instead:\n" + "\n".join(offenders)


def test_policy_options() -> None:
    """The policy caches, never uses fastmath, and releases the GIL."""
    assert jit.JIT_OPTIONS["cache"] is True
    assert jit.JIT_OPTIONS["fastmath"] is False
    assert jit.JIT_OPTIONS["nogil"] is True


@pytest.mark.skipif(numba.config.DISABLE_JIT, reason="dispatchers only exist with the JIT on")
def test_kernels_are_compiled_with_the_policy() -> None:
    """Every numba dispatcher in the kernel modules carries the policy's options."""
    found = 0
    for name in KERNEL_MODULES:
        if importlib.util.find_spec(name) is None:
            continue
        module = importlib.import_module(name)
        for attr, obj in vars(module).items():
            if isinstance(obj, numba.core.registry.CPUDispatcher):
                found += 1
                opts = obj.targetoptions
                cache_kind = type(obj._cache).__name__  # NullCache unless cache=True
                assert cache_kind != "NullCache", f"{name}.{attr} is not cached"
                assert not opts.get("fastmath"), f"{name}.{attr} uses fastmath"
                assert opts.get("nogil") is True, f"{name}.{attr} holds the GIL"
    assert found > 0


BLAS = re.compile(r"np\.(?:dot|vdot|inner|outer|matmul|linalg)\b|[\w)\]]\s@\s")


def test_no_kernel_calls_blas() -> None:
    """acpc_lbr/jit.py loads numba's numpy support without scipy's BLAS: no kernel may need it."""
    import inspect

    from numba.core.registry import CPUDispatcher

    kernels = 0
    for name in KERNEL_MODULES:
        module = importlib.import_module(name)
        for value in vars(module).values():
            if isinstance(value, CPUDispatcher):
                kernels += 1
                source = inspect.getsource(value.py_func)
                body = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("@"))
                assert not BLAS.search(body), f"{name}.{value.py_func.__name__} calls BLAS"
    assert kernels >= 5
    assert BLAS.search("return a @ b") and BLAS.search("np.dot(a, b)") and not BLAS.search("@kernel")


def test_a_kernel_runs_without_importing_scipy_linalg_which_stays_importable() -> None:
    """Start-up: numba's first kernel does not import scipy.linalg (0.1-0.3 s); it can be imported after."""
    import subprocess
    import sys

    pytest.importorskip("scipy")
    code = ("import sys, numpy as np\n"
            "from acpc_lbr.equity import equity_vector\n"
            "equity_vector([0, 1], [10, 20, 30, 40, 50])\n"
            "print('scipy.linalg' in sys.modules)\n"
            "import scipy.linalg\n"
            "print(scipy.linalg.cython_blas is not None)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=REPO, check=True).stdout.split()
    assert out == ["False", "True"]
