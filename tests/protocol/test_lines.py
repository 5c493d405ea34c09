"""protocol.lines: the live-state views (line_views) are the finished hand's decision points."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol.gamedef import load_game
from protocol.lines import decision_points, line_views
from protocol.rules import State
from protocol.wire import parse_log_state

LOGS = Path(__file__).resolve().parent.parent / "data" / "acpc-reference" / "logs"


@pytest.mark.parametrize(("log", "game_name"), [("nl1000.log", "holdem.nolimit.2p.reverse_blinds"),
                                                 ("lim1000.log", "holdem.limit.2p.reverse_blinds")])
def test_line_views_match_decision_points_at_every_prefix(log: str, game_name: str) -> None:
    """At every point of 200 logged hands, line_views gives the replayed decision points so far."""
    game = load_game(game_name)
    hands = [parse_log_state(line.rstrip("\n"), game)
             for line in (LOGS / log).read_text().splitlines() if line.startswith("STATE:")][:200]
    checked = 0
    for hand in hands:
        board = [card for cards in hand.board for card in cards]
        for position in range(game.num_players):
            expected = [(p.view, p.action) for p in decision_points(game, hand, position)]
            state = State(game, hand.hand_id)
            done = 0
            for actions in hand.betting:
                for action in actions:
                    if state.current_player == position:
                        done += 1
                    state.apply(action)
                    assert line_views(state, board, position) == expected[:done]
                    checked += 1
    assert checked > 1000
