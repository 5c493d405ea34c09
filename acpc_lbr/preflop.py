"""Exact hold'em preflop equities of every hand against every hand, from a shipped table.

Preflop, LBR needs ``e(h)`` of its hand against all 1326 opponent hands; by
enumeration that is 1,712,304 boards x ~1000 hands, about a second per call.
This module answers from an exact table instead.

Suit isomorphism: relabelling the four suits (24 permutations, applied to
both hands at once) changes no showdown, and swapping hero and villain turns
wins into losses.  The 1326 x 1225 ordered matchups of two disjoint hands fall
into 93,769 classes under the suit permutations, and 47,008 classes once a
matchup and its reverse are identified ("canonical matchups").  For each
canonical matchup the package ships the exact number of boards (out of
C(48, 5) = 1,712,304) that its first hand wins and ties, as uint32, in
``acpc_lbr/data/preflop_counts.npz`` (~0.3 MB).  The mapping from any pair of
hands to its canonical matchup is not shipped: it is recomputed with numpy on
first use (a few tens of milliseconds), and a SHA-256 of the canonical list
stored beside the counts guards against the two ever drifting apart.

Canonical form: the *key* of an ordered pair of hands ``(a, b)`` is the
smallest ``p(a) * 1326 + p(b)`` over the suit permutations ``p`` (hands in
colex order, :func:`protocol.hands.holdem`); the key of a matchup is
the smaller of the keys of ``(a, b)`` and ``(b, a)``; canonical matchups are
numbered in ascending key order, and the representative of a matchup is the
ordered pair ``(key // 1326, key % 1326)``.

Public API:

* :func:`preflop_equity_table` -- (1326, 1326) float64, ``e[a, b]`` = (wins +
  ties / 2) / 1,712,304 of hand ``a`` against hand ``b``; 0 where they share
  a card.  Built lazily from the shipped counts and cached (read-only).
* :func:`preflop_equity_vector` -- one row of it, for hero's two cards.
* :func:`preflop_counts_vector` -- the exact (wins, ties) board counts behind a row.
* :func:`canonical_matchups`, :func:`matchup_ids`, :func:`load_counts` -- the
  canonical numbering and the exact counts behind the table.

This module is the table, below :mod:`acpc_lbr.equity`, whose front door
reads it; it imports no equity code. The counts are computed by equity's
enumeration in :mod:`acpc_lbr.preflop_build` (above both), which regenerates
the shipped file (two processes, a progress bar on stderr)::

    python -m acpc_lbr.preflop_build --build [--workers 2] [--output PATH]

and which :func:`load_counts` runs, as that command, when the file is missing.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from acpc_lbr.evaluator import EquityInputError, check_cards
from protocol.hands import holdem, suit_maps

_HOLDEM = holdem()
HAND_CARDS, HAND_INDEX, NUM_HANDS = _HOLDEM.cards, _HOLDEM.pairs, _HOLDEM.num_hands

#: Boards that complete a preflop matchup: C(48, 5).
NUM_BOARDS = 1_712_304
#: Canonical (unordered, suit-isomorphic) preflop matchups of two disjoint hands.
NUM_CANONICAL_MATCHUPS = 47_008
#: Version of the data file's layout.
FORMAT_VERSION = 1
#: The table shipped as package data.
DATA_PATH = Path(__file__).resolve().parent / "data" / "preflop_counts.npz"



# ---------------------------------------------------------------------------
# Canonical numbering (pure numpy; recomputed at load time)
# ---------------------------------------------------------------------------


def _hand_permutations() -> np.ndarray:
    """(24, 1326) int64: each suit permutation as a map of colex hand numbers."""
    maps = suit_maps()
    return np.asarray(HAND_INDEX[maps[:, HAND_CARDS[:, 0]], maps[:, HAND_CARDS[:, 1]]])


def _disjoint() -> np.ndarray:
    """(1326, 1326) bool: True where the two hands share no card."""
    bits = (np.uint64(1) << HAND_CARDS[:, 0].astype(np.uint64)) | (
        np.uint64(1) << HAND_CARDS[:, 1].astype(np.uint64)
    )
    return np.asarray((bits[:, None] & bits[None, :]) == 0)


def _ordered_keys() -> np.ndarray:
    """(1326, 1326) int64 ordered-pair key (see the module docstring); -1 where hands collide.

    Computed per hero hand: one permutation maps hero to the smallest hand of its
    class (its representative); the villain, mapped the same way, is then
    minimised over the permutations that fix the representative.
    """
    perms = _hand_permutations()
    rep = perms.min(axis=0)  # (1326,) representative of each hand's class
    to_rep = perms.argmin(axis=0)  # a permutation taking each hand to it
    reps = np.unique(rep)
    # For each representative r: villain v -> min over the stabiliser of r of p(v).
    stab_min = np.empty((len(reps), NUM_HANDS), dtype=np.int64)
    for i, r in enumerate(reps):
        stab_min[i] = perms[perms[:, r] == r].min(axis=0)
    rep_row = np.searchsorted(reps, rep)
    mapped = perms[to_rep[:, None], np.arange(NUM_HANDS)[None, :]]  # p_a(b)
    keys: np.ndarray = rep[:, None] * NUM_HANDS + stab_min[rep_row[:, None], mapped]
    keys[~_disjoint()] = -1
    return keys


@lru_cache(maxsize=1)
def _numbering() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ids, flipped, canonical keys): see :func:`matchup_ids` and :func:`canonical_matchups`."""
    keys = _ordered_keys()
    matchup_key = np.minimum(keys, keys.T)
    valid = matchup_key >= 0
    present = np.zeros(NUM_HANDS * NUM_HANDS, dtype=bool)
    present[matchup_key[valid]] = True
    canonical = np.flatnonzero(present)
    number = np.cumsum(present, dtype=np.int64) - 1
    ids = np.where(valid, number[np.where(valid, matchup_key, 0)], -1).astype(np.int32)
    flipped = valid & (keys != matchup_key)
    for a in (ids, flipped, canonical):
        a.setflags(write=False)
    return ids, flipped, canonical


def matchup_ids() -> tuple[np.ndarray, np.ndarray]:
    """Canonical matchup of every ordered pair of hands.

    Returns:
        ``(ids, flipped)``: ``ids`` (1326, 1326) int32, the canonical matchup
        number (0..47007) of hand ``a`` against hand ``b``, -1 where they share
        a card; ``flipped`` (1326, 1326) bool, True where ``(a, b)`` is the
        representative pair reversed (``a`` plays the representative's second
        hand, so its wins are the stored losses).  Both read-only, cached.
    """
    ids, flipped, _ = _numbering()
    return ids, flipped


def canonical_matchups() -> np.ndarray:
    """Representative ordered pair of hands of each canonical matchup.

    Returns:
        (47008, 2) int64 colex hand numbers ``(hero, villain)``, in canonical
        id order; the stored counts are hero's wins and ties against villain.
    """
    _, _, canonical = _numbering()
    return np.stack([canonical // NUM_HANDS, canonical % NUM_HANDS], axis=1)


def canonical_checksum() -> str:
    """SHA-256 (hex) of the canonical keys as little-endian int64: the shipped file's guard."""
    _, _, canonical = _numbering()
    return hashlib.sha256(canonical.astype("<i8").tobytes()).hexdigest()


# ---------------------------------------------------------------------------
# Saving and loading
# ---------------------------------------------------------------------------


def save_counts(path: Path, wins: np.ndarray, ties: np.ndarray) -> None:
    """Write the full table of counts (47,008 entries each) as a compressed .npz."""
    if wins.shape != (NUM_CANONICAL_MATCHUPS,) or ties.shape != (NUM_CANONICAL_MATCHUPS,):
        raise ValueError("expected one count per canonical matchup")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(
        tmp,
        wins=wins.astype("<u4"),
        ties=ties.astype("<u4"),
        num_boards=np.int64(NUM_BOARDS),
        format_version=np.int64(FORMAT_VERSION),
        canonical_sha256=np.str_(canonical_checksum()),
    )
    os.replace(tmp, path)


def _cache_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "acpc-lbr" / "preflop_counts.npz"


def _read_counts(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        if int(data["format_version"]) != FORMAT_VERSION or int(data["num_boards"]) != NUM_BOARDS:
            raise RuntimeError(f"{path}: unsupported preflop table format")
        if str(data["canonical_sha256"]) != canonical_checksum():
            raise RuntimeError(
                f"{path}: canonical matchup numbering differs from this code's; "
                "rebuild with `python -m acpc_lbr.preflop_build --build`"
            )
        wins = np.array(data["wins"], dtype=np.int64)
        ties = np.array(data["ties"], dtype=np.int64)
    if wins.shape != (NUM_CANONICAL_MATCHUPS,) or ties.shape != wins.shape:
        raise RuntimeError(f"{path}: expected {NUM_CANONICAL_MATCHUPS} counts")
    return wins, ties


@lru_cache(maxsize=1)
def load_counts() -> tuple[np.ndarray, np.ndarray]:
    """Exact (wins, ties) of every canonical matchup's representative, as int64 (47008,).

    Read from the shipped package data; if it is missing (a stripped install),
    from the user cache, building it there first (minutes, progress on stderr).
    """
    for path in (DATA_PATH, _cache_path()):
        if path.exists():
            return _read_counts(path)
    print(
        "acpc-lbr: preflop equity table not found; building it once "
        f"into {_cache_path()} (a few minutes)",
        file=sys.stderr,
    )
    build_into(_cache_path())
    return _read_counts(_cache_path())


def build_into(path: Path) -> None:
    """Build the counts into ``path`` with ``python -m acpc_lbr.preflop_build`` (all cores).

    A program rather than an import: building needs equity's enumeration, and
    equity reads this table, so the builder sits above both.

    Raises:
        RuntimeError: the build failed (its own messages are on stderr).
    """
    command = [sys.executable, "-m", "acpc_lbr.preflop_build", "--build",
               "--workers", str(os.cpu_count() or 1), "--output", str(path)]
    if subprocess.run(command, check=False).returncode != 0:
        raise RuntimeError(f"building the preflop table failed: {' '.join(command)}")


@lru_cache(maxsize=1)
def preflop_equity_table() -> np.ndarray:
    """Exact preflop equity of every hand against every hand.

    Returns:
        (1326, 1326) float64, read-only, in colex hand order: ``e[a, b]`` =
        (wins + ties / 2) / 1,712,304 of hand ``a`` against hand ``b`` over
        every five-card board; 0 where the hands share a card.  Built from the
        shipped counts on first call (~0.1 s) and cached.
    """
    wins, ties = load_counts()
    ids, flipped = matchup_ids()
    losses = NUM_BOARDS - wins - ties
    # Same float expression as equity_vector, so both give identical bits.
    forward = (wins + 0.5 * ties) / NUM_BOARDS
    backward = (losses + 0.5 * ties) / NUM_BOARDS
    valid = ids >= 0
    safe = np.where(valid, ids, 0)
    table = np.where(flipped, backward[safe], forward[safe])
    table[~valid] = 0.0
    table.setflags(write=False)
    return table


def preflop_counts_vector(hero: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Exact board counts of hero's two cards against every hand, from the shipped table.

    Args:
        hero: Hero's two cards (indices 0..51).

    Returns:
        ``(wins, ties)``: int64 arrays of shape (1326,) in colex hand order,
        boards (out of 1,712,304) on which hero beats or ties each hand; 0
        for hands that share a card with hero.

    Raises:
        EquityInputError: on a bad or repeated card.
    """
    row = _hero_hand(hero)
    wins, ties = load_counts()
    ids, flipped = matchup_ids()
    valid = ids[row] >= 0
    safe = np.where(valid, ids[row], 0)
    hero_wins = np.where(flipped[row], NUM_BOARDS - wins[safe] - ties[safe], wins[safe])
    return np.where(valid, hero_wins, 0), np.where(valid, ties[safe], 0)


def preflop_equity_vector(hero: Sequence[int]) -> np.ndarray:
    """Exact preflop equity of hero's two cards against every hand.

    Args:
        hero: Hero's two cards (indices 0..51).

    Returns:
        float64 array of shape (1326,) (a fresh copy) in colex hand order; 0
        for hands that share a card with hero.

    Raises:
        EquityInputError: on a bad or repeated card.

    Pocket aces against kings of the two other suits (GNU poker-eval counts
    1,388,072 wins and 6,538 ties of 1,712,304 boards):

    >>> from protocol.cards import cards_from_text
    >>> row = preflop_equity_vector(cards_from_text("AsAh"))
    >>> round(float(row[holdem().hand_of(cards_from_text("KdKc"))]), 6)
    0.812555
    """
    return np.array(preflop_equity_table()[_hero_hand(hero)])


def _hero_hand(hero: Sequence[int]) -> int:
    """Hero's hand number.

    Raises:
        EquityInputError: a bad or repeated card, or not two of them.
    """
    c1, c2 = check_cards(hero, "hero", (2,))
    if c1 == c2:
        raise EquityInputError("a hand needs two different cards")
    return int(HAND_INDEX[c1, c2])


__all__ = [
    "DATA_PATH",
    "NUM_BOARDS",
    "NUM_CANONICAL_MATCHUPS",
    "build_into",
    "canonical_checksum",
    "canonical_matchups",
    "load_counts",
    "matchup_ids",
    "preflop_counts_vector",
    "preflop_equity_table",
    "preflop_equity_vector",
    "save_counts",
]

