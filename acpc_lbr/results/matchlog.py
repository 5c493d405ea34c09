"""The match log, ``MATCH.log``, read back: its hands, its seats, its checks.

The dealer writes the ``.log`` (the ACPC reference's format); this module reads
it for ``acpc-lbr results`` within stated bounds (:data:`LOG_LINE_LIMIT`) and
refuses a file that does not say what was played: a malformed or missing hand,
a hand repeated with another record, a ``SCORE`` that is not the sum of the
hands, values that are not what the betting and the cards give
(:func:`checked_state`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from acpc_lbr.runtime.bounded import bounded_lines
from acpc_lbr.results.outcomes import log_values
from protocol.errors import ProtocolError
from protocol.gamedef import GameDef
from protocol.rules import State
from protocol.wire import LogState, format_chips, parse_log_state, parse_score


@dataclass
class LogData:
    """What a ``.log`` holds: its hands, the seat names and error lines."""

    hands: list[LogState]
    seat_names: tuple[str, ...]
    errors: list[str] = field(default_factory=list)


#: The longest line a ``.log`` may hold. The dealer writes STATE lines of a few KB at most and
#: comment lines that quote a bot's line (at most ``--max_line``, 1 MiB, escaped: up to 4 MiB);
#: a longer line is not of a dealer's log, and is refused once this much of it is read.
LOG_LINE_LIMIT = 8 << 20


def read_match_log(path: Path, game: GameDef) -> LogData:
    """Read the ``STATE`` lines of a ``.log`` (a resumed log's repeated hands count once).

    A torn last line (no line end: the writer was stopped mid-line) is ignored,
    as in a query log.

    Raises:
        ValueError: a malformed line, a line longer than :data:`LOG_LINE_LIMIT`,
            a hand number missing between 0 and the
            last one, a hand repeated with another record, or a ``SCORE`` that
            is not the sum of the hands before it: the file does not say what
            was played.
    """
    log = _LogReader(game)
    with open(path, encoding="ascii", errors="replace") as file:
        for number, line in enumerate(bounded_lines(file, LOG_LINE_LIMIT, path), 1):
            if not line.endswith("\n"):
                break
            try:
                log.line(line.rstrip("\r\n"))
            except (ProtocolError, ValueError) as error:
                raise ValueError(f"{path}:{number}: {error}") from None
    ordered = [log.hands[k] for k in sorted(log.hands)]
    missing = next((k for k, hand in enumerate(ordered) if hand.hand_id != k), None)
    if missing is not None:
        raise ValueError(f"{path}: hand {missing} is missing (the log has {len(ordered)} hands up to hand "
                         f"{ordered[-1].hand_id}): the file does not hold the whole match")
    seat_names = log.seat_names
    if not seat_names and ordered:
        seat_names = ordered[0].names  # hand 0: position p is seat p
    return LogData(ordered, seat_names, log.errors)


@dataclass
class _LogReader:
    """The lines of one ``.log`` so far: its hands, every player's total, and the checks between them."""

    game: GameDef
    hands: dict[int, LogState] = field(default_factory=dict)
    totals: dict[str, float] = field(default_factory=dict)
    seat_names: tuple[str, ...] = ()
    errors: list[str] = field(default_factory=list)

    def line(self, text: str) -> None:
        """Take one line (without its line end)."""
        if text.startswith("STATE:"):
            self.hand(parse_log_state(text, self.game))
        elif text.startswith("SCORE:"):
            score = parse_score(text)
            tolerance = 1e-6 * (len(self.hands) + 1)
            if any(abs(total - self.totals.get(name, 0.0)) > tolerance
                   for total, name in zip(score.totals, score.names, strict=True)):
                summed = "|".join(format_chips(self.totals.get(name, 0.0)) for name in score.names)
                raise ValueError(f"the SCORE is not the sum of the {len(self.hands)} hands before it "
                                 f"({summed})")
            self.seat_names = score.names
        elif text.startswith("# ERROR"):
            self.errors.append(text[2:])

    def hand(self, state: LogState) -> None:
        """Take one ``STATE`` record (a repeat of an earlier hand must be the same record)."""
        first = self.hands.setdefault(state.hand_id, state)
        if first is not state:
            if first.text() != state.text():
                raise ValueError(f"hand {state.hand_id} appears twice with different records")
            return
        for name, value in zip(state.names, state.values, strict=True):
            self.totals[name] = self.totals.get(name, 0.0) + value


def read_log_header(path: Path) -> tuple[str, str, int, int]:
    """(match name, game argument, hands, seed) from a ``.log``'s first header line.

    Raises:
        ValueError: no ``# name/game/hands/seed`` line.
    """
    with open(path, encoding="ascii", errors="replace") as file:
        for line in bounded_lines(file, LOG_LINE_LIMIT, path):
            fields = line.split()
            if len(fields) == 6 and fields[:2] == ["#", "name/game/hands/seed"]:
                return fields[2], fields[3], int(fields[4]), int(fields[5])
    raise ValueError(f"{path}: no '# name/game/hands/seed' header line")


def checked_state(game: GameDef, hand: LogState) -> State:
    """The finished hand of a ``STATE`` record, replayed by the rules.

    Raises:
        ValueError: the betting is not a finished hand of ``game``, or the
            record's values are not what its betting and cards give.
    """
    try:
        state = hand.to_state(game)
        expected = log_values(state.values(hand.hole, [card for cards in hand.board for card in cards]))
    except ProtocolError as error:
        raise ValueError(f"hand {hand.hand_id}: {error}") from None
    if any(abs(want - got) > 1e-6 for want, got in zip(expected, hand.values, strict=True)):
        raise ValueError(f"hand {hand.hand_id}: the values {'|'.join(map(format_chips, hand.values))} are not "
                         f"what its betting and cards give ({'|'.join(map(format_chips, expected))})")
    return state
