"""The exact preflop equity table: canonical numbering, shipped counts, table and front door."""

from __future__ import annotations

import subprocess
import sys
from itertools import combinations
from pathlib import Path

import numba
import numpy as np
import pytest

from acpc_lbr import equity as eq
from acpc_lbr import preflop as pf
from acpc_lbr import preflop_build as pb
from acpc_lbr.equity import (
    HAND_CARDS,
    HAND_INDEX,
    SUIT_MAPS,
    EquityInputError,
    equity,
    equity_vector,
    equity_vs_range,
    hand_index,
)

from . import naive

REPO = Path(__file__).resolve().parents[2]
C = naive.cards
JIT = not numba.config.DISABLE_JIT
# Each full enumeration is 1.7 million boards: seconds compiled, far too long in pure Python.
needs_jit = pytest.mark.skipif(not JIT, reason="1.7 million boards per matchup in pure Python")


def hand_permutations() -> np.ndarray:
    """(24, 1326): every suit permutation as a map of hand numbers (test's own derivation)."""
    out = np.empty((24, 1326), dtype=np.int64)
    for g, card_map in enumerate(SUIT_MAPS):
        for h, (c1, c2) in enumerate(HAND_CARDS):
            out[g, h] = HAND_INDEX[card_map[c1], card_map[c2]]
    return out


@pytest.fixture(scope="module")
def table() -> np.ndarray:
    """The shipped table, loaded once for the module."""
    return pf.preflop_equity_table()


# ---------------------------------------------------------------------------
# Canonical numbering
# ---------------------------------------------------------------------------


def test_canonical_matchup_count() -> None:
    """Disjoint hand pairs fall into 47,008 classes under suit permutations and hero/villain swap."""
    reps = pf.canonical_matchups()
    ids, flipped = pf.matchup_ids()
    assert reps.shape == (pf.NUM_CANONICAL_MATCHUPS, 2) == (47_008, 2)
    assert np.array_equal(np.unique(ids[ids >= 0]), np.arange(47_008))
    # Each representative maps to its own id, unflipped.
    assert np.array_equal(ids[reps[:, 0], reps[:, 1]], np.arange(47_008))
    assert not flipped[reps[:, 0], reps[:, 1]].any()


def test_numbering_equals_brute_force_orbits() -> None:
    """The fast per-hero canonicalisation equals the minimum over all 24 permutations."""
    perms = hand_permutations()
    keys = np.full((1326, 1326), np.iinfo(np.int64).max, dtype=np.int64)
    for p in perms:
        keys = np.minimum(keys, p[:, None] * 1326 + p[None, :])
    a, b = np.triu_indices(1326, 1)
    ca, cb = HAND_CARDS[a], HAND_CARDS[b]
    disjoint = (ca[:, :, None] != cb[:, None, :]).all(axis=(1, 2))
    a, b = a[disjoint], b[disjoint]
    ordered = len(np.unique(np.concatenate([keys[a, b], keys[b, a]])))
    matchup = np.minimum(keys[a, b], keys[b, a])
    ids, flipped = pf.matchup_ids()
    assert ordered == 93_769  # ordered classes; cross-checks the unordered count below
    assert len(np.unique(matchup)) == 47_008
    assert np.array_equal(np.searchsorted(np.unique(matchup), matchup), ids[a, b])
    assert np.array_equal(flipped[a, b], keys[a, b] != matchup)
    assert np.all(ids[np.arange(1326), np.arange(1326)] == -1)


# ---------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------


def test_table_shape_and_collisions(table: np.ndarray) -> None:
    """(1326, 1326) float64, read-only, 0 exactly where the hands share a card."""
    ids, _ = pf.matchup_ids()
    assert table.shape == (1326, 1326) and table.dtype == np.float64
    assert not table.flags.writeable
    assert np.all(table[ids < 0] == 0)
    assert np.all((table[ids >= 0] > 0) & (table[ids >= 0] < 1))
    assert np.count_nonzero(ids < 0) == 1326 * 101  # each hand meets itself + 100 others


def test_table_antisymmetric(table: np.ndarray) -> None:
    """e[a, b] + e[b, a] == 1 for disjoint hands: a's wins are b's losses, ties shared."""
    ids, _ = pf.matchup_ids()
    both = table + table.T
    assert np.allclose(both[ids >= 0], 1.0, rtol=0, atol=1e-15)


def test_table_suit_permutation_invariant(table: np.ndarray) -> None:
    """Relabelling suits in both hands leaves every entry unchanged (bit for bit)."""
    for p in hand_permutations():
        assert np.array_equal(table[p[:, None], p[None, :]], table)


@needs_jit
def test_sampled_entries_equal_pairwise_enumeration(table: np.ndarray) -> None:
    """20 random matchups: the table equals equity() over all 1,712,304 boards."""
    rng = np.random.default_rng(2024)
    for _ in range(20):
        cards = rng.choice(52, 4, replace=False).tolist()
        a, b = hand_index(*cards[:2]), hand_index(*cards[2:])
        win, tie, _ = equity(cards[:2], cards[2:])
        assert table[a, b] == pytest.approx(win + tie / 2, rel=0, abs=1e-12)


@needs_jit
def test_counts_equal_exact_integer_enumeration() -> None:
    """20 random canonical matchups: stored wins and ties equal exact integer board counts."""
    wins, ties = pf.load_counts()
    reps = pf.canonical_matchups()
    rng = np.random.default_rng(7)
    for i in rng.choice(len(reps), 20, replace=False):
        hero, villain = HAND_CARDS[reps[i, 0]].tolist(), HAND_CARDS[reps[i, 1]].tolist()
        w, t, lo = eq.matchup_counts(hero, villain)
        assert (w, t) == (wins[i], ties[i])
        assert w + t + lo == pf.NUM_BOARDS


@needs_jit
@pytest.mark.parametrize(
    "hero,villain",
    [
        ("AsKd", "QhQc"),
        pytest.param("7h6h", "AcKc", marks=pytest.mark.slow),
        pytest.param("2c2d", "2h2s", marks=pytest.mark.slow),
    ],
)
def test_entries_equal_phevaluator_brute_force(table: np.ndarray, hero: str, villain: str) -> None:
    """Matchups ranked board by board with phevaluator (independent evaluator; ~2-3 s each)."""
    h, v = C(hero), C(villain)
    w, t, lo = naive.brute_force_counts(h, v, [])
    assert w + t + lo == pf.NUM_BOARDS
    assert table[hand_index(*h), hand_index(*v)] == (w + 0.5 * t) / pf.NUM_BOARDS


@pytest.mark.parametrize(
    "hero,villain,expected",
    [
        # GNU poker-eval's hcmp2 output, quoted at brainwagon.org/2005/04/09/texas-holdem-trivia:
        # (wins, ties, losses) of AdAc over 1,712,304 boards.
        ("AdAc", "KhKs", (1_388_072, 6_538, 317_694)),
        ("AdAc", "Td9d", (1_338_249, 6_912, 367_143)),
        ("AdAc", "QcJh", (1_450_987, 6_554, 254_763)),
    ],
)
def test_published_exact_counts(hero: str, villain: str, expected: tuple[int, int, int]) -> None:
    """Shipped counts equal exact board counts published from an independent evaluator."""
    wins, ties = pf.load_counts()
    ids, flipped = pf.matchup_ids()
    a, b = hand_index(*C(hero)), hand_index(*C(villain))
    i = ids[a, b]
    stored = (int(wins[i]), int(ties[i]), pf.NUM_BOARDS - int(wins[i]) - int(ties[i]))
    got = stored[::-1] if flipped[a, b] else stored  # reversed: a wins what the rep loses
    assert got == expected


def test_known_value_aces_against_kings(table: np.ndarray) -> None:
    """AA vs KK: ~81.9% over the 36 suit combinations, as widely published; per combination 81.3-82.6%."""
    aces = [hand_index(*c) for c in combinations(C("AcAdAhAs"), 2)]
    kings = [hand_index(*c) for c in combinations(C("KcKdKhKs"), 2)]
    combos = table[np.ix_(aces, kings)].ravel()
    # Widely published preflop matchup tables: AA vs KK 81.9% (e.g. PokerStove's AA vs KK).
    assert combos.mean() == pytest.approx(0.8195, abs=5e-4)
    # No suit shared (AsAh vs KdKc) is the worst case for the aces: 81.26%, not 81.9%.
    assert table[hand_index(*C("AsAh")), hand_index(*C("KdKc"))] == pytest.approx(0.8126, abs=1e-4)
    assert combos.min() == table[hand_index(*C("AsAh")), hand_index(*C("KdKc"))]
    assert 0.8262 < combos.max() < 0.8265  # both suits shared, e.g. AsAh vs KsKh


@needs_jit
def test_known_value_exact_recount(table: np.ndarray) -> None:
    """AsAh vs KdKc recounted board by board equals the table entry bit for bit."""
    a, k = C("AsAh"), C("KdKc")
    w, t, _ = eq.matchup_counts(a, k)
    assert table[hand_index(*a), hand_index(*k)] == (w + 0.5 * t) / pf.NUM_BOARDS


def test_self_reverse_matchups_are_even(table: np.ndarray) -> None:
    """Matchups equal to their own reverse up to suits (AcKd vs AdKc) win as often as they lose."""
    ids, flipped = pf.matchup_ids()
    a, b = np.nonzero((ids >= 0) & (ids == ids.T) & (flipped == flipped.T))
    assert len(a) > 0
    assert np.all(table[a, b] == 0.5)
    assert table[hand_index(*C("AcKd")), hand_index(*C("AdKc"))] == 0.5


# ---------------------------------------------------------------------------
# Shipped file == fresh build
# ---------------------------------------------------------------------------


@needs_jit
def test_shipped_counts_equal_fresh_build_sample() -> None:
    """50 random canonical ids recomputed (board by board) equal the shipped counts."""
    wins, ties = pf.load_counts()
    ids = np.random.default_rng(99).choice(pf.NUM_CANONICAL_MATCHUPS, 50, replace=False)
    new_wins, new_ties = pb.build_counts(ids, method="pairs")
    assert np.array_equal(new_wins, wins[ids]) and np.array_equal(new_ties, ties[ids])


@needs_jit
def test_shipped_counts_equal_vector_build_of_one_hero() -> None:
    """The build's vector path (all villains of one hero hand in one pass) reproduces its rows."""
    wins, ties = pf.load_counts()
    reps = pf.canonical_matchups()
    # A pair (4 suit symmetries: a quicker pass than offsuit's 2) with 469 stored villains.
    hero = hand_index(*C("2c2d"))
    ids = np.flatnonzero(reps[:, 0] == hero)
    assert len(ids) > 400
    new_wins, new_ties = pb.build_counts(ids, method="vector")
    assert np.array_equal(new_wins, wins[ids]) and np.array_equal(new_ties, ties[ids])


@needs_jit
def test_counts_row_equals_kernel_pass() -> None:
    """A whole row of counts (stored and reversed entries) equals one kernel pass over all boards.

    Also: equity_vs_range preflop against a wide range, now answered from the
    table, equals the same computation from the kernel's counts bit for bit.
    """
    hero = C("9h9d")  # a pair: 4 suit symmetries, a quick pass (~0.7 s)
    kernel_wins, kernel_ties, boards = eq.vector_counts(hero, [], [])
    wins, ties = pf.preflop_counts_vector(hero)
    assert boards == pf.NUM_BOARDS
    assert np.array_equal(wins, kernel_wins) and np.array_equal(ties, kernel_ties)
    _, flipped = pf.matchup_ids()
    assert 0 < np.count_nonzero(flipped[hand_index(*hero)]) < 1225  # both kinds of entry
    weights = np.random.default_rng(5).random(1326)
    masked = weights * eq.possible_hands(hero)
    total = masked.sum() * boards
    expected = (
        float(masked @ kernel_wins) / total,
        float(masked @ kernel_ties) / total,
        float(masked @ (boards - kernel_wins - kernel_ties)) / total,
    )
    assert equity_vs_range(hero, HAND_CARDS, weights=weights) == expected


@needs_jit
def test_build_in_worker_processes() -> None:
    """With two workers the build returns the same counts as in-process (and draws progress)."""
    import io

    ids = np.arange(0, pf.NUM_CANONICAL_MATCHUPS, 9401)
    stream = io.StringIO()
    wins, ties = pb.build_counts(ids, workers=2, method="pairs", progress=stream)
    ref_wins, ref_ties = pf.load_counts()
    assert np.array_equal(wins, ref_wins[ids]) and np.array_equal(ties, ref_ties[ids])
    assert f"{len(np.unique(pf.canonical_matchups()[ids, 0]))}/" in stream.getvalue()


def test_build_rejects_bad_arguments() -> None:
    """Unknown methods and out-of-range ids are refused."""
    with pytest.raises(ValueError):
        pb.build_counts([0], method="fast")
    with pytest.raises(ValueError):
        pb.build_counts([pf.NUM_CANONICAL_MATCHUPS])


def test_shipped_file_is_compact_and_guarded() -> None:
    """The data file is a few hundred KB and records the canonical numbering's checksum."""
    assert pf.DATA_PATH.stat().st_size < 400_000
    with np.load(pf.DATA_PATH) as data:
        assert str(data["canonical_sha256"]) == pf.canonical_checksum()
        assert data["wins"].dtype == np.uint32 and data["ties"].dtype == np.uint32


def test_save_and_reload_roundtrip(tmp_path: Path) -> None:
    """save_counts writes what _read_counts reads back; a wrong checksum is refused."""
    wins, ties = pf.load_counts()
    path = tmp_path / "counts.npz"
    pf.save_counts(path, wins, ties)
    got_wins, got_ties = pf._read_counts(path)
    assert np.array_equal(got_wins, wins) and np.array_equal(got_ties, ties)
    np.savez(
        path,
        wins=wins.astype("<u4"),
        ties=ties.astype("<u4"),
        num_boards=np.int64(pf.NUM_BOARDS),
        format_version=np.int64(pf.FORMAT_VERSION),
        canonical_sha256=np.str_("0" * 64),
    )
    with pytest.raises(RuntimeError, match="numbering"):
        pf._read_counts(path)


def test_missing_data_is_built_into_the_user_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the shipped file the counts are built once into the cache, then read from there."""
    wins, ties = pf.load_counts()
    calls: list[int] = []

    def fake_build(path: Path) -> None:  # the real one runs `python -m acpc_lbr.preflop_build` (minutes)
        calls.append(1)
        pf.save_counts(path, wins.astype(np.uint32), ties.astype(np.uint32))

    monkeypatch.setattr(pf, "DATA_PATH", tmp_path / "missing.npz")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(pf, "build_into", fake_build)
    load = pf.load_counts.__wrapped__  # bypass the in-memory cache of the real table
    for _ in range(2):
        got_wins, got_ties = load()
        assert np.array_equal(got_wins, wins) and np.array_equal(got_ties, ties)
    assert calls == [1]
    assert (tmp_path / "cache" / "acpc-lbr" / "preflop_counts.npz").exists()


# ---------------------------------------------------------------------------
# Front doors
# ---------------------------------------------------------------------------


def test_preflop_equity_vector_is_a_row(table: np.ndarray) -> None:
    """preflop_equity_vector(hero) is hero's row, as a writable copy."""
    hero = C("9c8c")
    vec = pf.preflop_equity_vector(hero)
    assert np.array_equal(vec, table[hand_index(*hero)])
    vec[:] = 0  # must not touch the cached table
    assert table[hand_index(*hero)].max() > 0


def test_equity_vector_preflop_uses_table(table: np.ndarray) -> None:
    """equity_vector(hero) with no board (and no dead cards) answers from the table."""
    hero = C("QsJh")
    assert np.array_equal(equity_vector(hero), table[hand_index(*hero)])
    assert np.array_equal(equity_vector(hero, []), table[hand_index(*hero)])


def test_preflop_equity_vector_rejects_bad_input() -> None:
    """Bad or repeated cards raise EquityInputError."""
    for bad in ([51, 51], [52, 0], [1], [0, 1, 2]):
        with pytest.raises(EquityInputError):
            pf.preflop_equity_vector(bad)
    with pytest.raises(EquityInputError):
        eq.matchup_counts([0, 1], [1, 2])


def test_table_loads_lazily() -> None:
    """Importing the equity module (which imports the table's module) and the CLI reads no
    table file and builds no table; the first use loads it.

    Its load time is a benchmark figure (bench/bench_evaluator.py), not a test.
    """
    code = (
        "import acpc_lbr.cli, acpc_lbr.equity\n"
        "from acpc_lbr import preflop\n"
        "assert preflop.load_counts.cache_info().currsize == 0\n"
        "assert preflop._numbering.cache_info().currsize == 0\n"
        "assert preflop.preflop_equity_table.cache_info().currsize == 0\n"
        "print(preflop.preflop_equity_table().shape)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert out.stdout.strip() == "(1326, 1326)"


def test_cli_without_build_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m acpc_lbr.preflop` without --build only prints its usage."""
    assert pb.main([]) == 2
    assert "--build" in capsys.readouterr().out
