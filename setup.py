"""Build: compile the hot modules with mypyc, or fall back to the sources.

The metadata lives in pyproject.toml; this file adds one step to build_ext.
The modules of ``protocol._variant.GROUP`` (the protocol core and the dealer's
hot path) are compiled as one mypyc group, and ``protocol/_native_build.json``
records the SHA-256 of each source they were built from
(``protocol/__init__.py`` checks it before using them). If mypyc
or the C compiler fails, or ``ACPC_LBR_PURE`` is set, the install goes on with
the pure sources and says so. mypyc runs only in build_ext, so the metadata
steps of an install stay quick. An in-place (editable) build whose manifest
says every source is the one its modules were built from keeps them and
compiles nothing (``protocol._variant.reusable_build``): installing an extra
with ``pip install -e '.[extra]'`` no longer recompiles unchanged sources.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def _variant() -> Any:
    """protocol/_variant.py, loaded by path (importing the package would pick a variant)."""
    spec = importlib.util.spec_from_file_location("_acpc_lbr_variant", ROOT / "protocol" / "_variant.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses looks the module up
    spec.loader.exec_module(module)
    return module


VARIANT = _variant()
#: Stands for the mypyc extensions until build_ext makes them: it marks the
#: distribution as having extensions (a platform wheel, build_ext runs).
PLACEHOLDER = Extension(VARIANT.SHARED_LIB, sources=[])
#: The per-hand loops of a deal in plain C (protocol/_handnative.c), built with the group and
#: used when it imports (protocol/deal.py, wire.py and ranking.py fall back to their own loops).
#: Optional: a failure to build it leaves the group compiled and the helper out (setuptools then
#: skips it); every in-place build removes the old one first, so a stale one is never imported.
HAND_NATIVE = Extension(VARIANT.HELPER, sources=["protocol/_handnative.c"], optional=True)


def _why(error: BaseException) -> str:
    """The failure in one short line (a compiler error's text is its whole command line)."""
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[:160]}{'...' if len(text) > 160 else ''}"


def _say(message: str) -> None:
    print(f"acpc-lbr build: {message}", file=sys.stderr, flush=True)


class BuildNative(build_ext):
    """build_ext that compiles the group with mypyc, or records why not."""

    #: An in-place build whose sources are unchanged: its manifest, kept with its modules (set in
    #: finalize_options; None: build).
    reused: dict[str, Any] | None = None

    def finalize_options(self) -> None:
        # mypyc type-checks the group and writes its C here, so that
        # build_ext's own preparation sees the real extensions.
        self.start = time.monotonic()
        self.reused = None
        if (self.editable_mode or self.inplace) and not VARIANT.pure_forced():
            self.reused = VARIANT.reusable_build(ROOT, sysconfig.get_config_var("EXT_SUFFIX"))
        self.problem = None if self.reused is not None else self._generate()
        nothing_of_the_group = self.problem is not None or self.reused is not None
        if nothing_of_the_group and not VARIANT.pure_forced():
            # Nothing to build but the C helper (quick). It goes in before setuptools prepares
            # the extensions (their stub and file names), which it does only in finalize_options.
            self.distribution.ext_modules = [HAND_NATIVE]
        super().finalize_options()
        if nothing_of_the_group and VARIANT.pure_forced():
            # The placeholder stays in the distribution, so that setuptools
            # still runs this command (an editable install skips it when there
            # are no extensions) and run() records why nothing was compiled.
            self.extensions = []

    def _generate(self) -> str | None:
        """Generate the C code and set the extensions; why not, or None."""
        if VARIANT.pure_forced():
            return f"{VARIANT.PURE_ENV} is set"
        try:
            from mypyc.build import mypycify  # lazy: only build_ext needs mypy
        except ImportError as error:
            return f"mypyc is not available: {error}"
        sources = [VARIANT.source_path(Path(), name).as_posix() for name in VARIANT.GROUP]
        cwd = os.getcwd()
        os.chdir(ROOT)  # mypyc writes its C files under build/ and names modules by path
        try:
            # --no-site-packages: numpy and Twisted are only objects to the
            # compiled code, so their types are not needed (an unused "type:
            # ignore" about them is no error here), and the build is the same
            # with or without build isolation. --follow-imports=silent: the
            # modules the group imports stay Python; mypy reads them for their
            # types but reports only the group's errors (tests/test_typing.py
            # checks everything with all the types).
            self.distribution.ext_modules = [*mypycify(
                ["--no-site-packages", "--ignore-missing-imports", "--follow-imports=silent",
                 "--no-warn-unused-ignores", *sources],
                opt_level="3", group_name=VARIANT.GROUP_NAME,
            ), HAND_NATIVE]
        except (Exception, SystemExit) as error:  # noqa: BLE001 - any failure means: pure
            return _why(error)
        finally:
            os.chdir(cwd)
        self.extensions = self.distribution.ext_modules
        return None

    def run(self) -> None:
        if self.editable_mode or self.inplace:
            for name in VARIANT.stray_extensions(ROOT):  # would shadow their sources (_variant says why)
                for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                    VARIANT.compiled_path(ROOT, name, suffix).unlink(missing_ok=True)
                _say(f"removed the compiled file of {name}, no longer in the group")
            # The helper's old module goes first: built again below, or its Python twins run
            # (it is optional: a failed build leaves no file, and a stale one would be imported).
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                VARIANT.compiled_path(ROOT, HAND_NATIVE.name, suffix).unlink(missing_ok=True)
        if self.reused is not None:
            # An editable install (of an extra, say) with the sources the modules were built from.
            _say(f"reusing the compiled {', '.join(VARIANT.GROUP)}: their sources are unchanged "
                 f"since they were built ({VARIANT.MANIFEST} records each SHA-256)")
            # The sources were just hashed unchanged: their sizes and times now are the ones a
            # start compares (a checkout may have touched them; an older manifest has none).
            self._write_manifest({**self.reused, "stats": VARIANT.source_stats(ROOT)}, inplace=True)
            self._build_helper_alone()
            return
        # setuptools clears inplace while it builds, and leaves it cleared when the build fails.
        inplace = bool(self.inplace)
        if self.problem is None:
            try:
                super().run()
            except (Exception, SystemExit) as error:  # noqa: BLE001 - compiler failed: pure
                self.problem = _why(error)
        else:
            self._build_helper_alone()
        manifest: dict[str, Any]
        if self.problem is None:
            manifest = {
                "compiled": True,
                "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX"),
                "sources": VARIANT.source_hashes(ROOT),
                "stats": VARIANT.source_stats(ROOT),
            }
            _say(f"compiled {', '.join(VARIANT.GROUP)} with mypyc "
                 f"in {time.monotonic() - self.start:.0f} s")
        else:
            manifest = {"compiled": False, "reason": self.problem}
            _say(f"NOT compiled ({self.problem}); the pure-Python {VARIANT.LABEL} will be used")
        self._write_manifest(manifest, inplace)

    def _build_helper_alone(self) -> None:
        """Build the C helper without the group (reused, or not compiled); its Python twins run if
        it cannot be built."""
        if not self.extensions:
            return
        try:
            super().run()
        except (Exception, SystemExit) as error:  # noqa: BLE001 - its Python twins stand in
            _say(f"{HAND_NATIVE.name} not built ({_why(error)}); its Python twins will be used")

    def _write_manifest(self, manifest: dict[str, Any], inplace: bool) -> None:
        """Next to the built modules (the wheel's tree), and the sources' for an in-place build."""
        places = [VARIANT.manifest_dir(Path(self.build_lib))]
        if inplace:
            places.append(VARIANT.manifest_dir(ROOT))
        for place in places:
            place.mkdir(parents=True, exist_ok=True)
            (place / VARIANT.MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")

    def get_outputs(self) -> list[str]:
        outputs = super().get_outputs()
        return [*outputs, str(VARIANT.manifest_dir(Path(self.build_lib)) / VARIANT.MANIFEST)]


setup(ext_modules=[PLACEHOLDER], cmdclass={"build_ext": BuildNative})
