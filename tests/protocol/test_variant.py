"""The compiled core (protocol core + dealer hot path) and its pure twin: both run, both
are tested, neither hides.

protocol/_variant.py picks the mypyc-compiled modules of the group or their
sources. Here: the build's modules are the ones loaded when it produced them;
the rules' reference-log replays, the fast-path twins, the doctests and the
dealer's in-memory matches pass on the pure sources too (a subprocess with
``ACPC_LBR_PURE=1``) and on the compiled modules; a stale, partial or foreign
build falls back to the sources, whole (protocol and dealer modules alike),
with a notice; the frozen records pickle and copy in either variant.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import doctest
import importlib
import json
import os
import pickle
import random
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import protocol
from protocol import _variant
from protocol.cards import card_rank, card_suit, card_to_text, cards_to_text
from protocol.deal import DealSource
from protocol.errors import ProtocolError
from protocol.gamedef import load_game
from protocol.hands import hand_index
from protocol.lines import decision_points
from protocol.ranking import rank_hand
from protocol.rules import Action, ActionType, State, correct_action
from protocol.wire import (
    ReplayCache,
    log_state_text,
    matchstate_for,
    matchstate_text,
    parse_action,
    parse_betting,
    parse_log_state,
    parse_matchstate,
    parse_matchstate_replayed,
    parse_reply,
    parse_score,
    read_reply_action,
)

REPO = Path(__file__).resolve().parents[2]
ROOT = _variant.ROOT
#: The group's packages, as directories under ROOT.
PACKAGES = sorted({name.split(".")[0] for name in _variant.GROUP})


def _loaded_file(name: str) -> str:
    return str(importlib.import_module(name).__file__)


def _c_compiler() -> str | None:
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc)


def test_loaded_variant_is_the_one_selected() -> None:
    """protocol.COMPILED says what runs: every module of the group from one kind of file."""
    suffix = ".py" if not protocol.COMPILED else str(_variant.read_manifest(ROOT)["ext_suffix"])
    files = {name: _loaded_file(name) for name in _variant.GROUP}
    assert all(f.endswith(suffix) for f in files.values()), files
    if _variant.pure_forced():
        assert not protocol.COMPILED


def test_compiled_modules_are_loaded_when_the_build_produced_them() -> None:
    """A build that compiled is used; a build that failed with a C compiler at hand fails here."""
    manifest = _variant.read_manifest(ROOT)
    if manifest is None:
        pytest.skip("this tree was not built (no protocol/_native_build.json)")
    if not manifest["compiled"]:
        reason = manifest["reason"]
        if _variant.PURE_ENV in reason or _c_compiler() is None:
            pytest.skip(f"built without compiling: {reason}")
        pytest.fail(f"the build did not compile the {_variant.LABEL}: {reason}")
    if _variant.pure_forced():
        pytest.skip(f"{_variant.PURE_ENV} is set")
    if _variant.source_hashes(ROOT) != manifest["sources"]:
        # An editable checkout with a source of the group edited since the build:
        # the sources run (and said so on stderr); a fresh build (CI) never skips.
        pytest.skip(f"sources of the group edited since the build; rebuild ({_variant.REBUILD}) "
                    "to test the compiled modules")
    assert protocol.COMPILED, protocol.variant()
    for name in _variant.GROUP:
        assert _loaded_file(name).endswith(manifest["ext_suffix"])
    assert _variant.SHARED_LIB in sys.modules


def _doctests(name: str) -> list[doctest.DocTest]:
    """The doctests written in the source of group module ``name``, bound to the loaded module."""
    module = importlib.import_module(name)
    path = _variant.source_path(ROOT, name)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes: list[Any] = [tree, *ast.walk(tree)]
    parser = doctest.DocTestParser()
    tests = []
    for node in nodes:
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        text = ast.get_docstring(node, clean=False)
        if text and ">>>" in text:
            where = getattr(node, "name", name)
            tests.append(parser.get_doctest(text, dict(vars(module)), f"{name}.{where}",
                                            str(path), getattr(node, "lineno", 0)))
    return tests


@pytest.mark.parametrize("name", _variant.GROUP)
def test_doctests_of_the_loaded_modules(name: str) -> None:
    """The examples in the group's docstrings hold for the modules that run (compiled ones too;
    pytest's own doctest collector runs them on the sources)."""
    tests = _doctests(name)
    if name in ("protocol.wire", "protocol.rules", "protocol.deal"):
        assert tests, f"{name} lost its doctests"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in tests:
        runner.run(test)
    assert runner.failures == 0, f"{runner.failures} doctest failure(s) in {name}"


#: The pure twin's run: the rules' reference-log replays, the fast paths against
#: their slow twins, the shortcuts against the one parser, the rules, this file
#: (but this test), the doctests, the dealer's in-memory matches and two
#: reference matches replayed byte for byte.
PURE_TWIN_RUN = [
    "tests/protocol/test_replay_reference_logs.py",
    "tests/protocol/test_fast_paths.py",
    "tests/protocol/test_rules.py",
    "tests/protocol/test_wire.py",
    "tests/protocol/test_parser_shortcuts.py",
    "tests/protocol/test_handnative.py",
    "tests/protocol/test_variant.py",
    *(_variant.source_path(Path(), name).as_posix() for name in _variant.GROUP
      if name.startswith("protocol.")),  # pytest collects doctests under protocol/ only
    "tests/dealer/test_memory.py",
    "tests/dealer/test_matches.py::test_replayed_reference_match_gives_identical_log[nl1000]",
    "tests/dealer/test_matches.py::test_replayed_reference_match_gives_identical_log[nl3p_100]",
]


def test_pure_twin_passes_the_rules_tests() -> None:
    """The same rules and dealer tests, on the pure sources, in a subprocess with ACPC_LBR_PURE=1."""
    env = {**os.environ, _variant.PURE_ENV: "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
               "-k", "not test_pure_twin", *PURE_TWIN_RUN]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False,
                          timeout=600)
    assert done.returncode == 0, f"{shlex.join(command)}\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
    assert " passed" in done.stdout.splitlines()[-1]


# -- staleness -------------------------------------------------------------

#: The modules the probe reports where they were loaded from.
PROBED = ("dealer.handloop", "protocol.rules", "protocol.wire", "protocol.lines")
#: dealer.handloop first: importing the dealer must pick the variant before any module of the
#: group loads (dealer/__init__.py imports protocol).
PROBE = ("import dealer.handloop, protocol, protocol.rules, protocol.wire, protocol.lines, sys; "
         f"print(protocol.COMPILED, *(sys.modules[m].__spec__.origin for m in {PROBED!r}))")


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    """A copy of the group's packages (compiled modules and manifest included) in tmp_path.

    In a tree that was not built, the copy gets a manifest of the current
    sources and empty files in place of the compiled modules: loading them
    would fail, so a test that passes with them never loaded them.
    """
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    manifest = _variant.read_manifest(tmp_path)
    if manifest is None or not manifest["compiled"]:
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        for name in (*_variant.GROUP, _variant.SHARED_LIB):
            _variant.compiled_path(tmp_path, name, suffix).write_bytes(b"")
        (_variant.manifest_dir(tmp_path) / _variant.MANIFEST).write_text(json.dumps(
            {"compiled": True, "ext_suffix": suffix, "sources": _variant.source_hashes(tmp_path)}))
    return tmp_path


def _probe(root: Path, **env: str) -> tuple[bool, dict[str, str], list[str]]:
    """In a subprocess run in ``root``: whether the group runs compiled, where each module
    of PROBED was loaded from, and the lines on stderr."""
    clean = {k: v for k, v in os.environ.items() if k != _variant.PURE_ENV}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=root, env={**clean, **env},
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    compiled, *files = done.stdout.split()
    assert compiled in ("True", "False") and len(files) == len(PROBED), done.stdout
    return compiled == "True", dict(zip(PROBED, files)), done.stderr.splitlines()


def _all_sources(root: Path, files: dict[str, str]) -> bool:
    """Every probed module was loaded from its source in ``root``."""
    return all(files[name] == str(_variant.source_path(root, name)) for name in PROBED)


def _real_build() -> bool:
    manifest = _variant.read_manifest(ROOT)
    return bool(manifest and manifest["compiled"]) and protocol.COMPILED


def test_copy_of_a_fresh_build_runs_compiled(package_copy: Path) -> None:
    """The control for the tests below: an untouched copy of a real build loads compiled,
    the dealer's modules as well as the protocol core's."""
    if not _real_build():
        pytest.skip("no compiled build in this tree")
    compiled, files, notices = _probe(package_copy)
    assert compiled, files
    suffix = _variant.read_manifest(package_copy)["ext_suffix"]
    assert all(f.startswith(str(package_copy)) and f.endswith(suffix) for f in files.values()), files
    assert notices == []


@pytest.mark.parametrize("module", ["protocol.rules", "dealer.handloop"])
def test_edited_source_loads_the_whole_group_pure_with_a_notice(package_copy: Path, module: str) -> None:
    """An edit to any source of the group, protocol's or the dealer's, sends every module
    of the group (both packages) to its source, with one line saying why."""
    source = _variant.source_path(package_copy, module)
    source.write_text(source.read_text() + "\n# edited after the build\n")
    compiled, files, notices = _probe(package_copy)
    assert not compiled and _all_sources(package_copy, files), files
    assert len(notices) == 1
    where = _variant.source_path(Path(), module).as_posix()
    assert f"{where} changed" in notices[0] and "pip install" in notices[0]


@pytest.mark.parametrize("module", ["protocol.lines", "dealer.handloop"])
def test_missing_compiled_module_loads_pure_with_a_notice(package_copy: Path, module: str) -> None:
    suffix = _variant.read_manifest(package_copy)["ext_suffix"]
    _variant.compiled_path(package_copy, module, suffix).unlink()
    compiled, files, notices = _probe(package_copy)
    assert not compiled and _all_sources(package_copy, files), files
    assert len(notices) == 1 and f"missing: {module}" in notices[0]


def test_compiled_modules_without_a_manifest_are_never_used(package_copy: Path) -> None:
    (_variant.manifest_dir(package_copy) / _variant.MANIFEST).unlink()
    compiled, files, notices = _probe(package_copy)
    assert not compiled and _all_sources(package_copy, files), files
    assert notices == []


def test_a_build_that_did_not_compile_runs_pure_quietly(package_copy: Path) -> None:
    """No C compiler at install: the build recorded why, and every module of the group
    (the dealer's too) runs from its source, with no notice (the install said so)."""
    (_variant.manifest_dir(package_copy) / _variant.MANIFEST).write_text(json.dumps(
        {"compiled": False, "reason": "CompileError: command 'cc' failed"}))
    compiled, files, notices = _probe(package_copy)
    assert not compiled and _all_sources(package_copy, files), files
    assert notices == []


def test_pure_env_forces_the_sources_quietly(package_copy: Path) -> None:
    compiled, files, notices = _probe(package_copy, **{_variant.PURE_ENV: "1"})
    assert not compiled and _all_sources(package_copy, files), files
    assert notices == []


def test_a_compiler_failure_in_place_records_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """setup.py's build_ext in place (an editable install) when the C compiler fails
    (``CC=/bin/false``): the manifest next to the sources says why the group is pure.

    setuptools clears ``inplace`` while it builds and leaves it cleared when the
    compiler fails; the manifest must still go next to the sources, or
    ``acpc-lbr --version`` says "not built" instead of the build's reason.
    """
    import runpy

    import setuptools
    from setuptools.command import build_ext as setuptools_build_ext
    from setuptools.errors import CompileError

    shutil.copy(REPO / "setup.py", tmp_path)
    (tmp_path / "protocol").mkdir()
    shutil.copy(_variant.PACKAGE_DIR / "_variant.py", tmp_path / "protocol")
    shutil.copy(_variant.GROUP_FILE, tmp_path / "protocol")
    monkeypatch.setattr(setuptools, "setup", lambda **kwargs: None)
    monkeypatch.delitem(sys.modules, "_acpc_lbr_variant", raising=False)
    monkeypatch.delenv(_variant.PURE_ENV, raising=False)  # it would skip the build
    build_native = runpy.run_path(str(tmp_path / "setup.py"))["BuildNative"]

    def compiler_fails(self: Any) -> None:
        raise CompileError("command '/bin/false' failed with exit code 1")

    # Under setuptools' run, which clears and restores inplace around it.
    monkeypatch.setattr(setuptools_build_ext._build_ext, "run", compiler_fails)
    command = build_native(setuptools.Distribution({"name": "probe"}))
    command.inplace, command.build_lib = 1, str(tmp_path / "build")
    command.problem, command.start = None, 0.0
    command.run()
    for place in (tmp_path, tmp_path / "build"):
        manifest = _variant.read_manifest(place)
        assert manifest is not None, f"no manifest in {place}"
        assert manifest["compiled"] is False and "CompileError" in manifest["reason"]
    compiled, why, notice = _variant.choose(tmp_path)
    assert not compiled and why.startswith("the build did not compile: CompileError") and notice is None



@pytest.mark.parametrize("why", ["mypyc fails", "ACPC_LBR_PURE at install"])
def test_a_build_that_compiles_nothing_still_records_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, why: str) -> None:
    """When mypyc stops (a type error in the group) or ACPC_LBR_PURE is set at install,
    setup.py keeps its placeholder extension in the distribution, with nothing to build: an
    editable install runs build_ext only when there are extensions, and run() is what
    writes the manifest next to the sources saying why the group is pure."""
    import runpy

    import mypyc.build
    import setuptools

    shutil.copy(REPO / "setup.py", tmp_path)
    (tmp_path / "protocol").mkdir()
    shutil.copy(_variant.PACKAGE_DIR / "_variant.py", tmp_path / "protocol")
    shutil.copy(_variant.GROUP_FILE, tmp_path / "protocol")
    shutil.copy(_variant.PACKAGE_DIR / "_handnative.c", tmp_path / "protocol")
    monkeypatch.chdir(tmp_path)  # the extensions' sources are relative paths, as setuptools wants
    monkeypatch.setattr(setuptools, "setup", lambda **kwargs: None)
    monkeypatch.delitem(sys.modules, "_acpc_lbr_variant", raising=False)
    if why == "mypyc fails":
        monkeypatch.delenv(_variant.PURE_ENV, raising=False)

        def type_error(*args: Any, **kwargs: Any) -> None:
            raise SystemExit(1)  # what mypycify does after printing mypy's errors

        monkeypatch.setattr(mypyc.build, "mypycify", type_error)
        expected = "SystemExit: 1"
    else:
        monkeypatch.setenv(_variant.PURE_ENV, "1")
        expected = f"{_variant.PURE_ENV} is set"
    setup = runpy.run_path(str(tmp_path / "setup.py"))
    distribution = setuptools.Distribution({"name": "probe", "ext_modules": [setup["PLACEHOLDER"]]})
    command = setup["BuildNative"](distribution)
    command.build_lib, command.build_temp = str(tmp_path / "build"), str(tmp_path / "temp")
    command.finalize_options()
    assert command.problem == expected
    # Nothing of the group to build; the plain C helper still, unless the sources are forced
    # (its source is not in this copy: its build fails and leaves the manifest as it is).
    helper = [setup["HAND_NATIVE"]] if why == "mypyc fails" else []
    assert distribution.has_ext_modules() and command.extensions == helper
    # Prepared by setuptools' finalize_options (stub and file names), which newer setuptools
    # read when they build: one set after it made an editable install fail outright.
    assert all(hasattr(extension, "_needs_stub") for extension in command.extensions)
    command.inplace = 1  # as an editable install runs it
    command.run()
    monkeypatch.delenv(_variant.PURE_ENV, raising=False)
    for place in (tmp_path, tmp_path / "build"):
        assert _variant.read_manifest(place) == {"compiled": False, "reason": expected}, place
    compiled, reason, notice = _variant.choose(tmp_path)
    assert not compiled and reason == f"the build did not compile: {expected}" and notice is None
    # Of the group nothing; the C helper alone when mypyc failed, never when the sources are forced.
    # In place: in the sources' tree, where an editable install imports it from.
    built = sorted(path.name.split(".")[0] for path in (tmp_path / "protocol").glob("*.so"))
    assert built == (["_handnative"] if why == "mypyc fails" else []), built



def _patched_group_targets(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, target) of every ``monkeypatch.setattr/delattr`` or ``mock.patch[.object]``
    in ``tree`` whose target is a module of the compiled group or something in one."""
    bound: dict[str, str] = {}  # a name the file imports -> what it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                bound[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0])

    def dotted(node: ast.expr) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return bound.get(node.id)
        if isinstance(node, ast.Attribute):
            base = dotted(node.value)
            return None if base is None else f"{base}.{node.attr}"
        return None

    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args
                and node.func.attr in ("setattr", "delattr", "patch", "object")):
            target = dotted(node.args[0])
            if target and any(target == m or target.startswith(f"{m}.") for m in _variant.GROUP):
                found.append((node.lineno, target))
    return found


def test_no_test_patches_the_compiled_group() -> None:
    """Patching a compiled module or class fails silently (the compiled callers never see
    the patch): tests inject what they need instead. The check itself catches both kinds
    of patch the dealer's tests once used."""
    once = ("from dealer.handloop import HandLoop\nimport dealer.handloop\n"
            "monkeypatch.setattr(HandLoop, 'play_hand', f)\n"
            "monkeypatch.setattr(dealer.handloop, 'log_state_text', f)\n"
            "monkeypatch.setattr('protocol.wire.parse_reply', f)\n"
            "monkeypatch.setattr(relay_module, 'read_query', f)\n")
    assert [t for _, t in _patched_group_targets(ast.parse(once))] == [
        "dealer.handloop.HandLoop", "dealer.handloop", "protocol.wire.parse_reply"]
    found = [f"{path.relative_to(REPO)}:{line}: {target}"
             for path in sorted((REPO / "tests").rglob("*.py"))
             for line, target in _patched_group_targets(ast.parse(path.read_text(encoding="utf-8")))]
    assert not found, "tests patch the compiled group (inject instead):\n" + "\n".join(found)


# -- the records in either variant -----------------------------------------


def _records() -> dict[str, object]:
    game = load_game("nolimit")
    state = State(game)
    state.apply(Action.raise_to(300))
    state.apply(Action.CALL)
    deal = DealSource(7).deal(game)
    hand = parse_log_state("STATE:0:r300c/cc/cc/cc:Td4d|As9d/6s5h4c/2c/3c:300|-300:a|b", game)
    return {
        "action": Action.raise_to(300),
        "constant": Action.CALL,
        "state": state,
        "deal": deal,
        "matchstate": matchstate_for(state, deal, 0),
        "reply": parse_reply("MATCHSTATE:1:0::|Td4d:r300", game),
        "log_state": hand,
        "score": parse_score("SCORE:100|-100:a|b"),
        "correction": correct_action(State(game), Action.raise_to(10))[1],
        "decision_point": next(decision_points(game, hand, 0)),
    }


@pytest.mark.parametrize("how", ["pickle", "deepcopy", "copy"])
def test_records_pickle_and_copy_by_value(how: str) -> None:
    clone = {
        "pickle": lambda o: pickle.loads(pickle.dumps(o)),
        "deepcopy": copy.deepcopy,
        "copy": copy.copy,
    }[how]
    for name, record in _records().items():
        assert record is not None
        twin = clone(record)
        assert twin == record and type(twin) is type(record), name
        if name == "matchstate":
            assert twin.text() == record.text()  # type: ignore[attr-defined]


def test_action_is_an_immutable_value() -> None:
    action = Action(ActionType.RAISE, 300)
    assert action == Action.raise_to(300) and hash(action) == hash(Action.raise_to(300))
    assert action != Action.CALL and action != (ActionType.RAISE, 300)
    assert {action, Action.raise_to(300)} == {action}
    assert repr(Action.CALL) == "Action(type=<ActionType.CALL: 'c'>, size=0)"
    assert (Action.FOLD.text(), Action.CALL.text(), Action.RAISE.text(), action.text()) == (
        "f", "c", "r", "r300")
    with pytest.raises(dataclasses.FrozenInstanceError):
        action.size = 5
    with pytest.raises(dataclasses.FrozenInstanceError):
        del action.type
    assert action.size == 300


def test_frozen_records_stay_frozen() -> None:
    for name, record in _records().items():
        if dataclasses.is_dataclass(record) and name != "state":
            first = dataclasses.fields(record)[0].name
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(record, first, None)


def test_version_names_the_compiled_core() -> None:
    done = subprocess.run([sys.executable, "-c", "from acpc_lbr.cli import main; main(['--version'])"],
                          capture_output=True, text=True, timeout=60, check=False)
    expected = "compiled (mypyc)" if protocol.COMPILED else "pure ("
    assert f"protocol core + dealer hot path: {expected}" in done.stdout, done.stdout + done.stderr
    # A build that compiled the group built the C helper beside it (setup.py).
    helper = "in use" if protocol.COMPILED else ("off (" if _variant.pure_forced() else "")
    assert f"; C helper: {helper}" in " ".join(done.stdout.split()), done.stdout  # argparse wraps it


def test_protocol_bench_compares_the_variants() -> None:
    """bench/bench_protocol.py runs each row compiled and pure (ACPC_LBR_PURE=1) in
    subprocesses and prints every row's ratio with the spread of the rounds."""
    if not protocol.COMPILED:
        pytest.skip("needs the compiled group")
    done = subprocess.run([sys.executable, str(REPO / "bench" / "bench_protocol.py"), "--hands", "5",
                           "--repeats", "1", "--rounds", "2", "--dealer-hands", "5"],
                          capture_output=True, text=True, timeout=300, check=True)
    lines = done.stdout.splitlines()
    table = lines[lines.index(next(line for line in lines if "pure/compiled" in line)) + 1 :]
    table = table[table.index(next(line for line in table if line.startswith("protocol.cards"))) :]
    assert len(table) == 11, done.stdout
    assert all(re.search(r" [0-9.]+ +[0-9.]+  x[0-9.]+ \([0-9.]+-[0-9.]+\)$", line) for line in table), done.stdout


def test_card_functions_take_numpy_integers() -> None:
    """The numpy side of acpc_lbr passes numpy integers; compiled code checks types, so the
    card functions take any integer (SupportsIndex) and give what Python ints give."""
    cards = np.array([0, 5, 9, 13, 17, 21, 51], dtype=np.int64)
    plain = cards.tolist()
    assert rank_hand(cards) == rank_hand(plain)
    assert cards_to_text(cards) == cards_to_text(plain) == "2c3d4d5d6d7dAs"
    assert [card_rank(c) for c in cards] == [card_rank(c) for c in plain]
    assert [card_suit(c) for c in cards] == [card_suit(c) for c in plain]
    assert card_to_text(cards[-1]) == "As"
    assert hand_index(cards[:2]) == hand_index(plain[:2])


# -- hostile bot text in either variant -------------------------------------

#: Text a bot may slip into a line: every byte the dealer can decode (it reads
#: latin-1), numbers past every limit, with zeros, signs and spaces, and separators.
HOSTILE_TOKENS = [chr(byte) for byte in range(256)] + [
    "r99999999999999999999999", "r2147483648", "r2147483647", "r-5", "r+5", "r 5", "r\t5", "r",
    "b", "k", "/", ":", "|", "9" * 30, "0" * 5000 + "1", "4294967296", "As", "aS", "Xx", "²",
    "٣", "\u2028",
]


def _hostile_lines(seed: int, hands: int) -> list[tuple[str, str]]:
    """(game, line): the MATCHSTATE and STATE lines of random hands, and each one mutated."""
    rng = random.Random(seed)
    deals = DealSource(seed)
    out = []
    for _ in range(hands):
        name = rng.choice(["nolimit", "limit", "leduc", "holdem.nolimit.3p"])
        game = load_game(name)
        state, deal = State(game, rng.randint(0, 3)), deals.deal(game)
        lines = []
        while not state.finished:
            lines.append(matchstate_text(state, deal, rng.randrange(game.num_players)))
            kind = rng.choice(state.legal_actions())
            if kind is ActionType.RAISE and not game.is_limit:
                state.apply(Action.raise_to(rng.randint(*state.raise_range())))
            else:
                state.apply(Action(kind))
        lines.append(log_state_text(state, deal, [0.0] * game.num_players,
                                    [f"p{i}" for i in range(game.num_players)]))
        for line in lines:
            chars = list(line)
            for _ in range(rng.randint(1, 3)):
                i = rng.randint(0, len(chars))
                how = rng.random()
                if how < 0.5:
                    chars.insert(i, rng.choice(HOSTILE_TOKENS))
                elif chars:
                    chars[min(i, len(chars) - 1)] = rng.choice(HOSTILE_TOKENS) if how < 0.8 else ""
            # And one of its numbers (position, hand, raise size) padded or blown up.
            numbers = list(re.finditer(r"[0-9]+", line))
            number = rng.choice(numbers) if numbers else None
            big = rng.choice(["0" * 5000, "9" * 30, "-", "+", " "])
            padded = line if number is None else line[: number.start()] + big + line[number.start() :]
            out += [(name, line), (name, "".join(chars)), (name, padded)]
    return out


def _outcome(parse: Any, *args: Any) -> list[str]:
    """What a parser made of its input: its result (repr and text) or its error (type, message)."""
    try:
        result = parse(*args)
    except ProtocolError as error:
        return ["error", type(error).__name__, str(error)]
    except Exception as error:  # noqa: BLE001 - the finding this test looks for
        return ["ESCAPED", type(error).__name__, str(error)[:300]]
    text = getattr(result, "text", None)
    return ["ok", repr(result) + ("|" + text() if callable(text) else "")]


def _hostile_outcomes(seed: int = 5, hands: int = 60) -> list[list[str]]:
    """Every reader of bot text in the group, on every hostile line."""
    cache = ReplayCache()
    out = []
    for name, line in _hostile_lines(seed, hands):
        game = load_game(name)
        action = line.rsplit(":", 1)[-1]
        for parser, args in ((parse_matchstate, (line, game)), (parse_reply, (line, game)),
                             (parse_reply, (f"{line}:{action}", game)),
                             (read_reply_action, (action, game)),
                             (parse_matchstate_replayed, (line, game, cache)),
                             (parse_log_state, (line, game)), (parse_score, (line,)),
                             (parse_betting, (action, game)), (parse_action, (action, game))):
            out.append([parser.__name__, name, line, *_outcome(parser, *args)])
    return out


def test_hostile_text_reads_alike_in_both_variants_and_raises_only_protocol_errors() -> None:
    """Random and mutated bot lines (every latin-1 byte, huge and zero-padded numbers, stray
    separators) through every reader of bot text: only ProtocolError escapes, and the compiled
    modules give what the pure sources give (the same result, or the same error and message)."""
    outcomes = _hostile_outcomes()
    escaped = [o for o in outcomes if o[3] == "ESCAPED"]
    assert not escaped, escaped[:5]
    assert sum(o[3] == "ok" for o in outcomes) > len(outcomes) // 5  # not all refused at once
    if not protocol.COMPILED:
        return  # the sources run here: nothing to compare them with
    code = "import json; from tests.protocol.test_variant import _hostile_outcomes as h; print(json.dumps(h()))"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**os.environ, _variant.PURE_ENV: "1"},
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    pure = json.loads(done.stdout)
    assert len(pure) == len(outcomes)
    differ = [(c, p) for c, p in zip(outcomes, pure) if c != p]
    assert not differ, differ[:3]


def test_an_unchanged_in_place_build_is_reused(tmp_path: Path) -> None:
    """setup.py keeps an in-place build whose manifest matches every source (issue 31: each
    `pip install -e '.[extra]'` recompiled them, 83 to 130 s): reused while the sources, the
    Python and the compiled files are the ones recorded; a changed source compiles again."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    for name in _variant.GROUP:
        source = _variant.source_path(tmp_path, name)
        source.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(_variant.source_path(_variant.ROOT, name), source)
    for name in (*_variant.GROUP, _variant.SHARED_LIB):
        _variant.compiled_path(tmp_path, name, suffix).write_bytes(b"")  # stands for the module
    manifest = {"compiled": True, "ext_suffix": suffix, "sources": _variant.source_hashes(tmp_path)}
    (_variant.manifest_dir(tmp_path) / _variant.MANIFEST).write_text(json.dumps(manifest))
    assert _variant.reusable_build(tmp_path, suffix) == manifest
    assert _variant.reusable_build(tmp_path, ".cpython-39-x86_64-linux-gnu.so") is None  # another Python
    changed = _variant.source_path(tmp_path, _variant.GROUP[0])
    changed.write_text(changed.read_text() + "\n# edited\n")
    assert _variant.reusable_build(tmp_path, suffix) is None
    (_variant.manifest_dir(tmp_path) / _variant.MANIFEST).write_text(json.dumps({"compiled": False, "reason": "x"}))
    assert _variant.reusable_build(tmp_path, suffix) is None


def test_a_stray_compiled_file_never_shadows_its_source(package_copy: Path) -> None:
    """A compiled file left by an older group (dealer/match.py was compiled before the dealer
    was split into parts) is ignored, with one line saying so: Python's import would otherwise
    prefer it to the source and run old code. An empty file stands for it: loading it would fail."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    _variant.compiled_path(package_copy, "dealer.match", suffix).write_bytes(b"")
    assert _variant.stray_extensions(package_copy) == ["dealer.match"]
    probe = "import dealer.match, sys; print(sys.modules['dealer.match'].__spec__.origin)"
    clean = {k: v for k, v in os.environ.items() if k != _variant.PURE_ENV}
    done = subprocess.run([sys.executable, "-c", probe], cwd=package_copy, env=clean,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(_variant.source_path(package_copy, "dealer.match"))
    strays = [line for line in done.stderr.splitlines() if "no longer compiled" in line]
    assert len(strays) == 1 and "dealer.match" in strays[0], done.stderr


def test_an_edit_that_keeps_the_size_is_seen_and_unchanged_stats_skip_the_hashing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A source with the recorded size and modification time is not hashed (no OpenSSL at
    start-up); a source edited to the same size has a new time, so it is hashed and found
    changed; a source rewritten with the same text (a checkout) is hashed and found unchanged."""
    for name in _variant.GROUP:
        source = _variant.source_path(tmp_path, name)
        source.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(_variant.source_path(_variant.ROOT, name), source)
    manifest = {"sources": _variant.source_hashes(tmp_path), "stats": _variant.source_stats(tmp_path)}
    hashed: list[Path] = []
    real_hashes = _variant.source_hashes

    def counting_hashes(root: Path) -> dict[str, str]:
        hashed.append(root)
        return real_hashes(root)

    monkeypatch.setattr(_variant, "source_hashes", counting_hashes)
    assert _variant.changed_sources(tmp_path, manifest) == [] and hashed == []
    first = _variant.source_path(tmp_path, _variant.GROUP[0])
    text = first.read_text()
    os.utime(first, ns=(1, 1))  # the same text, another time: hashed, unchanged
    assert _variant.changed_sources(tmp_path, manifest) == [] and len(hashed) == 1
    first.write_text(text.replace("a", "b", 1))  # the same size, another text
    os.utime(first, ns=(2, 2))
    assert first.stat().st_size == manifest["stats"][_variant.GROUP[0]][0]
    assert _variant.changed_sources(tmp_path, manifest) == [_variant.GROUP[0]]
    del manifest["stats"]  # a build before the stats: every source is hashed
    assert _variant.changed_sources(tmp_path, manifest) == [_variant.GROUP[0]] and len(hashed) == 3
