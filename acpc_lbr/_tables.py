"""Build (and load) the lookup tables of the hand evaluator.

The evaluator (:mod:`acpc_lbr.evaluator`) ranks a hand of 5, 6 or 7 cards with
a handful of table lookups:

* Every card has a 64-bit *key*: an additive rank key in the low 32 bits and a
  suit counter (3 bits per suit, suit ``s`` at bit ``32 + 3*s``) above it.
  The rank keys ``RANK_KEYS`` are chosen so that the sums over every multiset
  of 7 ranks (each rank at most 4 times) are all distinct, and likewise for
  6 and 5 ranks.  Hands of 5 or 6 cards are padded with the *phantom card*
  52, whose rank key ``PHANTOM_KEY`` exceeds every 7-card sum and whose suit
  counter is 0, so the three hand sizes occupy disjoint key ranges and one
  kernel serves all of them.
* ``flush_suit[key >> 32]`` gives the suit holding 5 or more of the cards, or -1.
* With a flush, ``flush_rank[mask]`` ranks the 13-bit rank mask of that suit
  (best straight flush or flush of 5..7 ranks).  With 7 or fewer cards a flush
  excludes quads and full houses, so the flush rank is the hand rank.
* Without a flush, the rank-key sum ``r`` goes through a row-displacement
  perfect hash: ``hash_values[hash_offsets[r >> ROW_SHIFT] + (r & ROW_MASK)]``.

Ranks are the position of the best five cards among the 7462 distinct
five-card hand classes, 1 (7-5-4-3-2 high) ... 7462 (royal flush): higher is
better, equal means a tie, suits never break ties, A-2-3-4-5 is the lowest
straight; the textbook order, which is the order of the ACPC reference ranker.

The tables take a few seconds to build in Python, so they ship as
``acpc_lbr/data/evaluator_tables.npz`` (about 0.4 MB); ``load_tables`` reads
that file and falls back to building when it is missing.  The test suite
regenerates the tables and compares them with the shipped file.

Regenerate the file with ``python -m acpc_lbr._tables``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

#: Additive rank keys for ranks 2..A: sums of up to 7 ranks (each at most 4
#: times) are unique per hand size (checked by :func:`build_tables`).
RANK_KEYS: tuple[int, ...] = (
    0,
    1,
    5,
    22,
    98,
    453,
    2031,
    8698,
    22854,
    83661,
    262349,
    636345,
    1479181,
)
#: Rank key of the phantom padding card (index 52); larger than any 7-card sum.
PHANTOM_KEY = 1 << 23
#: Index of the phantom padding card used for 5- and 6-card hands.
PHANTOM_CARD = 52
#: Bit position of the suit counters inside a card key.
SUIT_SHIFT = 32
#: Row shift of the perfect hash (rows of 512 columns).
ROW_SHIFT = 9
ROW_MASK = (1 << ROW_SHIFT) - 1
#: Number of distinct five-card hand classes.
NUM_CLASSES = 7462
#: Category names, worst to best; index = category number.
CATEGORY_NAMES: tuple[str, ...] = (
    "high card",
    "pair",
    "two pair",
    "three of a kind",
    "straight",
    "flush",
    "full house",
    "four of a kind",
    "straight flush",
)

DATA_FILE = Path(__file__).resolve().parent / "data" / "evaluator_tables.npz"

# Format version of the shipped file; bump when the layout changes.
FORMAT_VERSION = 1

_Tuple = tuple[int, ...]


# ---------------------------------------------------------------------------
# Textbook hand values (category, tie-breaking ranks...) -- pure Python.
# ---------------------------------------------------------------------------


def _straight_high(present: set[int]) -> int:
    """Return the top rank of the best straight within ``present`` ranks, or -1."""
    for high in range(12, 3, -1):
        if all(high - i in present for i in range(5)):
            return high
    if {12, 0, 1, 2, 3} <= present:
        return 3  # A-2-3-4-5: the five is the top card
    return -1


def value_of_flush(mask: int) -> _Tuple:
    """Textbook value of the best hand from one suit's 13-bit rank ``mask``."""
    present = {r for r in range(13) if mask >> r & 1}
    high = _straight_high(present)
    if high >= 0:
        return (8, high)
    return (5, *sorted(present, reverse=True)[:5])


def value_of_counts(counts: tuple[int, ...]) -> _Tuple:
    """Textbook value of the best non-flush hand from 13 rank ``counts``."""
    desc = range(12, -1, -1)
    present = [r for r in desc if counts[r] > 0]
    quads = [r for r in desc if counts[r] >= 4]
    trips = [r for r in desc if counts[r] >= 3]
    pairs = [r for r in desc if counts[r] >= 2]
    if quads:
        q = quads[0]
        return (7, q, next(r for r in present if r != q))
    if trips and len(pairs) >= 2:
        t = trips[0]
        return (6, t, next(r for r in pairs if r != t))
    high = _straight_high(set(present))
    if high >= 0:
        return (4, high)
    if trips:
        t = trips[0]
        return (3, t, *[r for r in present if r != t][:2])
    if len(pairs) >= 2:
        p1, p2 = pairs[:2]
        return (2, p1, p2, *[r for r in present if r not in (p1, p2)][:1])
    if pairs:
        p = pairs[0]
        return (1, p, *[r for r in present if r != p][:3])
    return (0, *present[:5])


def _rank_multisets(n: int) -> np.ndarray:
    """All count vectors of ``n`` ranks (each rank at most 4 times), shape (m, 13)."""
    out: list[tuple[int, ...]] = []
    cur = [0] * 13

    def rec(i: int, left: int) -> None:
        if i == 13:
            if left == 0:
                out.append(tuple(cur))
            return
        for c in range(min(4, left) + 1):
            cur[i] = c
            rec(i + 1, left - c)
        cur[i] = 0

    rec(0, n)
    return np.array(out, dtype=np.int64)


def _perfect_hash(groups: list[np.ndarray]) -> tuple[np.ndarray, int]:
    """Row-displacement perfect hash of distinct non-negative keys.

    Rows (``key >> ROW_SHIFT``) are placed first-fit, largest row first, group
    by group (the 7-card keys first so their slots are compact).

    Returns:
        ``(offsets, size)``: int64 offsets per row, and the table size.
    """
    total = sum(len(g) for g in groups)
    nrows = int(max(int(g.max()) for g in groups) >> ROW_SHIFT) + 1
    offsets = np.zeros(nrows, dtype=np.int64)
    window = 1024
    occupied = np.zeros(4 * total + 4 * (ROW_MASK + 1) + window, dtype=bool)
    first_free = 0
    for keys in groups:
        rows = keys >> ROW_SHIFT
        cols = keys & ROW_MASK
        order = np.argsort(rows, kind="stable")
        rows_s, cols_s = rows[order], cols[order]
        urows, start, count = np.unique(rows_s, return_index=True, return_counts=True)
        for ri in np.argsort(-count, kind="stable"):
            c = cols_s[start[ri] : start[ri] + count[ri]]
            d = max(0, first_free - int(c.min()))
            while True:
                ok = np.ones(window, dtype=bool)
                for x in c:
                    ok &= ~occupied[d + x : d + x + window]
                hits = np.flatnonzero(ok)
                if hits.size:
                    d += int(hits[0])
                    break
                d += window
            occupied[d + c] = True
            offsets[urows[ri]] = d
            while occupied[first_free]:
                first_free += 1
    size = int(np.flatnonzero(occupied).max()) + 1
    return offsets, size


def build_tables() -> dict[str, np.ndarray]:
    """Build every evaluator table from scratch (pure Python/numpy, a few seconds).

    Returns:
        A dict of arrays:

        * ``card_key`` (256,) int64: rank key | suit counter << 32, per card
          (index 52 = phantom padding card, 53..255 zero).
        * ``card_mask`` (256,) uint64: ``1 << (16 * suit + rank)`` per card, 0 for 52 and above.
        * ``flush_suit`` (4096,) int8: suit with >= 5 cards for a suit-counter
          code, else -1.
        * ``flush_rank`` (8192,) int16: rank of the best flush/straight flush in
          a 13-bit rank mask with >= 5 bits, else 0.
        * ``hash_offsets`` (rows,) int32 and ``hash_values`` (size,) int16: the
          perfect hash for non-flush rank multisets of 5, 6 and 7 cards.
        * ``category_start`` (9,) int16: lowest rank of each category.
        * ``meta`` (3,) int64: ``[FORMAT_VERSION, ROW_SHIFT, PHANTOM_KEY]``.

    Raises:
        RuntimeError: if the rank keys do not give unique sums (cannot happen
            with the shipped constants; guards edits).
    """
    groups, group_values = _rank_multiset_keys()
    flush_masks = [m for m in range(1 << 13) if m.bit_count() >= 5]
    flush_values = [value_of_flush(m) for m in flush_masks]

    classes = sorted(set(flush_values).union(*map(set, group_values)))
    if len(classes) != NUM_CLASSES:
        raise RuntimeError(f"expected {NUM_CLASSES} hand classes, got {len(classes)}")
    # Hand values (tuples) become dense ranks 1..NUM_CLASSES, higher is better.
    dense = {v: i + 1 for i, v in enumerate(classes)}

    flush_rank = np.zeros(1 << 13, dtype=np.int16)
    flush_rank[flush_masks] = [dense[v] for v in flush_values]

    offsets, size = _perfect_hash(groups)
    hash_values = np.zeros(size, dtype=np.int16)
    for k, vals in zip(groups, group_values):
        idx = offsets[k >> ROW_SHIFT] + (k & ROW_MASK)
        hash_values[idx] = [dense[v] for v in vals]

    card_key, card_mask = _card_tables()
    category_start = np.zeros(len(CATEGORY_NAMES), dtype=np.int16)
    for cat in range(len(CATEGORY_NAMES)):
        category_start[cat] = min(r for v, r in dense.items() if v[0] == cat)

    return {
        "card_key": card_key,
        "card_mask": card_mask,
        "flush_suit": _flush_suit_table(),
        "flush_rank": flush_rank,
        "hash_offsets": offsets.astype(np.int32),
        "hash_values": hash_values,
        "category_start": category_start,
        "meta": np.array([FORMAT_VERSION, ROW_SHIFT, PHANTOM_KEY], dtype=np.int64),
    }


def _rank_multiset_keys() -> tuple[list[np.ndarray], list[list[_Tuple]]]:
    """For 7, 6 and 5 cards: each rank multiset's key sum (phantom-padded to 7) and its hand value.

    Raises:
        RuntimeError: if two multisets share a key (the rank keys are not sum-unique).
    """
    keys = np.array(RANK_KEYS, dtype=np.int64)
    groups, group_values = [], []
    for n in (7, 6, 5):
        counts = _rank_multisets(n)
        k = counts @ keys + (7 - n) * PHANTOM_KEY
        if len(np.unique(k)) != len(k):
            raise RuntimeError(f"rank keys collide for {n}-card hands")
        groups.append(k)
        group_values.append([value_of_counts(tuple(int(x) for x in row)) for row in counts])
    return groups, group_values


def _card_tables() -> tuple[np.ndarray, np.ndarray]:
    """``card_key`` (256,) int64 and ``card_mask`` (256,) uint64, as :func:`build_tables` describes."""
    # 256 entries so that any uint8 card index is a safe read (53..255 are zero).
    card_key = np.zeros(256, dtype=np.int64)
    for c in range(52):
        card_key[c] = RANK_KEYS[c >> 2] | (1 << (SUIT_SHIFT + 3 * (c & 3)))
    card_key[PHANTOM_CARD] = PHANTOM_KEY
    card_mask = np.zeros(256, dtype=np.uint64)
    for c in range(52):
        card_mask[c] = np.uint64(1) << np.uint64(16 * (c & 3) + (c >> 2))
    return card_key, card_mask


def _flush_suit_table() -> np.ndarray:
    """``flush_suit`` (4096,) int8: the suit with 5+ cards in a suit-counter code, else -1."""
    flush_suit = np.full(1 << 12, -1, dtype=np.int8)
    for code in range(1 << 12):
        for s in range(4):
            if (code >> (3 * s)) & 7 >= 5:
                flush_suit[code] = s
    return flush_suit


def load_tables(path: Path = DATA_FILE) -> dict[str, np.ndarray]:
    """Load the shipped tables, building them in memory if the file is missing or stale.

    Args:
        path: The ``.npz`` file to read.

    Returns:
        The same dict as :func:`build_tables`.
    """
    try:
        with np.load(path) as data:
            tables = {name: data[name] for name in data.files}
        meta = tables["meta"]
        if [int(x) for x in meta] == [FORMAT_VERSION, ROW_SHIFT, PHANTOM_KEY]:
            return tables
    except (OSError, KeyError, ValueError):
        pass
    return build_tables()


def tables_digest(tables: dict[str, np.ndarray]) -> str:
    """SHA-256 over every table's name, dtype, shape and bytes (for comparisons)."""
    h = hashlib.sha256()
    for name in sorted(tables):
        a = np.ascontiguousarray(tables[name])
        h.update(f"{name}:{a.dtype.str}:{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def write_tables(path: Path = DATA_FILE) -> dict[str, np.ndarray]:
    """Build the tables and write them to ``path`` (compressed ``.npz``)."""
    tables = build_tables()
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **tables)  # type: ignore[arg-type]
    return tables


if __name__ == "__main__":  # pragma: no cover - maintenance entry point
    written = write_tables()
    print(f"wrote {DATA_FILE} ({DATA_FILE.stat().st_size} bytes), digest {tables_digest(written)}")
