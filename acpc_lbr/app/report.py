"""One self-contained HTML page from results documents: ``acpc-lbr report``, ``evaluate --report``.

The page is meant to be attached to a paper or a review: one file, plots
embedded as inline SVG (text drawn as paths), no script, no style sheet or
font or image fetched from anywhere. For each results document
(docs/results.md) it shows:

* the settings (game, LBR's bets and rounds, the opponent's short name and
  its command apart, seed, hands, software version) and the headline bound,
  in mbb/g with bb/100 beside it: the first estimator of
  :data:`HEADLINE_ORDER` the run computed, a rule fixed before the data (or
  the one ``--headline`` names). When the honesty check is flagged, or the
  counts prove the answers false (range inconsistencies), only the
  estimators that do not rest on the bot's range answers (raw, duplicate)
  can be the headline;
* every estimator the run asked for (whatever their names: a new estimator
  appears without a change here), with n, mean, 95% interval, bb/100 and
  the width relative to raw (:func:`asked_for`); each player's raw result
  for more than two players;
* the running mean of each estimator with its 95% band over hands, all on
  one axis, from the document's trajectory (schema version 2);
* the honesty check (IO − raw) with its statistic and p-value, in words;
* ``evaluate --probe``'s section, one line of meaning per figure;
* the wall time split into parts that add up to it (:func:`wall_split`),
  the other ``*_seconds`` timings apart as totals, and the counts.

Everything taken from a document (string fields and keys alike) is escaped
(:func:`_esc`), in text and in attributes.

With several documents a table of bounds comes first, one row per document
(per bot), side by side.

Every number printed from a document carries the JSON path and the exact
value it came from (``data-json``, ``data-value``), so a reader or a test can
check the page against the JSON.

matplotlib is an optional dependency (``pip install 'acpc-lbr[report]'``);
:func:`require_matplotlib` says so in one line when it is missing.
"""

from __future__ import annotations

import html
import io
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from acpc_lbr import estimators
from acpc_lbr.results import (
    MULTIPLAYER_NOT_COMPUTED,
    READABLE_VERSIONS,
    SCHEMA,
    aivat_not_computed,
    honesty_verdict,
    proven_lies,
)
from acpc_lbr.stats import MeanFigures

#: One line for a missing plotting library.
MISSING_MATPLOTLIB = "the report needs matplotlib: pip install 'acpc-lbr[report]' (or pip install matplotlib)"

#: Estimators that stay valid lower bounds whatever the bot's range answers.
ANSWER_FREE = ("raw", "duplicate")

#: The headline's estimator: the first of these the document computed (two units or more), fixed
#: before any data is seen (the narrowest interval, picked after seeing them, covers less than 95%):
#: the variance-reduced and paired estimators first, as they are built to be narrower.
#: ``acpc-lbr report --headline NAME`` names one instead.
HEADLINE_ORDER = ("duplicate_aivat", "aivat", "duplicate_io", "io", "duplicate", "raw")

_LABELS = {
    "raw": "raw",
    "duplicate": "duplicate",
    "io": "imaginary observations (IO)",
    "duplicate_io": "duplicate + IO",
    "io_minus_raw": "IO − raw (honesty check)",
}

#: Counts shown first, with their names in words; any others follow as they are.
_COUNTS = {
    "hands": "hands",
    "queries": "range queries",
    "query_errors": "failed queries",
    "range_inconsistencies": "range inconsistencies",
    "active_decisions": "LBR active decisions",
    "lbr_queries": "LBR's range queries",
    "lbr_query_errors": "LBR's failed queries",
    "lbr_active_decisions": "LBR active decisions",
    "lbr_range_inconsistencies": "range inconsistencies seen by LBR",
    "errors": "matches ended early",
}


def require_matplotlib() -> None:
    """Raise ImportError with :data:`MISSING_MATPLOTLIB` when matplotlib is not installed."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ImportError(MISSING_MATPLOTLIB) from None


# -- reading a document ------------------------------------------------------------------


def estimator_names(doc: Mapping[str, Any]) -> list[str]:
    """The estimators a document lists, in its order (checks such as IO − raw excluded)."""
    return [name for name, value in doc["estimators"].items()
            if isinstance(value, dict) and "chips" in value and "flagged" not in value]


def checks(doc: Mapping[str, Any]) -> list[str]:
    """The checks a document lists (estimators with a ``flagged`` field: IO − raw)."""
    return [name for name, value in doc["estimators"].items()
            if isinstance(value, dict) and "chips" in value and "flagged" in value]


def answers_doubted(doc: Mapping[str, Any]) -> bool:
    """A check is flagged or the answers were proven false (:func:`acpc_lbr.results.proven_lies`):
    the estimators resting on the bot's answers are no bound."""
    return (any(doc["estimators"][name].get("flagged") for name in checks(doc))
            or proven_lies(doc.get("counts", {})) > 0)


def headline(doc: Mapping[str, Any], wanted: str | None = None) -> str | None:
    """The headline's estimator: ``wanted`` when given, else the first of :data:`HEADLINE_ORDER`
    with two units or more (of raw and duplicate only, when :func:`answers_doubted`); None: none has.

    A rule fixed before the data: the narrowest interval, picked after seeing them, would cover
    less often than 95%.
    """
    def usable(name: str) -> bool:
        block = doc["estimators"].get(name)
        return (isinstance(block, Mapping) and name in estimator_names(doc)
                and block["mbb_per_game"]["n"] > 1 and block["mbb_per_game"]["half_width_95"] is not None)

    if wanted is not None:
        return wanted if usable(wanted) else None
    doubted = answers_doubted(doc)
    return next((name for name in HEADLINE_ORDER if usable(name) and not (doubted and name not in ANSWER_FREE)),
                None)


def label(name: str) -> str:
    """An estimator's name in words."""
    return _LABELS.get(name, name.replace("_", " "))


# -- numbers that carry their source ------------------------------------------------------


def _num(doc_index: int, path: str, value: float | None, digits: int = 1, scale: float = 1.0,
         sign: bool = False, kind: str = "f") -> str:
    """``value * scale`` formatted (``kind`` "f": ``digits`` decimals, "g": significant digits),
    tagged with its JSON path and exact value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float) or scale != 1.0:
        shown = f"{value * scale:{'+' if sign else ''}.{digits}{kind}}"
    else:
        shown = f"{value:,}"
    extra = f' data-scale="{scale!r}"' if scale != 1.0 else ""
    # The path holds the document's own keys (estimator and count names): escaped like all its text.
    return (f'<span class="num" data-doc="{doc_index}" data-json="{_esc(path)}" data-value="{_esc(repr(value))}"'
            f'{extra}>{_esc(shown)}</span>')


def _interval(figures: MeanFigures) -> tuple[float, float]:
    """The printed 95% interval of a sample with one (``low_95``, ``high_95``: skewness-corrected),
    or mean ± half_width_95 from an older document."""
    low, high, half = figures.get("low_95"), figures.get("high_95"), figures["half_width_95"]
    if low is not None and high is not None:
        return low, high
    assert half is not None
    return figures["mean"] - half, figures["mean"] + half


def _esc(value: Any) -> str:
    """Text of a document (any string, any key) as HTML text or a quoted attribute value."""
    return html.escape(str(value), quote=True)


def _gid(name: str) -> str:
    """A document's name made safe for an SVG id (letters, digits, ``_.-``; the rest ``_``)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


# -- plots ---------------------------------------------------------------------------------


def _svg(figure: Any) -> str:
    """A matplotlib figure as inline SVG: no XML header, no metadata, nothing external."""
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(figure)
    text = buffer.getvalue()
    text = text[text.index("<svg"):]
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.DOTALL)
    return text


def _pyplot() -> Any:
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "acpc-lbr"  # the same page for the same document
    matplotlib.rcParams["svg.fonttype"] = "path"
    import matplotlib.pyplot as plt

    return plt


def running_mean_plot(doc: Mapping[str, Any]) -> str | None:
    """Each estimator's running mean with its 95% band, in mbb/g over hands (None: no trajectory)."""
    trajectory = doc.get("trajectory")
    if not trajectory or not trajectory.get("hands"):
        return None
    plt = _pyplot()
    scale = 1000.0 / doc["big_blind"]
    hands = trajectory["hands"]
    figure, axis = plt.subplots(figsize=(9, 4.6))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    # An estimator that was not computed (AIVAT without --aivat) has no points to draw.
    shown = [n for n in estimator_names(doc)
             if n in trajectory["estimators"] and doc["estimators"][n]["chips"]["n"] > 0]
    for k, name in enumerate(shown):
        column = trajectory["estimators"][name]
        mean = [m * scale for m in column["mean"]]
        half = [math.nan if h is None else h * scale for h in column["half_width_95"]]
        # the band is each point's printed 95% interval (an older document: mean ± half_width_95)
        lows = [math.nan if v is None else v * scale for v in column.get("low_95", [])] or [m - h for m, h in
                                                                                             zip(mean, half)]
        highs = [math.nan if v is None else v * scale for v in column.get("high_95", [])] or [m + h for m, h in
                                                                                              zip(mean, half)]
        color = colors[k % len(colors)]
        keep = [i for i, n in enumerate(column["n"]) if n > 0]
        x = [hands[i] for i in keep]
        style = ("-", "--", "-.", ":")[k % 4]  # raw and duplicate means coincide once every pair is in
        line, = axis.plot(x, [mean[i] for i in keep], color=color, linewidth=1.4, linestyle=style,
                          label=label(name))
        line.set_gid(f"trajectory-{_gid(name)}")
        band = axis.fill_between(x, [lows[i] for i in keep], [highs[i] for i in keep],
                                 color=color, alpha=0.15, linewidth=0)
        band.set_gid(f"band-{_gid(name)}")
    axis.axhline(0.0, color="black", linewidth=0.8)
    axis.set_xlabel("hands played")
    measured = doc["config"].get("measured")
    axis.set_ylabel("LBR's win rate, mbb/g" if doc["config"].get("lbr") else f"win rate of {measured}, mbb/g")
    axis.set_title("Running estimate with its 95% interval")
    axis.grid(alpha=0.3)
    low = [trajectory["estimators"][n]["mean"][-1] * scale for n in shown]
    widths = [(trajectory["estimators"][n]["half_width_95"][-1] or 0.0) * scale for n in shown]
    if low:  # zoom on the settled part: the final intervals, widened 4 times
        centre = sum(low) / len(low)
        span = max(max(widths) * 4, max(abs(v - centre) for v in low) * 2, 1.0)
        axis.set_ylim(centre - span, centre + span)
    axis.legend(loc="upper right", fontsize="small")
    return _svg(figure)


#: Timings that split each seating's time in its match (``acpc-lbr evaluate``'s breakdown, summed
#: over the seatings): they add up, with the time outside the matches, to the wall time.
WALL_PARTS = {
    "opponent_acting_seconds": "opponent acting",
    "lbr_turn_seconds": "LBR's turns (computing, waiting for answers)",
    "dealer_other_seconds": "dealer and transfers",
}


def _timing_parts(timings: Mapping[str, Any], prefix: str = "") -> list[tuple[str, float]]:
    parts = []
    for key, value in timings.items():
        if isinstance(value, Mapping):
            parts += _timing_parts(value, f"{prefix}{key}.")
        elif isinstance(value, (int, float)) and key.endswith("_seconds") and key != "wall_seconds":
            parts.append((prefix + key, float(value)))
    return parts


def wall_split(doc: Mapping[str, Any]) -> list[tuple[str, str, float]] | None:
    """The wall time in parts that add up to it: ``(key, label, seconds)`` per :data:`WALL_PARTS`
    entry (summed over the seatings, divided by their number: the seatings play at once), then the
    rest of the wall time (starting, connecting, writing: outside the matches). None: the document
    has no such parts (a dealer's document) or no wall time.

    >>> doc = {"config": {"matches": ["m", "m.dup"]}, "timings": {"wall_seconds": 5.0,
    ...        "opponent_acting_seconds": 2.0, "lbr_turn_seconds": 4.0, "dealer_other_seconds": 2.0}}
    >>> [(key, seconds) for key, _, seconds in wall_split(doc)]
    [('opponent_acting_seconds', 1.0), ('lbr_turn_seconds', 2.0), ('dealer_other_seconds', 1.0), ('outside', 1.0)]
    """
    timings = doc.get("timings") or {}
    wall = timings.get("wall_seconds")
    if not isinstance(wall, (int, float)) or not all(isinstance(timings.get(k), (int, float)) for k in WALL_PARTS):
        return None
    config = doc.get("config") or {}
    batches = max(int(config.get("merged_from") or 1), 1)
    matches = config.get("matches") or []
    seatings = max(len(matches) // batches, 1) if matches else 2 if config.get("duplicate") else 1
    parts = [(key, text, float(timings[key]) / seatings) for key, text in WALL_PARTS.items()]
    inside = sum(seconds for _, _, seconds in parts)
    parts.append(("outside", "outside the matches (starting, connecting, writing)", max(float(wall) - inside, 0.0)))
    return parts


#: Parties of the totals, by the first word of a timing's name, in the order shown.
_PARTIES = {"opponent": "bot", "bot": "bot", "channel": "channel", "lbr": "LBR", "dealer": "dealer"}


def time_plot(doc: Mapping[str, Any]) -> str | None:
    """Where the time went (None: no timings).

    On top, one bar of the wall time split into parts that add up to it (:func:`wall_split`);
    below, apart, every other ``*_seconds`` timing as a total, coloured by party (bot, channel,
    LBR, dealer, others): totals overlap the parts and each other, so they are not stacked.
    """
    timings = doc.get("timings") or {}
    split = wall_split(doc)
    totals = [(name, seconds) for name, seconds in _timing_parts(timings) if split is None or name not in WALL_PARTS]
    if not totals and split is None:
        return None
    plt = _pyplot()
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    rows = [1.3] if split is not None else []
    rows += [0.42 * len(totals) + 0.9] if totals else []
    figure, axes = plt.subplots(len(rows), 1, figsize=(9, sum(rows) + 0.8), squeeze=False,
                                gridspec_kw={"height_ratios": rows})
    if split is not None:
        _wall_bar(axes[0][0], split, doc, colors)
    if totals:
        _totals_bars(axes[-1][0], totals, timings.get("wall_seconds"), colors, plt)
    figure.tight_layout()
    return _svg(figure)


def _wall_bar(axis: Any, split: list[tuple[str, str, float]], doc: Mapping[str, Any], colors: list[str]) -> None:
    """One stacked bar: the parts of the wall time, left to right."""
    left = 0.0
    for k, (key, text, seconds) in enumerate(split):
        bar = axis.barh(["wall time"], [seconds], left=left, color=colors[k % len(colors)],
                        label=f"{text}: {seconds:.1f} s")
        bar.patches[0].set_gid(f"wall-part-{_gid(key)}")
        left += seconds
    merged = int((doc.get("config") or {}).get("merged_from") or 1) > 1
    what = "the batches' wall times, summed" if merged else "wall time"
    axis.set_title(f"Where the {what} went: {left:.1f} s (per seating: they play at once)")
    axis.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    axis.set_xlabel("seconds")


def _totals_bars(axis: Any, totals: list[tuple[str, float]], wall: Any, colors: list[str], plt: Any) -> None:
    """Every other timing as its own bar, coloured by party, the wall time as a line."""
    order = list(dict.fromkeys(_PARTIES.values()))

    def party(name: str) -> str:
        return _PARTIES.get(name.split(".")[-1].split("_")[0], "other")

    totals = sorted(totals, key=lambda p: (order.index(party(p[0])) if party(p[0]) in order else len(order)))
    names = [name.removesuffix("_seconds").replace("_", " ") for name, _ in totals]
    groups = [party(name) for name, _ in totals]
    palette = {g: colors[k % len(colors)] for k, g in enumerate(dict.fromkeys(groups))}
    bars = axis.barh(names, [seconds for _, seconds in totals], color=[palette[g] for g in groups])
    for (name, _), patch in zip(totals, bars):
        patch.set_gid(f"time-{_gid(name)}")
    handles = [plt.Rectangle((0, 0), 1, 1, color=palette[g]) for g in palette]
    labels = list(palette)
    if isinstance(wall, (int, float)):
        handles.append(axis.axvline(float(wall), color="black", linestyle="--", linewidth=1))
        labels.append(f"wall time {wall:.1f} s")
    axis.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    axis.invert_yaxis()
    axis.set_xlabel("seconds, summed over the seatings; these overlap the parts above and each other")
    axis.set_title("Totals, apart (not parts of the wall time)")
    axis.grid(axis="x", alpha=0.3)


# -- the page ------------------------------------------------------------------------------


_STYLE = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; max-width: 64rem;
       margin: 2rem auto; padding: 0 1rem; color: #1b1b1b; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } h2 { font-size: 1.25rem; margin-top: 2rem;
     border-bottom: 1px solid #ddd; } h3 { font-size: 1.05rem; }
table { border-collapse: collapse; margin: .6rem 0; } th, td { padding: .25rem .7rem;
     border-bottom: 1px solid #e4e4e4; text-align: right; } th:first-child, td:first-child { text-align: left; }
.headline { font-size: 1.35rem; background: #f3f6fb; border-left: 4px solid #4c72b0; padding: .7rem 1rem; }
.flag { color: #b00020; font-weight: 600; } .ok { color: #1b7a30; font-weight: 600; }
.muted { color: #666; font-size: .9rem; } figure { margin: 1rem 0; } svg { max-width: 100%; height: auto; }
dl.settings { display: grid; grid-template-columns: max-content auto; gap: .15rem 1rem; }
dl.settings dt { color: #555; } dl.settings dd { margin: 0; }
"""


def _opponent_command(config: Mapping[str, Any]) -> str | None:
    """The opponent's command line (``evaluate --opponent-cmd``), if the document records one
    (``config.opponent_cmd``; older documents put it in ``config.opponent``)."""
    command = config.get("opponent_cmd")
    if command is None and "{port}" in str(config.get("opponent") or ""):
        command = config.get("opponent")
    return None if command is None else str(command)


def opponent_name(config: Mapping[str, Any]) -> str:
    """The opponent's short name: its seat names (``--opponent-name``, or the program's name), not a command."""
    seats = [str(p) for p in config.get("players", []) if p != config.get("measured")]
    opponent = config.get("opponent")
    if opponent and _opponent_command(config) != opponent:
        return str(opponent)
    return ", ".join(seats) or "opponent"


def _settings(doc: Mapping[str, Any]) -> str:
    config = doc["config"]
    lbr = config.get("lbr") or {}
    rows = [
        ("game", config.get("game")),
        ("measured player", config.get("measured")),
        ("opponent", opponent_name(config)),
        ("opponent command", _opponent_command(config)),
        ("LBR bets", lbr.get("bets")),
        ("LBR active rounds", lbr.get("rounds")),
        ("seed", config.get("seed")),
        ("deals per match", config.get("hands")),
        ("duplicate", "yes (each deal also played with the seats reversed)" if config.get("duplicate") else "no"),
        ("matches", ", ".join(str(m).rsplit("/", 1)[-1] for m in config.get("matches", [])) or None),
        ("merged from", config.get("merged_from")),
        ("chips per big blind", doc["big_blind"]),
        ("software", f"{doc.get('software', {}).get('name', 'acpc-lbr')} {doc.get('software', {}).get('version')}"),
        ("results schema", f"{doc.get('schema')} version {doc.get('version')}"),
    ]
    items = "".join(f"<dt>{_esc(k)}</dt><dd>{_esc(v)}</dd>" for k, v in rows if v not in (None, ""))
    return f'<dl class="settings">{items}</dl>'


def _headline(doc: Mapping[str, Any], i: int, wanted: str | None = None) -> str:
    name = headline(doc, wanted)
    if name is None and wanted is not None:
        return (f'<p class="headline" id="headline-{i}">No bound from {_esc(wanted)} (--headline): this document '
                "does not list it, or it has fewer than two units.</p>")
    if name is None:
        return f'<p class="headline" id="headline-{i}">No bound: fewer than two units in every estimator.</p>'
    block = doc["estimators"][name]
    mbb, bb = block["mbb_per_game"], block["bb_per_hand"]
    base = f"estimators.{name}"
    low, high = _interval(mbb)
    config = doc["config"]
    lbr = bool(config.get("lbr"))  # made by `evaluate`; a dealer's match may be any two bots
    what = "Lower bound on exploitability" if lbr else f"Win rate of {_esc(config.get('measured'))}"
    note = ("unbiased estimates of LBR's win rate, which is a lower bound on what a best "
            "response would win." if lbr else
            f"unbiased estimates of the win rate of {_esc(config.get('measured'))} (a match of "
            "the dealer's: a lower bound on the opponent's exploitability only when that player is LBR).")
    return (
        f'<p class="headline" id="headline-{i}">{what}: '
        f'<strong>{_num(i, base + ".mbb_per_game.mean", mbb["mean"], sign=True)} '
        f'± {_num(i, base + ".mbb_per_game.half_width_95", mbb["half_width_95"])} mbb/g</strong> '
        f"(95% interval [{low:+.1f}, {high:+.1f}]), i.e. "
        f'{_num(i, base + ".bb_per_hand.mean", bb["mean"], 2, 100.0, sign=True)} '
        f'± {_num(i, base + ".bb_per_hand.half_width_95", bb["half_width_95"], 2, 100.0)} bb/100; '
        f"estimator: {_esc(label(name))}, {_num(i, base + '.chips.n', block['chips']['n'])} units.</p>"
        f'<p class="muted">{_headline_rule(doc, wanted)} The estimators are {note}</p>'
    )


def _headline_rule(doc: Mapping[str, Any], wanted: str | None) -> str:
    """How the headline's estimator was chosen, in words."""
    if wanted is not None:
        doubted = answers_doubted(doc) and wanted not in ANSWER_FREE
        return ("The estimator was named with --headline." + (
            " Its honesty check is flagged or the answers were proven false: it rests on those answers "
            "and is no bound here." if doubted else ""))
    order = ", ".join(HEADLINE_ORDER)
    return (f"The estimator is the first this run computed in an order fixed before any data ({order}; "
            "raw and duplicate only when the answers are in doubt), not the narrowest interval, which, "
            "picked after seeing the data, would cover less than 95% of the time; --headline NAME names another.")


#: The estimators that rest on imaginary observations (with their check).
_IO_NAMES = ("io", "duplicate_io", "io_minus_raw")


def asked_for(doc: Mapping[str, Any], name: str) -> bool:
    """Whether the run asked for estimator ``name`` (a row is shown, with 'not computed' when it
    has no units): AIVAT's only with AIVAT (``config.aivat``), the paired ones only with the mirror
    (``config.duplicate``), none but raw with more than two players (``players``); the IO ones
    only when they have units (IO is on by default, so a run without them had ``--no-io`` or no
    range answers, which a line below the table says rather than rows)."""
    config = doc["config"]
    if "players" in doc and name != "raw":
        return False
    if name in _IO_NAMES:
        return bool(doc["estimators"][name]["chips"]["n"])
    if name in estimators.AIVAT_NAMES and config.get("aivat") is None:
        return False
    paired = bool(config.get("duplicate")) or bool(doc["estimators"].get("duplicate", {}).get("chips", {}).get("n"))
    return paired or not name.startswith("duplicate")


def _estimator_table(doc: Mapping[str, Any], i: int) -> str:
    raw_width = doc["estimators"].get("raw", {}).get("mbb_per_game", {}).get("half_width_95")
    # The run refused AIVAT (config.aivat says why, as `acpc-lbr results` prints it).
    aivat_reason = aivat_not_computed(doc["config"])
    rows = []
    for name in [*estimator_names(doc), *checks(doc)]:
        block = doc["estimators"][name]
        mbb, bb, base = block["mbb_per_game"], block["bb_per_hand"], f"estimators.{name}"
        if block["chips"]["n"] == 0 and not asked_for(doc, name):
            continue  # not asked for: no row of it
        if block["chips"]["n"] == 0:
            why = " (the reason is below the table)" if aivat_reason is not None and name in estimators.AIVAT_NAMES else ""
            rows.append(f"<tr><td>{_esc(label(name))}</td><td>0</td><td colspan=5>not computed{why}</td></tr>")
            continue
        interval = "–"
        if mbb["half_width_95"] is not None:
            low, high = _interval(mbb)
            interval = f"[{low:+.1f}, {high:+.1f}]"
        ratio = "–"
        if raw_width and mbb["half_width_95"] is not None and name in estimator_names(doc):
            ratio = f"{mbb['half_width_95'] / raw_width:.3f}"
        rows.append(
            f"<tr><td>{_esc(label(name))}</td><td>{_num(i, base + '.chips.n', block['chips']['n'])}</td>"
            f"<td>{_num(i, base + '.mbb_per_game.mean', mbb['mean'], sign=True)}</td>"
            f"<td>± {_num(i, base + '.mbb_per_game.half_width_95', mbb['half_width_95'])}</td>"
            f"<td>{interval}</td>"
            f"<td>{_num(i, base + '.bb_per_hand.mean', bb['mean'], 2, 100.0, sign=True)}</td>"
            f"<td>{ratio}</td></tr>"
        )
    refusal = ("" if aivat_reason is None else
               f'<p class="aivat-not-computed" id="aivat-not-computed-{i}">AIVAT not computed: {_esc(aivat_reason)}</p>')
    io = doc["estimators"].get("io")
    if "players" not in doc and isinstance(io, Mapping) and not io["chips"]["n"]:
        refusal += (f'<p class="muted" id="no-io-{i}">No imaginary-observation figures: the run had IO off '
                    "(--no-io), or the opponent gave no range answers to value a showdown with.</p>")
    refusal += _players_table(doc, i)
    return ("<table><thead><tr><th>estimator</th><th>n</th><th>mbb/g</th><th>1.96·se</th><th>95% interval</th>"
            "<th>bb/100</th><th>width / raw</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
            + refusal + '<p class="muted">n counts hands, or duplicate pairs for the duplicate estimators; '
            "the interval is the document's printed 95% interval (low_95, high_95: skewness-corrected, and "
            "within seats for the estimators over hands), so not always the mean ± 1.96·se; 1.96·se is "
            "half_width_95, 1.96 × the mean's standard error, whose ratio to raw's is the width / raw column.</p>")


def _players_table(doc: Mapping[str, Any], i: int) -> str:
    """Each player's raw result (a match of more than two players), or nothing."""
    players = doc.get("players")
    if not isinstance(players, Mapping):
        return ""
    rows = []
    for name, block in players.items():
        mbb, base = block["mbb_per_game"], f"players.{name}"
        rows.append(f"<tr><td>{_esc(name)}</td><td>{_num(i, base + '.chips.n', block['chips']['n'])}</td>"
                    f"<td>{_num(i, base + '.mbb_per_game.mean', mbb['mean'], sign=True)}</td>"
                    f"<td>± {_num(i, base + '.mbb_per_game.half_width_95', mbb['half_width_95'])}</td></tr>")
    seats = doc["config"].get("players") or players
    return (f'<p id="players-{i}">{_esc(MULTIPLAYER_NOT_COMPUTED.format(n=len(seats)))}</p>'
            "<table><thead><tr><th>player</th><th>hands</th><th>mbb/g</th><th>95%</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")


def _honesty(doc: Mapping[str, Any], i: int) -> str:
    parts = []
    for name in checks(doc):
        block = doc["estimators"][name]
        chips, mbb = block["chips"], block["mbb_per_game"]
        if chips["n"] < 2 or chips["std"] is None:
            continue
        base = f"estimators.{name}"
        statistic = block.get("statistic", block.get("z"))
        p_value = block.get("p_value")
        if statistic is None and chips["std"]:
            statistic_text = f"{chips['mean'] / (chips['std'] / math.sqrt(chips['n'])):+.2f} (computed here)"
        elif statistic is not None:
            statistic_text = _num(i, f"{base}.{'statistic' if 'statistic' in block else 'z'}", float(statistic), 2, sign=True)
        else:
            statistic_text = "–"
        if p_value is None and chips["std"]:
            z = abs(chips["mean"]) / (chips["std"] / math.sqrt(chips["n"]))
            p_text = f"{math.erfc(z / math.sqrt(2)):.3g} (two-sided, normal, computed here)"
        elif p_value is not None:
            p_text = _num(i, f"{base}.p_value", float(p_value), 3, kind="g")
        else:
            p_text = "–"
        lies = proven_lies(doc.get("counts", {}))
        verdict = {
            "flagged": '<span class="flag">FLAGGED</span>: the difference is too large to be chance; the '
                       "bot's range answers do not match how it plays, so the IO-based estimators are not "
                       "to be trusted. Raw and duplicate remain valid bounds whatever the answers.",
            "proven false": f'<span class="flag">FLAGGED</span>: whatever the statistic, the answers were '
                            f"proven false {lies} times (range inconsistencies: an answer gave the action "
                            "played probability 0), so the IO-based estimators are no bound. Raw and "
                            "duplicate remain valid bounds whatever the answers.",
            "untested": '<span class="muted">not tested</span>: the difference is the same on every hand '
                        f"(no {'showdown' if name == 'io_minus_raw' else 'hand'} was valued from the answers), "
                        "so the p-value says nothing.",
            "passed": '<span class="ok">passed</span>: the difference is what chance gives with honest answers.',
        }[honesty_verdict(block, lies)]
        alpha = _honesty_alpha()
        if alpha is not None:
            verdict += (f" (The check flags at p &lt; {alpha:g}, so an honest bot is flagged about once "
                        f"in {1 / alpha:,.0f} runs.)")
        parts.append(
            f'<div id="honesty-{i}"><p>Imaginary observations replace each showdown by its expectation over '
            "the hands the bot said it could hold, so they rest on its range answers. The check compares "
            "them with the raw outcomes of the same hands: with honest answers the mean difference is 0. "
            f"Here it is {_num(i, base + '.mbb_per_game.mean', mbb['mean'], sign=True)} "
            f"± {_num(i, base + '.mbb_per_game.half_width_95', mbb['half_width_95'])} mbb/g "
            f"over {_num(i, base + '.chips.n', chips['n'])} hands: statistic z = {statistic_text}, "
            f"p-value {p_text}, the probability of a difference at least this large if the answers are "
            f"honest.</p><p>Verdict: {verdict}</p>"
            '<p class="muted">What it cannot see: answers that are wrong only in ways that leave the expected '
            "showdown value unchanged, and a bias too small for the number of hands played.</p></div>"
        )
    return "".join(parts) or '<p class="muted">No imaginary observations in this run, so no honesty check.</p>'


#: The probe section's figures, each with one line saying what it means (docs/range-query.md).
_PROBE_FIGURES = (
    ("samples", "K, probes per hand and query: an answer is a frequency over K plays", 0),
    ("instances", "N, copies of the bot answering the probes", 0),
    ("queries", "range queries the dealer sent to the probe adapter", 0),
    ("answered", "of them answered", 0),
    ("refused", "of them refused (the reasons are below)", 0),
    ("probes", "probe lines the copies played", 0),
    ("copy_failures", "copies that disconnected, stalled or answered no probe", 0),
    ("largest_standard_error", "the largest standard error of any answered probability: with K probes "
     "a frequency p is off by about sqrt(p(1-p)/K)", 4),
    ("mean_standard_error", "the mean standard error of an answer", 4),
    ("smallest_answer_mass", "the smallest total probability of the asked actions for one hand: well "
     "below 1 when the bot plays actions LBR did not ask about (e.g. raise sizes it randomises)", 4),
    ("mean_answer_mass", "the mean of that total", 4),
)


def _probe(doc: Mapping[str, Any], i: int) -> str:
    """``evaluate --probe``: the adapters' figures, one line each, and the consistency verdict ('' without)."""
    probe = doc.get("probe")
    if not isinstance(probe, Mapping):
        return ""
    rows = []
    for key, meaning, digits in _PROBE_FIGURES:
        value = probe.get(key)
        shown = "–" if value is None else _num(i, f"probe.{key}", value, digits) if digits else _num(i, f"probe.{key}", value)
        rows.append(f"<tr><td>{_esc(key.replace('_', ' '))}</td><td>{shown}</td><td>{_esc(meaning)}</td></tr>")
    refusals = probe.get("refusals") or {}
    reasons = "".join(f"<li>{_esc(cause)}: {_num(i, f'probe.refusals.{cause}', count)}</li>"
                      for cause, count in refusals.items())
    check = probe.get("consistency") or {}
    verdict = str(check.get("verdict", "not checked"))
    css = "flag" if verdict == "inconsistent" else "ok" if verdict == "consistent" else "muted"
    consistency = (
        f'<p id="probe-consistency-{i}">Consistency check: <span class="{css}">{_esc(verdict)}</span> '
        f"({_num(i, 'probe.consistency.decisions', check.get('decisions'))} decisions of the playing copy "
        f"against {_num(i, 'probe.consistency.probes', check.get('probes'))} probes; largest z "
        f"{_num(i, 'probe.consistency.largest_z', check.get('largest_z'), 2)}, limit "
        f"{_num(i, 'probe.consistency.threshold_z', check.get('threshold_z'), 1)}). It compares what the "
        "playing copy did with what the probes said it would do: 'inconsistent' means the probed answers "
        "are not the strategy that played (a bot with memory), and evaluate then gives no bound.</p>")
    return (f'<table id="probe-{i}"><tbody>{"".join(rows)}</tbody></table>'
            + (f"<p>Refused queries by reason:</p><ul>{reasons}</ul>" if reasons else "") + consistency)


def _honesty_alpha() -> float | None:
    """The level at which the honesty check flags, when this version defines one."""
    alpha = getattr(estimators, "HONESTY_ALPHA", None)
    return float(alpha) if isinstance(alpha, (int, float)) else None


def _counts(doc: Mapping[str, Any], i: int) -> str:
    counts = doc.get("counts") or {}
    if not counts:
        return ""
    order = [k for k in _COUNTS if k in counts] + [k for k in counts if k not in _COUNTS]
    cells = "".join(f"<tr><td>{_esc(_COUNTS.get(k, k.replace('_', ' ')))}</td>"
                    f"<td>{_num(i, f'counts.{k}', counts[k])}</td></tr>" for k in order)
    return f'<table id="counts-{i}"><tbody>{cells}</tbody></table>'


def _title(doc: Mapping[str, Any]) -> str:
    config = doc["config"]
    return f"{config.get('measured')} vs {opponent_name(config)} in {config.get('game')}"


def _section(doc: Mapping[str, Any], i: int, several: bool, wanted: str | None = None) -> str:
    out = [f'<section id="doc-{i}">']
    out.append(f"<h2>{_esc(_title(doc))}</h2>" if several else "")
    out.append(_headline(doc, i, wanted))
    out.append("<h3>Settings</h3>" + _settings(doc))
    out.append("<h3>Estimators</h3>" + _estimator_table(doc, i))
    plot = running_mean_plot(doc)
    out.append("<h3>Running estimate</h3>")
    out.append(f'<figure id="running-mean-{i}">{plot}<figcaption class="muted">Each estimator\'s mean '
               "over the hands played so far, with its 95% band; the last point is the final estimate."
               "</figcaption></figure>" if plot else
               '<p class="muted">No trajectory in this document (results schema version 1).</p>')
    out.append("<h3>Honesty check</h3>" + _honesty(doc, i))
    probe = _probe(doc, i)
    if probe:
        out.append("<h3>Probed answers (--probe)</h3>" + probe)
    timing = time_plot(doc)
    out.append("<h3>Time and counts</h3>")
    if timing:
        out.append(f'<figure id="time-breakdown-{i}">{timing}<figcaption class="muted">The top bar\'s '
                   "parts add up to the wall time. The totals below it are each timing of the document as "
                   "it is: some contain others (LBR's wait for its queries includes the bot's time "
                   "answering them), so they are shown apart, not stacked.</figcaption></figure>")
    out.append(_counts(doc, i))
    out.append("</section>")
    return "".join(out)


def _comparison(docs: Sequence[Mapping[str, Any]], wanted: str | None = None) -> str:
    rows = []
    for i, doc in enumerate(docs):
        name = headline(doc, wanted)
        config = doc["config"]
        if name is None:
            rows.append(f"<tr><td>{_esc(_title(doc))}</td><td colspan=5>no bound</td></tr>")
            continue
        mbb, bb, base = doc["estimators"][name]["mbb_per_game"], doc["estimators"][name]["bb_per_hand"], f"estimators.{name}"
        low, high = _interval(mbb)
        rows.append(
            f'<tr><td><a href="#doc-{i}">{_esc(_title(doc))}</a></td><td>{_num(i, "counts.hands", doc["counts"]["hands"])}</td>'
            f"<td>{_num(i, base + '.mbb_per_game.mean', mbb['mean'], sign=True)} "
            f"± {_num(i, base + '.mbb_per_game.half_width_95', mbb['half_width_95'])}</td>"
            f"<td>[{low:+.1f}, {high:+.1f}]</td>"
            f"<td>{_num(i, base + '.bb_per_hand.mean', bb['mean'], 2, 100.0, sign=True)}</td>"
            f"<td>{_esc(label(name))}</td><td>{_esc(config.get('seed'))}</td></tr>"
        )
    return ('<h2>Bounds side by side</h2><table id="comparison"><thead><tr><th>run</th><th>hands</th>'
            "<th>mbb/g ± 95%</th><th>interval</th><th>bb/100</th><th>estimator</th><th>seed</th></tr></thead>"
            "<tbody>" + "".join(rows) + "</tbody></table>")


def render(docs: Sequence[Mapping[str, Any]], names: Sequence[str] | None = None,
           headline_name: str | None = None) -> str:
    """The report page of one or more results documents.

    Args:
        docs: results documents (schema versions :data:`acpc_lbr.results.READABLE_VERSIONS`).
        names: where each came from (shown under the title).
        headline_name: the headline's estimator (default: :func:`headline`'s fixed order).

    Raises:
        ImportError: matplotlib is not installed (:data:`MISSING_MATPLOTLIB`).
        ValueError: not a results document.
    """
    require_matplotlib()
    if not docs:
        raise ValueError("no results document")
    for k, doc in enumerate(docs):
        where = names[k] if names else f"document {k + 1}"
        if not isinstance(doc, Mapping) or doc.get("schema") != SCHEMA or doc.get("version") not in READABLE_VERSIONS:
            raise ValueError(f"{where}: not an acpc-lbr results document (schema {SCHEMA!r}, "
                             f"version {'/'.join(map(str, READABLE_VERSIONS))})")
    several = len(docs) > 1
    kind = "LBR evaluation" if any(doc["config"].get("lbr") for doc in docs) else "Match results"
    title = f"{kind}: " + (_title(docs[0]) if not several else f"{len(docs)} runs")
    sources = "".join(f"<li>{_esc(n)}</li>" for n in names) if names else ""
    body = [f"<h1>{_esc(title)}</h1>"]
    if sources:
        body.append(f'<ul class="muted">{sources}</ul>')
    if several:
        body.append(_comparison(docs, headline_name))
    body += [_section(doc, i, several, headline_name) for i, doc in enumerate(docs)]
    body.append('<p class="muted">Made by acpc-lbr report from the results JSON (docs/results.md). '
                "Self-contained: it loads nothing from anywhere.</p>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_esc(title)}</title><style>{_STYLE}</style></head><body>"
            + "\n".join(body) + "</body></html>\n")
