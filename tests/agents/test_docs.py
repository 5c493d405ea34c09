"""The worked examples in docs/range-query.md are what the code really sends."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from twisted.internet.testing import StringTransport

from agents.bots import always_call
from agents.client import StrategyBot
from agents.players import load_strategy
from agents.sdk import Strategy
from protocol.gamedef import load_game

DOCS = Path(__file__).resolve().parents[2] / "docs"


def answer(strategy: Strategy, query: str) -> str:
    """The line a Leduc bot with ``strategy`` sends back for ``query``."""
    bot = StrategyBot(load_game("leduc"), strategy, np.random.default_rng(0))
    transport = StringTransport()
    bot.makeConnection(transport)
    transport.clear()
    bot.dataReceived(query.encode() + b"\r\n")
    return transport.value().decode().removesuffix("\r\n")


def test_range_query_page_examples_are_real_exchanges() -> None:
    """Every RANGE/RANGEERROR line shown for the Leduc example matches the bots' actual answers."""
    page = (DOCS / "range-query.md").read_text()
    example = load_strategy(f"{DOCS / 'examples' / 'example_bot.py'}:strategy")
    shown_example = re.search(r"^    (RANGE:8:f=0,0\.0\S+)$", page, re.MULTILINE)
    assert shown_example is not None
    assert answer(example, "QUERY:8:1:12:rc/r:|/Qh:f,c,r") == shown_example.group(1)
    assert f"`{answer(always_call, 'QUERY:8:1:12:rc/r:|/Qh:f,c,r')}`" in page
    assert f"`{answer(always_call, 'QUERY:9:1:12:rc/:|/Qh:c')}`" in page


def test_version_2_example_decodes_to_what_the_page_says() -> None:
    """The version-2 example line is the codec's encoding of the rows its caption describes."""
    from protocol.rangecodec import decode_answer, encode_answer
    from protocol.rules import Action

    page = (DOCS / "range-query.md").read_text()
    shown = re.search(r"^    (RANGE:8:2:\S+)$", page, re.MULTILINE)
    assert shown is not None
    actions = (Action.FOLD, Action.CALL, Action.RAISE)
    rows = np.array([[0, 0.25, 0.25, 0, 0, 0], [1, 0.75, 0.75, 1, 1, 1], [0] * 6], dtype=float)
    assert decode_answer(shown.group(1), actions, 6).rows.tolist() == rows.tolist()
    assert encode_answer("8", actions, rows, 2) == shown.group(1)


def test_sdk_guide_shows_the_example_bot_as_it_is() -> None:
    """The code block of docs/bot-sdk.md is the example file's code, line for line."""
    guide = (DOCS / "bot-sdk.md").read_text()
    block = guide.split("```python\n", 1)[1].split("```", 1)[0]
    source = (DOCS / "examples" / "example_bot.py").read_text()
    assert block.strip() in source
    assert len(block.strip().splitlines()) > 20


def test_sdk_guide_local_match_runs_with_a_stale_ports_file(tmp_path: Path) -> None:
    """The guide's "full local match" runs as written where an earlier run left its ports.txt
    (it read the old, dead ports before the dealer had written its own, and both bots failed)."""
    import os
    import subprocess
    import sys

    text = (DOCS / "bot-sdk.md").read_text()
    block = text[text.index("A full local match"):].split("\n\n")[1]
    script = "\n".join(line.removeprefix("    ") for line in block.splitlines())
    assert "ports.txt" in script
    (tmp_path / "docs").symlink_to(DOCS)  # the guide runs from the repository's root
    (tmp_path / "ports.txt").write_text("1 2\n")  # ports nothing listens on
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    result = subprocess.run(["sh", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    log = (tmp_path / "m.log").read_text().splitlines()
    assert sum(line.startswith("STATE:") for line in log) == 1000
    assert log[-1].startswith("SCORE:") and log[-1].endswith(":mine|other")
