"""Helpers of the dealer tests: run a match in-process against test bots."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dealer.match import Match, MatchConfig, MatchResult
from protocol.gamedef import load_game
from tests.dealer.bots import TestBot, connect


def make_config(name: str, game: str = "nolimit", hands: int = 10, seed: int = 7,
                names: Sequence[str] = ("s1", "s2"), **options: Any) -> MatchConfig:
    """A MatchConfig with test-friendly defaults (no events file unless asked)."""
    options.setdefault("events", False)
    return MatchConfig(name=name, game_arg=game, game=load_game(game), hands=hands, seed=seed,
                       names=tuple(names), **options)


async def play(config: MatchConfig, bots: Sequence[Any], stderr: Any = None) -> MatchResult:
    """Listen, connect ``bots`` seat by seat, and play the match to its end."""
    from twisted.internet import reactor

    match = Match(config, reactor, stderr=stderr)
    ports = match.listen()
    finished = match.start()
    for bot, port in zip(bots, ports):
        if bot is not None:
            await connect(reactor, port, bot)
    result: MatchResult = await finished
    return result


def call_bots(config: MatchConfig) -> list[TestBot]:
    """One always-call bot per seat."""
    return [TestBot(config.game) for _ in config.names]


def log_lines(config: MatchConfig) -> list[str]:
    """The lines of a match's .log."""
    return Path(config.log_path).read_text().splitlines()
