"""Every STATE line of the reference dealer's logs, replayed through protocol/.

Source of truth: ``tests/data/acpc-reference/logs/{nl1000,lim1000,nl3p_100}.log``
written by the reference dealer (see acpc.md §12). Nothing here is hard-coded
except the file names: game, hand count and seed come from each log's header.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from protocol.deal import DealSource
from protocol.gamedef import GameDef, load_game
from protocol.wire import LogState, Score, log_header, log_state_for, parse_log_state, parse_score
from tests.reference import REFERENCE_DIR

REFERENCE = REFERENCE_DIR
LOGS = ["nl1000", "lim1000", "nl3p_100"]


@dataclass
class ReferenceLog:
    name: str
    game_arg: str
    game: GameDef
    hands: int
    seed: int
    header: list[str]
    states: list[str]
    score: str


def read_log(name: str) -> ReferenceLog:
    path = REFERENCE / "logs" / f"{name}.log"
    if not path.is_file():
        pytest.fail(f"reference log {path} not found")
    lines = path.read_text().splitlines()
    header = [line for line in lines if line.startswith("#")]
    _, _, match_name, game_arg, hands, seed = header[0].split(" ")
    return ReferenceLog(
        name=match_name,
        game_arg=game_arg,
        game=load_game(game_arg.removesuffix(".game")),
        hands=int(hands),
        seed=int(seed),
        header=header,
        states=[line for line in lines if line.startswith("STATE:")],
        score=next(line for line in lines if line.startswith("SCORE:")),
    )


@pytest.fixture(scope="module", params=LOGS)
def log(request: pytest.FixtureRequest) -> ReferenceLog:
    return read_log(request.param)


def test_every_hand_is_logged(log: ReferenceLog) -> None:
    """The log has one STATE line per hand, numbered 0..hands-1."""
    ids = [parse_log_state(line, log.game).hand_id for line in log.states]
    assert ids == list(range(log.hands))


def test_state_lines_reprint_byte_for_byte(log: ReferenceLog) -> None:
    """parse_log_state then LogState.text() gives back every line unchanged."""
    for line in log.states:
        assert parse_log_state(line, log.game).text() == line


def test_replay_gives_logged_values_and_cards(log: ReferenceLog) -> None:
    """Replaying each hand legally with the seed's deal reproduces the logged line."""
    source = DealSource(log.seed)
    for line in log.states:
        logged = parse_log_state(line, log.game)
        state = logged.to_state(log.game)
        assert state.finished
        deal = source.deal(log.game)
        assert logged.hole == deal.hole, line
        assert logged.board == deal.board[: state.round + 1], line
        values = state.values(deal.hole, deal.board_cards)
        assert values == pytest.approx(logged.values, abs=1e-6), line
        assert sum(values) == pytest.approx(0.0, abs=1e-9)
        rebuilt = log_state_for(state, deal, values, logged.names)
        assert rebuilt.text() == line


def test_score_line_is_the_seat_sum(log: ReferenceLog) -> None:
    """Summing values per seat ((position + hand) mod N) reprints the SCORE line."""
    n = log.game.num_players
    score = parse_score(log.score)
    assert score.text() == log.score
    totals = [0.0] * n
    for line in log.states:
        logged: LogState = parse_log_state(line, log.game)
        for position, value in enumerate(logged.values):
            seat = (position + logged.hand_id) % n
            assert logged.names[position] == score.names[seat], line
            totals[seat] += value
    assert Score(tuple(totals), score.names).text() == log.score


def test_header_reprints(log: ReferenceLog) -> None:
    """log_header rebuilds the four '#' lines from the header's values."""
    limits = [int(line.split(" ")[1]) for line in log.header[1:4]]
    assert log_header(log.name, log.game_arg, log.hands, log.seed, *limits) == log.header
