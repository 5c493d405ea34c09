"""A duplicate match's logs read into per-deal unit values, raw and all-in-expectation.

The statistical unit of a tournament is one deal played in every seating (2
heads-up, 6 with three players): an entrant's unit value for deal ``h`` is
the mean of its chips in hand ``h`` over the seatings. Each entrant of a
match gets the :class:`Moments` of its unit values over the match's deals;
matches combine exactly (Chan's formula), in canonical order.

All-in expectation (no-limit games): when the betting ends before the last
round and the hand goes to a showdown, every remaining board card was dealt
with no decision left. Such a hand is also scored by its expected value over
those remaining cards, enumerated exactly (:func:`allin_values`), which
removes the luck of the cards that came without changing the expectation.
The headline uses that score; the raw score is kept beside it.

A log is checked as it is read: hand numbers in order, the seating's names,
zero-sum values, the count of hands, and the ``SCORE`` line equal to the sum
of the hands. Anything else is a :class:`LogMismatch`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import NotRequired, TypedDict

import numpy as np
import numpy.typing as npt

from acpc_lbr.stats import Z95, skew_corrected_interval
from protocol.arrays import FloatArray
from protocol.errors import ProtocolError
from protocol.gamedef import GameDef
from protocol.ranking import rank_hand
from protocol.rules import showdown_values
from protocol.wire import parse_log_state

#: Longest line a tournament reads from a log (a hold'em STATE line is well under 1 KB).
MAX_LINE = 65536


class LogMismatch(ValueError):
    """A log does not say what the match should have: one line saying what and where."""


class MomentsDict(TypedDict):
    n: int
    mean: float
    m2: float
    #: Σ(x − mean)³ and Σ(x − mean)⁴, for the printed interval's skewness correction (records written
    #: before them have neither: their units are taken as unskewed).
    m3: NotRequired[float]
    m4: NotRequired[float]


@dataclass(frozen=True)
class Moments:
    """Count, mean and sums of squared, cubed and fourth-power deviations of a sample; exact to merge in a
    fixed order. ``m3`` and ``m4`` are NaN when unknown (a record written before them)."""

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0
    m3: float = 0.0
    m4: float = 0.0

    @staticmethod
    def of(values: FloatArray) -> Moments:
        if len(values) == 0:
            return Moments()
        mean = float(np.mean(values))
        centred = values - mean
        square = centred * centred
        return Moments(len(values), mean, float(np.sum(square)), float(np.sum(square * centred)),
                       float(np.sum(square * square)))

    def merge(self, other: Moments) -> Moments:
        """The moments of both samples together (Chan et al.; the third and fourth by Pébay 2008)."""
        if other.n == 0:
            return self
        if self.n == 0:
            return other
        a, b = self.n, other.n
        n = a + b
        delta = other.mean - self.mean
        mean = self.mean + delta * b / n
        m2 = self.m2 + other.m2 + delta * delta * a * b / n
        m3 = (self.m3 + other.m3 + delta**3 * a * b * (a - b) / (n * n)
              + 3.0 * delta * (a * other.m2 - b * self.m2) / n)
        m4 = (self.m4 + other.m4 + delta**4 * a * b * (a * a - a * b + b * b) / n**3
              + 6.0 * delta * delta * (a * a * other.m2 + b * b * self.m2) / (n * n)
              + 4.0 * delta * (a * other.m3 - b * self.m3) / n)
        return Moments(n, mean, m2, m3, m4)

    @property
    def half_width_95(self) -> float:
        """1.96 × the mean's standard error (the interval's scale, as a results document's
        ``half_width_95``); NaN below two units."""
        if self.n < 2:
            return math.nan
        return Z95 * math.sqrt(max(self.m2, 0.0) / (self.n - 1) / self.n)

    def interval_95(self) -> tuple[float, float]:
        """The printed 95% interval of the mean, as a results document's ``low_95``, ``high_95``:
        :func:`acpc_lbr.stats.skew_corrected_interval` of the sample's s, skewness and kurtosis (the units
        taken as unskewed when ``m3``, ``m4`` are unknown: the t interval); (NaN, NaN) below two units."""
        if self.n < 2:
            return math.nan, math.nan
        spread = max(self.m2, 0.0) / self.n
        skew, kurtosis = 0.0, 3.0
        if spread > 0.0 and math.isfinite(self.m3) and math.isfinite(self.m4):
            skew, kurtosis = self.m3 / self.n / spread**1.5, self.m4 / self.n / (spread * spread)
        low, high = skew_corrected_interval(self.mean, math.sqrt(spread * self.n / (self.n - 1)), float(self.n),
                                            skew, kurtosis)
        return float(low), float(high)

    def to_dict(self) -> MomentsDict:
        data: MomentsDict = {"n": self.n, "mean": self.mean, "m2": self.m2}
        if math.isfinite(self.m3) and math.isfinite(self.m4):
            data["m3"], data["m4"] = self.m3, self.m4
        return data

    @staticmethod
    def from_dict(data: MomentsDict) -> Moments:
        return Moments(int(data["n"]), float(data["mean"]), float(data["m2"]), float(data.get("m3", math.nan)),
                       float(data.get("m4", math.nan)))


@dataclass(frozen=True)
class SeatingValues:
    """One seating's chips per hand, by entrant (columns in the pairing's name order)."""

    raw: FloatArray
    allin: FloatArray
    allin_hands: int


def _holdem_like(game: GameDef) -> bool:
    return (game.num_ranks, game.num_suits, game.num_hole_cards, game.total_board_cards) == (13, 4, 2, 5)


def _boards(deck: Sequence[int], count: int) -> npt.NDArray[np.int64]:
    flat = np.fromiter(itertools.chain.from_iterable(itertools.combinations(deck, count)), dtype=np.int64)
    return flat.reshape(-1, count)


#: All-in values kept: the deals of match k are those of every pairing's match k (common
#: seeds), played one after another, so a hand's value is asked again and again; bounded.
ALLIN_CACHE = 16384


@lru_cache(maxsize=ALLIN_CACHE)
def allin_values(game: GameDef, spent: tuple[int, ...], folded: tuple[bool, ...],
                 hole: tuple[tuple[int, ...], ...], board: tuple[int, ...]) -> tuple[float, ...]:
    """Each position's expected chips over every completion of ``board`` (exact enumeration).

    Args:
        spent, folded: each position's chips in the pot and whether it folded.
        hole: every position's hole cards.
        board: the board cards dealt when the betting ended.
    """
    n = len(spent)
    missing = game.total_board_cards - len(board)
    used = set(board).union(*hole)
    deck = [c for c in game.deck if c not in used]
    live = [p for p in range(n) if not folded[p]]
    if missing == 0:
        return showdown_values(spent, [rank_hand([*hole[p], *board]) if p in live else -1 for p in range(n)])
    if _holdem_like(game) and len(live) == 2:
        return _two_way_holdem(spent, live, hole, board, n)
    boards = _boards(deck, missing)
    ranks = np.full((len(boards), n), -1, dtype=np.int64)
    for p in live:
        if _holdem_like(game):
            from acpc_lbr.evaluator import evaluate_batch  # lazy: numba kernels, hold'em only

            fixed = np.broadcast_to(np.array([*hole[p], *board], dtype=np.int64), (len(boards), 7 - missing))
            ranks[:, p] = evaluate_batch(np.hstack([fixed, boards]))
        else:
            ranks[:, p] = [rank_hand([*hole[p], *board, *extra]) for extra in boards.tolist()]
    return tuple(float(v) for v in _mean_showdown(np.array(spent, dtype=np.float64), ranks))


def _mean_showdown(spent: FloatArray, ranks: npt.NDArray[np.int64]) -> FloatArray:
    """Mean over the rows of :func:`protocol.rules.showdown_values` (side pots and ties), vectorised."""
    boards, n = ranks.shape
    won = np.zeros((boards, n))
    previous = 0.0
    for level in sorted(set(spent.tolist())):
        contributors = spent >= level
        size = (level - previous) * int(contributors.sum())
        previous = level
        eligible = np.where(contributors[None, :] & (ranks >= 0), ranks, -1)
        best = eligible.max(axis=1, keepdims=True)
        winners = (eligible == best) & (best >= 0)
        counts = winners.sum(axis=1, keepdims=True)
        won += np.where(winners, size / np.maximum(counts, 1), 0.0)
    result: FloatArray = won.mean(axis=0) - spent
    return result


def _two_way_holdem(spent: tuple[int, ...], live: list[int], hole: tuple[tuple[int, ...], ...],
                    board: tuple[int, ...], n: int) -> tuple[float, ...]:
    """Two live hold'em hands: win/tie/loss shares from the exact equity engine.

    A preflop all-in with no other hole cards dealt reads the shipped table of
    exact preflop counts (a lookup); any other enumerates the board (at most
    990 flop completions, or 1.7 million preflop boards beside dead cards).
    """
    a, b = live
    dead = [c for p in range(n) if p not in live for c in hole[p]]
    if not board and not dead:
        from acpc_lbr.equity import hand_index  # lazy: numba kernels, needed only for all-in hands
        from acpc_lbr.preflop import NUM_BOARDS, preflop_counts_vector

        wins, ties = preflop_counts_vector(list(hole[a]))
        villain = hand_index(*hole[b])
        win, tie = int(wins[villain]) / NUM_BOARDS, int(ties[villain]) / NUM_BOARDS
        loss = 1.0 - win - tie
    else:
        from acpc_lbr.equity import equity  # lazy: numba kernels, needed only for all-in hands

        win, tie, loss = equity(list(hole[a]), list(hole[b]), list(board), dead)
    total = np.zeros(n)
    for share, ranks in ((win, (2, 1)), (tie, (1, 1)), (loss, (1, 2))):
        if share:
            order = [-1] * n
            order[a], order[b] = ranks
            total += share * np.array(showdown_values(spent, order))
    return tuple(float(v) for v in total)


def read_seating(path: Path, game: GameDef, seat_names: Sequence[str], order: Sequence[str],
                 hands: int) -> SeatingValues:
    """Read one seating's ``.log``: chips per hand for each of ``order``'s names.

    Raises:
        LogMismatch: the log is not that of a finished match of these players.
    """
    reader = _LogReader(game, seat_names, order, hands)
    try:
        handle = open(path, encoding="utf-8", errors="strict")
    except OSError as error:
        raise LogMismatch(f"cannot read {path}: {error.strerror or error}") from None
    with handle:
        for number, line in enumerate(iter(lambda: handle.readline(MAX_LINE + 1), ""), start=1):
            if len(line) > MAX_LINE:
                raise LogMismatch(f"{path}:{number}: a line longer than {MAX_LINE} bytes")
            reader.read(line, f"{path}:{number}")
    return reader.values(path)


class _LogReader:
    """The lines of one seating's ``.log``, read in order (the body of :func:`read_seating`).

    A tournament reads every hand it plays once, beside the next seatings: rows
    are kept as lists and made one array at the end, and a ``names`` field once
    checked is not checked again (its columns are remembered).
    """

    def __init__(self, game: GameDef, seat_names: Sequence[str], order: Sequence[str], hands: int) -> None:
        self.game = game
        self.seat_names = seat_names
        self.who = ", ".join(seat_names)
        self.column = {name: i for i, name in enumerate(order)}
        self.hands = hands
        self.rows: list[list[float]] = []
        self.allin_rows: dict[int, FloatArray] = {}
        self.score: list[float] | None = None
        self.columns_of: dict[str, tuple[list[str], list[int]]] = {}
        # The log shows the rounds dealt after an all-in as empty: "r20000c///".
        self.may_allin = not game.is_limit and game.num_rounds > 1

    def read(self, line: str, where: str) -> None:
        if line.startswith("#") or not line.strip():
            return
        if line.startswith("SCORE:"):
            self.score = [float(v) for v in line.split(":")[1].split("|")]
            return
        fields = line.rstrip("\n").split(":")
        seen = len(self.rows)
        names, columns = self._columns(fields, where)
        values = _state_values(fields, where, seen, self.hands, len(names), self.who)
        row = [0.0] * len(self.column)
        for column, value in zip(columns, values):
            row[column] = value
        self.rows.append(row)
        if self.may_allin and fields[2].endswith("/"):
            expected = _allin_row(line, self.game, names, self.column, where)
            if expected is not None:
                self.allin_rows[seen] = expected

    def _columns(self, fields: list[str], where: str) -> tuple[list[str], list[int]]:
        """The names of a STATE line and their columns (checked once per distinct field)."""
        if len(fields) != 6 or fields[0] != "STATE":
            raise LogMismatch(f"{where}: not a STATE line")
        known = self.columns_of.get(fields[5])
        if known is None:
            names = fields[5].split("|")
            if set(names) != set(self.seat_names) or len(names) != len(self.seat_names):
                raise LogMismatch(f"{where}: not a zero-sum hand of {self.who}")
            known = self.columns_of[fields[5]] = (names, [self.column[name] for name in names])
        return known

    def values(self, path: Path) -> SeatingValues:
        if len(self.rows) != self.hands:
            raise LogMismatch(f"{path}: {len(self.rows)} hands where the match has {self.hands}")
        if self.score is None:
            raise LogMismatch(f"{path}: no SCORE line (the match did not end)")
        raw = np.array(self.rows, dtype=np.float64).reshape(self.hands, len(self.column))
        allin = raw.copy()
        for hand, row in self.allin_rows.items():
            allin[hand] = row
        totals = raw.sum(axis=0)
        by_seat = [totals[self.column[name]] for name in self.seat_names]
        if any(abs(a - b) > 1e-6 * max(1.0, abs(b)) for a, b in zip(self.score, by_seat)):
            raise LogMismatch(f"{path}: the SCORE line does not equal the sum of its hands")
        return SeatingValues(raw, allin, len(self.allin_rows))


def _state_values(fields: list[str], where: str, seen: int, hands: int, players: int,
                  who: str) -> list[float]:
    """The chip values of a ``.log`` STATE line's fields (whose names are checked), checked.

    Raises:
        LogMismatch: not the STATE line of hand ``seen`` of ``hands``, or not a zero-sum hand.
    """
    if fields[1] != str(seen):
        raise LogMismatch(f"{where}: hand {fields[1]} where hand {seen} was due")
    if seen >= hands:
        raise LogMismatch(f"{where}: more than {hands} hands")
    try:
        values = [float(v) for v in fields[4].split("|")]
    except ValueError:
        raise LogMismatch(f"{where}: values {fields[4]!r} are not numbers") from None
    total = sum(values)
    if len(values) != players or not math.isfinite(total) or abs(total) > 1e-6:
        raise LogMismatch(f"{where}: not a zero-sum hand of {who}")
    return values


def _allin_row(line: str, game: GameDef, names: list[str], column: dict[str, int],
               where: str) -> FloatArray | None:
    """The all-in-expectation values of a hand whose betting ended early, or None (a fold)."""
    try:
        hand = parse_log_state(line, game)
        state = hand.to_state(game)
    except ProtocolError as error:
        raise LogMismatch(f"{where}: {error}") from None
    if state.num_folded + 1 >= game.num_players:
        return None
    last = max(i for i, actions in enumerate(state.actions) if actions)
    # hand.board holds each round's cards; those of the rounds up to the last action were seen.
    seen = tuple(card for round_cards in hand.board[: last + 1] for card in round_cards)
    values = allin_values(game, tuple(state.spent), tuple(state.folded),
                          tuple(tuple(h) for h in hand.hole), seen)
    row = np.zeros(len(column))
    for name, value in zip(names, values):
        row[column[name]] = value
    return row


def unit_values(seatings: Sequence[SeatingValues]) -> tuple[FloatArray, FloatArray]:
    """Each deal's unit value per entrant: the mean over the seatings (raw, all-in)."""
    raw = np.mean([s.raw for s in seatings], axis=0)
    allin = np.mean([s.allin for s in seatings], axis=0)
    return raw, allin
