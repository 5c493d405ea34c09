"""Following one seat's view of a match, one MATCHSTATE line at a time.

A bot has to know, for every line the dealer sends, whether it is the one to
act. That needs the betting replayed through :mod:`protocol.rules`. The dealer
sends the whole betting string every time, but each line only adds one action
to the previous one, so :class:`HandTracker` keeps the live
:class:`~protocol.rules.State` of the current hand and applies only the new
actions: one ``State.apply`` per line instead of a full replay. This keeps plain
play fast (10,000-hand benchmark matches); the rules are still the only judge.

>>> from protocol.gamedef import load_game
>>> tracker = HandTracker(load_game("nolimit"))
>>> view = tracker.update("MATCHSTATE:1:0::|2hAc")
>>> view.to_act, view.hole
(True, (2, 48))
>>> tracker.update("MATCHSTATE:1:0:r300:|2hAc").to_act
False
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.cards import cards_from_text
from protocol.errors import IllegalActionError, ParseError
from protocol.gamedef import GameDef
from protocol.rules import State
from protocol.wire import PREFIX, parse_betting


@dataclass
class SeatView:
    """What one MATCHSTATE line tells its receiver.

    Attributes:
        line: the line as received, without its line ending.
        position: the receiver's position in this hand.
        hand_id: the hand's number.
        state: the live public state of the hand (do not mutate it).
        to_act: True when the receiver is the one to act now.
        hole: the receiver's hole cards (card indices, in the order sent).
        board: the board cards shown so far, every round's in order.
    """

    line: str
    position: int
    hand_id: int
    state: State
    to_act: bool
    cards_text: str

    @property
    def hole(self) -> tuple[int, ...]:
        """The receiver's own hole cards."""
        holes = self.cards_text.split("/", 1)[0].split("|")
        if self.position >= len(holes):
            raise ParseError("no hole-card slot for the receiver", self.line)
        own = holes[self.position]
        if self.position == len(holes) - 1 and self.state.game.num_board_cards[0]:
            # Round 0's board cards follow the last hole field directly.
            own = own[: len(own) - 2 * self.state.game.num_board_cards[0]]
        return cards_from_text(own)

    @property
    def board(self) -> tuple[int, ...]:
        """Every board card shown so far, round 0's first."""
        parts = self.cards_text.split("/")
        first = 2 * self.state.game.num_board_cards[0]
        board0 = parts[0][len(parts[0]) - first :] if first else ""
        return cards_from_text(board0 + "".join(parts[1:]))


class HandTracker:
    """The live state of the current hand, updated incrementally from MATCHSTATE lines.

    Args:
        game: the match's game definition.
    """

    def __init__(self, game: GameDef) -> None:
        self.game = game
        self._hand_id = -1
        self._position = -1
        self._betting = ""
        self._state = State(game)

    def update(self, line: str) -> SeatView:
        """Read one MATCHSTATE line (no line ending) and return the receiver's view.

        Raises:
            ParseError: the line is not a MATCHSTATE line of this game, or its
                betting is not legal under the rules; the tracker then starts
                afresh with the next line.
        """
        if not line.startswith(PREFIX):
            raise ParseError("not a MATCHSTATE line", line)
        fields = line.split(":")
        if len(fields) != 5:
            raise ParseError("a MATCHSTATE line has five ':'-separated fields", line)
        _, position_text, hand_text, betting, cards_text = fields
        if not (position_text.isdigit() and hand_text.isdigit()):
            raise ParseError("position and hand number must be decimal", line)
        position, hand_id = int(position_text), int(hand_text)
        if position >= self.game.num_players:
            raise ParseError("position out of range", line)
        previous = self._betting
        if (
            hand_id == self._hand_id
            and position == self._position
            and betting.startswith(previous)
            and not betting[len(previous) : len(previous) + 1].isdigit()
        ):
            state = self._state
            new_text = betting[len(previous) :]
        else:
            state = State(self.game, hand_id)
            new_text = betting
            self._hand_id = -1  # until the replay below succeeds
        try:
            for actions in parse_betting(new_text, self.game, line):
                for action in actions:
                    state.apply(action)
        except IllegalActionError as error:
            self._hand_id = -1
            raise ParseError(f"betting is not legal: {error.message}", line) from error
        except ParseError:
            self._hand_id = -1
            raise
        if state.round != betting.count("/"):
            self._hand_id = -1
            raise ParseError("round separators do not match the betting", line)
        self._state, self._hand_id, self._position, self._betting = (
            state,
            hand_id,
            position,
            betting,
        )
        to_act = not state.finished and state.current_player == position
        return SeatView(line, position, hand_id, state, to_act, cards_text)
