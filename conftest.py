"""pytest, repository-wide: the doctests of compiled protocol modules.

When the mypyc-compiled protocol group is in use, its ``.py`` files are not
the modules that run, and pytest's doctest collector refuses them (an
"import file mismatch"). tests/protocol/test_variant.py runs their doctests
instead: against the compiled modules, and against the sources with
``ACPC_LBR_PURE=1``.
"""

from __future__ import annotations

from pathlib import Path

import protocol
from protocol import _variant


def pytest_ignore_collect(collection_path: Path) -> bool | None:
    if (
        protocol.COMPILED
        and collection_path.parent == _variant.PACKAGE_DIR
        and collection_path.suffix == ".py"
        and collection_path.stem in _variant.GROUP
    ):
        return True
    return None
