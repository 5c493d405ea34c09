"""The players a dealer can seat by name: the built-in bots, LBR, and your own strategy function.

:data:`PLAYERS` maps a bot name to a :data:`PlayerMaker` (adding a bot is one
line); :func:`load_strategy` loads a strategy function from
``path/to/file.py:function`` or ``package.module:function`` (docs/bot-sdk.md).
``acpc-lbr play`` (:mod:`acpc_lbr.cli.play`), the exact tools, the table and
the benchmarks all find their players here.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from agents.bots import BOTS
from agents.client import AcpcClient, StrategyBot, seeded_rng
from agents.lbr import make_lbr_player
from agents.sdk import Strategy
from protocol.gamedef import GameDef

#: Builds a bot's client from the game, the seed and the options left over
#: after the common ones (a bot with options of its own parses them; raise
#: SystemExit or ValueError for bad ones).
PlayerMaker = Callable[[GameDef, "int | None", Sequence[str]], AcpcClient]


def strategy_player(strategy: Strategy) -> PlayerMaker:
    """A :data:`PlayerMaker` for an SDK strategy (no options of its own)."""

    def make(game: GameDef, seed: int | None, options: Sequence[str]) -> AcpcClient:
        if options:
            raise ValueError(f"unrecognised arguments: {' '.join(options)}")
        return StrategyBot(game, strategy, seeded_rng(seed))

    return make


#: Bot name -> how to build its client. Adding a bot is one line.
PLAYERS: dict[str, PlayerMaker] = {name: strategy_player(s) for name, s in BOTS.items()}
PLAYERS["lbr"] = make_lbr_player  # LBR: --bets fcpa --rounds 3-4 (agents/lbr.py)


def load_strategy(spec: str) -> Strategy:
    """Load a strategy function from ``file.py:function`` or ``package.module:function``.

    Raises:
        ValueError: the spec is malformed or names nothing callable.
    """
    where, colon, name = spec.rpartition(":")
    if not colon or not where or not name:
        raise ValueError(f"expected FILE.py:FUNCTION or MODULE:FUNCTION, got {spec!r}")
    if where.endswith(".py") or "/" in where or "\\" in where:
        path = Path(where)
        if not path.is_file():
            raise ValueError(f"no such file: {where}")
        module_name = f"acpc_lbr_user_strategy_{abs(hash(str(path.resolve())))}"
        module_spec = importlib.util.spec_from_file_location(module_name, path)
        if module_spec is None or module_spec.loader is None:
            raise ValueError(f"cannot load {where}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_name] = module
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    strategy = getattr(module, name, None)
    if not callable(strategy):
        raise ValueError(f"{where} has no function {name!r}")  # noqa: TRY004 (a bad spec, reported as such)
    result: Strategy = strategy
    return result


