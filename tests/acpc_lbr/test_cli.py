"""The `acpc-lbr` command line: dispatch, `games` and `equity`."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from acpc_lbr.cli import SUBCOMMANDS, main, run
from acpc_lbr.cli.equity import parse_range
from protocol.cards import cards_from_text
from protocol.gamedef import bundled_games, load_game, parse_gamedef

from . import naive

ACPC_LBR = Path(sys.executable).with_name("acpc-lbr")
CLI = Path(__file__).resolve().parents[2] / "acpc_lbr" / "cli"
#: Modules of acpc_lbr/cli/ that are not a subcommand: the dispatcher, ``python -m``, and the
#: scale-out options that ``evaluate`` adds to its own.
NOT_SUBCOMMANDS = {"__init__", "__main__", "scaleout"}


def test_every_subcommand_is_a_module_of_the_cli_package() -> None:
    """The command line is in one place: each subcommand is ``acpc_lbr/cli/NAME.py`` with a
    ``main``, and each module there is a subcommand (docs/architecture.md, "Adding a subcommand")."""
    assert {name: module for name, (module, _) in SUBCOMMANDS.items()} == {
        name: f"acpc_lbr.cli.{name}" for name in SUBCOMMANDS}
    modules = {path.stem for path in CLI.glob("*.py")} - NOT_SUBCOMMANDS
    assert modules == set(SUBCOMMANDS)
    for name in SUBCOMMANDS:
        tree = ast.parse((CLI / f"{name}.py").read_text(encoding="utf-8"))
        assert "main" in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}, name


def test_help_lists_every_subcommand() -> None:
    """`acpc-lbr --help` works as a process and names each subcommand."""
    done = subprocess.run([str(ACPC_LBR), "--help"], check=False, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0
    for name in SUBCOMMANDS:
        assert name in done.stdout


def test_the_program_exits_with_the_commands_code_and_skips_the_last_collection(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`run` (the installed `acpc-lbr`) exits with the command's code, and freezes the
    heap first so that the interpreter's shutdown does not collect it; `main` does not."""
    import gc
    import tomllib

    scripts = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert scripts["project"]["scripts"]["acpc-lbr"] == "acpc_lbr.cli:run"
    gc.unfreeze()
    try:
        assert main(["games"]) == 0
        assert gc.get_freeze_count() == 0
        monkeypatch.setattr(sys, "argv", ["acpc-lbr", "games"])
        with pytest.raises(SystemExit) as exit_:
            run()
        assert exit_.value.code == 0
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()  # the test process goes on
    assert "nolimit" in capsys.readouterr().out


def test_dealing_needs_no_import_after_the_deal_module_is_loaded() -> None:
    """A dealer's first deal (its bots connected and waiting) imports nothing: the deal stream
    is Python's own MT19937 (protocol/deal.py), loaded with the module; numpy is not
    loaded at all (tests/dealer/test_startup.py)."""
    code = ("import sys, protocol.deal, protocol.gamedef; game = protocol.gamedef.load_game('nolimit'); "
            "before = set(sys.modules); protocol.deal.DealSource(7).deal(game); "
            "print(sorted(set(sys.modules) - before), 'numpy' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == "[] False"


def test_unknown_subcommand_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown command exits 2 with argparse's message."""
    with pytest.raises(SystemExit) as exit_:
        main(["no-such-command"])
    assert exit_.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_games_lists_and_prints(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`games` lists every bundled game; `games NAME` and `games PATH` print a readable file."""
    assert main(["games"]) == 0
    listing = capsys.readouterr().out
    for name in bundled_games():
        assert name in listing
    assert main(["games", "leduc"]) == 0
    assert parse_gamedef(capsys.readouterr().out) == load_game("leduc")
    path = tmp_path / "my.game"
    path.write_text("GAMEDEF\nlimit\nnumPlayers = 2\nnumRounds = 1\nblind = 1 1\nraiseSize = 1\nmaxRaises = 1\n"
                    "numSuits = 1\nnumRanks = 3\nnumHoleCards = 1\nnumBoardCards = 0\nEND GAMEDEF\n")
    assert main(["games", str(path)]) == 0
    assert parse_gamedef(capsys.readouterr().out) == load_game("kuhn")
    path.write_text("GAMEDEF\nnumPlayers = two\n")
    assert main(["games", str(path)]) == 2
    assert "line 2" in capsys.readouterr().err


@pytest.mark.parametrize(("hero", "villain", "board"), [
    ("AsKd", "QhQc", "2c7d9h"), ("AhKh", "7c7d", "2h9hTc4s"), ("5c5d", "6h6s", "2c3d4hKs9s"),
])
def test_equity_json_matches_brute_force(hero: str, villain: str, board: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """`equity --json` prints win/tie/loss equal to an enumeration over phevaluator."""
    assert main(["equity", hero, villain, "--board", board, "--json"]) == 0
    shares = json.loads(capsys.readouterr().out)
    assert set(shares) == {"win", "tie", "loss"}
    wins, ties, losses = naive.brute_force_counts(
        list(cards_from_text(hero)), list(cards_from_text(villain)), list(cards_from_text(board)))
    total = wins + ties + losses
    expected = (wins / total, ties / total, losses / total)
    assert [shares["win"], shares["tie"], shares["loss"]] == pytest.approx(expected, abs=1e-12)


def test_equity_against_a_range_and_random(capsys: pytest.CaptureFixture[str]) -> None:
    """A range stands in for the second hand; its shares average the hands it holds."""
    assert main(["equity", "AsKd", "QhQc,JsJd", "--board", "2c7d9h", "--json"]) == 0
    both = json.loads(capsys.readouterr().out)
    singles = []
    for villain in ("QhQc", "JsJd"):
        assert main(["equity", "AsKd", villain, "--board", "2c7d9h", "--json"]) == 0
        singles.append(json.loads(capsys.readouterr().out)["win"])
    assert both["win"] == pytest.approx(sum(singles) / 2, abs=1e-12)
    assert main(["equity", "AsKd", "random", "--json"]) == 0
    preflop = json.loads(capsys.readouterr().out)
    assert sum(preflop.values()) == pytest.approx(1.0)
    assert 0.6 < preflop["win"] < 0.7  # AKo against a random hand: about 65% (wins + half ties)


def test_range_shorthands() -> None:
    """QQ is 6 combos, AKs 4, AKo 12, AK 16, random 1326; dead cards remove combos."""
    assert len(parse_range("QQ", [])) == 6
    assert len(parse_range("AKs", [])) == 4
    assert len(parse_range("AKo", [])) == 12
    assert len(parse_range("AK", [])) == 16
    assert len(parse_range("random", [])) == 1326
    assert len(parse_range("QQ,AKs", cards_from_text("Qh"))) == 3 + 4


@pytest.mark.parametrize("argv", [
    ["equity", "AsAs", "QhQc"], ["equity", "AsKd", "AsQc"], ["equity", "AsKd", "QhQc", "--board", "2c7d"],
    ["equity", "AsKd", "ZZ"], ["equity", "Xx", "QhQc"],
])
def test_equity_bad_input_is_a_clear_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Bad cards, repeated cards or a bad board: exit 2 and a message, no traceback."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("acpc-lbr equity:") and "Traceback" not in err


def test_output_to_a_closed_pipe_is_one_line_and_a_failure(tmp_path: Path) -> None:
    """``acpc-lbr evaluate | head``: the reader leaves before the report is written. The
    program says so in one line and exits 1, with no BrokenPipeError traceback; the logs
    are kept."""
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone before the first write
    try:
        done = subprocess.run(
            [str(ACPC_LBR), "evaluate", "--game", "kuhn", "--opponent", "random", "--hands", "20",
             "--one-process", "--quiet", "--out", str(tmp_path / "logs")],
            stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    finally:
        os.close(write_end)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert "the standard output was closed by its reader" in done.stderr
    assert (tmp_path / "logs" / "lbr-vs-random.log").read_text().count("STATE:") == 20
