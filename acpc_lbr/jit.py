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


def kernel(func: F) -> F:
    """Compile ``func`` with the project's serial JIT policy.

    Args:
        func: A numba-compatible Python function.

    Returns:
        The compiled dispatcher (or ``func`` itself under ``NUMBA_DISABLE_JIT``).
    """
    return _serial(func)  # type: ignore[no-any-return]


__all__ = ["JIT_OPTIONS", "kernel"]
