"""``acpc-lbr games``: list the bundled game definitions, or print one."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from acpc_lbr.runtime.exit_codes import EXIT_OK, EXIT_USAGE
from protocol.errors import GameDefError
from protocol.gamedef import ALIASES, bundled_games, format_gamedef, load_game


def main(argv: Sequence[str]) -> int:
    """List bundled games (name, aliases, shape) or print one game's file."""
    parser = argparse.ArgumentParser(
        prog="acpc-lbr games",
        description="List the bundled ACPC games. Every command that takes a game "
        "accepts one of these names, an alias, or a path to a game file.",
    )
    parser.add_argument("game", nargs="?", help="print this game's definition (name, alias or path)")
    args = parser.parse_args(argv)
    if args.game:
        try:
            sys.stdout.write(format_gamedef(load_game(args.game)))
        except GameDefError as error:
            print(f"acpc-lbr games: {error}", file=sys.stderr)
            return EXIT_USAGE
        return EXIT_OK
    for name in bundled_games():
        game = load_game(name)
        aliases = ", ".join(a for a, target in ALIASES.items() if target == name)
        shape = (
            f"{game.num_players} players, {game.betting}, {game.num_rounds} round(s), "
            f"{game.deck_size} cards, {game.num_hands} private hands"
        )
        print(f"{name:36s} {shape}" + (f"  [alias: {aliases}]" if aliases else ""))
    return EXIT_OK
