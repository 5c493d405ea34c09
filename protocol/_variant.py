"""Which variant of the protocol core runs: the mypyc-compiled modules or their sources.

The hot modules of this package (:data:`GROUP`) are compiled with mypyc when
the package is installed (setup.py); the ``.py`` files stay the rules and the
compiled modules are built from them. The build records each source's SHA-256
in :data:`MANIFEST`. :func:`select` runs when :mod:`protocol` is imported,
before any module of the group is: the compiled modules are used only if the
manifest says they were built, every one of them is there for this
interpreter, and every source still has the hash it was built from. Otherwise
the whole group is loaded from its sources -- never a mix, since the modules of
one mypyc group share native classes -- and a stale or partial build says so
in one line on stderr. ``ACPC_LBR_PURE=1`` forces the sources.

Nothing here imports a module of the group; setup.py loads this file by path.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import fields
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import Any

#: The modules compiled together (one mypyc group), in build order.
GROUP = ("cards", "ranking", "rules", "deal", "wire", "lines")
#: The group's shared library (mypyc's ``group_name`` plus ``__mypyc``).
GROUP_NAME = "protocol._native"
SHARED_LIB = "_native__mypyc"
#: The build's record, next to the modules: {"compiled": bool, "ext_suffix": str,
#: "sources": {module: sha256}} or {"compiled": false, "reason": str}.
MANIFEST = "_native_build.json"
#: Set (to anything but "" or "0") to load the pure sources.
PURE_ENV = "ACPC_LBR_PURE"
REBUILD = "pip install -e ."

PACKAGE_DIR = Path(__file__).resolve().parent


def source_hashes(package_dir: Path) -> dict[str, str]:
    """The SHA-256 of each group module's source, by module name."""
    return {
        name: hashlib.sha256((package_dir / f"{name}.py").read_bytes()).hexdigest()
        for name in GROUP
    }


def read_manifest(package_dir: Path) -> dict[str, Any] | None:
    """The build's manifest, or None when there is none (or it is unreadable)."""
    try:
        data = json.loads((package_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def pure_forced() -> bool:
    """True when ``ACPC_LBR_PURE`` asks for the pure sources."""
    return os.environ.get(PURE_ENV, "") not in ("", "0")


def compiled_problem(package_dir: Path, manifest: dict[str, Any]) -> str | None:
    """Why a build that says it compiled cannot be used here; None when it can."""
    suffix = manifest.get("ext_suffix")
    if suffix not in importlib.machinery.EXTENSION_SUFFIXES:
        return f"its compiled modules were built for another Python ({suffix})"
    missing = [n for n in (*GROUP, SHARED_LIB) if not (package_dir / f"{n}{suffix}").is_file()]
    if missing:
        return f"compiled module(s) missing: {', '.join(missing)}"
    built = manifest.get("sources", {})
    try:
        changed = [n for n, h in source_hashes(package_dir).items() if built.get(n) != h]
    except OSError as error:
        return f"a source cannot be read ({error})"
    if changed:
        return f"protocol/{changed[0]}.py changed since its compiled module was built"
    return None


def choose(package_dir: Path) -> tuple[bool, str, str | None]:
    """Whether to use the compiled group, why (for ``acpc-lbr --version``), and
    the notice to print (None: no notice).

    No manifest (a plain source tree) or a build that fell back to the sources
    (it said so when it ran) selects the sources quietly.
    """
    if pure_forced():
        return False, f"{PURE_ENV} is set", None
    manifest = read_manifest(package_dir)
    if manifest is None:
        return False, "not built", None
    if not manifest.get("compiled"):
        return False, f"the build did not compile: {manifest.get('reason')}", None
    problem = compiled_problem(package_dir, manifest)
    if problem is not None:
        return False, problem, (
            f"acpc-lbr: {problem}; using the pure-Python protocol core "
            f"(rebuild: {REBUILD}; silence: {PURE_ENV}=1)"
        )
    return True, "mypyc", None


class PureFinder(importlib.abc.MetaPathFinder):
    """Loads the group's modules from their ``.py`` files, ahead of any compiled file."""

    def __init__(self, package_dir: Path) -> None:
        self.paths = {f"protocol.{name}": package_dir / f"{name}.py" for name in GROUP}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        source = self.paths.get(fullname)
        if source is None:
            return None
        return importlib.util.spec_from_file_location(fullname, source)


def select(package_dir: Path = PACKAGE_DIR) -> tuple[bool, str]:
    """Choose the variant for this process: (compiled group in use, why).

    Must run before any module of the group is imported.
    """
    compiled, why, notice = choose(package_dir)
    if notice is not None:
        print(notice, file=sys.stderr)
    if not compiled and not any(isinstance(f, PureFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, PureFinder(package_dir))
    return compiled, why


def record_reduce(record: Any) -> tuple[Any, tuple[Any, ...]]:
    """``__reduce__`` for a frozen dataclass: rebuild it from its init fields.

    A compiled frozen dataclass has no ``__dict__``, so the default pickle and
    copy protocol (restore attributes one by one) trips over its frozen
    ``__setattr__``; calling the class again works in both variants.
    """
    return type(record), tuple(getattr(record, f.name) for f in fields(record) if f.init)
