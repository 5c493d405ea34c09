"""Each command's options table in the docs lists exactly the options its parser has (issue 31:
docs/lbr.md lacked --report, --metrics-port, --workers and --aivat): a new option fails this test
until it is documented, and a removed one until its row goes."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from acpc_lbr.cli import dealer as dealer_cli
from acpc_lbr.cli import evaluate

ROOT = Path(__file__).resolve().parents[1]

#: (the command's parser, the doc whose options table documents it).
TABLES = [
    (evaluate._parser, "docs/lbr.md"),
    (dealer_cli.build_parser, "docs/dealer.md"),
]


def documented(doc: str) -> set[str]:
    """The options of a doc's tables: every `-x` / `--xx` in the first cell of a table row."""
    options = set()
    for line in (ROOT / doc).read_text().splitlines():
        if line.startswith("| `-"):
            first = line.split("|")[1]
            options |= set(re.findall(r"`(-{1,2}[A-Za-z][\w-]*)", first))
            options |= set(re.findall(r"/ `(-{1,2}[A-Za-z][\w-]*)", first))
    return options


def parsed(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string of a parser but -h/--help and the hidden ones (help=SUPPRESS)."""
    return {option for action in parser._actions if action.help != argparse.SUPPRESS
            and not isinstance(action, argparse._HelpAction) for option in action.option_strings}


@pytest.mark.parametrize(("make_parser", "doc"), TABLES, ids=[doc for _, doc in TABLES])
def test_the_options_table_matches_the_parser(make_parser: object, doc: str) -> None:
    """No option undocumented, no documented option that the command does not have."""
    have = parsed(make_parser())  # type: ignore[operator]
    said = documented(doc)
    assert not have - said, f"{doc} does not document {sorted(have - said)}"
    assert not said - have, f"{doc} documents options the command lacks: {sorted(said - have)}"
