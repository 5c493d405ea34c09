"""AIVAT for LBR matches: control variates from the strategies we know.

AIVAT (Burch, Schmid, Moravčík, Bowling, AAAI 2018) adds to a hand's value a
sum of *correction terms*, one per node of the played line whose outcome
distribution is known. At a node ``n`` whose next event ``X`` has a known
conditional distribution, with a value function ``v`` fixed in advance, the
term is

    c_n = E[v(n·X) | G_n] - v(n·x)          (x: the event that happened)

and ``E[c_n] = E[E[c_n | G_n]] = 0``, so the sum of any such terms keeps the
estimator unbiased whatever ``v`` is; a good ``v`` makes it cancel most of
the luck.

Here ``G_n`` is what the measured player (LBR) knows at ``n``: its own cards
and the public line. Both strategies are known:

* the opponent's, from its range answers σ(s, h, a) (every private hand h);
* LBR's own: a deterministic function of its cards, the public line and the
  answers.

**The value function** (fixed before any evaluation data, the same for every
opponent of a game): LBR's own view, the pot share its hand's equity against
its current range gives it, minus what it has put in, plus a growth term
that foresees the pot growing with LBR's later bets:

    v(n) = wp(h_i, π_n, board_n) · pot(n) − spent_i(n) + (2·wp − 1) · g(n)

with π_n the Bayesian range of lbr.md (blocked hands removed, each opponent
action multiplied in), ``wp = Σ_h π_n(h) e(h)`` from the equity engine
(:func:`acpc_lbr.lbr.equity_function`) and ``g`` a public function of the
betting state (:class:`ValueFunction`: per round, a coefficient times what
each player can still bet), fitted on pilot runs apart from every reported
one (:data:`FITTED`, ``bench/fit_aivat_value.py``; games without a fit use
g = 0). After a fold ``v`` is the exact outcome. At a showdown with a
complete board g = 0 and ``v`` is the measured player's expected outcome
over the range: the imaginary observation.

**Which nodes carry a correction**

* the deal of LBR's hole cards (the root): ``E[v(root)] = pot₀/2 − spent_i,₀``
  exactly, because wp averaged over every ordered pair of hands is ½ (so the
  growth term averages to 0);
* every board deal (also the run-out after an all-in): the distribution of
  the new cards given ``G_n`` is the range-weighted mixture over the
  opponent's hands, and since the range update on a board card is Bayes'
  rule, ``E[wp after] = wp before`` (the tower property: e(h) is itself the
  average over board completions). The betting state, so pot and g, does
  not change and v is linear in wp, so the exact expectation is ``v(n)`` itself: the term is ``v(before) − v(after)``, with
  no enumeration of boards (a flop has 19,600); only the hold'em flop's
  equity vector is an unbiased sampled estimate (:func:`completion_estimate`);
* every opponent decision from :func:`first_opponent_round` on (hold'em:
  from the flop; Kuhn and Leduc: every round), over the actions
  :func:`correction_actions` lists (limit: every legal action; no-limit:
  fold and call). The probability of action ``a`` given
  ``G_n`` is ``p(a) = Σ_h π_n(h) σ(s, h, a)``; ``v(n·a)`` uses the range
  ``π_n·σ(·, a)``. Raises outside the list are one lumped event ``R`` with
  probability ``1 − Σ p(a)`` and the fixed value ``v(n)``: a raise size
  nobody asked about keeps its own luck (``v(n·a) − v(n)``) but the term
  stays unbiased, because the value it uses for ``R`` is the same whichever
  raise was played;
* **not** LBR's own decisions: LBR's action is a deterministic function of
  ``G_n``, so its term is identically 0.

The estimator then telescopes to

    AIVAT = pot₀/2 − spent_i,₀ + Σ_LBR [v(n·a) − v(n)] + Σ_opp [Σ_a p(a) v(n·a) − v(n)]
            + Σ_opp, a∉list [v(n·a) − v(n)] + Σ_opp, uncorrected [v(n·a) − v(n)]

no term of which depends on a board card: what remains is the luck of LBR's
own cards insofar as v misses LBR's real continuation value, and of unlisted
raise sizes.

**Assumptions** (as for imaginary observations): the answers are the
strategy the opponent really plays (otherwise ``p(a)`` and the range are not
the real conditional distributions and the estimator is biased: the honesty
check ``aivat_minus_raw`` catches it; ``tests/acpc_lbr/test_aivat.py`` has
the exact figures for a liar), and ``v`` is not tuned on the evaluation
data (the heuristic pathology: a value function fitted to the hands it then
corrects makes the terms correlate with their own noise and the estimator
biased; ours is fitted once on pilot seeds and pilot strategies, then fixed).

>>> from protocol.gamedef import load_game
>>> from protocol.rules import State
>>> state = State(load_game("leduc"))
>>> _ = state.apply(Action.RAISE)
>>> [a.text() for a in correction_actions(state)]
['f', 'c', 'r']
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import TypedDict, final

import numpy as np

from acpc_lbr.lbr import EquityFunction
from acpc_lbr.ranges import bayes_update, compatible_mask, remove_cards, uniform_range
from acpc_lbr.strategies import default_actions
from protocol.arrays import FloatArray
from protocol.gamedef import GameDef, load_game
from protocol.rules import Action, ActionType, State


__all__ = [
    "DEFAULT_SAMPLES",
    "VALUE_FORM",
    "AivatRecord",
    "AivatSetup",
    "AivatValue",
    "NotComputed",
    "ValueFunction",
    "ValueFunctionRecord",
    "completion_estimate",
    "correction_actions",
    "first_opponent_round",
    "hand_aivat",
    "sample_stream",
    "value_function",
]


def first_opponent_round(game: GameDef) -> int:
    """The first round whose opponent decisions carry a correction: hold'em's flop, else the first.

    With the growth term of :class:`ValueFunction` an opponent action moves v
    by up to half the stack, and correcting the flop's decisions matters; the
    preflop's were measured to narrow nothing (design runs, docs/results.md)
    while they cost a dealer query per decision. Games of one or two rounds
    (Kuhn, Leduc) correct every round. ``hand_aivat``'s ``opponent_from``
    allows any first round (a node may always go without a correction).
    """
    return 1 if game.num_rounds > 2 else 0


def correction_actions(state: State) -> list[Action]:
    """The opponent actions whose σ rows an AIVAT correction at ``state`` uses.

    Limit games: every legal action (the expectation is exact). No-limit:
    fold (when legal) and call; every raise size is one lumped event. Listing
    the pot-size and all-in raises too narrowed nothing on design runs (the
    value after a raise predicts what follows no better than the lumped
    value) and cost the bot two rows per decision (docs/results.md).
    """
    actions = default_actions(state)
    if state.game.is_limit:
        return actions
    return [a for a in actions if a.type is not ActionType.RAISE]


@dataclass(frozen=True)
class AivatValue:
    """The AIVAT value of one hand, with its parts.

    Attributes:
        chips: the estimator's value (measured player's chips).
        terminal: ``v`` at the end of the hand (the outcome after a fold, the
            imaginary observation at a complete-board showdown).
        deal: the correction at the hole-card deal.
        chance: the sum of the corrections at board deals.
        opponent: the sum of the corrections at opponent decisions.
        inconsistencies: opponent actions (or boards) after which the range
            had no mass left (it was reset to uniform, as LBR's own is).
    """

    chips: float
    terminal: float
    deal: float
    chance: float
    opponent: float
    inconsistencies: int


@dataclass(frozen=True)
class ValueFunction:
    """The value function's growth term: v = wp·pot − spent_i + (2·wp − 1)·g(state).

    In round r of an unfinished state,

        g = level_growth[r] + pot_growth[r]·pot + room_growth[r]·room
            + acting_growth[r]·room·[the measured player is to act]

    and g = 0 once the hand is over. ``room`` is what each player can still
    put in (no-limit: the stack minus the larger commitment; limit: the
    round's bet size); a round past the end of a tuple has coefficient 0. The
    term foresees that the pot grows with LBR's later bets: a hand with
    wp > ½ stands to win more than its share of the current pot, one with
    wp < ½ to lose more. Being linear in wp with a public coefficient, it keeps
    every chance expectation exact and free: E[wp after a card] = wp before,
    and at the deal E[2·wp − 1] = 0. The zero function is the plain pot share.
    """

    level_growth: tuple[float, ...] = ()
    pot_growth: tuple[float, ...] = ()
    room_growth: tuple[float, ...] = ()
    acting_growth: tuple[float, ...] = ()

    def growth(self, state: State, position: int = -1) -> float:
        """g(state) for the measured player at ``position``: 0 once the hand is finished."""
        if state.finished:
            return 0.0
        r = state.round
        game = state.game
        room = game.raise_size[r] if game.is_limit else game.stack[0] - max(state.spent)
        acting = state.current_player == position
        return (_coefficient(self.level_growth, r) + _coefficient(self.pot_growth, r) * state.pot
                + (_coefficient(self.room_growth, r) + acting * _coefficient(self.acting_growth, r)) * room)

    def value(self, state: State, wp: float, position: int) -> float:
        """v at an unfolded ``state`` where the measured player's win probability is ``wp``."""
        return wp * state.pot - state.spent[position] + (2.0 * wp - 1.0) * self.growth(state, position)

    def identity(self) -> ValueFunctionRecord:
        """What the files record of this function: the form, every coefficient, and their digest.

        The digest is the first 16 hex digits of the SHA-256 of the other
        fields as canonical JSON (sorted keys, floats written exactly), so an
        edited coefficient is caught by :meth:`from_identity`.

        >>> ValueFunction(room_growth=(0.5,)).identity()["room_growth"]
        [0.5]
        >>> ValueFunction.from_identity(FITTED["leduc"].identity()) == FITTED["leduc"]
        True
        """
        return {"form": VALUE_FORM, "level_growth": [float(c) for c in self.level_growth],
                "pot_growth": [float(c) for c in self.pot_growth],
                "room_growth": [float(c) for c in self.room_growth],
                "acting_growth": [float(c) for c in self.acting_growth], "digest": self.digest()}

    def digest(self) -> str:
        """The digest of :meth:`identity`."""
        fields_ = {"form": VALUE_FORM, **{f.name: [float(c) for c in getattr(self, f.name)] for f in fields(self)}}
        return _digest(fields_)

    @classmethod
    def from_identity(cls, record: object) -> ValueFunction:
        """The function an :meth:`identity` record describes.

        Raises:
            ValueError: not a record, an unknown form, a malformed coefficient,
                or a digest that does not match the coefficients.
        """
        if not isinstance(record, Mapping):
            raise ValueError(f"not a value function record: {record!r}")  # noqa: TRY004 (bad files: one error type)
        if record.get("form") != VALUE_FORM:
            raise ValueError(f"unknown value function form {record.get('form')!r} (this version knows {VALUE_FORM!r})")
        values: dict[str, tuple[float, ...]] = {}
        for f in fields(cls):
            items = record.get(f.name)
            if not isinstance(items, list) or not all(
                isinstance(c, (int, float)) and not isinstance(c, bool) for c in items
            ):
                raise ValueError(f"value function record: {f.name} is not a list of numbers")
            values[f.name] = tuple(float(c) for c in items)
        function = cls(**values)
        if record.get("digest") != function.digest():
            raise ValueError("value function record: its digest does not match its coefficients (altered)")
        return function


class ValueFunctionRecord(TypedDict):
    """:meth:`ValueFunction.identity`: the form, the coefficients per round, their digest."""

    form: str
    level_growth: list[float]
    pot_growth: list[float]
    room_growth: list[float]
    acting_growth: list[float]
    digest: str


@final
class AivatRecord(TypedDict):
    """:meth:`AivatSetup.record`: the query log's ``aivat_setup``, the results' ``config.aivat``."""

    value_function: ValueFunctionRecord
    opponent_from: int
    samples: int


@final
class NotComputed(TypedDict):
    """``config.aivat`` when the files cannot say which AIVAT the run used: the reason."""

    not_computed: str


#: The form of :class:`ValueFunction` (v = wp·pot − spent_i + (2·wp − 1)·g, g as documented
#: there), recorded with the coefficients; a change of form or of g's features changes it.
VALUE_FORM = "pot-share+growth/1"


def _digest(record: Mapping[str, object]) -> str:
    text = json.dumps({k: v for k, v in record.items() if k != "digest"}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


def _coefficient(values: tuple[float, ...], round_: int) -> float:
    return values[round_] if round_ < len(values) else 0.0


#: No growth term: the plain pot share of LBR's own view.
POT_SHARE = ValueFunction()

#: The fitted growth coefficients per game, fixed before any reported run
#: (``bench/fit_aivat_value.py`` on pilot runs, docs/results.md); every other
#: game uses :data:`POT_SHARE`.
FITTED: dict[str, ValueFunction] = {
    # pilot seeds 1001 (fit) and 1002 (check), 1,000 duplicate deals against call-raise and
    # threshold (weighted 3x), LBR fcpa rounds 3-4, opponent decisions corrected from the flop on
    "nolimit": ValueFunction(room_growth=(0.4942, 0.4223, 0.4044, 0.3138)),
    # exact fit over every hand of both seats against uniform, table:7 and table:11 (LBR fcpa, rounds 1-2)
    "leduc": ValueFunction(pot_growth=(0.1048, -0.1414), room_growth=(0.9644, 0.6861)),
}


@lru_cache(maxsize=16)
def value_function(game: GameDef) -> ValueFunction:
    """The value function AIVAT uses in ``game``: the fitted one of :data:`FITTED`, else the pot share."""
    for name, value in FITTED.items():
        if load_game(name) == game:
            return value
    return POT_SHARE


#: Board completions sampled where two or more cards are still to come (the
#: hold'em flop: 4 river vectors, ~0.04 ms each, instead of one flop vector,
#: ~3 ms; chosen on design runs, seeds apart from the reported figures).
DEFAULT_SAMPLES = 4

#: Salt of the sampling stream (:func:`sample_stream`), apart from every deal stream.
SAMPLING_SALT = 0x41495641  # "AIVA"


def sample_stream(seed: int, hand_id: int) -> np.random.Generator:
    """The generator of one hand's sampled board cards, from the match's deal seed and the hand number.

    The live dealer and ``acpc-lbr results`` draw the same samples, so the
    estimator is reproduced bit for bit from the files. The samples vary with
    the match seed as the cards do, but from a different generator (PCG64
    through numpy's ``SeedSequence`` of the salt, the seed and the hand,
    where the deal is MT19937 ``init_genrand(seed)``,
    :class:`protocol.deal.DealSource`): they are independent of the cards.
    """
    return np.random.default_rng([SAMPLING_SALT, int(seed), int(hand_id)])


class _View:
    """The value function along one hand: LBR's range, equity and commitments.

    ``samples`` > 0: where two or more board cards are still to come after a
    non-empty board (the hold'em flop), the equity vector is replaced by an
    unbiased estimate from ``samples`` completions of the board drawn
    uniformly from the unseen deck (:func:`completion_estimate`).
    """

    def __init__(
        self, game: GameDef, position: int, hole: Sequence[int], equity: EquityFunction,
        samples: int = 0, hand_id: int = 0, seed: int = 0, value: ValueFunction = POT_SHARE,
    ) -> None:
        self.game = game
        self.v = value
        self.position = position
        self.hole = tuple(hole)
        self.equity = equity
        self.samples = samples
        self.hand_id = hand_id
        self.seed = seed
        self.rng: np.random.Generator | None = None  # made on first use (the flop)
        self.board: tuple[int, ...] = ()
        self.known = compatible_mask(game, self.hole)
        self.range = uniform_range(game, self.hole)
        self.e = np.asarray(equity(self.hole, ()), dtype=np.float64)
        self.inconsistencies = 0

    def wp(self, range_: FloatArray) -> float:
        return float(range_ @ self.e)

    def value(self, state: State, range_: FloatArray) -> float:
        """v at ``state`` with ``range_`` (normalised): the outcome after a fold, else the pot share."""
        if state.finished and not state.is_showdown:
            return float(state.values(((), ()), self.board)[self.position])
        return self.v.value(state, self.wp(range_), self.position)

    def observe(self, row: FloatArray) -> None:
        """The range after an opponent action whose σ row is ``row`` (Bayes' rule)."""
        self.range, consistent = bayes_update(self.range, row, self.known)
        self.inconsistencies += not consistent

    def deal_board(self, cards: Sequence[int]) -> None:
        self.board = self.board + tuple(cards)
        self.known = compatible_mask(self.game, self.hole + self.board)
        self.range, consistent = remove_cards(self.range, self.game, cards, self.known)
        self.inconsistencies += not consistent
        self.e = self.equity_here()

    def equity_here(self) -> FloatArray:
        """The equity vector at the current board: exact, or the sampled estimate."""
        game = self.game
        to_come = game.total_board_cards - len(self.board)
        if self.samples <= 0 or not self.board or to_come < 2:
            return np.asarray(self.equity(self.hole, self.board), dtype=np.float64)
        unseen = [c for c in game.cards if c not in self.board and c not in self.hole]
        if self.rng is None:
            self.rng = sample_stream(self.seed, self.hand_id)
        completions = [[unseen[int(k)] for k in self.rng.choice(len(unseen), size=to_come, replace=False)]
                       for _ in range(self.samples)]
        return completion_estimate(game, self.equity, self.hole, self.board, completions)


def completion_estimate(
    game: GameDef, equity: EquityFunction, hole: Sequence[int], board: Sequence[int],
    completions: Sequence[Sequence[int]],
) -> FloatArray:
    """``C(D, c) / C(D − k, c) · mean over completions w of e(hole, board + w)``: the sampled equity vector.

    Each completion w is c cards drawn uniformly (without repetition) from the D
    cards outside ``hole`` and ``board``; k is the number of hole cards per
    hand. Its expectation is the exact equity vector at ``board`` for every
    hand h at once: w misses h's cards with probability C(D − k, c) / C(D, c),
    every completion missing them is then equally likely, and e(board + w)(h)
    is 0 when h holds a card of w. With c = 1 the factor is D / (D − k).
    ``tests/acpc_lbr/test_aivat.py`` checks this by enumerating every w on a
    hold'em flop, c = 1 and c = 2.
    """
    from math import comb

    unseen = game.deck_size - len(hole) - len(board)
    count = len(completions[0])
    total = np.zeros(game.num_hands, dtype=np.float64)
    for cards in completions:
        total += np.asarray(equity(tuple(hole), (*board, *(int(c) for c in cards))), dtype=np.float64)
    factor = comb(unseen, count) / (comb(unseen - game.num_hole_cards, count) * len(completions))
    return np.asarray(total * factor, dtype=np.float64)


@dataclass(frozen=True)
class AivatSetup:
    """Everything that fixes a match's AIVAT values besides the cards and the answers.

    Recorded in the query log's header and the results' ``config.aivat``
    (:meth:`record`), so ``acpc-lbr results`` recomputes AIVAT with the
    function the match used, not the one the code holds today.

    Attributes:
        value: the value function.
        opponent_from: the first round whose opponent decisions carry a correction.
        samples: board completions sampled where two or more cards are to come.
    """

    value: ValueFunction
    opponent_from: int
    samples: int

    @classmethod
    def for_game(cls, game: GameDef) -> AivatSetup:
        """This version's setup for ``game``: :func:`value_function`, :func:`first_opponent_round`."""
        return cls(value_function(game), first_opponent_round(game), DEFAULT_SAMPLES)

    def record(self) -> AivatRecord:
        """``{"value_function": identity, "opponent_from": r, "samples": K}``."""
        return {"value_function": self.value.identity(), "opponent_from": self.opponent_from,
                "samples": self.samples}

    @classmethod
    def from_record(cls, record: object) -> AivatSetup:
        """Inverse of :meth:`record`.

        Raises:
            ValueError: a missing or malformed field, an unknown or altered value function.
        """
        if not isinstance(record, Mapping) or record.get("value_function") is None:
            raise ValueError("no AIVAT value function recorded")
        value = ValueFunction.from_identity(record["value_function"])
        opponent_from, samples = record.get("opponent_from"), record.get("samples")
        if not isinstance(opponent_from, int) or not isinstance(samples, int) or opponent_from < 0 or samples < 0:
            raise ValueError(f"malformed AIVAT setup (opponent_from {opponent_from!r}, samples {samples!r})")
        return cls(value, opponent_from, samples)


def _row(rows: Mapping[str, FloatArray], action: Action) -> FloatArray:
    row = rows.get(action.text())
    if row is None:
        raise KeyError(action.text())
    return np.asarray(row, dtype=np.float64)


def hand_aivat(
    game: GameDef,
    betting: Sequence[Sequence[Action]],
    board: Sequence[Sequence[int]],
    hole: Sequence[int],
    position: int,
    rows: Sequence[Mapping[str, FloatArray]],
    equity: EquityFunction,
    hand_id: int = 0,
    samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
    opponent_from: int | None = None,
    value: ValueFunction | None = None,
) -> AivatValue:
    """The AIVAT value of one finished hand from the measured player's seat.

    Args:
        game: a heads-up game.
        betting: the actions of each round reached (as in a ``STATE`` line).
        board: the board cards of each round reached (round 0: none).
        hole: the measured player's hole cards.
        position: the measured player's position in this hand.
        rows: per opponent decision on the line, in order, ``{action text:
            σ(s, ·, action)}`` for every action of :func:`correction_actions`
            at that decision and the played one (only the played one before
            round ``opponent_from``); shape ``(num_hands,)`` float64 each;
            entries of hands blocked by known cards are ignored.
        equity: LBR's equity function (:func:`acpc_lbr.lbr.equity_function`).
        hand_id: the hand number (the rules' replay, and the sampling stream).
        samples: next cards sampled where two or more board cards are still
            to come (0: exact equity everywhere); see :class:`_View`.
        seed: the match's deal seed (with ``hand_id``, the sampling stream:
            :func:`sample_stream`).
        opponent_from: opponent decisions before this round carry no
            correction and need only the played action's row (None:
            :func:`first_opponent_round`).
        value: the value function (None: :func:`value_function` of ``game``).

    Returns:
        The :class:`AivatValue`.

    Raises:
        KeyError: a row of a listed action is missing.
        ValueError: ``rows`` does not have one entry per opponent decision.
    """
    opponent = 1 - position
    first = first_opponent_round(game) if opponent_from is None else opponent_from
    v = value_function(game) if value is None else value
    view = _View(game, position, hole, equity, samples, hand_id, seed, v)
    state = State(game, hand_id)
    # The deal: E over LBR's cards of wp against the uniform range is 1/2 (so E[2 wp - 1] = 0).
    deal = (0.5 * state.pot - state.spent[position]) - view.value(state, view.range)
    chance, opp = _replay_terms(view, state, betting, board, rows, opponent, first)
    terminal = view.value(state, view.range)
    return AivatValue(terminal + deal + chance + opp, terminal, deal, chance, opp, view.inconsistencies)


def _replay_terms(view: _View, state: State, betting: Sequence[Sequence[Action]],
                  board: Sequence[Sequence[int]], rows: Sequence[Mapping[str, FloatArray]],
                  opponent: int, first: int) -> tuple[float, float]:
    """Replay the hand's line from the deal (``state``, left at its end): the chance and
    the opponent corrections (see :func:`hand_aivat`)."""
    chance = 0.0
    opp = 0.0
    decisions = list(rows)
    used = 0
    dealt = -1  # the last round whose board cards went through a chance correction

    def deal_rounds() -> float:
        nonlocal dealt
        total = 0.0
        while dealt < state.round:
            dealt += 1
            if dealt < len(board) and board[dealt]:
                total += _chance_term(view, state, board[dealt])
        return total

    chance += deal_rounds()
    for round_actions in betting:
        for action in round_actions:
            if state.current_player == opponent:
                if used >= len(decisions):
                    raise ValueError("fewer rows than opponent decisions")
                if state.round >= first:
                    opp += _opponent_term(view, state, action, decisions[used])
                else:  # no correction: the range follows the played action
                    view.observe(_row(decisions[used], action))
                    state.apply(action)
                used += 1
            else:
                state.apply(action)
            chance += deal_rounds()
    if used != len(decisions):
        raise ValueError(f"{len(decisions)} rows for {used} opponent decisions")
    return chance, opp


def _chance_term(view: _View, state: State, cards: Sequence[int]) -> float:
    """v(before) − v(after): E[v after] = v before exactly (Bayes' rule + tower property)."""
    before = view.value(state, view.range)
    view.deal_board(cards)
    return before - view.value(state, view.range)


def _opponent_term(view: _View, state: State, played: Action, rows: Mapping[str, FloatArray]) -> float:
    """Σ_a p(a) v(n·a) + p(R) v(n) − v(n·played) over the listed actions; applies ``played``."""
    here = view.value(state, view.range)
    range_ = view.range
    live = range_ > 0.0
    weighted = range_ * view.e  # wp after a = (π·σ_a·e) / (π·σ_a): two dot products per action
    expected = 0.0
    mass = 0.0
    taken = here  # a raise outside the list: the lumped event R, valued v(n)
    for action in correction_actions(state):
        sigma = np.where(live, _row(rows, action), 0.0)  # answers off the range may be anything
        p = float(range_ @ sigma)
        if action.type is ActionType.FOLD:  # LBR wins what the opponent has put in
            value = float(state.spent[1 - view.position])
        else:
            child = state.clone()
            child.apply(action)
            if p > 0.0:
                value = view.v.value(child, float(weighted @ sigma) / p, view.position)
            else:  # probability 0: any value; the one the reset range gives, as LBR would
                after, _ = bayes_update(range_, sigma, view.known)
                value = view.value(child, after)
        expected += p * value
        mass += p
        if _same(action, played):
            taken = value
    expected += (1.0 - mass) * here
    view.observe(_row(rows, played))
    state.apply(played)
    return expected - taken


def _same(a: Action, b: Action) -> bool:
    if a.type is not b.type:
        return False
    return a.type is not ActionType.RAISE or a.size == b.size
