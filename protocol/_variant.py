"""Which variant of the compiled core runs: the mypyc-compiled modules or their sources.

The hot modules of the protocol core and the dealer's per-action path
(:data:`GROUP`) are compiled with mypyc, as one group, when the package is
installed (setup.py); the ``.py`` files stay the rules and the compiled modules
are built from them. The build records each source's SHA-256 in
:data:`MANIFEST`. :func:`select` runs when :mod:`protocol` is imported (and
:mod:`dealer` imports :mod:`protocol` first thing), before any module of the
group is: the compiled modules are used only if the manifest says they were
built, every one of them is there for this interpreter, and every source still
has the hash it was built from (a source whose size and modification time are the
ones the build recorded is taken as unchanged without being hashed, as Python's own
bytecode caches are checked: hashing meant loading OpenSSL at every start, about a
tenth of a plain dealer's start-up). Otherwise the whole group is loaded from its
sources -- never a mix, since the modules of one mypyc group share native
classes -- and a stale or partial build says so in one line on stderr.
``ACPC_LBR_PURE=1`` forces the sources.

Nothing here imports a module of the group; setup.py loads this file by path.
"""

from __future__ import annotations

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
from typing import TYPE_CHECKING, Any

#: The build's list of the modules compiled together (one mypyc group), in build order.
GROUP_FILE = Path(__file__).with_name("_native_group.txt")
#: The modules compiled together, read from :data:`GROUP_FILE`: build configuration, kept out
#: of the code so that the protocol package's code names no module of a higher layer
#: (docs/architecture.md says why these modules and not the others).
GROUP = tuple(line.strip() for line in GROUP_FILE.read_text(encoding="utf-8").splitlines()
              if line.strip() and not line.lstrip().startswith("#"))
#: What the group is, for ``acpc-lbr --version``, the benchmarks and the notice.
LABEL = "protocol core + dealer hot path"
#: The group's shared library (mypyc's ``group_name`` plus ``__mypyc``), in protocol/.
GROUP_NAME = "protocol._native"
SHARED_LIB = "protocol._native__mypyc"
#: The build's record, in protocol/: {"compiled": bool, "ext_suffix": str,
#: "sources": {module: sha256}, "stats": {module: [size, mtime_ns]}} or
#: {"compiled": false, "reason": str}. ("stats" may be missing: builds before it hash every source.)
MANIFEST = "_native_build.json"
#: Set (to anything but "" or "0") to load the pure sources.
PURE_ENV = "ACPC_LBR_PURE"
REBUILD = "pip install -e ."

PACKAGE_DIR = Path(__file__).resolve().parent
#: The directory that holds the packages of the group (protocol/, dealer/).
ROOT = PACKAGE_DIR.parent


if TYPE_CHECKING:
    from mypy_extensions import mypyc_attr as mypyc_attr
else:
    def mypyc_attr(*flags: str, **settings: object) -> Any:
        """``mypy_extensions.mypyc_attr`` at run time: nothing. mypyc reads the decorator when
        it compiles (type checkers and mypyc see the real one through this name), and a
        compiled class never calls it; so neither the dealer's start-up nor its
        dependencies hold ``mypy_extensions``."""
        return lambda cls: cls


def source_path(root: Path, module: str) -> Path:
    """The source of ``module`` (a dotted name) under ``root``."""
    return root.joinpath(*module.split(".")).with_suffix(".py")


def compiled_path(root: Path, module: str, suffix: str) -> Path:
    """The compiled module ``module`` (a dotted name) under ``root``, for ``suffix``."""
    *package, name = module.split(".")
    return root.joinpath(*package, f"{name}{suffix}")


def manifest_dir(root: Path) -> Path:
    """Where the build's manifest lives (next to the group's shared library)."""
    return root / "protocol"


def source_hashes(root: Path) -> dict[str, str]:
    """The SHA-256 of each group module's source, by dotted module name."""
    import hashlib  # lazy: OpenSSL takes milliseconds to load, and a start with unchanged stats needs none

    return {
        name: hashlib.sha256(source_path(root, name).read_bytes()).hexdigest()
        for name in GROUP
    }


def source_stats(root: Path) -> dict[str, list[int]]:
    """The size and modification time (ns) of each group module's source, by dotted module name."""
    stats = {}
    for name in GROUP:
        stat = os.stat(source_path(root, name))
        stats[name] = [stat.st_size, stat.st_mtime_ns]
    return stats


def changed_sources(root: Path, manifest: dict[str, Any]) -> list[str]:
    """The group's sources that differ from the ones the build compiled (by name).

    A source with the size and modification time the build recorded is the one it
    compiled; only the others are hashed and compared with the recorded SHA-256
    (a checkout that rewrote a file with the same text is unchanged).

    Raises:
        OSError: a source cannot be read.
    """
    built = manifest.get("sources", {})
    recorded = manifest.get("stats", {})
    current = source_stats(root)
    if all(recorded.get(name) == current[name] for name in GROUP):
        return []
    return [name for name, digest in source_hashes(root).items() if built.get(name) != digest]


def read_manifest(root: Path) -> dict[str, Any] | None:
    """The build's manifest, or None when there is none (or it is unreadable)."""
    try:
        data = json.loads((manifest_dir(root) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def pure_forced() -> bool:
    """True when ``ACPC_LBR_PURE`` asks for the pure sources."""
    return os.environ.get(PURE_ENV, "") not in ("", "0")


def compiled_problem(root: Path, manifest: dict[str, Any]) -> str | None:
    """Why a build that says it compiled cannot be used here; None when it can."""
    suffix = manifest.get("ext_suffix")
    if not isinstance(suffix, str) or suffix not in importlib.machinery.EXTENSION_SUFFIXES:
        return f"its compiled modules were built for another Python ({suffix})"
    missing = [n for n in (*GROUP, SHARED_LIB) if not compiled_path(root, n, suffix).is_file()]
    if missing:
        return f"compiled module(s) missing: {', '.join(missing)}"
    try:
        changed = changed_sources(root, manifest)
    except OSError as error:
        return f"a source cannot be read ({error})"
    if changed:
        where = source_path(Path(), changed[0]).as_posix()
        return f"{where} changed since its compiled module was built"
    return None


def reusable_build(root: Path, ext_suffix: str | None) -> dict[str, Any] | None:
    """The manifest of an in-place build that a new build may keep as it is: it compiled, for
    this Python (``ext_suffix``), every compiled module is there, and every source's SHA-256 is
    the one it was built from. None: compile again. (``pip install -e '.[extra]'`` reruns the
    build step; unchanged sources need not be compiled again: 83 to 130 s each time.)
    """
    manifest = read_manifest(root)
    if manifest is None or not manifest.get("compiled") or manifest.get("ext_suffix") != ext_suffix:
        return None
    return manifest if compiled_problem(root, manifest) is None else None


def choose(root: Path) -> tuple[bool, str, str | None]:
    """Whether to use the compiled group, why (for ``acpc-lbr --version``), and
    the notice to print (None: no notice).

    No manifest (a plain source tree) or a build that fell back to the sources
    (it said so when it ran) selects the sources quietly.
    """
    if pure_forced():
        return False, f"{PURE_ENV} is set", None
    manifest = read_manifest(root)
    if manifest is None:
        return False, "not built", None
    if not manifest.get("compiled"):
        return False, f"the build did not compile: {manifest.get('reason')}", None
    problem = compiled_problem(root, manifest)
    if problem is not None:
        return False, problem, (
            f"acpc-lbr: {problem}; using the pure-Python sources of the {LABEL} "
            f"(rebuild: {REBUILD}; silence: {PURE_ENV}=1)"
        )
    return True, "mypyc", None


def stray_extensions(root: Path) -> list[str]:
    """Modules of the group's packages with a compiled file but no place in the group: left by
    the build of an older group (a module split or moved out of it). Python's import prefers
    an extension to a ``.py`` of the same name, so a stray file would run old code silently."""
    strays = []
    for package in sorted({name.split(".")[0] for name in GROUP}):
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            for path in (root / package).glob(f"*{suffix}"):
                name = f"{package}.{path.name[: -len(suffix)]}"
                if name not in GROUP and name != SHARED_LIB and source_path(root, name).exists():
                    strays.append(name)
    return sorted(set(strays))


class PureFinder:
    """Loads modules from their ``.py`` files, ahead of any compiled file: the group's (the
    pure variant), or only the stray ones (:func:`stray_extensions`).

    A meta path finder by its ``find_spec`` (``importlib.abc.MetaPathFinder`` is not its
    base: importing ``importlib.abc`` loads ``importlib.resources``, several ms of every
    command's start-up)."""

    def __init__(self, root: Path, names: Sequence[str] = GROUP) -> None:
        self.paths = {name: source_path(root, name) for name in names}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        source = self.paths.get(fullname)
        if source is None:
            return None
        return importlib.util.spec_from_file_location(fullname, source)


def select(root: Path = ROOT) -> tuple[bool, str]:
    """Choose the variant for this process: (compiled group in use, why).

    Must run before any module of the group is imported.
    """
    compiled, why, notice = choose(root)
    if notice is not None:
        print(notice, file=sys.stderr)
    if not any(isinstance(f, PureFinder) for f in sys.meta_path):
        strays = stray_extensions(root)
        if strays:
            print(f"acpc-lbr: ignoring compiled files of {', '.join(strays)}, no longer compiled "
                  f"(left by an older build; {REBUILD} removes them)", file=sys.stderr)
        if not compiled:
            sys.meta_path.insert(0, PureFinder(root))
        if strays:
            sys.meta_path.insert(0, PureFinder(root, strays))
    return compiled, why


#: The plain C helper of the per-hand loops (protocol/_handnative.c; setup.py builds it).
HELPER = "protocol._handnative"


def native_helper() -> Any:
    """The plain C helper module (:data:`HELPER`), or None: not built, or the pure sources
    asked for (``ACPC_LBR_PURE``). Each caller keeps its own loop as
    the helper's slow twin; a helper holds no state, so using it with either variant of the
    group is the same."""
    if pure_forced():
        return None
    try:
        return importlib.import_module(HELPER)
    except ImportError:
        return None


def record_reduce(record: Any) -> tuple[Any, tuple[Any, ...]]:
    """``__reduce__`` for a frozen dataclass of the group: rebuild it from its init fields.

    Why the group's seven frozen dataclasses define ``__reduce__`` as this:
    compiled, a record has no ``__dict__``, so the default pickle and copy
    protocol restores its attributes one by one through the frozen
    ``__setattr__``, which raises ``FrozenInstanceError`` (mypy 2.4's mypyc;
    the pure sources do not need it). Calling the class again works in both
    variants. (``Action``'s own ``__reduce__`` is needed in both: a slotted
    class with a refusing ``__setattr__``.) ``tests/protocol/test_variant.py::test_records_pickle_and_copy_by_value``
    fails on a compiled build without it.
    """
    return type(record), tuple(getattr(record, f.name) for f in fields(record) if f.init)
