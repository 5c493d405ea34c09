"""The hand evaluator orders hands exactly as the ACPC reference ranker does.

Oracles: the reference ranker's own values (``tests/data/acpc-reference/
rank_vectors.tsv``), the independent phevaluator library, and the naive
best-5-of-N twin in ``tests/acpc_lbr/naive.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acpc_lbr import _tables, evaluator
from acpc_lbr.evaluator import EvaluatorInputError, category, evaluate, evaluate_batch

from . import naive

REPO = Path(__file__).resolve().parents[2]
from tests.reference import REFERENCE_DIR

RANK_VECTORS = REFERENCE_DIR / "rank_vectors.tsv"

# Pure-Python runs (NUMBA_DISABLE_JIT=1, the coverage job) use smaller samples.
SCALE = 1 if not numba.config.DISABLE_JIT else 100


def random_hands(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    """``n`` random hands of ``k`` distinct cards, shape (n, k) uint8."""
    keys = rng.random((n, 52), dtype=np.float32)
    return np.argpartition(keys, k, axis=1)[:, :k].astype(np.uint8)


def dense(values: np.ndarray) -> np.ndarray:
    """Dense ranks of ``values``: equal values share a rank, order preserved."""
    return np.unique(values, return_inverse=True)[1].ravel()


def assert_same_order(ours: np.ndarray, theirs: np.ndarray) -> None:
    """Two value arrays induce the same order and the same ties (pairwise)."""
    a, b = dense(ours), dense(theirs)
    mismatch = np.flatnonzero(a != b)
    assert mismatch.size == 0, f"order differs first at index {mismatch[:5]}"


def naive_ranks(hands: np.ndarray) -> list[tuple[int, ...]]:
    """Naive tuple values of every row."""
    return [naive.hand_value(row) for row in hands.tolist()]


def dense_of_tuples(values: list[tuple[int, ...]]) -> np.ndarray:
    """Dense ranks of comparable tuples."""
    order = {v: i for i, v in enumerate(sorted(set(values)))}
    return np.array([order[v] for v in values])


# ---------------------------------------------------------------------------
# Reference ranker
# ---------------------------------------------------------------------------


def _reference_groups() -> dict[int, tuple[np.ndarray, np.ndarray]]:
    if not RANK_VECTORS.is_file():
        pytest.fail(f"reference vectors not found at {RANK_VECTORS} (tests/data/acpc-reference)")
    groups: dict[int, tuple[list[list[int]], list[int]]] = {}
    for line in RANK_VECTORS.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        text, value = line.split("\t")
        hand = naive.cards(text)
        groups.setdefault(len(hand), ([], []))
        groups[len(hand)][0].append(hand)
        groups[len(hand)][1].append(int(value))
    return {k: (np.array(h), np.array(v)) for k, (h, v) in groups.items()}


def test_reference_vectors_file_layout() -> None:
    """The reference file holds 4000 7-card, 500 6-card and 500 5-card hands."""
    groups = _reference_groups()
    assert {k: len(v[1]) for k, v in groups.items()} == {7: 4000, 6: 500, 5: 500}


@pytest.mark.parametrize("k", [5, 6, 7])
def test_matches_reference_ranker_order_and_ties(k: int) -> None:
    """Every reference line: same order and same ties as rankCardset (rank_vectors.tsv)."""
    hands, ref = _reference_groups()[k]
    ours = evaluate_batch(hands)
    assert_same_order(ours, ref)
    # Spelled out: sorted by our rank, reference values never decrease.
    order = np.argsort(ours, kind="stable")
    assert np.all(np.diff(ref[order]) >= 0)


def test_reference_bands_map_to_categories() -> None:
    """Our category of each 7-card reference hand matches the reference value band (spec 6)."""
    bands = [51, 1320, 5296, 8619, 9623, 9634, 10921, 11935, 12106]  # spec/acpc.md table
    hands, ref = _reference_groups()[7]
    ours = evaluate_batch(hands)
    ref_cat = np.searchsorted(bands, ref, side="right") - 1
    our_cat = [evaluator.category_index(int(r)) for r in ours]
    assert list(ref_cat) == our_cat


# ---------------------------------------------------------------------------
# Independent library: phevaluator (lower is better there; same card indices)
# ---------------------------------------------------------------------------


def _phevaluator_values(hands: np.ndarray) -> np.ndarray:
    from phevaluator import evaluate_cards

    return np.array([evaluate_cards(*row) for row in hands.tolist()], dtype=np.int64)


def test_phevaluator_card_convention() -> None:
    """phevaluator numbers cards rank*4+suit with suits c,d,h,s, as ACPC does."""
    from phevaluator.card import Card

    for c in range(52):
        assert Card(naive.card_text(c)).id_ == c


def _check_against_phevaluator(pairs: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = random_hands(rng, pairs, 7)
    b = random_hands(rng, pairs, 7)
    ours_a, ours_b = evaluate_batch(a), evaluate_batch(b)
    ph_a, ph_b = _phevaluator_values(a), _phevaluator_values(b)
    # Same winner or tie for each pair (phevaluator: lower value is better).
    assert np.array_equal(np.sign(ours_a - ours_b), np.sign(ph_b - ph_a))
    # Both number the 7462 classes densely, so the values correspond exactly.
    assert np.array_equal(ours_a, 7463 - ph_a)
    assert np.array_equal(ours_b, 7463 - ph_b)


def test_agrees_with_phevaluator_on_random_pairs() -> None:
    """1,000,000 random 7-card hand pairs: same winner or tie as phevaluator (~5 s)."""
    _check_against_phevaluator(1_000_000 // SCALE, seed=20240601)


@pytest.mark.slow
def test_agrees_with_phevaluator_on_many_random_pairs() -> None:
    """10,000,000 random 7-card hand pairs against phevaluator (slow, ~1 min)."""
    for chunk in range(10):
        _check_against_phevaluator(1_000_000 // SCALE, seed=1000 + chunk)


@pytest.mark.parametrize("k", [5, 6])
def test_agrees_with_phevaluator_on_short_hands(k: int) -> None:
    """200,000 random 5- and 6-card hands: exactly phevaluator's classes."""
    hands = random_hands(np.random.default_rng(k), 200_000 // SCALE, k)
    assert np.array_equal(evaluate_batch(hands), 7463 - _phevaluator_values(hands))


@pytest.mark.filterwarnings("ignore")  # eval7 imports deprecated pyparsing names
def test_agrees_with_eval7_sample() -> None:
    """20,000 random 7-card hands order as eval7.evaluate orders them."""
    import eval7

    hands = random_hands(np.random.default_rng(7), 20_000 // SCALE, 7)
    deck = [eval7.Card(naive.card_text(c)) for c in range(52)]
    theirs = np.array([eval7.evaluate([deck[c] for c in row]) for row in hands.tolist()])
    assert_same_order(evaluate_batch(hands), theirs)


# ---------------------------------------------------------------------------
# Naive twin
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("k", [5, 6, 7])
def test_agrees_with_naive_on_random_hands(k: int) -> None:
    """3000 random hands of each size: same order and ties as the naive best-5-of-N."""
    hands = random_hands(np.random.default_rng(100 + k), 3000 if SCALE == 1 else 300, k)
    assert_same_order(evaluate_batch(hands), dense_of_tuples(naive_ranks(hands)))


def test_sizes_share_one_scale() -> None:
    """A 5-, 6- and 7-card hand with the same best five cards get the same rank."""
    five = naive.cards("AsKdQh9c7s")
    assert (
        evaluate(five) == evaluate(five + naive.cards("2c")) == evaluate(five + naive.cards("2c3d"))
    )


# (better, worse) pairs, hand-picked; "=" marks a tie.
EDGE_CASES = [
    ("2c3d4h5s6c", "Ac2d3h4s5c", ">"),  # six-high straight beats the wheel
    ("Ac2d3h4s5cKdKs", "KhKcQdJs9c2h7d", ">"),  # wheel beats a pair of kings
    ("Ac2d3h4s5c", "Kc2d3h4s6c", ">"),  # wheel beats king-high
    ("2h3h4h7h9h", "TcJdQhKsAc", ">"),  # lowest flush beats the best straight
    ("4c5c6c7c8c9d", "4c5c6c7c8cTd", "="),  # flush on 6 cards: extra card irrelevant
    ("AcAdAhAsKc2d3h", "AcAdAhAsQcJdTh", ">"),  # quads: kicker decides
    (
        "AcAdAhAs5c2d2h",
        "AcAdAhAs4c3d3h",
        ">",
    ),  # quads: highest other card kicks, pairs do not count
    ("KcKdQcQdJcJd2h", "KhKsQhQsTc9d8h", ">"),  # 3 pairs: third pair's rank is the kicker
    ("KcKdQcQdJcJd2h", "KhKsQhQsJh3c2d", "="),  # 3 pairs vs two pair + J kicker: tie
    ("AcAdAhKcKdKh2s", "AcAdAhKcKd2h3s", "="),  # two trips: AAA KK plays
    ("AcAdAhKcKdKh2s", "AcAdAhQcQdQh2s", ">"),
    ("As2s3s4s5s", "KcKdKhKsAd", ">"),  # steel wheel beats quads
    ("2s3s4s5s6s", "As2s3s4s5s", ">"),  # 6-high SF beats the steel wheel
    ("AsKsQsJsTs", "KsQsJsTs9s", ">"),  # royal flush is the best straight flush
    ("AsKsQsJsTs9s8s", "AhKhQhJhTh2c3d", "="),  # suits never break ties
    ("9c8d7h6s5c4d3h", "9h8s7c6d5h2c2d", "="),  # straight on 7 cards: top five
    ("2c2d3c3d4c4d5h", "2h2s3h3s4h4s6d", "<"),  # 44-33 with a 5 kicker (no straight) < 6 kicker
]


@pytest.mark.parametrize("better,worse,relation", EDGE_CASES)
def test_edge_cases(better: str, worse: str, relation: str) -> None:
    """Hand-picked edge cases agree with the textbook order and with the naive twin."""
    a, b = naive.cards(better), naive.cards(worse)
    ours = (evaluate(a) > evaluate(b)) - (evaluate(a) < evaluate(b))
    expected = {">": 1, "=": 0, "<": -1}[relation]
    assert naive.compare(a, b) == expected
    assert ours == expected


@pytest.mark.parametrize(
    "text,name",
    [
        ("AsKsQsJsTs", "straight flush"),
        ("As2s3s4s5sKd", "straight flush"),
        ("9c9d9h9s2c3d4h", "four of a kind"),
        ("9c9d9hTsTc3d4h", "full house"),
        ("2h3h4h7h9hTcJd", "flush"),
        ("Ac2d3h4s5cKdKs", "straight"),
        ("7c7d7hAsKc", "three of a kind"),
        ("7c7d8h8sKc", "two pair"),
        ("7c7dQh8sKc3d", "pair"),
        ("2c4d6h8sTcQdAh", "high card"),
    ],
)
def test_category_names(text: str, name: str) -> None:
    """category() names the hand's category."""
    assert category(evaluate(naive.cards(text))) == name


def test_extreme_ranks() -> None:
    """Royal flush is the top class (7462), 7-5-4-3-2 offsuit the bottom (1)."""
    assert evaluate(naive.cards("AhKhQhJhTh")) == evaluator.NUM_CLASSES == 7462
    assert evaluate(naive.cards("7c5d4h3s2c")) == 1


@settings(max_examples=300 if SCALE == 1 else 30, deadline=None)
@given(
    st.lists(st.integers(0, 51), min_size=14, max_size=14, unique=True),
)
def test_random_pairs_against_naive(cards: list[int]) -> None:
    """Hypothesis: two random disjoint 7-card hands compare and categorise as in naive."""
    a, b = cards[:7], cards[7:]
    ra, rb = evaluate(a), evaluate(b)
    assert (ra > rb) - (ra < rb) == naive.compare(a, b)
    assert evaluator.category_index(ra) == naive.hand_value(a)[0]


# ---------------------------------------------------------------------------
# Front door
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "hand",
    [
        [0, 1, 2, 3],  # too few
        [0, 1, 2, 3, 4, 5, 6, 7],  # too many
        [0, 1, 2, 3, 52],  # out of range
        [0, 1, 2, 3, -1],  # negative
        [0, 1, 2, 3, 3],  # repeated
        [0, 1, 2, 3, 4, 5, 0],  # repeated, 7 cards
        [0.0, 1.0, 2.0, 3.0, 4.0],  # not integers
        [True, False, True, False, True],  # booleans are not cards
        [[0, 1], [2, 3]],  # not flat
    ],
)
def test_evaluate_rejects_bad_input(hand: list[object]) -> None:
    """evaluate() raises EvaluatorInputError (a ValueError) on bad hands."""
    with pytest.raises(EvaluatorInputError):
        evaluate(hand)  # type: ignore[arg-type]
    assert issubclass(EvaluatorInputError, ValueError)


def test_evaluate_batch_rejects_bad_rows() -> None:
    """evaluate_batch() names the first bad row and checks shape and dtype."""
    hands = random_hands(np.random.default_rng(0), 10, 7)
    hands[6, 3] = hands[6, 5]
    with pytest.raises(EvaluatorInputError, match="hand 6"):
        evaluate_batch(hands)
    with pytest.raises(EvaluatorInputError):
        evaluate_batch(np.zeros((3, 4), dtype=np.int64))
    with pytest.raises(EvaluatorInputError):
        evaluate_batch(np.zeros(7, dtype=np.int64))
    with pytest.raises(EvaluatorInputError):
        evaluate_batch(np.full((2, 7), 300, dtype=np.int64))  # would wrap to a valid uint8
    with pytest.raises(EvaluatorInputError):
        evaluate_batch(np.full((2, 7), 60, dtype=np.uint8))


def test_evaluate_batch_accepts_dtypes_and_empty() -> None:
    """Any integer dtype and layout gives the same ranks; an empty batch is fine."""
    hands = random_hands(np.random.default_rng(1), 100, 7)
    expected = evaluate_batch(hands)
    for dtype in (np.int8, np.int16, np.int32, np.int64, np.uint16):
        assert np.array_equal(evaluate_batch(hands.astype(dtype)), expected)
    assert np.array_equal(evaluate_batch(np.asfortranarray(hands)), expected)
    assert evaluate_batch(np.zeros((0, 7), dtype=np.int64)).shape == (0,)
    assert evaluate_batch(hands).dtype == np.int32


@pytest.mark.parametrize("rank", [0, 7463, -5, 2.5, True])
def test_category_rejects_bad_rank(rank: object) -> None:
    """category() raises EvaluatorInputError outside 1..7462 or for non-integers."""
    with pytest.raises(EvaluatorInputError):
        category(rank)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# Tables and kernels
# ---------------------------------------------------------------------------


def test_shipped_tables_match_a_fresh_build() -> None:
    """acpc_lbr/data/evaluator_tables.npz is exactly what _tables.build_tables() makes (~5 s)."""
    shipped = _tables.load_tables()
    fresh = _tables.build_tables()
    assert sorted(shipped) == sorted(fresh)
    for name in fresh:
        assert shipped[name].dtype == fresh[name].dtype, name
        assert np.array_equal(shipped[name], fresh[name]), name


def test_incremental_state_matches_full_evaluation() -> None:
    """hand_state + rank_from_key (board first, then hole cards) equals hand_rank7."""
    t = evaluator.TABLES
    rng = np.random.default_rng(3)
    for hand in random_hands(rng, 200, 7).astype(np.int64):
        key, mask = evaluator.hand_state(t, hand, 5)
        key += t.card_key[hand[5]] + t.card_key[hand[6]]
        mask |= t.card_mask[hand[5]] | t.card_mask[hand[6]]
        full = evaluator.hand_rank7(t, *hand)
        assert evaluator.rank_from_key(t, key, mask) == full == evaluate(hand)
        assert t.card_mask[hand[0]] == evaluator.card_bit(hand[0])
    assert evaluator.card_bit(evaluator.PHANTOM_CARD) == 0


def test_pure_python_mode_agrees() -> None:
    """With NUMBA_DISABLE_JIT=1 the kernels, run as Python, give the same ranks."""
    hands = random_hands(np.random.default_rng(11), 300, 7)
    code = (
        "import sys, numpy as np\n"
        "from acpc_lbr.evaluator import evaluate_batch\n"
        "h = np.array(eval(sys.stdin.read()), dtype=np.uint8)\n"
        "print(evaluate_batch(h).tolist())\n"
    )
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    out = subprocess.run(
        [sys.executable, "-c", code],
        input=repr(hands.tolist()),
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        check=True,
        timeout=120,
    )
    assert eval(out.stdout) == evaluate_batch(hands).tolist()
