"""Tests of the live results (dealer.results: IO after each hand, the query log) and of the results
recomputed from the files (acpc_lbr.results)."""

from __future__ import annotations

from collections.abc import Coroutine
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import pytest_twisted

from acpc_lbr.aivat import AivatSetup
from acpc_lbr.cli.results import main as results_main
from acpc_lbr.policy import probabilities_at
from acpc_lbr.results import dumps, estimates_from_outcomes, results_document, results_from_files
from acpc_lbr.results.outcomes import log_values
from acpc_lbr.results.querylog import decode_row, encode_row, read_query_log
from acpc_lbr.strategies import default_actions
from agents.bots import BOTS
from acpc_lbr.estimators import HandOutcome
from dealer.results import LiveEstimates, MatchResults
from protocol.deal import DealSource
from protocol.gamedef import load_game
from protocol.rules import State
from protocol.wire import Score, log_header, log_state_for

LEDUC = load_game("leduc")


def _run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Drive a coroutine that never really waits (the fake ask answers at once)."""
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value
    raise AssertionError("the coroutine waited")


def _play_match(tmp_path: Path, name: str, names: tuple[str, str], hands: int, seed: int,
                ask: Any, measured: str = "lbr", half: int = 0, aivat: bool = False) -> MatchResults:
    """Random play over ``hands`` Leduc hands; writes NAME.log as the dealer does and runs the
    results side after each hand (rotating seats like the dealer)."""
    rng = np.random.default_rng(seed + half)
    source = DealSource(seed)
    results = MatchResults(LEDUC, name, measured, half, query_log=tmp_path / f"{name}.queries",
                           ask=None if ask is None else _together(ask), aivat=aivat, seed=seed,
                           keep_outcomes=True)
    totals = [0.0, 0.0]
    with open(tmp_path / f"{name}.log", "w", encoding="ascii") as log:
        log.write("".join(line + "\n" for line in log_header(name, "leduc", hands, seed, 600000, 600000, 7000)))
        for hand_id in range(hands):
            deal = source.deal(LEDUC)
            state = State(LEDUC, hand_id)
            while not state.finished:
                actions = default_actions(state)
                state.apply(actions[int(rng.integers(len(actions)))])
            seat_of = [(p + hand_id) % 2 for p in range(2)]
            position_names = tuple(names[s] for s in seat_of)
            values = log_values(state.values(deal.hole, deal.board_cards))
            for position, seat in enumerate(seat_of):
                totals[seat] += values[position]
            record = log_state_for(state, deal, values, position_names)
            log.write(record.text() + "\n")
            _run(results.after_hand(record, seat_of))
        log.write(Score(tuple(totals), names).text() + "\n")
    results.close()
    return results


def _together(one: Any) -> Any:
    """The dealer's query primitive (``QueryRelay.ask_all``: several queries, each one's rows or
    its exception) from a coroutine function answering one query, asked in order."""
    async def ask(seat: int, questions: Any) -> list[Any]:
        replies = []
        for state, actions in questions:
            try:
                replies.append(await one(seat, state, actions))
            except Exception as error:  # noqa: BLE001 (as the relay: the failure is the reply)
                replies.append(error)
        return replies

    return ask


def _honest_ask(bot: str = "random") -> Any:
    policy = BOTS[bot]
    asked: list[tuple[int, Any]] = []

    async def ask(seat: int, state: Any, actions: Any) -> Any:
        asked.append((seat, state))
        return probabilities_at(policy, state.to_state(LEDUC), state.board_cards, actions)

    ask.asked = asked  # type: ignore[attr-defined]
    return ask


def test_row_encoding_is_exact() -> None:
    """Rows survive the query log bit for bit, constant ones (encoded once, then reused) too."""
    signed_zeros = np.zeros(1326)
    signed_zeros[7] = -0.0
    rows = [np.random.default_rng(0).random(1326) / 3, np.ones(1326), np.full(1326, 0.25), signed_zeros,
            -np.zeros(1326), np.full(6, 1 / 3)]
    for row in rows + rows:
        back = decode_row(encode_row(row), len(row))
        assert back.tobytes() == row.tobytes()


def test_files_reproduce_the_live_results(tmp_path: Path) -> None:
    """``results_from_files`` on the .log and .queries equals the live document's estimators, byte for byte."""
    ask = _honest_ask()
    live = _play_match(tmp_path, "m", ("lbr", "bot"), 400, 7, ask)
    assert live.tally.showdowns > 50 and live.tally.dealer_queries > 0
    # Queries went to the opponent's seat only (seat 1), with no hole cards.
    assert {seat for seat, _ in ask.asked} == {1}
    assert all(state.hole == ((), ()) for _, state in ask.asked)
    live_doc = results_document({}, estimates_from_outcomes(live.outcomes), LEDUC.big_blind)
    offline = results_from_files([tmp_path / "m.log"])
    assert dumps(offline["estimators"]) == dumps(live_doc["estimators"])
    assert offline["config"]["measured"] == "lbr" and offline["config"]["players"] == ["lbr", "bot"]
    assert offline["counts"]["dealer_queries"] == live.tally.dealer_queries
    assert offline["counts"]["range_inconsistencies"] == live.tally.range_inconsistencies == 0
    assert offline["estimators"]["io"]["chips"]["n"] == 400


def test_duplicate_files_pair_by_hand(tmp_path: Path) -> None:
    """MATCH.log + MATCH.dup.log give the duplicate estimators, equal to the live pair's."""
    ask = _honest_ask("call-raise")
    a = _play_match(tmp_path, "d", ("lbr", "bot"), 200, 3, ask, half=0)
    b = _play_match(tmp_path, "d.dup", ("bot", "lbr"), 200, 3, ask, half=1)
    live_doc = results_document({}, estimates_from_outcomes(a.outcomes + b.outcomes), LEDUC.big_blind)
    offline = results_from_files([tmp_path / "d.log", tmp_path / "d.dup.log"])
    assert offline["config"]["duplicate"] is True
    assert offline["estimators"]["duplicate"]["chips"]["n"] == 200
    assert offline["estimators"]["duplicate_io"]["chips"]["n"] == 200
    assert dumps(offline["estimators"]) == dumps(live_doc["estimators"])


def test_failed_queries_fall_back_to_raw(tmp_path: Path) -> None:
    """A showdown whose query fails keeps its raw value as IO; the files say so too."""
    calls = {"n": 0}
    honest = _honest_ask()

    async def flaky(seat: int, state: Any, actions: Any) -> Any:
        calls["n"] += 1
        if calls["n"] % 3 == 0:
            raise RuntimeError("no answer")
        return await honest(seat, state, actions)

    live = _play_match(tmp_path, "f", ("lbr", "bot"), 200, 5, flaky)
    assert live.tally.query_errors > 0 and live.tally.io_fallbacks >= live.tally.query_errors
    data = read_query_log(tmp_path / "f.queries")
    assert sum(1 for rows in data.rows.values() if rows is None) == live.tally.query_errors
    for outcome in live.outcomes:
        if data.rows.get(outcome.deal, []) is None:
            assert outcome.io_chips == outcome.chips
    offline = results_from_files([tmp_path / "f.log", tmp_path / "f.queries"])
    live_doc = results_document({}, estimates_from_outcomes(live.outcomes), LEDUC.big_blind)
    assert dumps(offline["estimators"]) == dumps(live_doc["estimators"])


def test_files_reproduce_the_live_aivat(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With AIVAT on, every hand (folds too) gets an AIVAT value; the files reproduce the live
    estimators byte for byte, duplicate pairs included, and one query per opponent decision at
    most serves both AIVAT and IO."""
    ask = _honest_ask()
    a = _play_match(tmp_path, "v", ("lbr", "bot"), 150, 4, ask, aivat=True)
    b = _play_match(tmp_path, "v.dup", ("bot", "lbr"), 150, 4, ask, half=1, aivat=True)
    outcomes = a.outcomes + b.outcomes
    assert all(o.aivat_chips is not None for o in outcomes)
    assert a.tally.aivat_fallbacks == b.tally.aivat_fallbacks == 0
    assert any(o.aivat_chips != o.chips for o in outcomes)
    assert len(ask.asked) == a.tally.dealer_queries + b.tally.dealer_queries
    header = read_query_log(tmp_path / "v.queries").header
    assert header["aivat"] is True and header["aivat_setup"] == AivatSetup.for_game(LEDUC).record()
    live_doc = results_document({}, estimates_from_outcomes(outcomes), LEDUC.big_blind)
    offline = results_from_files([tmp_path / "v.log", tmp_path / "v.dup.log"])
    assert offline["estimators"]["aivat"]["chips"]["n"] == 300
    assert offline["estimators"]["duplicate_aivat"]["chips"]["n"] == 150
    assert dumps(offline["estimators"]) == dumps(live_doc["estimators"])
    assert offline["counts"]["dealer_queries"] == a.tally.dealer_queries + b.tally.dealer_queries
    assert offline["config"]["aivat"] == header["aivat_setup"]
    assert results_main([str(tmp_path / "v.log"), str(tmp_path / "v.dup.log")]) == 0
    table = capsys.readouterr().out
    assert "duplicate + AIVAT" in table
    (check,) = [line for line in table.splitlines() if line.startswith("honesty check (AIVAT - raw):")]
    assert check.endswith("ok (flagged when p < 0.001)")


def _rewrite_header(path: Path, change: Any) -> None:
    """Apply ``change(header)`` to a query log's header line."""
    import json

    lines = path.read_text(encoding="ascii").splitlines(keepends=True)
    header = json.loads(lines[0])
    change(header)
    lines[0] = json.dumps(header) + "\n"
    path.write_text("".join(lines), encoding="ascii")


def test_files_recompute_aivat_with_the_recorded_value_function(tmp_path: Path) -> None:
    """``results`` recomputes AIVAT with the function the query log records, not this version's:
    a log recording the plain pot share gives the pot share's figures."""
    from acpc_lbr.aivat import POT_SHARE

    live = _play_match(tmp_path, "p", ("lbr", "bot"), 120, 4, _honest_ask(), aivat=True)
    fitted = results_from_files([tmp_path / "p.log"])
    assert fitted["config"]["aivat"] == AivatSetup.for_game(LEDUC).record()
    live_doc = results_document({}, estimates_from_outcomes(live.outcomes), LEDUC.big_blind)
    assert dumps(fitted["estimators"]) == dumps(live_doc["estimators"])
    setup = AivatSetup.for_game(LEDUC)
    plain = AivatSetup(POT_SHARE, setup.opponent_from, setup.samples)
    assert plain.value != setup.value
    _rewrite_header(tmp_path / "p.queries", lambda h: h.update(aivat_setup=plain.record()))
    recomputed = results_from_files([tmp_path / "p.log"])
    assert recomputed["config"]["aivat"] == plain.record()
    assert recomputed["estimators"]["aivat"]["chips"]["n"] == 120
    assert recomputed["estimators"]["aivat"]["chips"]["mean"] != fitted["estimators"]["aivat"]["chips"]["mean"]
    # the same figures as the pipeline run with the pot share by hand
    from acpc_lbr.lbr import equity_function
    from acpc_lbr.results.outcomes import hand_aivat_value
    from acpc_lbr.results.matchlog import read_match_log

    data = read_query_log(tmp_path / "p.queries")
    hands = read_match_log(tmp_path / "p.log", LEDUC).hands
    values = [hand_aivat_value(LEDUC, h, h.names.index("lbr"), data.aivat.get(h.hand_id), equity_function(LEDUC),
                               plain, 4)[0] for h in hands]
    assert recomputed["estimators"]["aivat"]["chips"]["exact"]["sum"] == str(sum(map(Fraction, values), Fraction(0)))


@pytest.mark.parametrize("case", ["removed", "altered", "unknown form", "halves differ"])
def test_files_refuse_aivat_without_a_trustworthy_value_function(
    tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A query log without the AIVAT setup (written before it was recorded), with an altered or
    unknown one, or two halves with different ones: ``results`` gives no AIVAT figure and says
    why; every other estimator still prints."""
    ask = _honest_ask()
    _play_match(tmp_path, "r", ("lbr", "bot"), 100, 5, ask, aivat=True)
    _play_match(tmp_path, "r.dup", ("bot", "lbr"), 100, 5, ask, half=1, aivat=True)
    before = results_from_files([tmp_path / "r.log", tmp_path / "r.dup.log"])
    assert before["estimators"]["duplicate_aivat"]["chips"]["n"] == 100

    def change(header: dict[str, Any]) -> None:
        if case == "removed":  # as a version-1 log
            del header["aivat_setup"]
            header["version"] = 1
        elif case == "altered":
            header["aivat_setup"]["value_function"]["room_growth"][0] += 0.01
        elif case == "unknown form":
            header["aivat_setup"]["value_function"]["form"] = "equity-squared/7"
        else:
            header["aivat_setup"]["samples"] += 1

    _rewrite_header(tmp_path / ("r.dup.queries" if case == "halves differ" else "r.queries"), change)
    doc = results_from_files([tmp_path / "r.log", tmp_path / "r.dup.log"])
    reason = doc["config"]["aivat"]["not_computed"]
    expected = {"removed": "r.queries: records no AIVAT value function (query log version 1",
                "altered": "r.queries: value function record: its digest does not match",
                "unknown form": "r.queries: unknown value function form 'equity-squared/7'",
                "halves differ": "r.queries used different AIVAT setups"}[case]
    assert expected in reason
    for name in ("aivat", "duplicate_aivat", "aivat_minus_raw"):
        assert doc["estimators"][name]["chips"]["n"] == 0
        assert name not in doc["trajectory"]["estimators"]
    assert doc["counts"]["aivat_fallbacks"] == 0
    for name in ("raw", "duplicate", "io", "duplicate_io", "io_minus_raw"):
        assert dumps(doc["estimators"][name]) == dumps(before["estimators"][name])
    assert results_main([str(tmp_path / "r.log"), str(tmp_path / "r.dup.log")]) == 0
    table = capsys.readouterr().out
    assert f"AIVAT not computed: {reason}" in table
    assert "honesty check (AIVAT - raw)" not in table and "honesty check (IO - raw)" in table
    assert [line.split()[-1] for line in table.splitlines() if line.startswith(("AIVAT ", "duplicate + AIVAT"))][:2] == ["-", "-"]


def test_failed_aivat_queries_fall_back_to_raw(tmp_path: Path) -> None:
    """A hand whose AIVAT query fails keeps its raw value as its AIVAT value, counted, and the
    files agree."""
    calls = {"n": 0}
    honest = _honest_ask()

    async def flaky(seat: int, state: Any, actions: Any) -> Any:
        calls["n"] += 1
        if calls["n"] % 4 == 0:
            raise RuntimeError("no answer")
        return await honest(seat, state, actions)

    live = _play_match(tmp_path, "g", ("lbr", "bot"), 150, 6, flaky, aivat=True)
    assert live.tally.aivat_fallbacks > 0
    data = read_query_log(tmp_path / "g.queries")
    for outcome in live.outcomes:
        if outcome.deal in data.aivat and data.aivat[outcome.deal] is None:
            assert outcome.aivat_chips == outcome.chips
    offline = results_from_files([tmp_path / "g.log"])
    live_doc = results_document({}, estimates_from_outcomes(live.outcomes), LEDUC.big_blind)
    assert dumps(offline["estimators"]) == dumps(live_doc["estimators"])
    assert offline["counts"]["aivat_fallbacks"] == live.tally.aivat_fallbacks
    assert offline["counts"]["query_errors"] == live.tally.query_errors


def test_inconsistent_answers_are_counted(tmp_path: Path) -> None:
    """An answer giving the opponent's real action probability 0 counts as a range inconsistency."""

    async def never(seat: int, state: Any, actions: Any) -> Any:
        return np.zeros((len(actions), LEDUC.num_hands))

    live = _play_match(tmp_path, "z", ("lbr", "bot"), 100, 9, never)
    assert live.tally.range_inconsistencies > 0
    assert live.tally.io_fallbacks == live.tally.showdowns  # every weight 0: raw kept
    assert all(o.io_chips == o.chips for o in live.outcomes)


def test_no_queryable_opponent_means_no_io(tmp_path: Path) -> None:
    """Without a query primitive there is no IO and no query log."""
    live = _play_match(tmp_path, "n", ("lbr", "bot"), 50, 1, None)
    assert all(o.io_chips is None for o in live.outcomes)
    assert not (tmp_path / "n.queries").exists()
    offline = results_from_files([tmp_path / "n.log"])
    assert offline["estimators"]["io"]["chips"]["n"] == 0
    assert offline["estimators"]["raw"]["chips"]["n"] == 50


def test_results_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``acpc-lbr results`` prints the table, writes the JSON, merges documents, rejects bad input."""
    _play_match(tmp_path, "c", ("lbr", "bot"), 100, 2, _honest_ask())
    out_json = tmp_path / "c.json"
    assert results_main([str(tmp_path / "c.log"), "-o", str(out_json)]) == 0
    table = capsys.readouterr().out
    assert "imaginary obs." in table and "duplicate + IO" in table
    _play_match(tmp_path, "e", ("lbr", "bot"), 100, 3, _honest_ask())
    other_json = tmp_path / "e.json"
    assert results_main([str(tmp_path / "e.log"), "-o", str(other_json)]) == 0
    capsys.readouterr()
    assert results_main(["--merge", str(out_json), str(other_json), "--json"]) == 0
    merged = capsys.readouterr().out
    assert '"n": 200' in merged
    assert results_main(["--merge", str(out_json), str(out_json)]) == 2  # the same hands twice
    assert "same seed" in capsys.readouterr().err
    assert results_main([str(tmp_path / "missing.log")]) == 2
    assert results_main([str(tmp_path / "c.json")]) == 2
    capsys.readouterr()
    # An output file that cannot be written: one line, exit 1, no traceback.
    assert results_main([str(tmp_path / "c.log"), "-o", str(tmp_path / "no" / "such" / "r.json")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("acpc-lbr results: cannot write ") and err.count("\n") == 1


@pytest_twisted.ensureDeferred
async def test_lying_bot_through_the_dealer_is_flagged(tmp_path: Path) -> None:
    """LBR against an SDK bot whose range answers differ from its play, over loopback TCP:
    the dealer's IO honesty check is flagged, and the files reproduce the dealer's figures."""
    from twisted.internet import reactor

    from acpc_lbr.app.evaluate.evaluation import EvaluationConfig
    from acpc_lbr.app.evaluate.run import run_evaluation
    from acpc_lbr.lbr import ActiveRounds, BettingOptions
    from agents.client import StrategyBot
    from tests.acpc_lbr.test_results import lying_bot

    out = tmp_path / "liar"
    config = EvaluationConfig(
        game_arg="leduc", game=LEDUC, opponent="random", opponent_cmd=None,
        bets=BettingOptions.parse("fcpa"), rounds=ActiveRounds.parse("1-2"), hands=600, seed=4,
        duplicate=True, out=out, io=True,
    )
    evaluation = await run_evaluation(
        config, reactor,
        make_opponent=lambda half: StrategyBot(LEDUC, lying_bot, np.random.default_rng(10 + half)),
    )
    doc = evaluation.document
    assert doc["estimators"]["io"]["chips"]["n"] == 1200
    assert doc["estimators"]["io_minus_raw"]["flagged"] is True
    offline = results_from_files(sorted(out.glob("*.log")))
    assert offline["estimators"]["io_minus_raw"]["flagged"] is True
    assert offline["counts"]["range_inconsistencies"] > 0  # the answers give the real hand 0
    assert dumps(offline["estimators"]) == dumps(doc["estimators"])


@pytest_twisted.ensureDeferred
async def test_evaluate_with_aivat_end_to_end(tmp_path: Path) -> None:
    """``evaluate --aivat`` over loopback TCP (Leduc, duplicate): every hand has an AIVAT value
    from the dealer's own queries, the check is not flagged for an honest bot, and the files
    reproduce the dealer's estimators byte for byte."""
    from twisted.internet import reactor

    from acpc_lbr.app.evaluate.evaluation import EvaluationConfig
    from acpc_lbr.app.evaluate.run import run_evaluation
    from acpc_lbr.lbr import ActiveRounds, BettingOptions

    out = tmp_path / "aivat"
    config = EvaluationConfig(
        game_arg="leduc", game=LEDUC, opponent="random", opponent_cmd=None,
        bets=BettingOptions.parse("fcpa"), rounds=ActiveRounds.parse("1-2"), hands=150, seed=8,
        duplicate=True, out=out, io=True, aivat=True,
    )
    evaluation = await run_evaluation(config, reactor)
    doc = evaluation.document
    assert doc["estimators"]["aivat"]["chips"]["n"] == 300
    assert doc["estimators"]["duplicate_aivat"]["chips"]["n"] == 150
    assert doc["counts"]["aivat_fallbacks"] == 0
    assert doc["estimators"]["aivat"]["chips"]["std"] < doc["estimators"]["raw"]["chips"]["std"]
    assert doc["config"]["aivat"] == AivatSetup.for_game(LEDUC).record()  # the function the run used
    offline = results_from_files(sorted(out.glob("*.log")))
    assert dumps(offline["estimators"]) == dumps(doc["estimators"])
    assert offline["config"]["aivat"] == doc["config"]["aivat"]


def test_running_aivat_estimate_is_published() -> None:
    """The group's running estimate carries aivat and duplicate_aivat to Prometheus (mean, half-width, units)."""
    from prometheus_client import CollectorRegistry

    from acpc_lbr.estimators import HandOutcome
    from dealer.match import Match
    from dealer.metrics import DealerMetrics
    from dealer.results import ResultsGroup
    from tests.dealer.harness import make_config

    metrics = DealerMetrics(CollectorRegistry())
    match = Match(make_config("pub", hands=4, seed=1, names=("lbr", "bot")), reactor=None)
    group = ResultsGroup([match], measured="lbr", metrics=metrics, query_logs=False, aivat=True)
    for deal, (chips, aivat) in enumerate([(100.0, 30.0), (-50.0, 10.0), (20.0, 20.0)]):
        group.live.add(HandOutcome(deal, 0, chips, chips, aivat))
    value = metrics.registry.get_sample_value
    scale = 1000.0 / match.game.big_blind
    assert value("acpc_estimate_mbb_per_game", {"match": "pub", "estimator": "aivat"}) == pytest.approx(20.0 * scale)
    assert value("acpc_estimate_units", {"match": "pub", "estimator": "aivat"}) == 3
    assert value("acpc_estimate_half_width_mbb_per_game", {"match": "pub", "estimator": "aivat"}) > 0


# -- inside the dealer, in memory: the dealer's own queries after a showdown ----------------


class _MemoryTable:
    """A heads-up no-limit match on StringTransports and a fake clock, with results attached."""

    def __init__(self, hands: int = 2) -> None:
        from twisted.internet import task
        from twisted.internet.testing import StringTransport

        from dealer.match import Match
        from dealer.results import ResultsGroup
        from tests.dealer.harness import make_config

        self.clock = task.Clock()
        config = make_config("io", hands=hands, seed=42, names=("lbr", "bot"))
        self.match = Match(config, reactor=None, clock=self.clock)
        self.group = ResultsGroup([self.match], measured="lbr", keep_outcomes=True)
        self.done = self.match.start()
        self.protocols = []
        self.transports = []
        for factory in self.match.seating.factories:
            protocol = factory.buildProtocol(None)
            transport = StringTransport()
            protocol.makeConnection(transport)
            self.protocols.append(protocol)
            self.transports.append(transport)
        self.feed(0, "VERSION:2.0.0\r\n")
        self.feed(1, "VERSION:2.0.0\r\n# range-query 1\r\n")

    def feed(self, seat: int, text: str) -> None:
        self.protocols[seat].dataReceived(text.encode("ascii"))

    def take(self, seat: int) -> list[str]:
        data = self.transports[seat].value()
        self.transports[seat].clear()
        return data.decode().split("\r\n")[:-1] if data else []

    def call_until_queried(self) -> list[str]:
        """Both seats check/call until the dealer sends the bot QUERY lines; returns them."""
        from tests.dealer.harness import call_round

        for _ in range(100):
            queries, _moved = call_round(self)
            if queries:
                return queries
        raise AssertionError("no query came")


def _answer(query: str) -> tuple[str, np.ndarray]:
    """A RANGE answer that depends on the hand: 1 for even hand indices, 0.25 for odd ones."""
    _, qid, *_rest = query.split(":")
    action = query.rsplit(":", 1)[1]
    row = np.where(np.arange(1326) % 2 == 0, 1.0, 0.25)
    return f"RANGE:{qid}:{action}=" + ",".join(f"{v:g}" for v in row) + "\r\n", row


def test_dealer_asks_after_a_showdown_and_computes_io(in_tmp: Path) -> None:
    """After a checked-down hand the dealer queries the bot for each of its actions on the line
    (public state only), and the hand's IO is the posterior-weighted showdown value."""
    from acpc_lbr.results.outcomes import hand_io
    from protocol.wire import parse_log_state

    t = _MemoryTable(hands=1)
    queries = t.call_until_queried()
    sent = []
    while queries:
        for query in queries:
            fields = query.split(":")
            assert fields[5].count("|") == 1 and fields[5].split("/")[0] == "|"  # no hole cards
            text, row = _answer(query)
            sent.append(row)
            t.feed(1, text)
        queries = [line for line in t.take(1) if line.startswith("QUERY:")]
    assert t.done.called
    result = t.done.result
    assert result.completed
    part = t.group.results[0]
    assert part.tally.dealer_queries == len(sent) == 4  # the bot acts once per round
    (outcome,) = part.outcomes
    record = parse_log_state(next(line for line in Path("io.log").read_text().splitlines()
                                  if line.startswith("STATE:")), t.match.game)
    expected = hand_io(t.match.game, record, record.names.index("lbr"), sent)
    assert outcome.io_chips == expected.io_chips and not expected.fallback
    assert outcome.chips == record.values[record.names.index("lbr")]
    assert read_query_log(Path("io.queries")).rows[0] is not None


def test_disconnect_during_the_dealers_query_ends_the_match_at_once(in_tmp: Path) -> None:
    """A bot that leaves while the dealer awaits its IO answer: the match ends without waiting t_query."""
    from twisted.python.failure import Failure

    t = _MemoryTable(hands=3)
    t.call_until_queried()
    t.protocols[1].connectionLost(Failure(ConnectionError("gone")))
    assert t.done.called
    result = t.done.result
    assert result.cause == "disconnect" and result.hands_played == 1
    assert t.group.results[0].tally.query_errors == 1


@pytest.mark.parametrize(("extra", "wanted"), [
    (["-q", "-l"], False),
    (["-q", "-l", "--no_events"], False),
    (["-q", "-l", "--table"], True),
    (["-q", "-l", "--results-json", "r.json"], True),
    (["-q", "-l", "--metrics-port", "0"], True),
    (["-q"], True),  # a query log may go beside the .log
    (["-l"], True),  # the table
])
def test_results_are_kept_only_when_something_reads_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: list[str], wanted: bool) -> None:
    """With nothing to read them (-q -l, no table, JSON, metrics or progress), no results
    are kept: no hand hook runs after each hand and the dealer asks no range queries."""
    from twisted.internet import reactor, task

    from acpc_lbr.cli.dealer import parse_configs
    from dealer.match import Match
    from dealer.process import _setup_results

    monkeypatch.chdir(tmp_path)
    groups, options = parse_configs(["m", "nolimit", "5", "1", "a", "b", *extra])
    matches = [[Match(c, reactor, clock=task.Clock(), stderr=None) for c in group] for group in groups]
    results = _setup_results(matches, options, reactor)
    try:
        assert (results is not None) == wanted
        assert bool(matches[0][0].hand_hooks) == wanted
        if not wanted:  # a progress display shows the live estimate
            assert _setup_results(matches, options, reactor, progress_shown=True) is not None
    finally:
        if results is not None and results.listening is not None:
            results.listening.stopListening()
        matches[0][0].events.close()


def _random_outcomes(half: int, deals: int, seed: int) -> list[HandOutcome]:
    """One half's outcomes in deal order: chips, IO on most hands, AIVAT on some."""
    rng = np.random.default_rng(seed)
    return [HandOutcome(deal, half, float(rng.integers(-400, 401)) / 2,
                        None if rng.random() < 0.2 else float(rng.normal(0, 100)),
                        None if rng.random() < 0.5 else float(rng.normal(0, 50)))
            for deal in range(deals)]


# Both halves together run in CI's subset; each half alone is the same path on less data.
@pytest.mark.parametrize("halves", [pytest.param((0,), marks=pytest.mark.slow),
                                    pytest.param((1,), marks=pytest.mark.slow), (0, 1)])
def test_live_estimates_stream_the_canonical_document(halves: tuple[int, ...]) -> None:
    """The live estimators, built as the hands come, equal ``estimates_from_outcomes`` over
    every outcome byte for byte (trajectory included), at the end and midway; only the lag
    between a pair's halves waits (memory flat in hands played)."""
    deals, lag = 1500, 40
    streams = [_random_outcomes(half, deals, 7 + half) for half in halves]
    rng = np.random.default_rng(1)
    live = LiveEstimates("m", 2, halves=halves)
    given: list[HandOutcome] = []
    waited = 0
    positions = [0] * len(streams)
    while any(p < deals for p in positions):
        # Either half moves on, but never more than ``lag`` deals ahead of the other.
        choices = [i for i, p in enumerate(positions)
                   if p < deals and p - min(positions) < lag]
        i = int(rng.choice(choices))
        outcome = streams[i][positions[i]]
        positions[i] += 1
        live.add(outcome)
        given.append(outcome)
        waited = max(waited, live.waiting)
        if len(given) == deals // 2:  # midway, with outcomes waiting
            midway = results_document({}, live.final(), 2)
            assert dumps(midway) == dumps(results_document({}, estimates_from_outcomes(given), 2))
    assert live.hands == len(given) == deals * len(halves)
    expected = results_document({}, estimates_from_outcomes(given), 2)
    assert dumps(results_document({}, live.final(), 2)) == dumps(expected)
    assert len(expected["trajectory"]["hands"]) > 100
    assert waited <= (0 if len(halves) == 1 else 2 * lag)


@pytest.mark.slow
@pytest.mark.parametrize(("keep", "document"), [(False, False), (True, True)])
def test_memory_stays_flat_in_hands_played(in_tmp: Path, monkeypatch: pytest.MonkeyPatch, keep: bool,
                                           document: bool) -> None:
    """A match with its results attached, as a plain dealer runs it (``-q``: the ``.log``,
    no document asked for, no duplicate), keeps nothing per hand: what Python holds after
    516 hands is what it held after 132. The per-hand values (``keep_hand_values``, for
    ``--duplicate``) and a document's unpaired halves are kept on purpose: about 250 bytes
    a hand, which this test sees."""
    import gc
    import tracemalloc

    from acpc_lbr import trajectory
    from dealer.results import ResultsGroup
    from tests.dealer.bots import TestBot
    from tests.dealer.harness import MemoryRun, make_config

    # Few trajectory points (bounded anyway): both readings just after a thinning, at 8 points.
    monkeypatch.setattr(trajectory, "MAX_POINTS", 16)

    class ForgetfulBot(TestBot):
        def lineReceived(self, line: bytes) -> None:
            super().lineReceived(line)
            self.received.clear()
            self.sent.clear()

    readings: dict[int, int] = {}

    def prepare(match: Any) -> None:
        ResultsGroup([match], document=document)

        async def read(state: State, deal: Any, seat_of: Any) -> None:
            if state.hand_id + 1 in (132, 516):
                gc.collect()
                readings[state.hand_id + 1] = tracemalloc.get_traced_memory()[0]

        match.hand_hooks.append(read)

    config = make_config("flat", hands=516, keep_hand_values=keep)
    tracemalloc.start()
    try:
        result = MemoryRun().play(config, [ForgetfulBot(config.game), ForgetfulBot(config.game)],
                                  prepare=prepare)
    finally:
        tracemalloc.stop()
    assert result.completed and result.hands_played == 516 and len(result.hand_values) == 516 * keep
    grown = readings[516] - readings[132]
    assert (grown > 200 * 384) if keep else (grown < 10_000), grown
