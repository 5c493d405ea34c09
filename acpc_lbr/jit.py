"""The project's single numba JIT policy.

Every compiled kernel in the project is decorated with :data:`kernel`. No
other module calls ``numba.njit`` / ``numba.jit`` directly; ``tests/acpc_lbr/test_jit_policy.py``
enforces this.

Policy:

* ``cache=True``: compiled machine code is cached next to the sources
  (``__pycache__``), so only the first run after a source change pays the
  compile time.
* ``fastmath=False``: results are compared exactly in the tests (integer hand
  ranks, exact win/tie counts), so no floating-point reassociation.
* ``nogil=True``: kernels release the GIL, so callers may run them on threads.
* ``error_model="numpy"``: division by zero gives inf/nan
  instead of a Python exception, consistent with "kernels never raise".

Setting ``NUMBA_DISABLE_JIT=1`` turns every kernel into plain Python (used by
the coverage run); the decorator then returns the function unchanged.

Example (in a module file; ``cache=True`` cannot cache functions typed at a prompt)::

    from acpc_lbr.jit import kernel

    @kernel
    def add(a, b):
        return a + b
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numba

F = TypeVar("F", bound=Callable[..., Any])

#: Keyword arguments shared by every kernel decorator.
JIT_OPTIONS: dict[str, Any] = {
    "cache": True,
    "fastmath": False,
    "nogil": True,
    "error_model": "numpy",
}

_serial = numba.njit(**JIT_OPTIONS)


def _load_numpy_support_without_scipy() -> None:
    """Load numba's numpy support now, keeping it from importing ``scipy.linalg``.

    Before its first kernel runs, numba loads its numpy support, whose module
    (``numba.np.arraymath``) asks whether scipy's BLAS is there -- for
    ``np.dot`` inside kernels -- by importing ``scipy.linalg``: 0.1-0.3 s of
    CPU in every process that starts an evaluation, when scipy is installed
    (the test extras bring it). No kernel of this project calls BLAS
    (``np.dot``, ``@``, ``np.linalg``: ``tests/acpc_lbr/test_jit_policy.py``),
    so the module is loaded with ``scipy.linalg`` unimportable; it is
    importable again right after, for numba (a kernel needing BLAS imports
    it when compiled) and for everyone else.
    """
    import sys

    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
        return
    sys.modules["scipy.linalg"] = None  # type: ignore[assignment]  # import scipy.linalg: ImportError
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        if "scipy.linalg" in sys.modules and sys.modules["scipy.linalg"] is None:
            del sys.modules["scipy.linalg"]


_load_numpy_support_without_scipy()


def kernel(func: F) -> F:
    """Compile ``func`` with the project's serial JIT policy.

    Args:
        func: A numba-compatible Python function.

    Returns:
        The compiled dispatcher (or ``func`` itself under ``NUMBA_DISABLE_JIT``).
    """
    return _serial(func)  # type: ignore[no-any-return]


__all__ = ["JIT_OPTIONS", "kernel"]
