"""The results as text: the table of the estimators, the honesty check's line.

What ``acpc-lbr results``, the dealer's ``--table`` and ``evaluate`` print (the
HTML report reads the same verdicts: :func:`honesty_verdict`, :func:`proven_lies`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Literal

from acpc_lbr.estimators import (
    AIVAT_NAMES,
    CHECKS,
    ESTIMATORS,
    HONESTY_ALPHA,
    CheckFigures,
    CheckName,
    EstimatorFigures,
    EstimatorsSection,
)
from acpc_lbr.results.document import ResultsConfig, ResultsDocument

_LABELS = {
    "raw": "raw",
    "duplicate": "duplicate",
    "io": "imaginary obs.",
    "duplicate_io": "duplicate + IO",
    "aivat": "AIVAT",
    "duplicate_aivat": "duplicate + AIVAT",
    "io_minus_raw": "IO - raw (check)",
    "aivat_minus_raw": "AIVAT-raw (check)",
}


#: Why a game of more than two players has only raw figures (the table and docs/results.md say it).
MULTIPLAYER_NOT_COMPUTED = (
    "duplicate, IO and AIVAT: not computed for {n} players (IO and AIVAT value one heads-up "
    "opponent's range; --duplicate mirrors two seats). Each player's raw result:"
)


def format_table(doc: ResultsDocument) -> str:
    """The estimators side by side, for a terminal.

    One row per estimator: units, the mean in mbb/g, ``1.96·se`` (``half_width_95``, the interval's
    scale), the printed 95% interval (``low_95``, ``high_95``: not always the mean ± 1.96·se),
    the standard deviation, bb/hand and chips, and the width relative to raw.
    """
    config = doc["config"]
    est = doc["estimators"]
    lines = []
    seats = ", ".join(config.get("players") or [])
    lines.append(
        f"{config.get('game')}  players: {seats}  measured: {config.get('measured')}  "
        f"seed: {config.get('seed')}  hands: {config.get('hands')}"
        + ("  (duplicate)" if config.get("duplicate") else "")
    )
    header = f"{'estimator':<18} {'n':>8} {'mbb/g':>10} {'1.96·se':>9} {'95% interval':>22} {'std mbb':>10} {'bb/hand':>9} {'chips':>10} {'width/raw':>9}"
    lines.append(header)
    lines.append("-" * len(header))
    raw_width = est["raw"]["mbb_per_game"]["half_width_95"]
    aivat_asked = config.get("aivat") is not None
    players = doc.get("players")
    for name in (*ESTIMATORS, *CHECKS):
        stat = est.get(name)
        if stat is None:  # a version-1 document: no AIVAT
            continue
        if name in AIVAT_NAMES and not aivat_asked and not stat["chips"]["n"]:
            continue  # AIVAT was not asked for: no empty rows of it
        if players is not None and name != "raw" and not stat["chips"]["n"]:
            continue  # more than two players: only raw (the line below says why)
        if stat["chips"]["n"] == 0:
            lines.append(f"{_LABELS[name]:<18} {0:>8} {'-':>10}")
            continue
        ratio = "-"
        width = stat["mbb_per_game"]["half_width_95"]
        if raw_width and width is not None and name not in CHECKS:
            ratio = f"{width / raw_width:.3f}"
        lines.append(_table_row(_LABELS[name], stat, ratio))
    if players is not None:
        lines.append(MULTIPLAYER_NOT_COMPUTED.format(n=len(config.get("players") or players)))
        lines.extend(_table_row(name[:18], figures, "") if figures["chips"]["n"] else f"{name[:18]:<18} {0:>8} {'-':>10}"
                     for name, figures in players.items())
    reason = aivat_not_computed(config)
    if reason is not None:
        lines.append(f"AIVAT not computed: {reason}")
    lies = proven_lies(doc.get("counts", {}))
    if lies and (est["io"]["chips"]["n"] or ("aivat" in est and est["aivat"]["chips"]["n"])):
        lines.append(f"the opponent's answers were proven false {lies} times (range inconsistencies): "
                     "IO and AIVAT rest on them and are no bound (raw and duplicate are)")
    for estimator in ("io", "aivat"):
        honesty = honesty_line(est, estimator, lies)
        if honesty is not None:
            lines.append(honesty)
    counts = doc.get("counts", {})
    shown = ", ".join(f"{key} {value}" for key, value in counts.items() if key != "hands")
    lines.append(f"counts: hands {counts.get('hands', 0)}, {shown}")
    timings = doc.get("timings", {})
    if timings:
        lines.append("timings: " + ", ".join(f"{key} {value:.3f}" for key, value in timings.items()))
    return "\n".join(lines) + "\n"


def _table_row(label: str, stat: EstimatorFigures, ratio: str) -> str:
    """One row of :func:`format_table`: n, mbb/g, 1.96·se, the printed 95% interval, std, bb/hand,
    chips and the width ratio."""
    mbb = stat["mbb_per_game"]
    low, high = mbb.get("low_95"), mbb.get("high_95")
    if (low is None or high is None) and mbb["half_width_95"] is not None:  # a document without them
        low, high = mbb["mean"] - mbb["half_width_95"], mbb["mean"] + mbb["half_width_95"]
    interval = "-" if low is None or high is None else f"[{low:.1f}, {high:.1f}]"
    return (f"{label:<18} {stat['chips']['n']:>8} {_fmt(mbb['mean']):>10} "
            f"{_fmt(mbb['half_width_95']):>9} {interval:>22} {_fmt(mbb['std']):>10} "
            f"{_fmt(stat['bb_per_hand']['mean'], 4):>9} {_fmt(stat['chips']['mean'], 3):>10} {ratio:>9}").rstrip()


def _fmt(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


HonestyVerdict = Literal["flagged", "proven false", "untested", "passed"]


def honesty_verdict(check: CheckFigures, lies: int = 0) -> HonestyVerdict:
    """What a honesty check (an ``io_minus_raw`` or ``aivat_minus_raw`` block) says.

    ``flagged``: the difference is too large for chance. ``proven false``: the
    counts prove the answers false (``lies``, :func:`proven_lies`) whatever the
    statistic says. ``untested``: the difference is the same on every hand (no
    spread: e.g. every showdown fell back to its raw value), so p = 1 tells
    nothing. ``passed``: otherwise.

    >>> honesty_verdict({"flagged": False, "chips": {"n": 40, "std": 0.0}})
    'untested'
    >>> honesty_verdict({"flagged": False, "chips": {"n": 40, "std": 1.5}}, lies=3)
    'proven false'
    """
    if check.get("flagged"):
        return "flagged"
    if lies:
        return "proven false"
    if not check["chips"].get("std"):
        return "untested"
    return "passed"


def honesty_line(estimators: EstimatorsSection, estimator: Literal["io", "aivat"] = "io",
                 lies: int = 0) -> str | None:
    """The honesty check of ``estimator`` (``io`` or ``aivat``) as one line (None when it has no units).

    The statistic is the mean of IO − raw (or AIVAT − raw) per hand, or per duplicate pair when
    the match was played in duplicate (the check's ``unit``); z and the two-sided p-value
    test that its true mean is 0, which it is when the range answers are the
    strategy the bot plays. Flagged at p < :data:`~acpc_lbr.estimators.HONESTY_ALPHA`;
    ``lies`` (:func:`proven_lies`) and a difference without spread say more than
    the statistic (:func:`honesty_verdict`).

    >>> from acpc_lbr.estimators import HandOutcome
    >>> from acpc_lbr.results.document import estimates_from_outcomes
    >>> est = estimates_from_outcomes(HandOutcome(d, 0, 1.0, 1.0 + (-1) ** d) for d in range(40))
    >>> honesty_line(est.to_dict(2))
    'honesty check (IO - raw): +0.0 ± 156.9 mbb/g over 40 hands, z = +0.00, p = 1: ok (flagged when p < 0.001)'
    >>> honesty_line(est.to_dict(2), lies=2).split(": ", 2)[2]
    'FLAGGED: the range answers were proven false 2 times (range inconsistencies)'
    >>> same = estimates_from_outcomes(HandOutcome(d, 0, 1.0, 1.0) for d in range(40))
    >>> honesty_line(same.to_dict(2)).split("p = 1: ")[1]
    'not tested: IO - raw is the same on every hand (no showdown valued from the answers)'
    """
    check_name: CheckName = "io_minus_raw" if estimator == "io" else "aivat_minus_raw"
    check, measured = estimators.get(check_name), estimators.get(estimator)
    if check is None or measured is None:  # a version-1 document: no AIVAT
        return None
    n = check["chips"]["n"]
    if not measured["chips"]["n"] or n < 2:
        return None
    tested = check.get("pairs") if check.get("unit") == "pair" else None
    mbb = check["mbb_per_game"] if tested is None else tested["mbb_per_game"]
    over = f"{n} hands" if tested is None else f"{tested['chips']['n']} pairs"
    z, p_value = check.get("z"), check.get("p_value")
    figures = (f"{mbb['mean']:+.1f} ± {_fmt(mbb['half_width_95'])} mbb/g over {over}, "
               f"z = {_fmt(z, 2) if z is None or abs(z) < 1e6 else ('+inf' if z > 0 else '-inf')}"
               f", p = {'-' if p_value is None else f'{p_value:.3g}'}")
    if z is not None and z >= 0:
        figures = figures.replace("z = ", "z = +", 1)
    label = {"io": "IO", "aivat": "AIVAT"}.get(estimator, estimator)
    verdict = {
        "flagged": "FLAGGED: the range answers do not match the play",
        "proven false": f"FLAGGED: the range answers were proven false {lies} times (range inconsistencies)",
        "untested": f"not tested: {label} - raw is the same on every hand "
                    f"(no {'showdown' if estimator == 'io' else 'hand'} valued from the answers)",
        "passed": f"ok (flagged when p < {HONESTY_ALPHA:g})",
    }[honesty_verdict(check, lies)]
    return f"honesty check ({label} - raw): {figures}: {verdict}"


def proven_lies(counts: Mapping[str, int]) -> int:
    """How often the opponent's answers were proven false: its range inconsistencies (the dealer's, and LBR's).

    The dealer counts a showdown where an answer gave the action the bot played
    probability 0 with the cards it held; LBR counts a decision where the
    answers gave the played action probability 0 for every hand still possible.
    Either is proof that the answers are not the strategy played, so IO and
    AIVAT, which rest on them, are no bound (raw and duplicate still are).

    >>> proven_lies({"range_inconsistencies": 2, "lbr_range_inconsistencies": 5})
    7
    """
    return int(counts.get("range_inconsistencies", 0) or 0) + int(counts.get("lbr_range_inconsistencies", 0) or 0)


def aivat_not_computed(config: ResultsConfig) -> str | None:
    """Why a document has no AIVAT figures (its ``config.aivat`` is ``{"not_computed": reason}``), or None.

    >>> aivat_not_computed({"aivat": {"not_computed": "no value function recorded"}})
    'no value function recorded'
    >>> aivat_not_computed({"aivat": None}) is None
    True
    """
    aivat = config.get("aivat")
    if isinstance(aivat, Mapping) and "not_computed" in aivat:
        return str(aivat["not_computed"])
    return None
