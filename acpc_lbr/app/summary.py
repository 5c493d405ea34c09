"""The text ``acpc-lbr evaluate`` prints at the end, from what a results document holds.

One home for the lines a single-process evaluation and a scaled-out one
(``--workers``, :mod:`acpc_lbr.app.scaleout`) both print: the bound of each
estimator (:func:`bound_line`, :func:`document_bound_lines`), where the time
went (:func:`time_lines`) and the counts (:func:`counts_line`). The scale-out
driver has only the merged document, so these read documents' parts, not an
evaluation's live objects.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from acpc_lbr.results import ResultsDocument, proven_lies
from acpc_lbr.stats import RunningMean


#: The line above the bound lines: what their two figures are (1.96·se is ``half_width_95``, the interval's
#: scale; the interval is the printed one, not always the mean ± 1.96·se).
BOUND_HEADER = "lower bound on exploitability (LBR's win rate), mbb/g: mean ± 1.96·se [95% interval]:"


def bound_line(name: str, mean: float, half: float, units: str,
               interval: tuple[float | None, float | None] | None = None) -> str:
    """One estimator's mean, 1.96·se (``half_width_95``) and 95% interval in mbb/g (no interval below two units).

    ``interval`` is the printed one (``low_95``, ``high_95``: skewness-corrected,
    :meth:`acpc_lbr.stats.RunningMean.interval`); without it (an older document) mean ± half.

    >>> bound_line("duplicate", 1500.0, float("nan"), "1 pairs")
    '  duplicate          +1500.0 ± -        (no interval: fewer than 2 units)  (1 pairs)'
    >>> bound_line("raw", 1500.0, 300.0, "400 hands", (1190.5, 1790.0))
    '  raw                +1500.0 ± 300.0    [+1190.5, +1790.0]  (400 hands)'
    """
    if not math.isfinite(half):
        return f"  {name:<15} {mean:>+10.1f} ± {'-':<8} (no interval: fewer than 2 units)  ({units})"
    low, high = interval if interval is not None else (None, None)
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        low, high = mean - half, mean + half
    return f"  {name:<15} {mean:>+10.1f} ± {half:<8.1f} [{low:+.1f}, {high:+.1f}]  ({units})"


def stat_bound_line(name: str, stat: RunningMean, scale: float, units: str) -> str:
    """:func:`bound_line` of a sample in chips, ``scale`` mbb/g per chip."""
    low, high = stat.interval()
    return bound_line(name, stat.mean * scale, stat.half_width * scale, units, (low * scale, high * scale))


def document_bound_lines(doc: ResultsDocument) -> list[str]:
    """The bound lines of a document, as a single-process evaluation prints them."""
    est = doc["estimators"]

    def mbb(name: str) -> tuple[float, float, int]:
        block = est[name]["mbb_per_game"]  # type: ignore[literal-required]  # (any estimator's name)
        half = block["half_width_95"]
        return block["mean"], math.nan if half is None else half, block["n"]

    def interval(name: str) -> tuple[float | None, float | None]:
        block = est[name]["mbb_per_game"]  # type: ignore[literal-required]  # (any estimator's name)
        return block.get("low_95"), block.get("high_95")

    lines = [BOUND_HEADER]
    for name in ("raw", "duplicate") if doc["config"].get("duplicate") else ("raw",):
        mean, half, n = mbb(name)
        lines.append(bound_line(name, mean, half, f"{n} {'pairs' if name == 'duplicate' else 'hands'}",
                                interval(name)))
    answered = [name for name in ("io", "duplicate_io", "aivat", "duplicate_aivat")
                if name in est and mbb(name)[2]]
    lies = proven_lies(doc["counts"])
    if answered and lies:
        lines.append(f"  {'io, aivat':<15} no bound: the opponent's answers were proven false {lies} times (range "
                     "inconsistencies, counts below): IO and AIVAT rest on them")
        return lines
    for name in answered:
        check = est.get("io_minus_raw") if "io" in name else est.get("aivat_minus_raw")
        if check is not None and check["flagged"]:
            lines.append(f"  {name:<15} no bound: its honesty check is flagged (below)")
        else:
            lines.append(bound_line(name, *mbb(name)[:2], str(mbb(name)[2]), interval(name)))
    if not answered:
        lines.append(f"  {'io':<15} (off: --no-io)")
    return lines


def time_lines(timings: Mapping[str, Any], wall: float, hands: int, duplicate: bool, batches: int = 0) -> list[str]:
    """Where the wall time went: the parts of ``acpc-lbr evaluate``'s time breakdown (``timings``,
    seconds summed over the seatings, and over the batches of a scaled-out run: ``batches``)."""
    rate = hands / wall if wall > 0 else 0.0
    summed = ("both seatings at once" if duplicate else "") + (f"; {batches} batches" if batches else "")
    note = f" ({summed}; the parts below are summed over them)" if summed else ""
    lines = [f"time: {wall:.1f} s wall, {rate:.0f} hands/s{note}"]

    def seconds(key: str) -> float:
        return float(timings.get(key, 0.0) or 0.0)

    if "opponent_acting_seconds" in timings:
        lines.append(f"  opponent, as the dealer saw it: acting {seconds('opponent_acting_seconds'):.1f} s, "
                     f"answering queries {seconds('opponent_answering_seconds'):.1f} s "
                     "(with a query out to it)")
        lines.append(f"  channel: dealer checking answers {seconds('channel_check_seconds'):.1f} s, "
                     f"LBR decoding them {seconds('channel_decode_seconds'):.1f} s")
        lines.append(f"  LBR: computation {seconds('lbr_compute_seconds'):.1f} s; its turns took "
                     f"{seconds('lbr_turn_seconds'):.1f} s, waiting for answers "
                     f"{seconds('lbr_query_wait_seconds'):.1f} s of it")
        lines.append(f"  dealer and transfers (the rest of each seating's wall time): "
                     f"{seconds('dealer_other_seconds'):.1f} s")
    if "mirror_cpu_seconds" in timings:
        lines.append(f"  CPU: {seconds('cpu_seconds'):.1f} s in this process (dealer and LBR, and a built-in "
                     f"opponent, of the first seating), {seconds('mirror_cpu_seconds'):.1f} s in the mirrored "
                     "seating's process")
    elif "cpu_seconds" in timings:
        lines.append(f"  CPU: {seconds('cpu_seconds'):.1f} s in "
                     + (f"the {batches} batches' processes" if batches else "this process"))
    return lines


def counts_line(counts: Mapping[str, Any]) -> str:
    """The queries, showdowns, fallbacks and decisions counted."""
    return (f"counts: {counts.get('queries', 0)} range queries reached the opponent "
            f"({counts.get('query_errors', 0)} failed; {counts.get('dealer_queries', 0)} "
            f"the dealer's own for IO), {counts.get('showdowns', 0)} showdowns, "
            f"{counts.get('io_fallbacks', 0)} IO fallbacks, "
            f"{counts.get('lbr_range_inconsistencies', 0)} LBR range inconsistencies, "
            f"{counts.get('lbr_active_decisions', 0)} active decisions")
