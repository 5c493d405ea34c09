"""Local Best Response: the decision of lbr.md (Lisy & Bowling, arXiv 1612.07547, Fig. 1).

LBR is heads-up only. At its decision point ``s`` with hole cards ``h_i`` it
knows its range ``pi`` over the opponent's hands, the equity vector ``e``
(``e(h)`` = LBR's chance of beating ``h`` when the board is completed, ties
count 1/2) and, for each candidate raise, the opponent's per-hand probability
of folding to it. With ``spent_i``/``spent_o`` the chips LBR/the opponent have
committed, ``pot = spent_i + spent_o`` and ``asked = spent_o - spent_i``:

* ``wp = sum(pi * e)``; ``U(call) = wp * pot - (1 - wp) * asked``;
* for a raise where LBR adds ``a`` chips beyond the call:
  ``fp = sum(pi * fold)``, ``pi' ~ pi * (1 - fold)``, ``wp' = sum(pi' * e)``,
  ``U(raise) = fp * pot + (1 - fp) * (wp' * (pot + a) - (1 - wp') * (asked + a))``
  (``= pot`` when ``fp = 1``);
* play the argmax when it is > 0, ties to the smaller commitment (call, then
  raises ascending); otherwise fold -- or check when ``asked = 0``. Ties and
  "> 0" are judged with a tolerance of ``TIE_TOLERANCE * (pot + asked + a_max)``
  (about 1e-5 chips in hold'em) so that floating-point noise in ``wp`` never
  breaks a tie the formulas make exact.

The module also holds the user's options (:class:`BettingOptions`,
:class:`ActiveRounds`), the candidate raise sizes (:func:`candidate_raises`),
the equity vector of small games by enumeration (:func:`equity_vector_small`)
and :class:`LbrPlayer`, which keeps LBR's range over a hand and decides.

>>> from protocol.gamedef import load_game
>>> from protocol.rules import State
>>> state = State(load_game("nolimit"))            # small blind 50 to act
>>> [a.text() for a in candidate_raises(state, BettingOptions.parse("fcpa"))]
['r300', 'r20000']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import combinations

import numpy as np
import numpy.typing as npt

from acpc_lbr.ranges import RangeTracker, hand_table
from protocol.arrays import FloatArray
from protocol.gamedef import MAX_ROUNDS, GameDef
from protocol.ranking import rank_hand
from protocol.rules import Action, ActionType, State


#: Equity function: (LBR's hole cards, board cards so far) -> e, shape (num_hands,).
EquityFunction = Callable[[Sequence[int], Sequence[int]], FloatArray]

__all__ = [
    "ActiveRounds",
    "BettingOptions",
    "Decision",
    "EquityFunction",
    "LbrPlayer",
    "candidate_raises",
    "decide",
    "equity_function",
    "equity_vector_small",
]


# -- options -----------------------------------------------------------------


def _fifty_six_bets() -> tuple[float, ...]:
    return tuple(0.05 * 1.15**k for k in range(55))


@dataclass(frozen=True)
class BettingOptions:
    """Which raises LBR considers (lbr.md, "Betting options").

    Attributes:
        fractions: pot fractions ``f``; ``f`` means adding ``a = f * (pot + asked)``
            chips beyond the call (``f = 1`` is a pot-size raise).
        min_raise: also consider the minimum legal raise.
        all_in: also consider all-in.
        name: the text the options were parsed from.
    """

    fractions: tuple[float, ...] = ()
    min_raise: bool = False
    all_in: bool = False
    name: str = "fc"

    @property
    def raises(self) -> bool:
        """True when any raise is considered (not ``fc``)."""
        return bool(self.fractions) or self.min_raise or self.all_in

    @staticmethod
    def parse(text: str) -> BettingOptions:
        """Read ``fc``, ``fcpa``, ``56bets`` or a list like ``0.5,1,2,min,allin``.

        In a list, ``allin`` may also be written ``all-in`` or ``a``, and ``p``
        stands for the pot fraction 1. Case and blanks do not matter.

        Raises:
            ValueError: an unknown word or a pot fraction that is not a
                positive finite number.

        >>> BettingOptions.parse("fcpa")
        BettingOptions(fractions=(1.0,), min_raise=False, all_in=True, name='fcpa')
        >>> len(BettingOptions.parse("56bets").fractions)
        55
        >>> BettingOptions.parse(" 0.5, 1 ,MIN,allin ").fractions
        (0.5, 1.0)
        """
        name = text.strip().lower()
        if name == "fc":
            return BettingOptions((), False, False, "fc")
        if name == "fcpa":
            return BettingOptions((1.0,), False, True, "fcpa")
        if name == "56bets":
            return BettingOptions(_fifty_six_bets(), False, True, "56bets")
        fractions: list[float] = []
        min_raise = all_in = False
        for raw in name.split(","):
            word = raw.strip()
            if word == "min":
                min_raise = True
            elif word in ("allin", "all-in", "a"):
                all_in = True
            elif word == "p":
                fractions.append(1.0)
            else:
                try:
                    fraction = float(word)
                except ValueError:
                    raise ValueError(
                        f"betting options: {word!r} is neither a pot fraction nor 'min'/'allin' "
                        "(use fc, fcpa, 56bets or a list such as 0.5,1,2,min,allin)"
                    ) from None
                if not math.isfinite(fraction) or fraction <= 0:
                    raise ValueError(f"betting options: pot fraction {word!r} must be > 0")
                fractions.append(fraction)
        return BettingOptions(tuple(fractions), min_raise, all_in, text.strip())


@dataclass(frozen=True)
class ActiveRounds:
    """The rounds (0-based, inclusive) in which LBR may raise or fold.

    Outside them LBR only checks/calls and still keeps its range up to date.

    Attributes:
        first: first active round, 0-based.
        last: last active round, 0-based.
    """

    first: int = 0
    last: int = MAX_ROUNDS - 1

    @staticmethod
    def parse(text: str, game: GameDef | None = None) -> ActiveRounds:
        """Read 1-based rounds: ``"3-4"``, ``"1-4"``, ``"4"`` or ``"all"``.

        Args:
            text: the rounds as typed.
            game: the game LBR will play; its rounds bound the range (a round
                the game does not have is an error, since LBR would never act
                in it) and ``"all"`` means exactly its rounds. Without a game
                the bound is :data:`protocol.gamedef.MAX_ROUNDS`.

        Raises:
            ValueError: not a round range within the game's rounds.

        >>> ActiveRounds.parse("3-4")
        ActiveRounds(first=2, last=3)
        >>> ActiveRounds.parse("3-4").is_active(1), ActiveRounds.parse("3-4").is_active(2)
        (False, True)
        >>> from protocol.gamedef import load_game
        >>> ActiveRounds.parse("all", load_game("leduc")).text()
        '1-2'
        >>> ActiveRounds.parse("3-4", load_game("leduc"))
        Traceback (most recent call last):
        ...
        ValueError: active rounds: '3-4' is beyond the last round (the game has rounds 1-2)
        """
        rounds = game.num_rounds if game is not None else MAX_ROUNDS
        word = text.strip().lower()
        if word == "all":
            return ActiveRounds(0, rounds - 1)
        low_text, sep, high_text = word.partition("-")
        try:
            low = int(low_text)
            high = int(high_text) if sep else low
        except ValueError:
            raise ValueError(f"active rounds: {text!r} is not like '3-4' or '4'") from None
        if not 1 <= low <= high:
            raise ValueError(f"active rounds: {text!r} must satisfy 1 <= first <= last")
        if high > rounds:
            what = "the game has" if game is not None else "LBR supports"
            raise ValueError(f"active rounds: {text!r} is beyond the last round ({what} rounds 1-{rounds})")
        return ActiveRounds(low - 1, high - 1)

    @staticmethod
    def last_two(game: GameDef) -> ActiveRounds:
        """The default: the game's last two rounds (all of them in a game of one or two).

        Late rounds are where LBR wins most (turn and river in hold'em: 3-4;
        Lisy & Bowling's strongest setting), and a default that names rounds
        the game lacks would make LBR a calling station.

        >>> from protocol.gamedef import load_game
        >>> [ActiveRounds.last_two(load_game(g)).text() for g in ("nolimit", "leduc", "kuhn")]
        ['3-4', '1-2', '1-1']
        """
        return ActiveRounds(max(0, game.num_rounds - 2), game.num_rounds - 1)

    def is_active(self, round_: int) -> bool:
        """True when LBR plays actively in 0-based ``round_``."""
        return self.first <= round_ <= self.last

    def text(self) -> str:
        """The 1-based text form, e.g. ``'3-4'``."""
        return f"{self.first + 1}-{self.last + 1}"


# -- sizes ---------------------------------------------------------------------


def _heads_up_spent(state: State) -> tuple[int, int, int]:
    """(player to act, spent_i, spent_o) of a heads-up decision point."""
    if state.game.num_players != 2:
        raise ValueError("LBR is defined for two-player games only")
    me = state.current_player
    return me, state.spent[me], state.spent[1 - me]


def _round_half_up(value: float) -> int:
    # Python's round() rounds halves to even; chips round half up.
    return math.floor(value + 0.5)


def candidate_raises(state: State, options: BettingOptions) -> list[Action]:
    """The concrete legal raises LBR considers at ``state``, ascending, deduplicated.

    No-limit: each pot fraction ``f`` gives raise-to ``spent_o + round(f * (pot + asked))``;
    a size below the minimum legal raise becomes the minimum, one above the
    stack becomes all-in. Limit: the one fixed raise (if ``options`` has any
    raise). No raise legal: ``[]``.

    >>> from protocol.gamedef import load_game
    >>> state = State(load_game("nolimit"))
    >>> _ = state.apply(Action.raise_to(300)); _ = state.apply(Action.CALL)  # flop, pot 600
    >>> [a.text() for a in candidate_raises(state, BettingOptions.parse("0.1,0.5,1,min,allin"))]
    ['r400', 'r600', 'r900', 'r20000']
    """
    bounds = state.raise_range()
    if bounds is None or not options.raises:
        return []
    if state.game.is_limit:
        return [Action.RAISE]
    _, spent_i, spent_o = _heads_up_spent(state)
    pot = spent_i + spent_o
    asked = spent_o - spent_i
    low, high = bounds
    sizes: set[int] = set()
    for fraction in options.fractions:
        to = spent_o + _round_half_up(fraction * (pot + asked))
        sizes.add(min(max(to, low), high))
    if options.min_raise:
        sizes.add(low)
    if options.all_in:
        sizes.add(high)
    return [Action.raise_to(size) for size in sorted(sizes)]


def raise_amount(state: State, action: Action) -> int:
    """``a``: the chips LBR adds beyond the call with raise ``action`` at ``state``."""
    bounds = state.raise_range()
    if bounds is None:
        raise ValueError("no raise is legal here")
    _, _, spent_o = _heads_up_spent(state)
    to = bounds[0] if state.game.is_limit else action.size
    return to - spent_o


# -- the decision ----------------------------------------------------------------

#: Relative tolerance under which two utilities tie (times pot + asked + largest a).
TIE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Decision:
    """What LBR plays and why.

    Attributes:
        action: the action to play.
        reason: ``'best'`` (argmax > 0), ``'fold'`` (nothing positive, facing a
            bet), ``'check'`` (nothing positive, nothing to call) or
            ``'inactive'`` (outside the active rounds: check/call).
        utilities: ``(action, U)`` of each candidate in tie-break order (call,
            then raises ascending); empty when inactive.
        wp: win probability against the current range (nan when inactive).
        fold_probabilities: ``fp`` of each candidate raise.
        pot: ``spent_i + spent_o``.
        asked: ``spent_o - spent_i``.
    """

    action: Action
    reason: str
    utilities: tuple[tuple[Action, float], ...] = ()
    wp: float = math.nan
    fold_probabilities: Mapping[Action, float] = field(default_factory=dict)
    pot: int = 0
    asked: int = 0

    def utility(self, action: Action) -> float:
        """U of one candidate.

        Raises:
            KeyError: ``action`` was not a candidate.
        """
        for candidate, value in self.utilities:
            if candidate == action:
                return value
        raise KeyError(action.text())


def _vector(name: str, values: npt.ArrayLike, size: int) -> FloatArray:
    array = np.asarray(values, dtype=np.float64)
    if array.shape != (size,):
        raise ValueError(f"{name} has shape {array.shape}, expected ({size},)")
    return array


def decide(
    state: State,
    lbr_position: int,
    equity: npt.ArrayLike,
    range_: npt.ArrayLike,
    fold_probs: Mapping[Action, npt.ArrayLike],
    *,
    active: bool = True,
) -> Decision:
    """LBR's action at ``state`` exactly as lbr.md's "Decision".

    Args:
        state: a heads-up state where ``lbr_position`` is to act.
        lbr_position: LBR's position.
        equity: ``(num_hands,)`` float64, LBR's equity against each opponent hand.
        range_: ``(num_hands,)`` float64, LBR's range (renormalised here).
        fold_probs: for each candidate raise (legal at ``state``), the
            opponent's ``(num_hands,)`` probability of folding right after it.
            Its keys are the raises considered; ``{}`` means fold/call only.
        active: False outside the active rounds: check/call without computing.

    Returns:
        The :class:`Decision`.

    Raises:
        ValueError: ``lbr_position`` is not to act, an argument has the wrong
            shape, the range is empty, or a candidate raise is not legal.
    """
    me, spent_i, spent_o = _heads_up_spent(state)
    if me != lbr_position:
        raise ValueError(f"position {lbr_position} is not to act (position {me} is)")
    pot = spent_i + spent_o
    asked = spent_o - spent_i
    if not active:
        return Decision(Action.CALL, "inactive", pot=pot, asked=asked)
    size = state.game.num_hands
    e = _vector("equity", equity, size)
    pi = _normalised_range(range_, size)
    wp = float(pi @ e)
    utilities: list[tuple[Action, float]] = [(Action.CALL, wp * pot - (1.0 - wp) * asked)]
    raises = sorted(fold_probs, key=lambda a: a.size)
    fps: dict[Action, float] = {}
    for raise_action in raises:
        fold = _raise_fold_probs(state, raise_action, fold_probs, size)
        fp, value = _raise_utility(pi, e, fold, pot, asked, raise_amount(state, raise_action))
        fps[raise_action] = fp
        utilities.append((raise_action, value))
    # Utilities that differ only by rounding (wp sums ~1e-16 short of 1) are
    # ties: compare with a tolerance far below one chip.
    largest = max((raise_amount(state, r) for r in raises), default=0)
    tolerance = TIE_TOLERANCE * max(1.0, float(pot + asked + largest))
    best_action, best_value = _best_utility(utilities, tolerance)
    if best_value > tolerance:
        return Decision(best_action, "best", tuple(utilities), wp, fps, pot, asked)
    if asked > 0:
        return Decision(Action.FOLD, "fold", tuple(utilities), wp, fps, pot, asked)
    return Decision(Action.CALL, "check", tuple(utilities), wp, fps, pot, asked)


def _normalised_range(range_: npt.ArrayLike, size: int) -> FloatArray:
    """LBR's range as probabilities (``decide``'s argument may be unnormalised weights)."""
    pi = _vector("range", range_, size)
    total = float(pi.sum())
    if not total > 0.0:
        raise ValueError("the range has no probability mass")
    return pi / total


def _raise_fold_probs(
    state: State, raise_action: Action, fold_probs: Mapping[Action, npt.ArrayLike], size: int
) -> FloatArray:
    """The opponent's fold probabilities after ``raise_action``, once the raise is known legal."""
    if raise_action.type is not ActionType.RAISE or not state.is_legal(raise_action):
        raise ValueError(f"{raise_action.text()} is not a legal raise here")
    return _vector(f"fold probabilities of {raise_action.text()}", fold_probs[raise_action], size)


def _raise_utility(
    pi: FloatArray, e: FloatArray, fold: FloatArray, pot: int, asked: int, amount: int
) -> tuple[float, float]:
    """(fp, utility) of a raise by ``amount``: lbr.md's u(a) with the range ``pi``.

    The opponent folds with probability fp (LBR takes the pot); otherwise it
    calls with the range left after its folds, against which LBR's equity is
    ``wp_call``.
    """
    fp = float(pi @ fold)
    continuing = pi * (1.0 - fold)
    mass = float(continuing.sum())
    if mass <= 0.0:  # fp = 1: the opponent always folds
        return 1.0, float(pot)
    wp_call = float(continuing @ e) / mass
    return fp, fp * pot + (1.0 - fp) * (wp_call * (pot + amount) - (1.0 - wp_call) * (asked + amount))


def _best_utility(utilities: list[tuple[Action, float]], tolerance: float) -> tuple[Action, float]:
    """The action of highest utility; within ``tolerance`` the earlier one (the smaller commitment)."""
    best_action, best_value = utilities[0]
    for candidate, value in utilities[1:]:
        if value > best_value + tolerance:  # ties stay with the smaller commitment
            best_action, best_value = candidate, value
    return best_action, best_value


# -- equity ------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _equity_small_cached(
    game: GameDef, hero: tuple[int, ...], board: tuple[int, ...]
) -> FloatArray:
    table = hand_table(game)
    known = set(hero) | set(board)
    if len(known) != len(hero) + len(board):
        raise ValueError("hero cards and board overlap")
    missing = game.total_board_cards - len(board)
    if missing < 0:
        raise ValueError(
            f"a board of {len(board)} cards is more than the game's {game.total_board_cards}"
        )
    result = np.zeros(game.num_hands, dtype=np.float64)
    for i, hand in enumerate(table.hand_cards):
        if known.intersection(hand):
            continue
        rest = [c for c in game.cards if c not in known and c not in hand]
        score = 0.0
        count = 0
        for completion in combinations(rest, missing):
            full = list(board) + list(completion)
            mine = rank_hand(list(hero) + full)
            theirs = rank_hand(list(hand) + full)
            score += 1.0 if mine > theirs else 0.5 if mine == theirs else 0.0
            count += 1
        result[i] = score / count
    result.setflags(write=False)
    return result


def equity_vector_small(
    game: GameDef, hero_hand: Sequence[int], board: Sequence[int]
) -> FloatArray:
    """LBR's equity against every opponent hand, by enumerating all board completions.

    Every remaining board card is dealt exhaustively from the deck minus the
    hero's cards, the board and the opponent's hand, each completion equally
    likely; win 1, tie 1/2, loss 0; hands colliding with the hero or board get 0.
    Meant for small decks (Kuhn, Leduc); far too slow for a hold'em flop.

    Args:
        game: the game.
        hero_hand: LBR's hole cards (card indices).
        board: board cards dealt so far (card indices).

    Returns:
        ``(num_hands,)`` float64 array (read-only; cached).

    >>> from protocol.gamedef import load_game
    >>> from protocol.cards import cards_from_text
    >>> equity_vector_small(load_game("kuhn"), cards_from_text("Ks"), ()).tolist()
    [1.0, 0.0, 0.0]
    """
    return _equity_small_cached(game, tuple(hero_hand), tuple(board))


def has_fast_equity(game: GameDef) -> bool:
    """Whether :func:`equity_function` of ``game`` is the compute core's (hold'em) rather than enumeration."""
    return game.deck_size == 52 and game.num_hole_cards == 2 and game.total_board_cards == 5


@lru_cache(maxsize=8)
def equity_function(game: GameDef) -> EquityFunction:
    """The equity function LBR uses in ``game``: one per game and process.

    Hold'em (52 cards, 2 hole cards, 5 board cards) uses the compute core's
    :func:`acpc_lbr.equity.equity_vector`, imported lazily; other games use
    :func:`equity_vector_small`. Being one function per game, its cache of
    hold'em vectors is shared by everything in the process that asks for the
    same vector: the LBR agents of ``acpc-lbr evaluate`` compute the turn and
    river vectors the dealer's AIVAT then reads.
    """
    if has_fast_equity(game):
        from acpc_lbr.equity import equity_vector  # lazy: numba kernels, compiled on first use only

        @lru_cache(maxsize=256)  # LBR and the results pipeline in one process share vectors
        def cached(hero: tuple[int, ...], board: tuple[int, ...]) -> FloatArray:
            vector = np.asarray(equity_vector(hero, board), dtype=np.float64)
            vector.setflags(write=False)
            return vector

        def holdem(hero: Sequence[int], board: Sequence[int]) -> FloatArray:
            return cached(tuple(int(c) for c in hero), tuple(int(c) for c in board))

        return holdem

    def small(hero: Sequence[int], board: Sequence[int]) -> FloatArray:
        return equity_vector_small(game, hero, board)

    return small


# -- a player over one hand ------------------------------------------------------------


class LbrPlayer:
    """LBR over a match: keeps the range of each hand and decides.

    The caller feeds it what happens (its cards, board cards, the opponent's
    actions with their per-hand probabilities) and, at LBR's turn, the fold
    probabilities of the candidate raises it listed.

    Args:
        game: a heads-up game.
        options: the raises considered.
        active_rounds: rounds in which LBR may raise or fold.
        equity: equity function (default: :func:`equity_function`).

    Example:
        >>> from protocol.gamedef import load_game
        >>> from protocol.cards import cards_from_text
        >>> kuhn = load_game("kuhn")
        >>> lbr = LbrPlayer(kuhn, BettingOptions.parse("fcpa"), ActiveRounds())
        >>> lbr.start_hand(0, cards_from_text("Qs"))
        >>> state = State(kuhn)
        >>> [a.text() for a in lbr.candidates(state)]
        ['r']
        >>> lbr.decide(state, (), {Action.RAISE: np.ones(3)}).action.text()   # always folds
        'r'
    """

    def __init__(
        self,
        game: GameDef,
        options: BettingOptions,
        active_rounds: ActiveRounds,
        equity: EquityFunction | None = None,
    ) -> None:
        if game.num_players != 2:
            raise ValueError("LBR is defined for two-player games only")
        self.game = game
        self.options = options
        self.active_rounds = active_rounds
        self.equity = equity if equity is not None else equity_function(game)
        self.tracker = RangeTracker(game)
        self.position = 0
        self.hole: tuple[int, ...] = ()

    @property
    def inconsistencies(self) -> int:
        """Range inconsistencies over the match so far."""
        return self.tracker.inconsistencies

    @property
    def range(self) -> FloatArray:
        """The current range, ``(num_hands,)`` float64."""
        return self.tracker.probs

    def start_hand(self, position: int, hole: Iterable[int]) -> None:
        """A new hand: LBR sits at ``position`` with ``hole`` (card indices)."""
        self.position = position
        self.hole = tuple(hole)
        self.tracker.start_hand(self.hole)

    def observe_board(self, board: Iterable[int]) -> bool:
        """The board so far (card indices; cards seen before are ignored).

        Returns:
            False on a range inconsistency (no mass was left; the range was
            reset and counted).
        """
        return self.tracker.add_board(board)

    def observe_opponent(self, action_probs: npt.ArrayLike) -> bool:
        """The opponent acted; ``action_probs`` is sigma(s, h, played action) per hand.

        Returns:
            False on a range inconsistency (the range was reset and counted).
        """
        return self.tracker.observe(np.asarray(action_probs, dtype=np.float64))

    def is_active(self, state: State) -> bool:
        """True when LBR may raise or fold in ``state``'s round."""
        return self.active_rounds.is_active(state.round)

    def candidates(self, state: State) -> list[Action]:
        """The raises whose fold probabilities :meth:`decide` needs (none when inactive)."""
        if not self.is_active(state):
            return []
        return candidate_raises(state, self.options)

    def decide(
        self, state: State, board: Sequence[int], fold_probs: Mapping[Action, npt.ArrayLike]
    ) -> Decision:
        """LBR's decision at ``state`` with the board so far.

        Args:
            state: a state where LBR is to act.
            board: all board cards so far (card indices).
            fold_probs: fold probabilities for each of :meth:`candidates`.
        """
        self.observe_board(board)
        if not self.is_active(state):
            return decide(state, self.position, (), (), {}, active=False)
        equity = self.equity(self.hole, tuple(board))
        return decide(state, self.position, equity, self.tracker.probs, fold_probs)
