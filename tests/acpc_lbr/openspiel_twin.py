"""Card-aware strategies shared by our exact tools and OpenSpiel's built-in Kuhn and Leduc.

A strategy here is a table keyed by what a player sees, in ranks only:
``(own rank, board rank or -1, betting)``, where ranks count from 0 (lowest)
and ``betting`` is our betting string (``"rc/c"``). The same table is read as
our :data:`acpc_lbr.policy.Strategy` (on the bundled ``kuhn``/``leduc``
games) and as an OpenSpiel ``TabularPolicy`` (on ``kuhn_poker`` and
``leduc_poker``, independent implementations of the same games: antes of 1,
one bet of 1 in Kuhn, bets of 2 then 4 and two per round in Leduc, player 0
first). OpenSpiel's cards: Kuhn 0, 1, 2 = low to high; Leduc rank = card // 2.
Its actions: Leduc 0 fold, 1 call, 2 raise; Kuhn 0 pass (check, or fold
facing a bet), 1 bet (bet, or call facing a bet).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np
import pyspiel
from open_spiel.python import policy as os_policy

from acpc_lbr.policy import Strategy
from acpc_lbr.strategies import default_actions, from_answers
from protocol.cards import card_rank
from protocol.gamedef import GameDef
from protocol.rules import Action, State

#: (own rank, board rank or -1, betting) -> {action token: probability}.
Key = tuple[int, int, str]
Table = Callable[[Key, Sequence[str]], Mapping[str, float]]


def random_table(seed: int) -> Table:
    """A seeded random card-aware strategy: each information set's probabilities drawn from
    a Dirichlet(1, ..., 1), the same whichever side (or order) asks."""

    def table(key: Key, tokens: Sequence[str]) -> Mapping[str, float]:
        rng = np.random.default_rng([seed, zlib.crc32(repr(key).encode())])
        return dict(zip(tokens, rng.dirichlet(np.ones(len(tokens)))))

    return table


def fixed_table(probabilities: Mapping[Key, Mapping[str, float]]) -> Table:
    """A table given in full (e.g. a CFR average strategy)."""

    def table(key: Key, tokens: Sequence[str]) -> Mapping[str, float]:
        return probabilities[key]

    return table


def our_policy(game: GameDef, table: Table) -> Strategy:
    """The table as our strategy on ``game`` (limit: :func:`default_actions` are the legal actions)."""
    ranks = sorted({card_rank(c) for c in game.cards})
    rank_of = {r: k for k, r in enumerate(ranks)}
    hand_rank = [rank_of[card_rank(cards[0])] for cards in game.hand_cards]

    def policy(state: State, board: Sequence[int], actions: Sequence[Action]) -> np.ndarray:
        tokens = [a.text() for a in default_actions(state)]
        board_rank = rank_of[card_rank(board[0])] if board else -1
        betting = state.betting_string()
        result = np.zeros((len(actions), game.num_hands))
        for h, rank in enumerate(hand_rank):
            row = table((rank, board_rank, betting), tokens)
            for j, action in enumerate(actions):
                result[j, h] = row.get(action.text(), 0.0)
        return result

    return from_answers(policy)


def _decisions(game: pyspiel.Game) -> Iterator[tuple[pyspiel.State, Key, list[str]]]:
    """Every decision node of an OpenSpiel Kuhn/Leduc game, with its key and our action tokens."""
    leduc = game.get_type().short_name == "leduc_poker"

    def walk(state: pyspiel.State) -> Iterator[tuple[pyspiel.State, Key, list[str]]]:
        if state.is_terminal():
            return
        if state.is_chance_node():
            for action, _ in state.chance_outcomes():
                yield from walk(state.child(action))
            return
        history = state.history()
        player = state.current_player()
        own = history[player] // 2 if leduc else history[player]
        betting, board, facing = "", -1, False
        for action in history[2:]:
            if leduc and board < 0 and betting.endswith("/"):
                board, facing = action // 2, False
                continue
            if leduc:
                token = "fcr"[action]
            else:
                token = ("f" if facing else "c") if action == 0 else ("c" if facing else "r")
            facing = token == "r"
            betting += token
            if leduc and board < 0 and _round_over(betting):
                betting += "/"
        tokens = [_token(leduc, a, facing) for a in state.legal_actions()]
        yield state, (own, board, betting), tokens
        for action in state.legal_actions():
            yield from walk(state.child(action))

    yield from walk(game.new_initial_state())


def _round_over(betting: str) -> bool:
    """Leduc's first round is over after a call that is not the opening check."""
    return betting.endswith("c") and betting != "c"


def _token(leduc: bool, action: int, facing: bool) -> str:
    if leduc:
        return "fcr"[action]
    return ("f" if facing else "c") if action == 0 else ("c" if facing else "r")


def openspiel_policy(game: pyspiel.Game, table: Table) -> os_policy.TabularPolicy:
    """The table as an OpenSpiel TabularPolicy."""
    tabular = os_policy.TabularPolicy(game)
    for state, key, tokens in _decisions(game):
        row = table(key, tokens)
        probabilities = tabular.policy_for_key(state.information_state_string())
        probabilities[:] = 0.0
        for action, token in zip(state.legal_actions(), tokens):
            probabilities[action] = row.get(token, 0.0)
    return tabular


def table_of(game: pyspiel.Game, tabular: os_policy.Policy) -> dict[Key, dict[str, float]]:
    """An OpenSpiel policy (e.g. CFR's average policy) as a table."""
    probabilities: dict[Key, dict[str, float]] = {}
    for state, key, tokens in _decisions(game):
        row = tabular.action_probabilities(state)
        probabilities[key] = {token: float(row.get(action, 0.0))
                              for action, token in zip(state.legal_actions(), tokens)}
    return probabilities
