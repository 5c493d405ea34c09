"""acpc-lbr tournament: the rules of ranking, the all-in scoring, and events played for real.

The events run the real command (dealer and bot processes over loopback) on
Kuhn, where the exact value of one bot against another is a tree walk
(:func:`acpc_lbr.exact.strategy_value`): the crosstable's intervals are
checked against it. Seeds are fixed, so each check is deterministic.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from acpc_lbr.app.tournament.event import EventError, build_event, parse_entrant, read_toml
from acpc_lbr.app.tournament.scoring import LogMismatch, Moments, allin_values, read_seating
from acpc_lbr.app.tournament.standings import (
    MatchTable,
    bootstrap,
    instant_runoff,
    ranks_by_score,
    separated_after,
)
from acpc_lbr.exact import strategy_value
from agents.bots import BOTS
from protocol.cards import cards_from_text
from protocol.gamedef import load_game
from protocol.ranking import rank_hand
from protocol.rules import showdown_values

ACPC_LBR = [sys.executable, "-m", "acpc_lbr.cli", "tournament"]
REPO = Path(__file__).resolve().parents[2]


def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ACPC_LBR, *args], capture_output=True, text=True, timeout=timeout, check=False)


# -- the rules -------------------------------------------------------------------------


def test_instant_runoff_drops_the_lowest_together_and_they_share_the_place() -> None:
    names = ["a", "b", "c", "d"]
    pairings = list(itertools.combinations(names, 2))
    # a beats everyone; b beats c and d; c and d tie each other.
    results = {("a", "b"): 1, ("a", "c"): 1, ("a", "d"): 1, ("b", "c"): 1, ("b", "d"): 1, ("c", "d"): 0}
    means = [{x: float(results[x, y]), y: -float(results[x, y])} for x, y in pairings]
    assert instant_runoff(names, pairings, means) == {"a": 1, "b": 2, "c": 3, "d": 3}


def test_instant_runoff_rewards_not_losing_where_bankroll_rewards_exploiting() -> None:
    names = ["solid", "shark", "fish"]
    pairings = [("solid", "shark"), ("solid", "fish"), ("shark", "fish")]
    means = [{"solid": 10.0, "shark": -10.0}, {"solid": 5.0, "fish": -5.0}, {"shark": 900.0, "fish": -900.0}]
    assert instant_runoff(names, pairings, means) == {"solid": 1, "shark": 2, "fish": 3}
    bankroll = {"solid": 7.5, "shark": 445.0, "fish": -452.5}
    assert ranks_by_score(bankroll) == {"shark": 1, "solid": 2, "fish": 3}
    assert ranks_by_score({"x": 1.0, "y": 1.0, "z": 0.0}) == {"x": 1, "y": 1, "z": 3}


def test_three_player_series_score_each_pair_inside_the_triple() -> None:
    names = ["a", "b", "c", "d"]
    pairings = list(itertools.combinations(names, 3))
    order = {"a": 3.0, "b": 2.0, "c": 1.0, "d": 0.0}
    means = [{n: order[n] for n in p} for p in pairings]
    assert instant_runoff(names, pairings, means) == {"a": 1, "b": 2, "c": 3, "d": 4}


def test_the_bootstrap_keeps_the_common_seeds_and_separates_only_what_it_sees() -> None:
    rng = np.random.default_rng(3)
    matches = 20
    luck = rng.normal(0, 50, matches)  # match k's cards: shared by every pairing
    pairings = (("a", "b"), ("a", "c"), ("b", "c"))
    edge = {("a", "b"): 200.0, ("a", "c"): 200.0, ("b", "c"): 1.0}
    means = tuple(np.column_stack([edge[p] + luck + rng.normal(0, 30, matches),
                                   -(edge[p] + luck + rng.normal(0, 30, matches))]) for p in pairings)
    table = MatchTable(pairings, means, tuple(np.full(matches, 100) for _ in pairings))
    uncertainty = bootstrap("bankroll", ["a", "b", "c"], table, 400, seed=1)
    assert uncertainty is not None
    assert uncertainty.p_above["a"]["b"] > 0.99 and uncertainty.p_above["a"]["c"] > 0.99
    assert 0.05 < uncertainty.p_above["b"]["c"] < 0.95  # a coin flip between b and c
    assert separated_after(["a", "b", "c"], uncertainty, matches) == [True, False, False]
    assert separated_after(["a", "b", "c"], uncertainty, 2) == [False, False, False]
    assert sum(uncertainty.p_rank["a"]) == pytest.approx(1.0)
    again = bootstrap("bankroll", ["a", "b", "c"], table, 400, seed=1)
    assert again == uncertainty  # seeded: the same document every time
    one = MatchTable(pairings, tuple(m[:1] for m in means), tuple(np.full(1, 100) for _ in pairings))
    assert bootstrap("bankroll", ["a", "b", "c"], one, 400, seed=1) is None


def test_moments_merge_exactly_in_any_split() -> None:
    values = np.random.default_rng(0).normal(3, 7, 1000)
    whole = Moments.of(values)
    merged = Moments.of(values[:123]).merge(Moments.of(values[123:700])).merge(Moments.of(values[700:]))
    assert merged.n == whole.n
    assert merged.mean == pytest.approx(whole.mean, rel=1e-12)
    assert merged.half_width_95 == pytest.approx(1.959964 * values.std(ddof=1) / np.sqrt(1000), rel=1e-6)
    assert (merged.m3, merged.m4) == pytest.approx((whole.m3, whole.m4), rel=1e-9)


def test_a_pairings_interval_is_the_results_documents_for_the_same_units() -> None:
    """The tournament prints the interval a results document prints for the same units (skewed here: it is
    not the mean ± the half-width), merged across matches; a record without m3, m4 gives the t interval."""
    from acpc_lbr.app.tournament.report import _figure, _pm
    from acpc_lbr.estimators import estimator_figures
    from acpc_lbr.stats import RunningMean

    values = np.random.default_rng(3).choice([-300.0, -50.0, 0.0, 900.0], p=[0.2, 0.4, 0.3, 0.1], size=240)
    merged = Moments.of(values[:100]).merge(Moments.of(values[100:]))
    stat = RunningMean()
    stat.add_many(values)
    document = estimator_figures(stat, 100)["mbb_per_game"]
    figure = _figure(merged, 1000.0 / 100)
    assert (figure["low_95"], figure["high_95"]) == pytest.approx((document["low_95"], document["high_95"]), rel=1e-9)
    assert figure["high_95"] - figure["mean"] > figure["mean"] - figure["low_95"] + 1.0  # the long right tail
    assert _pm(figure) == f"{figure['mean']:+.1f} [{figure['low_95']:+.1f}, {figure['high_95']:+.1f}]"
    assert _pm(figure, negate=True).endswith(f"[{-figure['high_95']:+.1f}, {-figure['low_95']:+.1f}]")
    old = Moments.from_dict({"n": merged.n, "mean": merged.mean, "m2": merged.m2})
    low, high = old.interval_95()
    assert (high + low) / 2 == pytest.approx(merged.mean, rel=1e-12)  # unskewed: symmetric (t)


# -- all-in expectation ----------------------------------------------------------------


def _enumerated(game_name: str, spent: tuple[int, ...], folded: tuple[bool, ...], hole: tuple[tuple[int, ...], ...],
                board: tuple[int, ...]) -> np.ndarray:
    """The slow twin: every completion of the board, ranked by protocol.ranking, averaged."""
    game = load_game(game_name)
    used = set(board).union(*hole)
    deck = [c for c in game.deck if c not in used]
    total = np.zeros(len(spent))
    count = 0
    for extra in itertools.combinations(deck, game.total_board_cards - len(board)):
        ranks = [-1 if folded[p] else rank_hand([*hole[p], *board, *extra]) for p in range(len(spent))]
        total += showdown_values(spent, ranks)
        count += 1
    return total / count


@pytest.mark.parametrize(("hands", "board"), [
    (("AsKs", "QdQc"), "2s7h9c"),          # flop all-in: 990 turn-river pairs
    (("7c7d", "AhKh"), "2h3h4c5d"),        # turn all-in, one river
])
def test_two_way_allin_expectation_equals_the_enumeration(hands: tuple[str, str], board: str) -> None:
    game = load_game("nolimit")
    hole = tuple(cards_from_text(h) for h in hands)
    fast = allin_values(game, (20000, 20000), (False, False), hole, cards_from_text(board))
    slow = _enumerated("nolimit", (20000, 20000), (False, False), hole, cards_from_text(board))
    assert np.allclose(fast, slow, atol=1e-9)
    assert sum(fast) == pytest.approx(0.0, abs=1e-9)


def test_three_way_allin_expectation_with_dead_money_equals_the_enumeration() -> None:
    game = load_game("holdem.nolimit.3p")
    hole = (cards_from_text("AsKs"), cards_from_text("QdQc"), cards_from_text("7h2c"))
    spent, folded, board = (20000, 20000, 100), (False, False, True), cards_from_text("2s7s9cTd")
    fast = allin_values(game, spent, folded, hole, board)
    assert np.allclose(fast, _enumerated("holdem.nolimit.3p", spent, folded, hole, board), atol=1e-9)
    assert fast[2] == -100.0


def test_preflop_allin_uses_the_exact_preflop_counts() -> None:
    game = load_game("nolimit")
    aces, kings = cards_from_text("AsAh"), cards_from_text("KdKc")
    value = allin_values(game, (20000, 20000), (False, False), (aces, kings), ())
    # GNU poker-eval: 1,388,072 wins and 6,538 ties of 1,712,304 boards.
    win, tie = 1388072 / 1712304, 6538 / 1712304
    assert value[0] == pytest.approx(20000 * (win - (1 - win - tie)), rel=1e-12)


# -- the event's definition ------------------------------------------------------------


def test_entrants_are_built_in_bots_strategies_or_commands() -> None:
    assert parse_entrant("random").kind == "builtin"
    assert parse_entrant("mine=docs/examples/example_bot.py:strategy").kind == "sdk"
    assert parse_entrant("c=./bot --x {host} {port}").argv("py", "kuhn", "/g", "h", "9", 1, 0) == \
        ["./bot", "--x", "h", "9"]
    for bad in ("lbr", "c=./bot no port", "./bot {host} {port}", "bad name=random"):
        with pytest.raises(EventError):
            parse_entrant(bad)


@pytest.mark.parametrize(("entrants", "players", "message"), [
    (["a=random", "a=call-raise"], None, "two entrants are named 'a'"),
    (["a=random", "b=call-raise"], 3, "asks for 3-player seats but kuhn is a 2-player game"),
    (["a=random", "b=/no/such/bot {host} {port}"], None, "no such program '/no/such/bot'"),
    (["a=random"], None, "1 entrant(s) for a 2-player game"),
])
def test_an_event_that_cannot_run_is_refused_before_anything_starts(
        entrants: list[str], players: int | None, message: str) -> None:
    with pytest.raises(EventError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build_event("kuhn", entrants, matches=1, hands=1, seed=1, players=players)


def test_common_seeds_every_pairing_plays_match_k_from_the_same_seed() -> None:
    event = build_event("leduc", ["a=random", "b=call-raise", "c=always-call"], matches=3, hands=5, seed=9)
    seeds = {(job.pairing, job.match): job.seed for job in event.schedule()}
    for k in range(3):
        assert len({seeds[p, k] for p in range(3)}) == 1
    assert len({seeds[0, k] for k in range(3)}) == 3
    gauntlet = build_event("kuhn.limit.3p", ["a=random", "b=call-raise", "c=always-call", "d=random"],
                           matches=1, hands=5, seed=9, format="gauntlet")
    assert gauntlet.pairings() == [("a", "b", "c"), ("a", "b", "d"), ("a", "c", "d")]
    assert len(gauntlet.schedule()[0].seatings()) == 6


def test_an_event_file_is_read_and_checked(tmp_path: Path) -> None:
    good = tmp_path / "event.toml"
    good.write_text('[event]\ngame = "kuhn"\nmatches = 2\nhands = 50\nseed = 4\n'
                    '[event.entrants]\nr = "random"\ncr = "call-raise"\n')
    settings = read_toml(good)
    assert settings["entrants"] == ["r=random", "cr=call-raise"] and settings["hands"] == 50
    bad = tmp_path / "bad.toml"
    bad.write_text('[event]\ngame = "kuhn"\nhandz = 5\n')
    with pytest.raises(EventError, match="unknown key"):
        read_toml(bad)


# -- events played for real ------------------------------------------------------------


CARD_AWARE = REPO / "tests/data/bots/card_aware.py"


def exact_mbb(game_name: str, a: str, b: str) -> float:
    """The exact value of ``a`` against ``b`` (built-in bots, or ``card`` for the SDK bot), mbb/g."""
    from agents.players import load_strategy

    game = load_game(game_name)
    bots = {**BOTS, "card": load_strategy(f"{CARD_AWARE}:strategy")}
    return 1000.0 * strategy_value(game, bots[a], bots[b]) / game.big_blind


def test_a_kuhn_round_robin_contains_the_exact_values(tmp_path: Path) -> None:
    out = tmp_path / "event"
    done = run("--game", "kuhn", "--entrant", "random", "--entrant", "call-raise",
               "--entrant", f"card={CARD_AWARE}:strategy",
               "--matches", "2", "--hands", "300", "--seed", "11", "--concurrency", "2", "--out", str(out))
    assert done.returncode == 0, done.stderr
    document = json.loads((out / "results.json").read_text())
    assert {(p["a"], p["b"]) for p in document["pairings"]} == {
        ("random", "call-raise"), ("random", "card"), ("call-raise", "card")}
    for pairing in document["pairings"]:
        figure = pairing["mbb_per_game"]
        exact = exact_mbb("kuhn", pairing["a"], pairing["b"])
        assert abs(figure["mean"] - exact) <= figure["half_width_95"], (pairing, exact)
        assert pairing["units"] == 600  # 2 matches x 300 deals, each deal one unit of 2 seatings
    assert [r["name"] for r in document["rankings"]["bankroll"]]
    assert "total bankroll" in done.stdout and "series instant run-off" in done.stdout
    csv_rows = (out / "crosstable.csv").read_text().splitlines()
    assert len(csv_rows) == 1 + 3 * 2
    # Every seating's log is the dealer's, with the deals of match k's common seed.
    logs = sorted(out.glob("matches/*/m000/s*/try0/match.log"))
    assert len(logs) == 6


def test_resume_after_sigkill_gives_the_same_document(tmp_path: Path) -> None:
    common = ["--game", "kuhn", "--entrant", "r=random", "--entrant", "cr=call-raise", "--entrant", "ac=always-call",
              "--matches", "2", "--hands", "100", "--seed", "5", "-q"]
    whole = tmp_path / "whole"
    assert run(*common, "--out", str(whole), "--concurrency", "2").returncode == 0
    cut = tmp_path / "cut"
    process = subprocess.Popen([*ACPC_LBR, *common, "--out", str(cut), "--concurrency", "1"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(cut.glob("matches/*/*/record.json"))) < 2:
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)  # the driver and everything it started, mid-event
    process.wait()
    kept = len(list(cut.glob("matches/*/*/record.json")))
    assert 2 <= kept < 6
    again = run(*common, "--out", str(cut), "--concurrency", "2")
    assert again.returncode == 0, again.stderr
    assert (cut / "results.json").read_text() == (whole / "results.json").read_text()


def test_a_faulty_entrant_is_charged_and_disqualified_and_the_event_goes_on(tmp_path: Path) -> None:
    bot = tmp_path / "broken.sh"
    bot.write_text("#!/bin/sh\necho 'missing model file' >&2\nexit 1\n")
    bot.chmod(0o755)
    out = tmp_path / "event"
    done = run("--game", "kuhn", "--entrant", "r=random", "--entrant", "cr=call-raise",
               "--entrant", f"broken={bot} {{host}} {{port}}", "--matches", "1", "--hands", "50",
               "--retries", "1", "--max-failures", "0", "--out", str(out), "-q")
    assert done.returncode == 3, done.stderr
    document = json.loads((out / "results.json").read_text())
    assert document["disqualified"] == [{"name": "broken", "reason": document["disqualified"][0]["reason"]}]
    assert all(f["entrant"] == "broken" and f["kind"] == "crash" for f in document["faults"])
    assert "missing model file" in document["faults"][0]["message"]
    assert [r["name"] for r in document["rankings"]["bankroll"]] != []
    assert "broken" not in {r["name"] for r in document["rankings"]["instant_runoff"]}
    honest = next(p for p in document["pairings"] if set(p["names"]) == {"r", "cr"})
    assert honest["units"] == 50


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler to build the C bot")
def test_a_c_program_plays_beside_python_bots(tmp_path: Path) -> None:
    binary = tmp_path / "plain_bot"
    subprocess.run(["cc", "-O2", "-std=c99", "-o", str(binary), str(REPO / "docs/examples/plain_bot.c")],
                   check=True, timeout=120)
    out = tmp_path / "event"
    done = run("--game", "nolimit", "--entrant", f"cbot={binary} random {{host}} {{port}}",
               "--entrant", "call-raise", "--entrant", "always-call", "--entrant", "random",
               "--matches", "1", "--hands", "100", "--seed", "2", "--concurrency", "2", "--out", str(out), "-q")
    assert done.returncode == 0, done.stderr
    document = json.loads((out / "results.json").read_text())
    assert document["headline"] == "allin" and len(document["pairings"]) == 6
    assert all(p["units"] == 100 for p in document["pairings"])
    assert document["allin_hands"] > 0


# -- the report ------------------------------------------------------------------------


def _document() -> dict[str, object]:
    from acpc_lbr.app.tournament.driver import Outcomes
    from acpc_lbr.app.tournament.report import build_document

    event = build_event("kuhn", ["a=random", "b=call-raise", "c=always-call"], matches=2, hands=10, seed=1)
    outcomes = Outcomes(event)
    for job in event.schedule():
        a, b = job.names
        mean = 0.25 * (job.pairing + 1) * (1 if job.match else 0.5)
        outcomes.put(job, {"key": job.key, "match": job.match, "status": "ok", "faults": [],
                           "moments": {"allin_hands": 0, **{m: {a: {"n": 10, "mean": mean, "m2": 4.0},
                                                                b: {"n": 10, "mean": -mean, "m2": 4.0}}
                                                            for m in ("raw", "allin")}}})
    return build_document(event, outcomes, {})


def test_the_document_is_built_from_records_in_canonical_order() -> None:
    from acpc_lbr.app.tournament.report import format_tables, to_csv

    document = _document()
    first = document["pairings"][0]  # type: ignore[index]
    assert (first["a"], first["b"], first["units"]) == ("a", "b", 20)
    # Two matches of 10 units, means 0.125 and 0.25 chips: 187.5 mbb/g (Kuhn's big blind is 1 chip).
    assert first["mbb_per_game"]["mean"] == pytest.approx(187.5)
    assert [r["name"] for r in document["rankings"]["bankroll"]] == ["a", "b", "c"]  # type: ignore[index]
    assert "a" in format_tables(document) and to_csv(document).count("\n") == 7
    json.dumps(document, allow_nan=False)  # no NaN reaches the file


def test_the_html_report_escapes_everything_a_document_says(tmp_path: Path) -> None:
    from acpc_lbr.app.tournament import html as tournament_html

    document = _document()
    evil = '<script>alert(1)</script>" onmouseover="x'

    def poison(value: object) -> object:
        if isinstance(value, dict):
            return {(evil + k if k not in ("format",) else k): poison(v) for k, v in value.items()} | {
                k: poison(v) for k, v in value.items()}
        if isinstance(value, list):
            return [poison(v) for v in value]
        if isinstance(value, str) and value != "acpc-lbr-tournament":
            return evil + value
        return value

    page = tournament_html.render(poison(document))  # type: ignore[arg-type]
    assert "<script>" not in page and 'onmouseover="x' not in page
    path = tmp_path / "t.json"
    path.write_text(json.dumps(document))
    done = subprocess.run([sys.executable, "-m", "acpc_lbr.cli", "report", str(path), "-o", str(tmp_path / "t.html")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "Series instant run-off" in (tmp_path / "t.html").read_text()
    path.write_text(json.dumps({"format": "acpc-lbr-tournament", "entrants": "nope"}))
    done = subprocess.run([sys.executable, "-m", "acpc_lbr.cli", "report", str(path), "-o", str(tmp_path / "u.html")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and "not a tournament results document" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_built_in_entrants_are_the_bots_acpc_lbr_play_knows() -> None:
    from acpc_lbr.app.tournament.event import BUILTIN_BOTS
    from agents.players import PLAYERS

    assert set(BUILTIN_BOTS) == set(PLAYERS) - {"lbr"}


# -- a seating's log read into values ----------------------------------------------------

KUHN_LOG = """# name/game/hands/seed m kuhn 3 1
STATE:0:cc:Ks|Qs:1|-1:a|b
STATE:1:rf:Qs|Js:1|-1:b|a
STATE:2:rc:Js|Ks:-2|2:a|b
SCORE:-2|2:a|b
"""


def read_log(tmp_path: Path, text: str, hands: int = 3) -> object:
    path = tmp_path / "m.log"
    path.write_text(text)
    return read_seating(path, load_game("kuhn"), ["a", "b"], ["b", "a"], hands)


def test_a_seating_log_is_read_into_columns_by_name_whatever_the_seat_order_of_a_line(tmp_path: Path) -> None:
    values = read_log(tmp_path, KUHN_LOG)
    assert values.raw.tolist() == [[-1.0, 1.0], [1.0, -1.0], [2.0, -2.0]]  # columns: b, a
    assert values.allin.tolist() == values.raw.tolist() and values.allin_hands == 0  # a limit game


@pytest.mark.parametrize(("change", "said"), [
    (("1|-1:a|b", "nan|nan:a|b"), "not a zero-sum hand of a, b"),
    (("1|-1:a|b", "1|-0.5:a|b"), "not a zero-sum hand of a, b"),
    (("1|-1:a|b", "1|-1:a|c"), "not a zero-sum hand of a, b"),
    (("1|-1:a|b", "1|x:a|b"), "are not numbers"),
    (("STATE:1:", "STATE:7:"), "hand 7 where hand 1 was due"),
    (("SCORE:-2|2:a|b\n", ""), "no SCORE line"),
    (("SCORE:-2|2", "SCORE:-3|3"), "the SCORE line does not equal the sum of its hands"),
])
def test_a_log_that_does_not_say_what_the_match_should_have_is_refused_with_where(
        tmp_path: Path, change: tuple[str, str], said: str) -> None:
    with pytest.raises(LogMismatch, match=said):
        read_log(tmp_path, KUHN_LOG.replace(*change, 1))


def test_a_log_with_more_or_fewer_hands_than_the_match_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LogMismatch, match="3 hands where the match has 4"):
        read_log(tmp_path, KUHN_LOG, hands=4)
    with pytest.raises(LogMismatch, match="more than 2 hands"):
        read_log(tmp_path, KUHN_LOG, hands=2)
