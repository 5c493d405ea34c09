"""The Dockerfile copies everything the build reads (issue 31: it left out setup.py, so the
image was built without its compiled core, silently)."""

from __future__ import annotations

import fnmatch
import re
import shlex
import tomllib
from pathlib import Path

from tests.deploy.test_compose import _instructions

ROOT = Path(__file__).resolve().parents[2]


def _build_inputs() -> set[str]:
    """What ``pip install .`` reads: pyproject.toml, setup.py, the readme, the packages, and every
    file setup.py opens under the project (``ROOT / "dir" / ...``: its top-level name)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    needed = {"pyproject.toml", str(project["project"]["readme"])}
    patterns = project["tool"]["setuptools"]["packages"]["find"]["include"]
    needed |= {path.name for path in ROOT.iterdir()
               if (path / "__init__.py").is_file() and any(fnmatch.fnmatch(path.name, p) for p in patterns)}
    if (ROOT / "setup.py").exists():
        needed.add("setup.py")
        needed |= set(re.findall(r'ROOT\s*/\s*"([^"/]+)"', (ROOT / "setup.py").read_text()))
    return needed


def _copied(dockerfile: str) -> set[str]:
    """The top-level names the Dockerfile's COPY and ADD take from the build context."""
    copied: set[str] = set()
    for instruction, rest in _instructions(dockerfile):
        words = [w for w in shlex.split(rest) if not w.startswith("--")]
        if instruction in ("COPY", "ADD") and "--from" not in rest:
            copied |= {Path(source).parts[0] if Path(source).parts[0] != "." else Path(source).parts[1]
                       for source in words[:-1]}
    return copied


def test_the_dockerfile_copies_everything_the_build_reads() -> None:
    """Every input of the build (from pyproject.toml and setup.py) is copied, none is excluded
    by .dockerignore, and a C compiler is there while mypyc compiles."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    needed = _build_inputs()
    assert {"pyproject.toml", "setup.py", "README.md", "protocol", "dealer", "agents", "acpc_lbr"} <= needed
    missing = needed - _copied(dockerfile)
    assert not missing, f"the Dockerfile does not copy {sorted(missing)}"
    ignored = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    excluded = {name for name in needed for pattern in ignored if fnmatch.fnmatch(name, pattern)}
    assert not excluded, f".dockerignore excludes {sorted(excluded)}"
    install = next(rest for instruction, rest in _instructions(dockerfile)
                   if instruction == "RUN" and "pip install" in rest)
    assert install.index("gcc") < install.index("pip install")
