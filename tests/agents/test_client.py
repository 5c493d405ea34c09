"""The ACPC client base and the reference bots, in memory, against the reference dealer's bytes."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from twisted.internet.testing import StringTransport

from agents.bots import BOTS
from agents.client import QUERYABLE_LINE, VERSION_LINE, AcpcClient, StrategyBot
from protocol.deal import DealSource
from protocol.gamedef import GameDef, load_game
from protocol.wire import matchstate_for, parse_matchstate, parse_reply
from tests.reference import REFERENCE_DIR as SHARED

TRACES = {"nl1000.trace": "nolimit", "lim1000.trace": "limit"}


def trace_lines(name: str, direction: str, seat: int) -> list[str]:
    """The message texts of one direction ('TO'/'FROM') for one seat of a trace."""
    path = SHARED / "transcripts" / name
    if not path.exists():
        pytest.fail(f"reference transcript {path} not available")
    prefix = f"{direction} {seat} at "
    with path.open() as lines:
        return [line.rstrip("\n").split(" ", 4)[4] for line in lines if line.startswith(prefix)]


def connect(bot: AcpcClient) -> StringTransport:
    """Attach ``bot`` to an in-memory transport."""
    transport = StringTransport()
    bot.makeConnection(transport)
    return transport


def replies(transport: StringTransport) -> list[str]:
    """The lines the bot wrote, after checking the version line came first."""
    data = transport.value()
    assert data.startswith(VERSION_LINE)
    # An SDK bot announces that it answers range queries right after VERSION.
    body = data[len(VERSION_LINE) :].removeprefix(QUERYABLE_LINE).decode("ascii")
    assert body == "" or body.endswith("\r\n")
    return body.split("\r\n")[:-1]


def chunks(data: bytes, size: int) -> Iterator[bytes]:
    """``data`` cut into pieces of ``size`` bytes."""
    for start in range(0, len(data), size):
        yield data[start : start + size]


def make_bot(name: str, game: GameDef, seed: int = 1) -> StrategyBot:
    """A reference bot with a seeded generator."""
    return StrategyBot(game, BOTS[name], np.random.default_rng(seed))


@pytest.mark.parametrize("trace", sorted(TRACES))
@pytest.mark.parametrize("seat", [1, 2])
def test_always_call_answers_exactly_where_the_reference_player_did(trace: str, seat: int) -> None:
    """Fed every line a seat got, the bot answers exactly the states the example player answered."""
    game = load_game(TRACES[trace])
    sent = trace_lines(trace, "TO", seat)
    answered = [line.rsplit(":", 1)[0] for line in trace_lines(trace, "FROM", seat)]
    bot = make_bot("always-call", game)
    transport = connect(bot)
    bot.dataReceived("".join(f"{line}\r\n" for line in sent).encode("ascii"))
    lines = replies(transport)
    assert [line.rsplit(":", 1)[0] for line in lines] == answered
    assert all(line.rsplit(":", 1)[1] == "c" for line in lines)


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 7, 64, 1000])
@pytest.mark.parametrize("trace", sorted(TRACES))
def test_replies_do_not_depend_on_how_bytes_are_split(trace: str, chunk_size: int) -> None:
    """The same bytes cut into any chunk size give the same replies (first 1500 lines)."""
    game = load_game(TRACES[trace])
    sent = trace_lines(trace, "TO", 2)[:1500]
    data = "".join(f"{line}\r\n" for line in sent).encode("ascii")
    whole = connect(bot := make_bot("random", game, seed=5))
    bot.dataReceived(data)
    split = connect(bot := make_bot("random", game, seed=5))
    for piece in chunks(data, chunk_size):
        bot.dataReceived(piece)
    assert replies(split) == replies(whole)
    assert len(replies(whole)) > 100


@pytest.mark.parametrize("name", sorted(BOTS))
@pytest.mark.parametrize("trace", sorted(TRACES))
def test_every_reply_is_the_state_as_received_plus_a_legal_action(name: str, trace: str) -> None:
    """Each reply echoes a to-act state byte for byte and carries a legal, canonical action."""
    game = load_game(TRACES[trace])
    sent = trace_lines(trace, "TO", 1)[:3000]
    to_act = [
        line
        for line in sent
        if (state := parse_matchstate(line, game)).to_state(game).finished is False
        and state.to_state(game).current_player == state.position
    ]
    bot = make_bot(name, game, seed=3)
    transport = connect(bot)
    bot.dataReceived("".join(f"{line}\r\n" for line in sent).encode("ascii"))
    lines = replies(transport)
    assert [line.rsplit(":", 1)[0] for line in lines] == to_act
    for line in lines:
        reply = parse_reply(line, game)
        assert reply is not None and reply.problem is None and reply.action is not None
        assert reply.state.to_state(game).is_legal(reply.action), line
        assert line.rsplit(":", 1)[1] == reply.action.text()


def test_comments_blank_lines_and_bare_lf_are_handled() -> None:
    """'#'/';' lines and blank lines are ignored; a bare LF ends a line as well as CRLF."""
    game = load_game("nolimit")
    bot = make_bot("always-call", game)
    transport = connect(bot)
    bot.dataReceived(b"# a comment\r\n;another\n\r\nMATCHSTATE:1:0::|2hAc\n")
    assert replies(transport) == ["MATCHSTATE:1:0::|2hAc:c"]


def test_a_state_is_answered_only_once() -> None:
    """A repeated to-act line gets one answer; comments and unknown lines get none."""
    game = load_game("nolimit")
    bot = make_bot("always-call", game)
    transport = connect(bot)
    bot.dataReceived(b"MATCHSTATE:1:0::|2hAc\r\nMATCHSTATE:1:0::|2hAc\r\nHELLO\r\n")
    assert replies(transport) == ["MATCHSTATE:1:0::|2hAc:c"]
    bot.dataReceived(b"MATCHSTATE:1:2::|2hAc\r\n")
    assert replies(transport)[-1] == "MATCHSTATE:1:2::|2hAc:c"
    assert not transport.disconnecting


@pytest.mark.parametrize(
    ("bot_game", "line"),
    [
        ("limit", b"MATCHSTATE:0:0:r300:7d3d|\r\n"),  # a no-limit raise size under limit
        ("nolimit", b"MATCHSTATE:1:1:r100:|2hAc\r\n"),  # a raise below the big blind
        ("kuhn", b"MATCHSTATE:1:0::|2hAc\r\n"),  # two hole cards in a one-card game
        ("nolimit", b"MATCHSTATE:x\r\n"),
    ],
)
def test_an_unreadable_state_ends_the_connection_naming_the_game(
    bot_game: str, line: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    """A state the bot cannot read (a bot started with the wrong --game) is an error: the bot
    says so, names the likely cause and disconnects instead of waiting out the dealer's
    t_response; lines after it are not answered."""
    bot = make_bot("always-call", load_game(bot_game))
    transport = connect(bot)
    bot.dataReceived(line + b"MATCHSTATE:1:0::|2hAc\r\n")
    assert replies(transport) == []
    assert transport.disconnecting and bot.failed
    message = " ".join(r.getMessage() for r in caplog.records if r.levelname == "ERROR")
    assert "another game" in message and "--game" in message


def test_tracker_resynchronises_on_a_new_hand_and_on_a_non_extension() -> None:
    """A line that does not extend the previous one (r30 then r300) is replayed from scratch."""
    game = load_game("nolimit")
    bot = make_bot("always-call", game)
    transport = connect(bot)
    bot.dataReceived(b"MATCHSTATE:0:0:r300:7d3d|\r\n")
    bot.dataReceived(b"MATCHSTATE:0:0:r3000:7d3d|\r\n")
    assert replies(transport) == ["MATCHSTATE:0:0:r300:7d3d|:c", "MATCHSTATE:0:0:r3000:7d3d|:c"]


@pytest.mark.parametrize(
    "game_name", ["nolimit", "limit", "holdem.nolimit.3p", "holdem.limit.3p", "kuhn", "leduc"]
)
@pytest.mark.parametrize("name", sorted(BOTS))
def test_reference_bots_are_legal_in_self_play(game_name: str, name: str) -> None:
    """In an in-memory match every reply parses and is legal without correction."""
    game = load_game(game_name)
    # Min-raising no-limit hands run to ~60 actions a round: fewer of them suffice.
    hands = 8 if name == "always-raise" and not game.is_limit else 150
    bots = [make_bot(name, game, seed=10 + seat) for seat in range(game.num_players)]
    transports = [connect(bot) for bot in bots]
    deals = DealSource(7)
    from protocol.rules import State

    decisions = 0
    for hand in range(hands):
        deal = deals.deal(game)
        state = State(game, hand)
        while not state.finished:
            for bot, transport in zip(bots, transports):
                transport.clear()
            actor = state.current_player
            for position, bot in enumerate(bots):
                bot.dataReceived((matchstate_for(state, deal, position).text() + "\r\n").encode())
            for position, transport in enumerate(transports):
                written = transport.value().decode()
                if position != actor:
                    assert written == ""
                    continue
                reply = parse_reply(written.rstrip("\r\n"), game)
                assert reply is not None and reply.action is not None, written
                assert written.endswith("\r\n") and written.count("\n") == 1
                assert reply.state == matchstate_for(state, deal, actor)
                assert state.is_legal(reply.action), written
                state.apply(reply.action)
                decisions += 1
    assert decisions >= hands


@pytest.mark.parametrize("trace", sorted(TRACES))
def test_incremental_tracker_agrees_with_a_full_parse(trace: str) -> None:
    """For every line a seat got, the tracker's state, cards and turn equal protocol.wire's full parse."""
    from agents.tracking import HandTracker

    game = load_game(TRACES[trace])
    tracker = HandTracker(game)
    lines = trace_lines(trace, "TO", 2)
    for line in lines:
        view = tracker.update(line)
        expected = parse_matchstate(line, game)
        state = expected.to_state(game)
        assert view.state.betting_string() == state.betting_string() == expected.betting_text()
        assert (view.state.spent, view.state.finished, view.state.round) == (
            state.spent,
            state.finished,
            state.round,
        )
        assert view.to_act == (not state.finished and state.current_player == expected.position)
        assert view.hole == expected.own_hole
        assert view.board == expected.board_cards
    assert len(lines) > 5000


@pytest.mark.parametrize("game_name", ["nolimit", "limit", "holdem.nolimit.3p", "leduc", "kuhn"])
def test_reference_bots_choose_legal_actions_in_random_states(game_name: str) -> None:
    """At 300 states reached by random legal play, 20 draws of every bot are all legal as sent."""
    from agents.sdk import PublicView
    from protocol.rules import Action, ActionType, State

    game = load_game(game_name)
    walk = np.random.default_rng(11)
    draws = np.random.default_rng(12)
    checked = 0
    while checked < 300:
        state = State(game, checked)
        for _ in range(int(walk.integers(0, 25))):
            legal = state.legal_actions()
            kind = legal[int(walk.integers(len(legal)))]
            bounds = state.raise_range()
            if kind is ActionType.RAISE and bounds is not None and not game.is_limit:
                action = Action.raise_to(int(walk.integers(bounds[0], bounds[1] + 1)))
            else:
                action = Action(kind)
            trial = state.clone()
            trial.apply(action)
            if trial.finished:
                break
            state = trial
        view = PublicView(game, state, state.current_player, ())
        for name, strategy in BOTS.items():
            for _ in range(20):
                chosen = strategy(view).sample(int(draws.integers(game.num_hands)), draws)
                assert state.is_legal(chosen), (name, state.betting_string(), chosen)
        checked += 1


def test_tracker_reads_a_round_zero_board_after_the_last_hole_field() -> None:
    """In a game dealing board cards in round 0, hole and board split as protocol.wire splits them."""
    from agents.tracking import HandTracker
    from protocol.gamedef import parse_gamedef

    game = parse_gamedef(
        "GAMEDEF\nlimit\nnumPlayers = 2\nnumRounds = 2\nblind = 1 1\nraiseSize = 2 4\n"
        "firstPlayer = 1 1\nmaxRaises = 2 2\nnumSuits = 2\nnumRanks = 3\nnumHoleCards = 1\n"
        "numBoardCards = 1 1\nEND GAMEDEF\n"
    )
    for line in (
        "MATCHSTATE:1:0::|KsQh",
        "MATCHSTATE:1:0:cc/:|KsQh/Ah",
        "MATCHSTATE:0:0:cc/:Kh|Qh/Ah",
    ):
        view = HandTracker(game).update(line)
        expected = parse_matchstate(line, game)
        assert (view.hole, view.board) == (expected.own_hole, expected.board_cards)


def test_an_over_long_line_closes_the_connection_as_a_failure() -> None:
    """A line beyond MAX_LENGTH drops the connection, and the factory reports status 1."""
    from twisted.internet.error import ConnectionDone
    from twisted.python.failure import Failure

    from agents.client import BotFactory

    game = load_game("nolimit")
    factory = BotFactory(lambda: make_bot("always-call", game))
    bot = factory.buildProtocol(None)
    transport = connect(bot)
    bot.dataReceived(b"#" * (bot.MAX_LENGTH + 10))
    assert transport.disconnecting
    statuses: list[int] = []
    factory.done.addCallback(statuses.append)
    factory.clientConnectionLost(None, Failure(ConnectionDone()))
    assert statuses == [1]


def test_a_failed_clients_own_close_is_not_reported_as_a_lost_connection(
        caplog: pytest.LogCaptureFixture) -> None:
    """A bot that disconnects because it failed (wrong --game) has said why; the clean close
    that follows is status 1 without a second error, 'connection to the dealer lost:
    Connection was closed cleanly' (printed after every such failure, and twice before
    evaluate's 'does not answer range queries')."""
    from twisted.internet.error import ConnectionDone
    from twisted.python.failure import Failure

    from agents.client import BotFactory

    factory = BotFactory(lambda: make_bot("always-call", load_game("kuhn")))
    bot = factory.buildProtocol(None)
    connect(bot)
    bot.dataReceived(b"MATCHSTATE:1:0::|2hAc\r\n")  # not a Kuhn state: the bot fails
    statuses: list[int] = []
    factory.done.addCallback(statuses.append)
    factory.clientConnectionLost(None, Failure(ConnectionDone()))
    assert statuses == [1]
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and "--game" in errors[0], errors


def test_a_clean_close_is_status_zero_and_a_reset_status_one() -> None:
    """The factory maps the dealer's EOF to 0 and a lost connection to 1."""
    from twisted.internet.error import ConnectionDone, ConnectionLost
    from twisted.python.failure import Failure

    from agents.client import BotFactory

    game = load_game("nolimit")
    for reason, expected in ((ConnectionDone(), 0), (ConnectionLost(), 1)):
        factory = BotFactory(lambda: make_bot("always-call", game))
        connect(factory.buildProtocol(None))
        statuses: list[int] = []
        factory.done.addCallback(statuses.append)
        factory.clientConnectionLost(None, Failure(reason))
        assert statuses == [expected]
