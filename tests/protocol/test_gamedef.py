"""Game definition files: the bundled games and the reference parser's quirks.

Source of truth for the quirks: acpc.md §8 (the reference's ``readGame``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol.errors import GameDefError
from protocol.gamedef import (
    INT32_MAX,
    UINT8_MAX,
    GameDef,
    bundled_game_text,
    bundled_games,
    format_gamedef,
    load_game,
    parse_gamedef,
)
from tests.reference import REFERENCE_DIR

REFERENCE = REFERENCE_DIR

MINIMAL_NOLIMIT = """\
GAMEDEF
nolimit
numPlayers = 2
numRounds = 4
stack = 20000 20000
blind = 100 50
firstPlayer = 2 1 1 1
numSuits = 4
numRanks = 13
numHoleCards = 2
numBoardCards = 0 3 1 1
END GAMEDEF
"""


def with_line(text: str, old: str, new: str) -> str:
    """``text`` with the line ``old`` replaced by ``new`` (which may be several lines)."""
    assert old in text.splitlines()
    return text.replace(old + "\n", new + "\n" if new else "")


@pytest.mark.parametrize("name", bundled_games())
def test_bundled_game_parses_and_round_trips(name: str) -> None:
    """Every bundled game loads, and parse(format(g)) == g."""
    game = load_game(name)
    assert parse_gamedef(format_gamedef(game)) == game
    assert parse_gamedef(bundled_game_text(name)) == game


def test_bundled_games_equal_reference_files() -> None:
    """The bundled games the reference run used are the same games as its files."""
    folder = REFERENCE / "games"
    if not folder.is_dir():
        pytest.fail("reference games not found")
    files = sorted(folder.glob("*.game"))
    assert files
    for path in files:
        name = path.name.removesuffix(".game")
        if name in bundled_games():
            assert load_game(name) == parse_gamedef(path.read_text()), name


def test_reverse_blinds_values() -> None:
    """The heads-up no-limit file reads as acpc.md §8 states (0-based first players)."""
    game = parse_gamedef(MINIMAL_NOLIMIT)
    assert game == load_game("holdem.nolimit.2p.reverse_blinds")
    assert game.first_player == (1, 0, 0, 0)
    assert game.blind == (100, 50) and game.big_blind == 100


def test_keys_are_case_insensitive_prefixes() -> None:
    """'NUMPLAYERS = 2' and 'numPlayers2' both set numPlayers (prefix match)."""
    upper = with_line(MINIMAL_NOLIMIT, "numPlayers = 2", "NUMPLAYERS = 2")
    assert parse_gamedef(upper).num_players == 2
    glued = with_line(MINIMAL_NOLIMIT, "numPlayers = 2", "numPlayers2")
    assert parse_gamedef(glued).num_players == 2


def test_prefix_with_trailing_word_is_read_as_that_key() -> None:
    """'numPlayersXYZ 2' is a numPlayers line whose value is not a number: an error on it."""
    text = with_line(MINIMAL_NOLIMIT, "numPlayers = 2", "numPlayersXYZ 2")
    with pytest.raises(GameDefError) as caught:
        parse_gamedef(text)
    assert caught.value.line_number == 3


def test_comments_unknown_lines_and_keys_before_gamedef() -> None:
    """Comments and unknown lines are skipped; keys before GAMEDEF count."""
    lines = MINIMAL_NOLIMIT.splitlines()
    moved = [lines[2], "# a comment", "", "hello world", *lines[:2], *lines[3:]]
    assert parse_gamedef("\n".join(moved) + "\n") == parse_gamedef(MINIMAL_NOLIMIT)


def test_values_separated_by_blanks_and_equals() -> None:
    """'stack=20000=20000', 'stack 20000 20000' and tabs all read the same."""
    for variant in ("stack=20000=20000", "stack 20000\t20000", "stack == 20000 = 20000"):
        text = with_line(MINIMAL_NOLIMIT, "stack = 20000 20000", variant)
        assert parse_gamedef(text).stack == (20000, 20000), variant


def test_reading_stops_at_end_gamedef() -> None:
    """Lines after END GAMEDEF are not read, even bad ones."""
    text = MINIMAL_NOLIMIT + "numPlayers = banana\nblind = 1 1\n"
    assert parse_gamedef(text) == parse_gamedef(MINIMAL_NOLIMIT)


def test_defaults() -> None:
    """No stack: 2**31-1; no firstPlayer: 1 (position 0); no maxRaises: 255."""
    text = with_line(MINIMAL_NOLIMIT, "stack = 20000 20000", "")
    text = with_line(text, "firstPlayer = 2 1 1 1", "")
    game = parse_gamedef(text)
    assert game.stack == (INT32_MAX, INT32_MAX) == (2**31 - 1,) * 2
    assert game.first_player == (0, 0, 0, 0)
    assert game.max_raises == (UINT8_MAX,) * 4 == (255,) * 4


def test_betting_defaults_to_limit() -> None:
    """Without a betting line the game is limit (and then needs raiseSize)."""
    text = with_line(MINIMAL_NOLIMIT, "nolimit", "raiseSize = 10 10 20 20")
    assert parse_gamedef(text).is_limit
    with pytest.raises(GameDefError, match="raiseSize"):
        parse_gamedef(with_line(MINIMAL_NOLIMIT, "nolimit", ""))


@pytest.mark.parametrize(
    ("old", "new", "line_number"),
    [
        ("numPlayers = 2", "numPlayers = x", 3),
        ("blind = 100 50", "blind = 100 fifty", 6),
        ("numPlayers = 2", "numPlayers = 11", 3),
        ("blind = 100 50", "blind = 100 50000", 6),
        ("firstPlayer = 2 1 1 1", "firstPlayer = 3 1 1 1", 7),
        ("firstPlayer = 2 1 1 1", "firstPlayer = 0 1 1 1", 7),
        ("numBoardCards = 0 3 1 1", "numBoardCards = 0 3 1", 11),
        ("numRounds = 4", "numRounds = 5", 4),
    ],
)
def test_errors_name_the_line(old: str, new: str, line_number: int) -> None:
    """A bad value is a GameDefError that carries the line number."""
    with pytest.raises(GameDefError) as caught:
        parse_gamedef(with_line(MINIMAL_NOLIMIT, old, new))
    assert caught.value.line_number == line_number
    assert f"line {line_number}" in str(caught.value)


def test_more_than_four_raise_sizes_is_an_error() -> None:
    """raiseSize has 4 slots in the reference; a fifth value is refused."""
    text = with_line(MINIMAL_NOLIMIT, "nolimit", "raiseSize = 10 10 20 20 40")
    with pytest.raises(GameDefError) as caught:
        parse_gamedef(text)
    assert caught.value.line_number == 2


@pytest.mark.parametrize(
    "key_line",
    [
        "numPlayers = 2",
        "numRounds = 4",
        "blind = 100 50",
        "numSuits = 4",
        "numRanks = 13",
        "numHoleCards = 2",
        "numBoardCards = 0 3 1 1",
    ],
)
def test_missing_required_key(key_line: str) -> None:
    """Each required key, when missing, is named in the error."""
    key = key_line.split(" ")[0]
    with pytest.raises(GameDefError, match=key):
        parse_gamedef(with_line(MINIMAL_NOLIMIT, key_line, ""))


def test_too_many_cards_for_the_deck() -> None:
    """Hole plus board cards that do not fit the deck are refused."""
    text = with_line(MINIMAL_NOLIMIT, "numRanks = 13", "numRanks = 2")
    with pytest.raises(GameDefError, match="too many cards"):
        parse_gamedef(text)


def test_load_game_error_names_the_file(tmp_path: Path) -> None:
    """A bad file given by path fails with its name in the message."""
    path = tmp_path / "bad.game"
    path.write_text(with_line(MINIMAL_NOLIMIT, "numPlayers = 2", "numPlayers = x"))
    with pytest.raises(GameDefError, match="bad.game") as caught:
        load_game(path)
    assert caught.value.line_number == 3
    with pytest.raises(GameDefError, match="bundled"):
        load_game("no-such-game")


def test_gamedef_is_frozen() -> None:
    """A GameDef cannot be changed after parsing."""
    game: GameDef = load_game("kuhn")
    with pytest.raises(AttributeError):
        game.num_players = 3  # type: ignore[misc]


def test_an_unknown_game_error_lists_the_games_and_their_aliases() -> None:
    """The error for an unknown game names the bundled games and the short aliases users type."""
    for name in ("nolimt", "nolimt.game"):
        with pytest.raises(GameDefError) as error:
            load_game(name)
        for word in ("holdem.nolimit.2p.reverse_blinds", "nolimit =", "limit =", "leduc ="):
            assert word in str(error.value), (name, word)
    with pytest.raises(GameDefError, match="aliases: nolimit"):
        bundled_game_text("nolimt")
