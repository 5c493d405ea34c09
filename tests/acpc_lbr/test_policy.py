"""One strategy vocabulary: a bot's strategy and the exact tools' strategies are the same kind of thing.

The exact tools' strategies (acpc_lbr/strategies.py) return :class:`Rows`; bots return
:class:`Mix`. Both are asked the same way (:func:`probabilities_at`), and a strategy of
either kind plays as a networked bot (:class:`agents.client.StrategyBot`) with the answers
the exact tools use.
"""

from __future__ import annotations

import numpy as np
from twisted.internet.testing import StringTransport

from acpc_lbr.policy import Mix, PublicView, Rows, Strategy, played, probabilities_at
from acpc_lbr.strategies import default_actions, kuhn_equilibrium, random_table, table_strategy
from agents.bots import random_bot
from agents.client import StrategyBot
from protocol.gamedef import load_game
from protocol.rangecodec import read_answer
from protocol.rules import Action, State

LEDUC = load_game("leduc")


def test_rows_play_as_the_mix_of_their_rows() -> None:
    """A table strategy draws its actions exactly as a Mix of its rows over default_actions
    would, draw for draw (how such a strategy was played before it was a Strategy itself)."""
    strategy = table_strategy(LEDUC, random_table(LEDUC, 3))
    state = State(LEDUC)
    view = PublicView(LEDUC, state, state.current_player, ())
    policy = strategy(view)
    actions = default_actions(state)
    rows = policy.probabilities(actions, LEDUC.num_hands)
    as_mix = Mix({action: rows[j] for j, action in enumerate(actions)})
    for hand in range(LEDUC.num_hands):
        ours, theirs = np.random.default_rng(hand), np.random.default_rng(hand)
        assert [policy.sample(hand, ours) for _ in range(50)] == [as_mix.sample(hand, theirs) for _ in range(50)]


def test_rows_compute_their_support_only_when_sampled() -> None:
    """Answers never call the support function (the exact walks ask only for answers)."""
    calls: list[int] = []

    def support() -> list[Action]:
        calls.append(1)
        return [Action.CALL]

    rows = Rows(support, lambda actions: np.ones((len(actions), 3)))
    assert rows.probabilities([Action.CALL, Action.FOLD], 3).shape == (2, 3)
    assert calls == []
    assert rows.sample(0, np.random.default_rng(0)) == Action.CALL
    assert rows.support == (Action.CALL,) and calls == [1]


def _network_answer(strategy: Strategy, query: str, actions: list[Action]) -> np.ndarray:
    """What ``strategy`` seated as a networked Leduc bot answers to ``query`` (the RANGE line, decoded)."""
    bot = StrategyBot(LEDUC, strategy, np.random.default_rng(1))
    bot.makeConnection(StringTransport())
    return read_answer(bot.answer_query(query), actions, LEDUC.num_hands).rows


def test_the_exact_tools_strategies_answer_over_the_network_as_in_process() -> None:
    """A table strategy and Kuhn's-style table, seated as bots, answer range queries with
    exactly what probabilities_at gives the exact tools; so does a bot's Mix."""
    after_call = State(LEDUC)
    after_call.apply(Action.CALL)
    for strategy in (table_strategy(LEDUC, random_table(LEDUC, 4)), random_bot):
        actions = [Action.FOLD, Action.CALL, Action.RAISE]
        rows = _network_answer(strategy, "QUERY:q1:1:0:c:|:f,c,r", actions)
        expected = probabilities_at(strategy, after_call, (), actions)
        assert np.allclose(rows, expected, rtol=0, atol=1e-9), (rows, expected)


def test_played_is_the_one_rule_for_illegal_actions() -> None:
    """played() gives a Mix's illegal fold to the call (nothing to call at the start of Kuhn),
    and leaves other policies alone."""
    kuhn = load_game("kuhn")
    view = PublicView(kuhn, State(kuhn), 0, ())
    sloppy = played(lambda v: Mix({Action.FOLD: 0.4, Action.CALL: 0.6}), view)
    assert sloppy.probabilities([Action.CALL], kuhn.num_hands).tolist() == [[1.0, 1.0, 1.0]]
    table = kuhn_equilibrium(kuhn)
    assert type(played(table, view)) is Rows
