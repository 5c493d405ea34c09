"""The strategy SDK: policies, sampling distributions, and range-query answers."""

from __future__ import annotations

import numpy as np
import pytest
from twisted.internet.testing import StringTransport

from agents.bots import BOTS, call_raise, random_bot
from agents.client import StrategyBot
from agents.sdk import Mix, PublicView, UniformRaise, blocked_hands, hand_cards, hand_of
from protocol.cards import cards_from_text
from protocol.gamedef import load_game
from protocol.hands import all_hands, hand_index
from protocol.rangecodec import read_answer
from protocol.rangequery import parse_action_token, parse_range_error
from protocol.rules import Action
from protocol.wire import parse_matchstate
from tests.reference import REFERENCE_DIR


def connected(name: str, game_name: str, seed: int = 1) -> tuple[StrategyBot, StringTransport]:
    """A reference bot on an in-memory transport, the version line already cleared."""
    game = load_game(game_name)
    bot = StrategyBot(game, BOTS[name], np.random.default_rng(seed))
    transport = StringTransport()
    bot.makeConnection(transport)
    transport.clear()
    return bot, transport


def ask(bot: StrategyBot, transport: StringTransport, line: str) -> str:
    """Send one line and return the single line written back."""
    transport.clear()
    bot.dataReceived(line.encode("ascii") + b"\r\n")
    written = transport.value().decode("ascii")
    assert written.endswith("\r\n") and written.count("\n") == 1
    return written[:-2]


def view_at(game_name: str, line: str) -> PublicView:
    """The public view of the player to act at a MATCHSTATE line."""
    game = load_game(game_name)
    state = parse_matchstate(line, game)
    return PublicView(game, state.to_state(game), state.position, state.board_cards)


def test_hand_order_matches_the_protocol_colex_order() -> None:
    """hand_cards and hand_of follow protocol.cards' colex order in hold'em and Leduc."""
    for name in ("nolimit", "leduc", "kuhn"):
        game = load_game(name)
        table = hand_cards(game)
        numbers = all_hands(game.deck_size, game.num_hole_cards)
        assert table.shape == (game.num_hands, game.num_hole_cards)
        for index in (0, 1, game.num_hands // 2, game.num_hands - 1):
            assert tuple(table[index]) == tuple(game.cards[k] for k in numbers[index])
            assert hand_of(game, tuple(reversed(table[index].tolist()))) == index
    assert hand_of(load_game("nolimit"), cards_from_text("2c2d")) == 0
    assert hand_of(load_game("nolimit"), cards_from_text("AhAs")) == hand_index((50, 51))


def test_blocked_hands_are_those_sharing_a_board_card() -> None:
    """The board mask flags exactly the hands holding a board card (51 per card in hold'em)."""
    game = load_game("nolimit")
    board = cards_from_text("2cAs8s")
    mask = blocked_hands(game, board)
    assert mask.sum() == 3 * 51 - 3
    assert mask[hand_of(game, cards_from_text("2cKd"))]
    assert not mask[hand_of(game, cards_from_text("2dKd"))]


def test_mix_probabilities_spread_a_uniform_range_per_chip() -> None:
    """A UniformRaise of weight w gives each size w/(count) and nothing outside it."""
    policy = Mix({Action.CALL: 0.25, UniformRaise(300, 399): np.full(4, 0.75)})
    probs = policy.probabilities(
        [Action.CALL, Action.raise_to(300), Action.raise_to(400), Action.FOLD], 4
    )
    assert probs.shape == (4, 4)
    assert np.allclose(probs[0], 0.25)
    assert np.allclose(probs[1], 0.0075)
    assert np.allclose(probs[2:], 0.0)


def test_mix_sampling_uses_per_hand_weights() -> None:
    """With per-hand weights, each hand samples its own distribution."""
    weights = np.array([1.0, 0.0, 0.5])
    policy = Mix({Action.CALL: weights, Action.FOLD: 1.0 - weights})
    rng = np.random.default_rng(0)
    assert all(policy.sample(0, rng) == Action.CALL for _ in range(50))
    assert all(policy.sample(1, rng) == Action.FOLD for _ in range(50))
    calls = sum(policy.sample(2, rng) == Action.CALL for _ in range(4000))
    assert 1800 < calls < 2200


def test_deterministic_policies_do_not_draw_from_the_generator() -> None:
    """A single-action scalar policy leaves the generator's stream untouched."""
    rng = np.random.default_rng(42)
    Mix({Action.CALL: 1.0}).sample(3, rng)
    assert rng.random() == np.random.default_rng(42).random()


def test_call_raise_calls_half_the_time_and_raises_uniformly() -> None:
    """call-raise: about half calls; raise sizes spread uniformly over the legal range (seeded)."""
    view = view_at("nolimit", "MATCHSTATE:1:0::|2hAc")
    low, high = view.raise_range or (0, 0)
    rng = np.random.default_rng(2024)
    samples = [call_raise(view).sample(0, rng) for _ in range(6000)]
    sizes = np.array([a.size for a in samples if a.type.value == "r"])
    calls = sum(a == Action.CALL for a in samples)
    assert 2800 < calls < 3200
    assert sizes.min() >= low and sizes.max() <= high
    # Uniform on [low, high]: mean at the middle, each quarter about a quarter.
    assert abs(sizes.mean() - (low + high) / 2) < 0.03 * (high - low)
    quarters = np.histogram(sizes, bins=4, range=(low, high + 1))[0] / len(sizes)
    assert np.all(np.abs(quarters - 0.25) < 0.04)


@pytest.mark.parametrize(
    ("game_name", "line", "expected_types"),
    [
        ("nolimit", "MATCHSTATE:0:0:r300:7d3d|", "fcr"),
        ("nolimit", "MATCHSTATE:0:0:c:7d3d|", "cr"),
        ("limit", "MATCHSTATE:0:0:rrr:7d3d|", "fc"),
        ("limit", "MATCHSTATE:1:0::|2hAc", "fcr"),
    ],
)
def test_random_bot_is_uniform_over_legal_types(
    game_name: str, line: str, expected_types: str
) -> None:
    """random: each legal action type about equally often, nothing illegal (seeded)."""
    view = view_at(game_name, line)
    rng = np.random.default_rng(7)
    draws = 6000
    samples = [random_bot(view).sample(0, rng) for _ in range(draws)]
    counts = {t: sum(a.type.value == t for a in samples) for t in "fcr"}
    assert {t for t, n in counts.items() if n} == set(expected_types)
    for t in expected_types:
        assert abs(counts[t] / draws - 1 / len(expected_types)) < 0.03
    assert all(view.state.is_legal(a) for a in samples[:500])


@pytest.mark.parametrize(
    ("game_name", "query"),
    [
        ("nolimit", "QUERY:a1:0:5:r300:|:f,c,r400"),
        ("limit", "QUERY:a1:0:5:r:|:f,c,r"),
        ("leduc", "QUERY:a1:1:5:r:|:f,c,r"),
    ],
)
def test_always_call_answers_one_for_call_for_every_hand(game_name: str, query: str) -> None:
    """A query to always-call: N values per action, 1 for 'c', 0 for the rest."""
    game = load_game(game_name)
    raise_token = query.rsplit(",", 1)[1]
    bot, transport = connected("always-call", game_name)
    line = ask(bot, transport, query)
    actions = [parse_action_token(t) for t in ("f", "c", raise_token)]
    answer = read_answer(line, actions, game.num_hands)
    assert answer.qid == "a1" and answer.version == 1
    assert answer.rows.shape == (3, game.num_hands)
    assert set(answer.rows[1].tolist()) == {1.0}
    assert set(answer.rows[0].tolist()) | set(answer.rows[2].tolist()) == {0.0}


def test_call_raise_answers_its_per_chip_density_and_zeroes_board_hands() -> None:
    """call-raise on the flop: c = 1/2, each raise size 1/2 per legal size; board hands 0."""
    game = load_game("nolimit")
    bot, transport = connected("call-raise", "nolimit")
    blocked = blocked_hands(game, cards_from_text("2cAs8s"))
    actions = [parse_action_token(t) for t in ("c", "r200", "r20000", "r100000")]
    line = ask(bot, transport, "QUERY:7:0:3:cc/:|/2cAs8s:c,r200,r20000,r100000")
    probs = read_answer(line, actions, game.num_hands, blocked).rows
    free = ~blocked
    sizes = 20000 - 200 + 1
    assert np.allclose(probs[0, free], 0.5)
    assert np.allclose(probs[1, free], 0.5 / sizes, rtol=1e-9)
    assert np.allclose(probs[2, free], 0.5 / sizes, rtol=1e-9)
    assert np.all(probs[3] == 0.0)
    assert np.all(probs[:, blocked] == 0.0)


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("QUERY:q1:0:0::|:c", "not to act"),
        ("QUERY:q2:1:0:r300f:|:c", "over"),
        ("QUERY:q3:1:0::|2hAc:c", "hole"),
        ("QUERY:q4:1:0::|:x", "action"),
        ("QUERY:q5:1:0:r100:|:c", "state"),
    ],
)
def test_bad_queries_get_rangeerror_and_play_goes_on(query: str, reason: str) -> None:
    """A query that cannot be answered gets RANGEERROR with its qid; the bot still plays."""
    bot, transport = connected("always-call", "nolimit")
    refusal = parse_range_error(ask(bot, transport, query))
    assert refusal.qid == query.split(":")[1]
    assert reason in refusal.message
    assert ask(bot, transport, "MATCHSTATE:1:0::|2hAc") == "MATCHSTATE:1:0::|2hAc:c"


def test_a_strategy_that_breaks_the_rules_gets_rangeerror() -> None:
    """Probabilities summing above 1 are refused with RANGEERROR, not sent."""
    game = load_game("nolimit")

    def greedy(view: PublicView) -> Mix:
        return Mix({Action.CALL: 0.8, Action.FOLD: 0.8})

    bot = StrategyBot(game, greedy, np.random.default_rng(0))
    transport = StringTransport()
    bot.makeConnection(transport)
    refusal = parse_range_error(ask(bot, transport, "QUERY:z:0:0:r300:|:f,c"))
    assert "sum" in refusal.message
    assert bot.queries_refused == 1


def test_pipelined_queries_are_answered_in_order() -> None:
    """Several queries sent at once are answered in the order received."""
    bot, transport = connected("random", "nolimit")
    bot.dataReceived(b"QUERY:a:1:0::|:c\r\nQUERY:b:0:0:r300:|:f\r\nQUERY:c:1:0::|:r200\r\n")
    lines = transport.value().decode().split("\r\n")[:-1]
    assert [line.split(":")[1] for line in lines] == ["a", "b", "c"]
    assert all(line.startswith("RANGE:") for line in lines)


@pytest.mark.parametrize("name", ["random", "call-raise"])
def test_queries_do_not_change_the_actions_played(name: str) -> None:
    """Same seed, same states: the actions are identical with and without queries in between."""
    path = REFERENCE_DIR / "transcripts" / "nl1000.trace"
    if not path.exists():
        pytest.fail("reference transcript not available")
    with path.open() as trace:
        sent = [
            line.rstrip("\n").split(" ", 4)[4] for line in trace if line.startswith("TO 2 at ")
        ][:2000]
    plain, plain_transport = connected(name, "nolimit", seed=99)
    queried, queried_transport = connected(name, "nolimit", seed=99)
    for number, line in enumerate(sent):
        plain.dataReceived(f"{line}\r\n".encode())
        queried.dataReceived(f"{line}\r\n".encode())
        if number % 3 == 0:
            # A query about the first decision of the hand, between real decisions.
            hand = line.split(":")[2]
            queried.dataReceived(f"QUERY:x{number}:1:{hand}::|:c,r200,r5000\r\n".encode())
    actions = [
        l for l in plain_transport.value().decode().split("\r\n") if l.startswith("MATCHSTATE")
    ]
    with_queries = queried_transport.value().decode().split("\r\n")
    assert [l for l in with_queries if l.startswith("MATCHSTATE")] == actions
    assert sum(l.startswith("RANGE:") for l in with_queries) == len(range(0, len(sent), 3))
    assert len(actions) > 500


def test_public_view_helpers_clamp_and_describe_raises() -> None:
    """raise_to clamps into the legal range; min_raise/any_raise follow the game's betting."""
    view = view_at("nolimit", "MATCHSTATE:0:0:r300:7d3d|")
    assert view.raise_range == (500, 20000)  # r300 over 100 raised 200: at least 200 more
    assert view.raise_to(50) == Action.raise_to(500)
    assert view.raise_to(10**9) == Action.raise_to(20000)
    assert view.min_raise() == Action.raise_to(500)
    assert view.any_raise() == UniformRaise(500, 20000)
    limit_view = view_at("limit", "MATCHSTATE:0:0:rrr:7d3d|")
    assert not limit_view.can_raise
    with pytest.raises(ValueError):
        limit_view.min_raise()


@pytest.mark.parametrize("name", sorted(BOTS))
@pytest.mark.parametrize(
    "line",
    ["MATCHSTATE:1:0::|2hAc", "MATCHSTATE:0:0:r300:7d3d|", "MATCHSTATE:0:0:cc/:7d3d|/2cAs8s"],
)
def test_what_a_bot_plays_is_what_it_answers(name: str, line: str) -> None:
    """Sampled frequencies of fold, call and raise sizes match the probabilities the bot reports."""
    view = view_at("nolimit", line)
    policy = BOTS[name](view)
    rng = np.random.default_rng(5)
    draws = 4000
    samples = [policy.sample(0, rng) for _ in range(draws)]
    for action in (Action.FOLD, Action.CALL):
        reported = policy.probabilities([action], 1)[0, 0]
        assert abs(sum(a == action for a in samples) / draws - reported) < 0.03
    if view.raise_range is not None:
        low, high = view.raise_range
        every_size = [Action.raise_to(size) for size in range(low, high + 1)]
        per_size = policy.probabilities(every_size, 1)[:, 0]
        reported_raise = per_size.sum()
        played = [a.size for a in samples if a.type.value == "r"]
        assert abs(len(played) / draws - reported_raise) < 0.03
        lower_half = per_size[: len(per_size) // 2].sum()
        assert abs(sum(s < low + len(per_size) // 2 for s in played) / draws - lower_half) < 0.03


def test_a_mix_whose_weights_add_up_to_more_than_one_is_refused_on_queries() -> None:
    """bot-sdk.md, rule 4: weights that add up to more than 1 for a hand get RANGEERROR.

    Before: only the asked rows were checked, so a mix of fold 1 and call 1 answered "fold: 1"
    to LBR's fold query while it played fold half the time, and LBR's bound rested on that.
    """
    from protocol.errors import ProtocolError

    leduc = load_game("leduc")

    def double(view: PublicView) -> Mix:
        return Mix({Action.FOLD: 1.0, Action.CALL: np.ones(view.num_hands)})

    def honest(view: PublicView) -> Mix:
        return Mix({Action.FOLD: 0.5, Action.CALL: np.full(view.num_hands, 0.5)})

    query = "QUERY:q1:1:0:r:|:f"
    assert "RANGE:q1:" in StrategyBot(leduc, honest, np.random.default_rng(0)).answer_query(query)
    with pytest.raises(ProtocolError, match="add up to 2.0, more than 1"):
        StrategyBot(leduc, double, np.random.default_rng(0)).answer_query(query)


@pytest.mark.parametrize("weights", [{Action.CALL: 0.5}, {Action.CALL: 0.3, Action.FOLD: 0.1},
                                     {Action.CALL: np.array([0.2, 1.0, 0.5]), Action.FOLD: 0.0}])
def test_weights_under_one_are_answered_as_they_are_played(weights: dict[Action, object]) -> None:
    """A hand whose weights add up to less than 1 is played normalised; its answers are too
    (they were the raw weights: 'call 0.5' from a bot that always calls)."""
    mix = Mix(weights)  # type: ignore[arg-type]
    rng = np.random.default_rng(3)
    answered = mix.probabilities([Action.CALL, Action.FOLD], 3)
    for hand in range(3):
        played = [mix.sample(hand, rng) for _ in range(4000)]
        calls = sum(action == Action.CALL for action in played) / len(played)
        assert abs(calls - answered[0, hand]) < 0.03, (hand, calls, answered[:, hand])
        assert answered[:, hand].sum() == pytest.approx(1.0)


def test_weight_on_an_illegal_action_is_answered_as_the_call_it_is_played_as() -> None:
    """bot-sdk.md, rule 3: an illegal sample is played corrected (an illegal fold or a raise
    past the cap becomes a call); the answers say so. They gave the illegal action's mass
    to no legal action, so asked every legal action (c, r with nothing to call in Leduc)
    the answer summed to 0.7 and the dealer refused it, counted against the bot."""
    leduc = load_game("leduc")

    def sloppy(view: PublicView) -> Mix:
        return Mix({Action.FOLD: 0.2, Action.CALL: 0.5, Action.RAISE: 0.3})

    bot = StrategyBot(leduc, sloppy, np.random.default_rng(0))
    opening = read_answer(bot.answer_query("QUERY:q1:0:0::|:c,r"), [Action.CALL, Action.RAISE], 6)
    assert np.allclose(opening.rows, [[0.7] * 6, [0.3] * 6]), opening.rows
    capped = read_answer(bot.answer_query("QUERY:q2:0:0:rr:|:f,c"), [Action.FOLD, Action.CALL], 6)
    assert np.allclose(capped.rows, [[0.2] * 6, [0.8] * 6]), capped.rows


def test_a_hand_without_weight_is_refused_on_queries() -> None:
    """A hand whose weights add up to 0 cannot be played (sample raises; the bot calls):
    its answer of 0 for every action was a lie, proven false when the bot then called
    (a range inconsistency), and refused by the dealer in a limit game. RANGEERROR instead."""
    from protocol.errors import ProtocolError

    leduc = load_game("leduc")

    def hole(view: PublicView) -> Mix:
        weights = np.ones(view.num_hands)
        weights[2] = 0.0
        return Mix({Action.CALL: weights})

    with pytest.raises(ProtocolError, match="hand 2: the policy has no positive weight"):
        StrategyBot(leduc, hole, np.random.default_rng(0)).answer_query("QUERY:q1:0:0::|:c,r")
    # A hand the board blocks may have none (its values are ignored).
    assert "RANGE:q2:" in StrategyBot(leduc, hole, np.random.default_rng(0)).answer_query(
        "QUERY:q2:0:0:cc/:|/Kh:c,r")


def test_the_exact_tools_see_an_illegal_action_as_the_call_it_is_played_as() -> None:
    """probabilities_at (acpc-lbr exact, the simulated matches) gives the same probabilities as the
    networked bot's answers: an illegal fold's weight is the call's (it was nobody's)."""
    from acpc_lbr.policy import probabilities_at
    from protocol.rules import State

    leduc = load_game("leduc")

    def sloppy(view: PublicView) -> Mix:
        return Mix({Action.FOLD: 0.2, Action.CALL: 0.5, Action.RAISE: 0.3})

    rows = probabilities_at(sloppy, State(leduc), (), [Action.CALL, Action.RAISE])
    assert np.allclose(rows, [[0.7] * 6, [0.3] * 6]), rows
