"""The documented example bot: short, legal in play, and valid in its range answers."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from twisted.internet.testing import StringTransport

from agents.client import StrategyBot
from agents.players import load_strategy
from agents.sdk import blocked_hands
from protocol.deal import DealSource
from protocol.gamedef import load_game
from protocol.rangecodec import read_answer
from protocol.rangequery import parse_action_token
from protocol.rules import State
from protocol.wire import matchstate_for, parse_reply

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "example_bot.py"


def test_example_is_under_fifty_lines() -> None:
    """The example bot shows the whole SDK in under 50 lines."""
    assert len(EXAMPLE.read_text().splitlines()) < 50


@pytest.mark.parametrize("game_name", ["nolimit", "limit", "leduc", "kuhn"])
def test_example_bot_plays_legally_and_answers_valid_ranges(game_name: str) -> None:
    """In self-play every reply is legal, and a query at each decision gets a valid RANGE."""
    game = load_game(game_name)
    strategy = load_strategy(f"{EXAMPLE}:strategy")
    bots = [
        StrategyBot(game, strategy, np.random.default_rng(seat)) for seat in range(game.num_players)
    ]
    transports = [StringTransport() for _ in bots]
    for bot, transport in zip(bots, transports):
        bot.makeConnection(transport)
    deals = DealSource(3)
    queries = 0
    for hand in range(40):
        deal = deals.deal(game)
        state = State(game, hand)
        while not state.finished:
            actor = state.current_player
            seen = matchstate_for(state, deal, actor)
            for transport in transports:
                transport.clear()
            token = "r" if game.is_limit else "r" + str((state.raise_range() or (0, 0))[0] or 1)
            hidden = replace(seen, hole=tuple(() for _ in seen.hole))
            query = f"QUERY:h{hand}:{hidden.body()}:f,c,{token}"
            bots[actor].dataReceived(query.encode() + b"\r\n")
            actions = [parse_action_token(t) for t in ("f", "c", token)]
            mask = blocked_hands(game, seen.board_cards)
            read_answer(transports[actor].value().decode().strip(), actions, game.num_hands, mask)
            queries += 1
            transports[actor].clear()
            for position, bot in enumerate(bots):
                bot.dataReceived((matchstate_for(state, deal, position).text() + "\r\n").encode())
            reply = parse_reply(transports[actor].value().decode().strip(), game)
            assert reply is not None and reply.action is not None
            assert state.is_legal(reply.action)
            state.apply(reply.action)
    assert queries >= 40
