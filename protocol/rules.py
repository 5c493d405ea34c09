"""The rules of ACPC poker: one live hand, as the reference's game.c plays it.

:class:`State` follows *query, check, apply*: pure queries (whose turn,
:meth:`State.legal_actions`, :meth:`State.raise_range`), :meth:`State.check`
which raises :class:`IllegalActionError`, and :meth:`State.apply` which checks,
mutates and returns the applied :class:`Action`. The dealer's leniency -- a
bad action becomes a call, a raise is clamped into the legal range -- is not
here: it is the separate, named step :func:`correct_action`.

>>> from protocol.gamedef import load_game
>>> state = State(load_game("nolimit"))
>>> state.current_player, state.raise_range()
(1, (200, 20000))
>>> _ = state.apply(Action.raise_to(300)); _ = state.apply(Action.CALL)
>>> state.round, state.betting_string()
(1, 'r300c/')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import FrozenInstanceError, dataclass, field
from enum import Enum
from typing import Any, ClassVar, Final, final

from protocol._variant import record_reduce
from protocol.errors import IllegalActionError
from protocol.gamedef import GameDef
from protocol.ranking import rank_hand

#: The reference's bound on actions per round (``MAX_NUM_ACTIONS``).
MAX_NUM_ACTIONS: Final = 64


class ActionType(Enum):
    """Fold, call/check, raise/bet."""

    FOLD = "f"
    CALL = "c"
    RAISE = "r"


@final
class Action:
    """One action. ``size`` is the raise-to total in no-limit, else 0.

    An immutable record, equal and hashed by value, like a frozen dataclass.
    It is written by hand because this module is compiled (mypyc) and mypyc
    turns a dataclass's ``ClassVar`` annotations into fields: the compiled
    ``@dataclass(frozen=True)`` with ``FOLD: ClassVar[Action]`` fails when its
    module is imported ("non-default argument 'FOLD' follows default argument",
    mypy 2.4). It pickles and copies by its constructor arguments
    (``__reduce__``): the default protocol would restore its slots through the
    refusing ``__setattr__``, compiled or not.
    tests/protocol/test_variant.py (``test_action_is_an_immutable_value``,
    ``test_records_pickle_and_copy_by_value``) fails without these methods.

    Attributes:
        type: fold, call or raise.
        size: for a no-limit raise, the raiser's total commitment after it.
    """

    __slots__ = ("size", "type")

    type: ActionType
    size: int

    FOLD: ClassVar[Action]
    CALL: ClassVar[Action]
    RAISE: ClassVar[Action]

    def __init__(self, type: ActionType, size: int = 0) -> None:
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "size", size)

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Action):
            return NotImplemented
        return self.type is other.type and self.size == other.size

    def __hash__(self) -> int:
        return hash((self.type, self.size))

    def __repr__(self) -> str:
        return f"Action(type={self.type!r}, size={self.size!r})"

    def __reduce__(self) -> tuple[Any, tuple[ActionType, int]]:
        return Action, (self.type, self.size)

    @staticmethod
    def raise_to(size: int) -> Action:
        """A no-limit raise to ``size`` chips in total (records are shared: they are frozen)."""
        action = _RAISES_TO.get(size)
        if action is None:
            if len(_RAISES_TO) >= _RAISES_TO_MAX:
                _RAISES_TO.clear()
            action = _RAISES_TO[size] = Action(ActionType.RAISE, size)
        return action

    def text(self) -> str:
        """The canonical wire token: ``f``, ``c``, ``r`` or ``r<size>``."""
        # Identity tests on module constants: ``Enum.value`` is a Python-level
        # descriptor, and this runs once per action per line the dealer sends.
        kind = self.type
        if kind is _CALL:
            return "c"
        if kind is _RAISE:
            return f"r{self.size}" if self.size else "r"
        return "f"

    def __str__(self) -> str:
        return self.text()


#: Raise records by size (:meth:`Action.raise_to`): a match sees a few hundred sizes.
_RAISES_TO: Final[dict[int, Action]] = {}
_RAISES_TO_MAX: Final = 1 << 14

Action.FOLD = Action(ActionType.FOLD)
Action.CALL = Action(ActionType.CALL)
Action.RAISE = Action(ActionType.RAISE)

# Final: compiled, a static read, not a lookup in the module's dictionary (per action).
_FOLD: Final = ActionType.FOLD
_CALL: Final = ActionType.CALL
_RAISE: Final = ActionType.RAISE


@final
class GameTable:
    """The facts of a game that the rules read on every action (and a deal), as native attributes.

    :class:`protocol.gamedef.GameDef` is a Python class (a frozen dataclass with
    cached properties): each of its attributes read from this compiled module
    is a dictionary lookup, about a twentieth of the dealer's instructions per
    hand when :class:`State` read them there. A table is made once per game
    (:func:`game_table`) and shared by its states.
    """

    def __init__(self, game: GameDef) -> None:
        self.num_players: int = game.num_players
        self.num_rounds: int = game.num_rounds
        self.stack: tuple[int, ...] = game.stack
        self.blind: tuple[int, ...] = game.blind
        self.max_blind: int = max(game.blind)
        self.raise_size: tuple[int, ...] = game.raise_size
        self.first_player: tuple[int, ...] = game.first_player
        self.max_raises: tuple[int, ...] = game.max_raises
        self.is_limit: bool = game.is_limit
        # What a deal reads (protocol.deal.DealSource.deal).
        self.deck: tuple[int, ...] = game.deck
        self.num_hole_cards: int = game.num_hole_cards
        self.num_board_cards: tuple[int, ...] = game.num_board_cards
        self.total_board_cards: int = game.total_board_cards


#: Each game's table, by ``id`` of the game (kept with it, so that the id stays its own).
_TABLES: Final[dict[int, tuple[GameDef, GameTable]]] = {}
#: A process plays a few games; past this many, the tables are made again.
_TABLES_MAX: Final = 256


def game_table(game: GameDef) -> GameTable:
    """The :class:`GameTable` of ``game`` (made on first use)."""
    entry = _TABLES.get(id(game))
    if entry is not None and entry[0] is game:
        return entry[1]
    if len(_TABLES) >= _TABLES_MAX:
        _TABLES.clear()
    table = GameTable(game)
    _TABLES[id(game)] = (game, table)
    return table


@dataclass(slots=True, init=False)
class State:
    """The public state of one hand (betting only; cards live in a ``Deal``).

    Only :meth:`apply` should change a state: it keeps a cached betting
    string in step with ``actions`` (rebuilt if ``actions`` grows by other
    means, but not if an action is replaced in place).

    Args:
        game: the frozen game definition.
        hand_id: the hand's number in the match.
    """

    game: GameDef
    hand_id: int
    round: int
    finished: bool
    spent: list[int]
    folded: list[bool]
    max_spent: int
    min_raise_to: int
    #: Actions of each round reached, and who made them.
    actions: list[list[Action]]
    actors: list[list[int]]
    # The betting string, built one token at a time by apply (the dealer
    # prints it in every MATCHSTATE line), and the shape of ``actions`` it
    # was built for: (number of rounds, actions in the last round).
    _betting: str = field(init=False, repr=False, compare=False)
    _betting_shape: tuple[int, int] = field(init=False, repr=False, compare=False)
    #: The game's facts the rules read (:func:`game_table`).
    table: GameTable = field(init=False, repr=False, compare=False)

    # Written out, not made by the dataclass: a dataclass's generated __init__ is Python
    # code even in the compiled module, and the dealer makes a state per hand.
    def __init__(self, game: GameDef, hand_id: int = 0, round: int = 0, finished: bool = False,
                 spent: list[int] | None = None, folded: list[bool] | None = None,
                 max_spent: int = 0, min_raise_to: int = 0,
                 actions: list[list[Action]] | None = None,
                 actors: list[list[int]] | None = None,
                 betting: tuple[str, tuple[int, int]] | None = None) -> None:
        # ``betting``: the betting string and the shape of ``actions`` it was built for, when
        # the caller has them (:meth:`clone`); else it is built from ``actions``.
        self.game = game
        self.hand_id = hand_id
        self.round = round
        self.finished = finished
        table = self.table = game_table(game)
        self._betting = ""
        self._betting_shape = (1, 0)
        if not spent:
            # A new hand (the dealer makes one per hand): the betting string
            # and its shape keep their defaults ("" for one empty round).
            self.spent = list(table.blind)
            self.folded = [False] * table.num_players
            self.max_spent = max_spent = table.max_blind
            if table.is_limit:
                self.min_raise_to = 0
            else:
                self.min_raise_to = 2 * max_spent if max_spent else 1
            self.actions = [[]]
            self.actors = [[]]
            return
        self.spent = spent
        self.folded = [] if folded is None else folded
        self.max_spent = max_spent
        self.min_raise_to = min_raise_to
        self.actions = [] if actions is None else actions
        self.actors = [] if actors is None else actors
        if betting is None:
            self._rebuild_betting()
        else:
            self._betting, self._betting_shape = betting

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # Rebuilt from its arguments: compiled, the default protocol would call __init__ without them.
        return State, (self.game, self.hand_id, self.round, self.finished, self.spent, self.folded,
                       self.max_spent, self.min_raise_to, self.actions, self.actors)

    def _rebuild_betting(self) -> None:
        actions = self.actions
        self._betting = "/".join("".join(a.text() for a in acts) for acts in actions)
        self._betting_shape = (len(actions), len(actions[-1]) if actions else 0)

    # -- queries -----------------------------------------------------------

    def clone(self) -> State:
        """An independent copy (sharing only the frozen game definition)."""
        # Through __init__ (compiled, ``State.__new__`` runs it too), with the betting string.
        return State(self.game, self.hand_id, self.round, self.finished, self.spent.copy(),
                     self.folded.copy(), self.max_spent, self.min_raise_to,
                     [acts.copy() for acts in self.actions], [acts.copy() for acts in self.actors],
                     (self._betting, self._betting_shape))

    @property
    def num_players(self) -> int:
        return self.table.num_players

    def fold_leaves_one(self) -> bool:
        """Whether a fold by the player to act would leave one player in: the hand
        ends there, with no cards shown.

        >>> from protocol.gamedef import load_game
        >>> State(load_game("nolimit")).fold_leaves_one()
        True
        >>> State(load_game("holdem.limit.3p")).fold_leaves_one()
        False
        """
        return self.num_folded + 2 >= self.table.num_players

    def next_to_act_after(self, position: int) -> int:
        """The first position after ``position`` (in turn order) that has not folded
        and is not all-in: after a raise by the player to act, the player to act
        next (a raise never ends the round: the others must answer it).

        >>> from protocol.gamedef import load_game
        >>> state = State(load_game("nolimit"))
        >>> state.next_to_act_after(state.current_player)
        0
        """
        return self._next_player(position)

    def _next_player(self, p: int) -> int:
        n = self.table.num_players
        folded, spent, stack = self.folded, self.spent, self.table.stack
        for _ in range(n):
            p += 1
            if p >= n:
                p -= n
            if not folded[p] and spent[p] < stack[p]:
                return p
        return p  # unreachable while the hand is live

    @property
    def current_player(self) -> int:
        """The position to act.

        Raises:
            IllegalActionError: the hand is over.
        """
        if self.finished:
            raise IllegalActionError("the hand is over; nobody is to act")
        actors = self.actors[self.round]
        if actors:
            return self._next_player(actors[-1])
        return self._next_player(self.table.first_player[self.round] - 1)

    @property
    def num_folded(self) -> int:
        # A loop, not the builtin sum: compiled, a few C steps rather than a generic call.
        folded = 0
        for flag in self.folded:
            if flag:
                folded += 1
        return folded

    @property
    def num_active(self) -> int:
        """Players who have neither folded nor gone all-in."""
        folded, spent, stack = self.folded, self.spent, self.table.stack
        active = 0
        for p in range(len(spent)):
            if not folded[p] and spent[p] < stack[p]:
                active += 1
        return active

    def _num_raises(self) -> int:
        return [a.type for a in self.actions[self.round]].count(_RAISE)

    @property
    def pot(self) -> int:
        """Chips committed by everyone so far."""
        return sum(self.spent)

    def amount_to_call(self) -> int:
        """Chips the player to act must add to call (0 when checking)."""
        p = self.current_player
        return min(self.max_spent, self.table.stack[p]) - self.spent[p]

    def can_fold(self) -> bool:
        """Folding is legal only when facing a bet (and not all-in)."""
        if self.finished:
            return False
        return self._can_fold(self.current_player)

    def _can_fold(self, p: int) -> bool:
        spent = self.spent[p]
        return spent < self.max_spent and spent < self.table.stack[p]

    def raise_range(self) -> tuple[int, int] | None:
        """The smallest and largest legal raise-to, or None if no raise is legal.

        In limit games both ends are the one raise-to the fixed size gives.
        """
        if self.finished:
            return None
        return self._raise_range(self.current_player)

    def _raise_range(self, p: int) -> tuple[int, int] | None:
        """:meth:`raise_range` for a live hand whose player to act is ``p``."""
        game = self.table
        round_actions = self.actions[self.round]
        cap = game.max_raises[self.round]
        # A round has no more raises than actions: count them only near the cap.
        if len(round_actions) >= cap and self._num_raises() >= cap:
            return None
        if len(round_actions) + game.num_players > MAX_NUM_ACTIONS:
            return None
        folded, spent, stack_of = self.folded, self.spent, game.stack
        active = 0
        for q in range(len(spent)):
            if not folded[q] and spent[q] < stack_of[q]:
                active += 1
        if active <= 1:
            return None
        stack = game.stack[p]
        if game.is_limit:
            to = min(self.max_spent + game.raise_size[self.round], stack)
            return (to, to)
        low, high = self.min_raise_to, stack
        if low > stack:
            if self.max_spent >= stack:
                return None
            low = high
        return (low, high)

    def can_raise(self) -> bool:
        return self.raise_range() is not None

    def legal_actions(self) -> list[ActionType]:
        """The legal action types, in the order fold, call, raise."""
        if self.finished:
            return []
        p = self.current_player
        legal = [ActionType.CALL]
        if self._can_fold(p):
            legal.insert(0, ActionType.FOLD)
        if self._raise_range(p) is not None:
            legal.append(ActionType.RAISE)
        return legal

    def is_legal(self, action: Action) -> bool:
        """True when :meth:`apply` would accept ``action`` unchanged."""
        try:
            self.check(action)
        except IllegalActionError:
            return False
        return True

    def check(self, action: Action) -> None:
        """Raise :class:`IllegalActionError` unless ``action`` is legal as given."""
        if self.finished:
            raise IllegalActionError("the hand is over", action.text())
        self._check(action, self.current_player)

    def _check(self, action: Action, p: int) -> None:
        """:meth:`check` for a live hand whose player to act is ``p``."""
        kind = action.type
        if kind is _CALL:
            if action.size:
                raise IllegalActionError("a call has no size", action.text())
        elif kind is _FOLD:
            if not self._can_fold(p):
                raise IllegalActionError("fold is not allowed when not facing a bet", "f")
            if action.size:
                raise IllegalActionError("a fold has no size", action.text())
        else:
            bounds = self._raise_range(p)
            if bounds is None:
                raise IllegalActionError("no raise is allowed here", action.text())
            if self.table.is_limit:
                if action.size:
                    raise IllegalActionError("a limit raise has no size", action.text())
            elif not bounds[0] <= action.size <= bounds[1]:
                raise IllegalActionError(
                    f"raise-to must be in [{bounds[0]}, {bounds[1]}]", action.text()
                )

    # -- apply -------------------------------------------------------------

    def apply(self, action: Action) -> Action:
        """Check ``action``, apply it, and return it.

        Raises:
            IllegalActionError: the action is not legal; the state is unchanged.
        """
        if self.finished:
            raise IllegalActionError("the hand is over", action.text())
        # The dealer applies every action of every match here, so the player
        # to act is worked out inline and the end of the round in one step
        # (two calls per action, not four), and a call's check (it is always
        # legal in a live hand) is left out. tests/protocol/test_fast_paths.py holds the slow
        # twin (the rules as written in acpc.md) and compares them.
        game = self.table
        round_ = self.round
        round_actors = self.actors[round_]
        n = game.num_players
        folded, spent, stack = self.folded, self.spent, game.stack
        p = round_actors[-1] if round_actors else game.first_player[round_] - 1
        for _ in range(n):
            p += 1
            if p >= n:
                p -= n
            if not folded[p] and spent[p] < stack[p]:
                break
        kind = action.type
        if kind is not _CALL or action.size:
            self._check(action, p)
        actions = self.actions
        round_actions = actions[round_]
        rounds, last = len(actions), actions[-1]
        if self._betting_shape != (rounds, len(last)):
            self._rebuild_betting()  # bring the cache up to date before it grows
        round_actions.append(action)
        round_actors.append(p)
        if kind is _CALL:
            self._betting += "c"
            max_spent = self.max_spent
            spent[p] = min(stack[p], max_spent)
        elif kind is _FOLD:
            self._betting += "f"
            folded[p] = True
        else:
            self._betting += action.text()
            if game.is_limit:
                self.max_spent = min(self.max_spent + game.raise_size[round_], stack[p])
            else:
                self.min_raise_to = max(self.min_raise_to, 2 * action.size - self.max_spent)
                self.max_spent = action.size
            spent[p] = self.max_spent
        self._betting_shape = (rounds, len(last))
        self._close_round_if_done(round_actions, round_actors)
        return action

    def _close_round_if_done(self, round_actions: list[Action], round_actors: list[int]) -> None:
        """After an action: end the hand if one player is left, the round if
        everyone who can act has called the last raise (or checked)."""
        folded, spent, stack = self.folded, self.spent, self.table.stack
        n = len(spent)
        if folded.count(True) + 1 >= n:
            self.finished = True
            return
        active = 0
        for q in range(n):
            if not folded[q] and spent[q] < stack[q]:
                active += 1
        # The calls since the round's last raise, and the raiser, by players not all-in.
        called = 0
        i = len(round_actions)
        while i:
            i -= 1
            done = round_actions[i].type
            q = round_actors[i]
            if done is _RAISE:
                if spent[q] < stack[q]:
                    called += 1
                break
            if done is _CALL and spent[q] < stack[q]:
                called += 1
        if called >= active:
            self._end_round(active)

    def _end_round(self, active: int) -> None:
        """Every player who can act has called the last raise (or checked): the
        next round begins, or the hand ends; ``active`` players can still act."""
        game = self.table
        if active > 1:
            if self.round + 1 < game.num_rounds:
                self._next_round()
                max_blind = game.max_blind
                self.min_raise_to = (max_blind if max_blind > 1 else 1) + self.max_spent
            else:
                self.finished = True
        else:
            # Everyone left is all-in (or one can act against all-ins):
            # jump to the last round for the showdown.
            while self.round + 1 < game.num_rounds:
                self._next_round()
            self.finished = True

    def _next_round(self) -> None:
        self.round += 1
        self.actions.append([])
        self.actors.append([])
        self._betting += "/"
        self._betting_shape = (len(self.actions), 0)

    # -- results -----------------------------------------------------------

    @property
    def is_showdown(self) -> bool:
        """True when the hand is over and two or more players did not fold."""
        return self.finished and self.num_folded + 1 < self.num_players

    def betting_string(self) -> str:
        """The ACPC betting string, e.g. ``'r300c/cr900f'``."""
        actions = self.actions
        if self._betting_shape != (len(actions), len(actions[-1]) if actions else 0):
            self._rebuild_betting()
        return self._betting

    def values(self, hole: Sequence[Sequence[int]], board: Sequence[int]) -> tuple[float, ...]:
        """Each position's winnings in chips at the end of the hand.

        Args:
            hole: hole cards of each position (needed only at a showdown).
            board: the board cards of the whole hand (the showdown uses those of
                every round; a finished hand always reaches the last round).

        Raises:
            IllegalActionError: the hand is not over.
        """
        if not self.finished:
            raise IllegalActionError("values exist only at the end of a hand")
        n = self.num_players
        if self.num_folded + 1 == n:
            winner = self.folded.index(False)
            total = sum(self.spent)
            return tuple(
                float(total - self.spent[p]) if p == winner else float(-self.spent[p])
                for p in range(n)
            )
        ranks = [
            -1 if self.folded[p] else rank_hand(list(hole[p]) + list(board)) for p in range(n)
        ]
        return showdown_values(self.spent, ranks)


def showdown_values(spent: Sequence[int], ranks: Sequence[int]) -> tuple[float, ...]:
    """Split side pots among the best ranks; a folded player's rank is -1.

    One pot per distinct commitment level, shared equally among the
    best-ranked live players who reached that level. Heads-up (every showdown
    of a heads-up match) by :func:`_heads_up_values`, the same sums in the same
    order; tests/protocol/test_rules.py checks the two agree.
    """
    if len(spent) == 2:
        return _heads_up_values(spent[0], spent[1], ranks[0], ranks[1])
    return _showdown_values_general(spent, ranks)


def _heads_up_values(spent_a: int, spent_b: int, rank_a: int, rank_b: int) -> tuple[float, ...]:
    """:func:`_showdown_values_general` of two players: the pot both reached, then the larger
    commitment's excess, which only its own player can win back."""
    won_a = won_b = 0.0
    low = spent_a if spent_a < spent_b else spent_b
    if low and (rank_a >= 0 or rank_b >= 0):
        size = 2 * low
        if rank_a > rank_b:
            won_a += size
        elif rank_b > rank_a:
            won_b += size
        else:
            won_a += size / 2
            won_b += size / 2
    if spent_a > low and rank_a >= 0:
        won_a += spent_a - low
    elif spent_b > low and rank_b >= 0:
        won_b += spent_b - low
    return (won_a - spent_a, won_b - spent_b)


def _showdown_values_general(spent: Sequence[int], ranks: Sequence[int]) -> tuple[float, ...]:
    """:func:`showdown_values` for any number of players."""
    n = len(spent)
    won = [0.0] * n
    previous = 0
    for level in sorted(set(spent)):
        contributors = [p for p in range(n) if spent[p] >= level]
        size = (level - previous) * len(contributors)
        live = [p for p in contributors if ranks[p] >= 0]
        if live and size:
            best = max(ranks[p] for p in live)
            winners = [p for p in live if ranks[p] == best]
            for w in winners:
                won[w] += size / len(winners)
        previous = level
    return tuple(won[p] - spent[p] for p in range(n))


@dataclass(frozen=True)
class Correction:
    """What :func:`correct_action` changed, with the reference's message.

    Attributes:
        original: the action as the player sent it.
        corrected: the action applied instead.
        message: the reference dealer's warning text for this correction.
        notes: warnings the reference prints before it, e.g. for a raise refused
            because the round has too many actions for one more raise and the calls.
    """

    original: Action
    corrected: Action
    message: str
    #: Warnings the reference prints before ``message`` (its ``raiseIsValid``'s).
    notes: tuple[str, ...] = ()

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return record_reduce(self)


def correct_action(
    state: State, action: Action | None, problem: str | None = None
) -> tuple[Action, Correction | None]:
    """The reference dealer's leniency: turn any action into a legal one.

    ``None`` stands for a no-limit ``r`` with no size (bad format). Invalid
    actions become a call; a no-limit raise below the minimum is raised to it
    and one above the stack is lowered to all-in.

    Args:
        state: the hand, with someone to act.
        action: the action read from the reply, or None when unreadable.
        problem: the reply's problem as :func:`protocol.wire.parse_reply`
            reports it: ``'invalid'`` (an unknown action letter: the reference
            treats it as an invalid action) or ``'bad_format'`` (treated as a
            bad action format); None when the action was read.

    Returns:
        The legal action and, when it differs from the one given, a Correction.
    """
    if problem == "invalid":
        # An unknown letter is not an action; the reference's isValidAction
        # rejects it and substitutes a call.
        return Action.CALL, Correction(
            Action.CALL, Action.CALL, "invalid action, changed to call"
        )
    if action is None or problem is not None:
        return Action.CALL, Correction(
            Action.RAISE, Action.CALL, "bad action format in response, changed to call"
        )
    if action.type is _CALL and not action.size and not state.finished:
        return action, None  # the usual reply, and always legal in a live hand
    if action.type is ActionType.RAISE:
        bounds = state.raise_range()
        if bounds is not None and not state.game.is_limit:
            low, high = bounds
            if action.size < low:
                fixed = Action.raise_to(low)
                return fixed, Correction(action, fixed, f"raise of {action.size} increased to {low}")
            if action.size > high:
                fixed = Action.raise_to(high)
                return fixed, Correction(action, fixed, f"raise of {action.size} decreased to {high}")
            return action, None  # in the legal range: legal
        if bounds is not None:
            # Limit: a raise is legal here, and a size given is ignored.
            return (Action.RAISE if action.size else action), None
    if state.is_legal(action):
        return action, None
    return Action.CALL, Correction(action, Action.CALL, "invalid action, changed to call",
                                   _raise_notes(state) if action.type is ActionType.RAISE else ())


#: The reference's raiseIsValid prints this when it refuses a raise for the actions cap.
TOO_MANY_ACTIONS = "#actions in round is too close to MAX_NUM_ACTIONS, forcing call/fold"


def _raise_notes(state: State) -> tuple[str, ...]:
    """The warning the reference's ``raiseIsValid`` prints for a raise in ``state``: the
    actions cap is checked after the raises cap, and says so (tuple of one), else nothing."""
    if state.finished:
        return ()
    game = state.game
    round_ = state.round
    if state._num_raises() >= game.max_raises[round_]:
        return ()
    if len(state.actions[round_]) + game.num_players > MAX_NUM_ACTIONS:
        return (TOO_MANY_ACTIONS,)
    return ()
