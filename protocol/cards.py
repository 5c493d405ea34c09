"""Cards and card text, as the ACPC reference numbers them.

A card's index is ``rank * 4 + suit`` with ranks ``2..A`` as ``0..12`` and
suits ``c, d, h, s`` as ``0..3`` (ACPC ``makeCard``), so ``2c`` is 0 and ``As``
is 51, whatever the game. Reduced decks (Kuhn, Leduc) keep the highest ranks
and the last suits of the full deck and keep these indices.

Private hands and their numbering (the range-query hand order) live in
:mod:`protocol.hands`.

>>> card_from_text("As"), card_to_text(21)
(51, '7d')
>>> cards_from_text("7d3d")
(21, 5)
"""

from __future__ import annotations

from collections.abc import Iterable
from operator import index
from typing import SupportsIndex

from protocol.errors import ParseError

RANKS = "23456789TJQKA"
SUITS = "cdhs"
NUM_RANKS = 13
NUM_SUITS = 4
DECK_SIZE = NUM_RANKS * NUM_SUITS


# The functions that take card indices take any integer, numpy's included
# (SupportsIndex): the compiled module (docs/architecture.md) checks types, and
# the numpy side of acpc_lbr hands them numpy integers.


def make_card(rank: int, suit: int) -> int:
    """Return the card index of ``rank`` (0 = deuce) and ``suit`` (0 = clubs)."""
    return rank * NUM_SUITS + suit


def card_rank(card: SupportsIndex) -> int:
    """Return the rank (0 = deuce ... 12 = ace) of a card index."""
    return index(card) // NUM_SUITS


def card_suit(card: SupportsIndex) -> int:
    """Return the suit (0 = clubs ... 3 = spades) of a card index."""
    return index(card) % NUM_SUITS


def card_to_text(card: SupportsIndex) -> str:
    """Return the two-character text of a card index, e.g. ``'Td'``."""
    card = index(card)
    if not 0 <= card < DECK_SIZE:
        raise ParseError("card index out of range", str(card))
    return RANKS[card // NUM_SUITS] + SUITS[card % NUM_SUITS]


def card_from_text(text: str) -> int:
    """Parse one card such as ``'Td'`` (case-insensitive, as the reference reads it)."""
    if len(text) != 2:
        raise ParseError("a card is a rank and a suit character", text)
    rank = RANKS.find(text[0].upper())
    suit = SUITS.find(text[1].lower())
    if rank < 0 or suit < 0:
        raise ParseError("not a card", text)
    return make_card(rank, suit)


#: The text of every card index, ``CARD_TEXT[c] == card_to_text(c)``.
CARD_TEXT: tuple[str, ...] = tuple(
    RANKS[c // NUM_SUITS] + SUITS[c % NUM_SUITS] for c in range(DECK_SIZE)
)
# The same as a dict, so that a lookup fails (rather than wraps) off the deck.
# Keyed by SupportsIndex: numpy's integers hash and compare as Python's do.
_CARD_TEXT_BY_INDEX: dict[SupportsIndex, str] = dict(enumerate(CARD_TEXT))


def cards_to_text(cards: Iterable[SupportsIndex]) -> str:
    """Return the concatenated text of several cards, e.g. ``'7d3d'``."""
    if not isinstance(cards, (tuple, list)):
        cards = tuple(cards)
    try:
        return "".join([_CARD_TEXT_BY_INDEX[c] for c in cards])
    except (KeyError, TypeError):
        # Off the deck or not an index: card_to_text raises the usual error.
        return "".join(card_to_text(c) for c in cards)


def cards_from_text(text: str) -> tuple[int, ...]:
    """Parse concatenated cards such as ``'2cAs8s'``."""
    if len(text) % 2:
        raise ParseError("card text has an odd length", text)
    return tuple(card_from_text(text[i : i + 2]) for i in range(0, len(text), 2))


def deck_for(num_ranks: int, num_suits: int) -> tuple[int, ...]:
    """Return the deck of a game in the reference's suit-major order.

    The reference keeps the last ``num_suits`` suits and the highest
    ``num_ranks`` ranks, and lays them out suit by suit, low rank first.
    """
    return tuple(
        make_card(rank, suit)
        for suit in range(NUM_SUITS - num_suits, NUM_SUITS)
        for rank in range(NUM_RANKS - num_ranks, NUM_RANKS)
    )
