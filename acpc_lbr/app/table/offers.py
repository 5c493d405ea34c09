"""What the table offers a person: the games (bundled heads-up games and given files) and the players.

The command line (:mod:`acpc_lbr.cli.table`) gives ``--game``, ``--opponent``
and ``--opponent-cmd``; :func:`games_offered` and :func:`players_offered` check
them and build the choices the page shows, by the key the page sends back.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from acpc_lbr.app.evaluate.evaluation import default_opponent_name
from acpc_lbr.app.table.session import GameChoice, Player
from agents.bots import BOTS
from agents.players import load_strategy
from protocol.errors import ProtocolError
from protocol.gamedef import bundled_game_text, bundled_games, load_game

_NAME = re.compile(r"[A-Za-z0-9_.-]{1,40}")


def games_offered(extra: Sequence[str], out: Path) -> dict[str, GameChoice]:
    """Every bundled heads-up game and the given files, each with a file a program can read.

    Raises:
        ValueError: a file that is not a heads-up game.
    """
    folder = out / "games"
    folder.mkdir(parents=True, exist_ok=True)
    choices: dict[str, GameChoice] = {}
    for name in bundled_games():
        game = load_game(name)
        if game.num_players == 2:
            path = folder / f"{name}.game"
            path.write_text(bundled_game_text(name))
            choices[name] = GameChoice(name, name, game, path)
    for text in extra:
        try:
            game = load_game(text)
        except (ProtocolError, OSError) as problem:
            raise ValueError(f"--game {text}: {problem}") from None
        if game.num_players != 2:
            raise ValueError(f"--game {text}: the table plays heads-up games only")
        choices[text] = GameChoice(text, text, game, Path(text).resolve())
    return choices


def players_offered(specs: Sequence[str], commands: Sequence[str]) -> dict[str, Player]:
    """The built-in bots, the SDK strategies and the programs, by the key the page sends.

    Raises:
        ValueError: a spec that does not load, or a command without ``{port}``.
    """
    players = {name: Player(name, name, strategy=strategy) for name, strategy in BOTS.items()}
    for spec in specs:
        if spec in BOTS:
            continue
        try:
            strategy = load_strategy(spec)
        except (ValueError, ImportError) as problem:
            raise ValueError(f"--opponent {spec}: {problem}") from None
        name = _unique(default_opponent_name(None, f"play {spec}"), players)
        players[name] = Player(name, name, strategy=strategy)
    for text in commands:
        named, equals, command = text.partition("=")
        if not (equals and _NAME.fullmatch(named)):
            named, command = default_opponent_name(None, text), text
        if "{port}" not in command:
            raise ValueError(f"--opponent-cmd {text!r}: needs {{port}} (and usually {{host}})")
        name = _unique(named, players)
        players[name] = Player(name, name, command=command)
    return players


def _unique(name: str, taken: dict[str, Player]) -> str:
    base, k = name, 2
    while name in taken or name in ("human", "baseline"):
        name, k = f"{base}-{k}", k + 1
    return name
