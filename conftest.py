"""pytest, repository-wide: the doctests of compiled modules.

When the mypyc-compiled group is in use, its ``.py`` files are not
the modules that run, and pytest's doctest collector refuses them (an
"import file mismatch"). tests/protocol/test_variant.py runs their doctests
instead: against the compiled modules, and against the sources with
``ACPC_LBR_PURE=1``.
"""

from __future__ import annotations

from pathlib import Path

import protocol
from protocol import _variant

#: The sources of the compiled group's modules.
GROUP_SOURCES = {_variant.source_path(_variant.ROOT, name) for name in _variant.GROUP}


def pytest_ignore_collect(collection_path: Path) -> bool | None:
    if protocol.COMPILED and collection_path in GROUP_SOURCES:
        return True
    return None
