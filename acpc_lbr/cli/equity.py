"""``acpc-lbr equity``: exact win/tie/loss shares by full enumeration of the board.

Examples::

    acpc-lbr equity AsKd QhQc --board 2c7d9h
    acpc-lbr equity AsKd random --json
    acpc-lbr equity AsKd QQ,AKs,JhTh --board 2c7d9h4s
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from itertools import combinations

import numpy as np

from acpc_lbr.runtime.exit_codes import EXIT_OK, EXIT_USAGE
from protocol.cards import RANKS, SUITS, cards_from_text, make_card
from protocol.errors import ParseError


def parse_range(text: str, dead: Sequence[int]) -> np.ndarray:
    """Parse a range into an (m, 2) array of hands that avoid the dead cards.

    Accepts ``random`` (every hand), or a comma-separated list of exact hands
    (``QhQc``) and shorthands: a pair (``QQ``), suited (``AKs``), offsuit
    (``AKo``) or both (``AK``).

    Raises:
        ParseError: a token is neither.
    """
    dead_set = set(dead)
    hands: set[tuple[int, int]] = set()
    tokens = [t.strip() for t in text.split(",") if t.strip()]
    if not tokens:
        raise ParseError("empty range", text)
    for token in tokens:
        if token.lower() == "random":
            hands.update(combinations(range(52), 2))
            continue
        if len(token) == 4:
            c1, c2 = cards_from_text(token)
            if c1 == c2:
                raise ParseError("a hand needs two different cards", token)
            hands.add((min(c1, c2), max(c1, c2)))
            continue
        kind = token[2:].lower() if len(token) == 3 else ""
        r1, r2 = RANKS.find(token[:1].upper()), RANKS.find(token[1:2].upper())
        if len(token) not in (2, 3) or r1 < 0 or r2 < 0 or kind not in ("", "s", "o"):
            raise ParseError("not a hand, a shorthand (QQ, AKs, AKo, AK) or 'random'", token)
        if r1 == r2 and kind:
            raise ParseError("a pair is neither suited nor offsuit", token)
        for s1 in range(len(SUITS)):
            for s2 in range(len(SUITS)):
                a, b = make_card(r1, s1), make_card(r2, s2)
                if a == b or (kind == "s" and s1 != s2) or (kind == "o" and s1 == s2):
                    continue
                hands.add((min(a, b), max(a, b)))
    live = sorted(h for h in hands if h[0] not in dead_set and h[1] not in dead_set)
    return np.array(live, dtype=np.int64).reshape(-1, 2)


def main(argv: Sequence[str]) -> int:
    """Print the hero's exact win/tie/loss shares against a hand or a range."""
    parser = argparse.ArgumentParser(
        prog="acpc-lbr equity",
        description="Exact equity of a hold'em hand by enumerating every remaining board.",
    )
    parser.add_argument("hand", help="the hero's two cards, e.g. AsKd")
    parser.add_argument(
        "opponent", help="the opponent's hand (QhQc) or a range: random, or a list like QQ,AKs,JhTh"
    )
    parser.add_argument("--board", default="", help="0, 3, 4 or 5 board cards, e.g. 2c7d9h")
    parser.add_argument("--json", action="store_true", help="print a JSON object {win, tie, loss}")
    args = parser.parse_args(argv)

    from acpc_lbr.equity import equity, equity_vs_range  # lazy: numba kernels; --help stays fast

    try:
        hero = cards_from_text(args.hand)
        board = cards_from_text(args.board)
        if len(hero) != 2:
            raise ParseError("the hand needs exactly two cards", args.hand)
        if len(board) not in (0, 3, 4, 5):
            raise ParseError("the board has 0, 3, 4 or 5 cards", args.board)
        if len(set(hero) | set(board)) != len(hero) + len(board):
            raise ParseError("a card appears twice", args.hand + args.board)
        opponent_text = args.opponent
        single = len(opponent_text) == 4 and "," not in opponent_text
        if single:
            villain = cards_from_text(opponent_text)
            if villain[0] == villain[1] or set(villain) & (set(hero) | set(board)):
                raise ParseError("the opponent's cards collide", opponent_text)
            win, tie, loss = equity(hero, villain, board)
            hands_count = 1
        else:
            villains = parse_range(opponent_text, list(hero) + list(board))
            if len(villains) == 0:
                raise ParseError("no hand of the range is possible with these cards", opponent_text)
            win, tie, loss = equity_vs_range(hero, villains, board)
            hands_count = len(villains)
    except ParseError as error:
        print(f"acpc-lbr equity: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps({"win": win, "tie": tie, "loss": loss}))
    else:
        against = args.opponent if single else f"{args.opponent} ({hands_count} hands)"
        print(f"{args.hand} vs {against}" + (f" on {args.board}" if args.board else " preflop"))
        print(f"win  {win:.6f}\ntie  {tie:.6f}\nloss {loss:.6f}")
    return EXIT_OK
