"""A tournament's results document as one self-contained HTML page (``acpc-lbr report``).

The crosstable is a heat map drawn with table cells (bright where the 95%
interval excludes 0, pale where it does not, as the ACPC's crosstables),
followed by both rankings with the probability of every place, the
P(A above B) matrices, the LBR column and the faults. It needs no plotting
library and loads nothing from anywhere. Every text that comes from the
document is escaped: a results file is input from a stranger.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any

from acpc_lbr.app.tournament.report import FORMAT


def is_tournament(document: object) -> bool:
    return isinstance(document, Mapping) and document.get("format") == FORMAT


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _require(condition: bool, what: str) -> None:
    if not condition:
        raise ValueError(f"not a tournament results document: {what}")


def check(document: Mapping[str, Any]) -> None:
    """The shape the page reads, or ValueError saying what is wrong (no traceback for a bad file)."""
    _require(isinstance(document.get("entrants"), list), "entrants is not a list")
    _require(all(isinstance(e, Mapping) and isinstance(e.get("name"), str) for e in document["entrants"]),
             "an entrant has no name")
    _require(isinstance(document.get("pairings"), list), "pairings is not a list")
    for row in document["pairings"]:
        _require(isinstance(row, Mapping) and isinstance(row.get("names"), list)
                 and isinstance(row.get("results"), Mapping), "a pairing has no names or results")
    rankings = document.get("rankings")
    _require(isinstance(rankings, Mapping) and all(isinstance(rankings.get(r), list)
                                                   for r in ("bankroll", "instant_runoff")), "rankings")
    _require(isinstance(document.get("game"), Mapping), "game")


def _color(mean: float | None, half: float | None, scale: float) -> str:
    if mean is None:
        return "#eeeeee"
    significant = half is not None and abs(mean) > half
    strength = min(1.0, abs(mean) / scale) if scale > 0 else 0.0
    light = 0.85 - (0.45 * strength if significant else 0.15 * strength)
    green, red = (int(255 * light), 200, int(255 * light)), (230, int(255 * light), int(255 * light))
    r, g, b = green if mean > 0 else red
    return f"rgb({r},{g},{b})"


def _cell(figure: Mapping[str, Any] | None, scale: float, negate: bool = False) -> str:
    mean = _number(figure.get("mean")) if isinstance(figure, Mapping) else None
    half = _number(figure.get("half_width_95")) if isinstance(figure, Mapping) else None
    low = _number(figure.get("low_95")) if isinstance(figure, Mapping) else None
    high = _number(figure.get("high_95")) if isinstance(figure, Mapping) else None
    if mean is not None and negate:
        mean, low, high = -mean, None if high is None else -high, None if low is None else -low
    # the printed 95% interval (a document written before it: ± the half-width)
    spread = (f"<br><small>[{low:+.1f}, {high:+.1f}]</small>" if low is not None and high is not None
              else f"<br><small>± {half:.1f}</small>" if half is not None else "")
    text = "-" if mean is None else f"{mean:+.1f}" + spread
    return f'<td style="background:{_color(mean, half, scale)}">{text}</td>'


def _crosstable(document: Mapping[str, Any]) -> str:
    names = [str(e["name"]) for e in document["entrants"]]
    rows = document["pairings"]
    means = [abs(v) for r in rows for res in r["results"].values() if isinstance(res, Mapping)
             for v in [_number((res.get("mbb_per_game") or {}).get("mean"))] if v is not None]
    scale = max(means, default=1.0)
    if document["game"].get("players") == 2:
        cells = {(str(r["names"][0]), str(r["names"][1])): r["results"].get(str(r["names"][0]), {}).get("mbb_per_game")
                 for r in rows if len(r["names"]) == 2}
        head = "".join(f"<th>{_esc(n)}</th>" for n in names)
        body = []
        for a in names:
            tds = []
            for b in names:
                if (a, b) in cells:
                    tds.append(_cell(cells[a, b], scale))
                elif (b, a) in cells:
                    tds.append(_cell(cells[b, a], scale, negate=True))
                else:
                    tds.append('<td class="none"></td>')
            body.append(f"<tr><th>{_esc(a)}</th>{''.join(tds)}</tr>")
        return f'<table class="heat"><tr><th></th>{head}</tr>{"".join(body)}</table>'
    triples = []
    for r in rows:
        row_cells = "".join(f"<th>{_esc(n)}</th>{_cell(r['results'].get(n, {}).get('mbb_per_game'), scale)}"
                            for n in r["names"])
        triples.append(f"<tr>{row_cells}<td>{_esc(r.get('units', ''))} units</td></tr>")
    return f'<table class="heat">{"".join(triples)}</table>'


def _ranking(document: Mapping[str, Any], rule: str) -> str:
    entries = document["rankings"][rule]
    places = max((len(e.get("p_rank") or []) for e in entries if isinstance(e, Mapping)), default=0)
    head = "".join(f"<th>P({i + 1})</th>" for i in range(places))
    rows = []
    for e in entries:
        if not isinstance(e, Mapping):
            continue
        probabilities = e.get("p_rank") or []
        cells = "".join(
            f'<td style="background:rgba(40,110,200,{p:.2f})">{p:.2f}</td>' if (p := _number(v)) is not None
            else "<td></td>" for v in probabilities)
        score = _number(e.get("mbb_per_game"))
        rows.append(f"<tr><td>{_esc(e.get('rank', ''))}</td><th>{_esc(e.get('name', ''))}</th>"
                    f"<td>{'' if score is None else f'{score:+.1f}'}</td>{cells}</tr>")
        if e.get("separated_from_next"):
            rows.append(f'<tr class="line"><td colspan="{3 + places}">separated at 95%</td></tr>')
    return f"<table><tr><th>place</th><th>entrant</th><th>mbb/g</th>{head}</tr>{''.join(rows)}</table>"


def _above(document: Mapping[str, Any], rule: str) -> str:
    matrix = (document.get("p_above") or {}).get(rule)
    if not isinstance(matrix, Mapping):
        return "<p>No bootstrap (fewer than two matches per pairing).</p>"
    names = [str(n) for n in matrix]
    head = "".join(f"<th>{_esc(n)}</th>" for n in names)
    rows = []
    for a in names:
        row = matrix[a] if isinstance(matrix[a], Mapping) else {}
        cells = "".join(
            f'<td style="background:rgba(40,160,80,{p:.2f})">{p:.2f}</td>' if (p := _number(row.get(b))) is not None
            else "<td></td>" for b in names)
        rows.append(f"<tr><th>{_esc(a)}</th>{cells}</tr>")
    return f"<table><tr><th>P(row above column)</th>{head}</tr>{''.join(rows)}</table>"


def _bound_text(bound: Mapping[str, Any]) -> str:
    """An LBR bound: its mean and printed 95% interval (a document written before it: ± the half-width)."""
    mean, low, high = _number(bound.get("mean")) or 0.0, _number(bound.get("low_95")), _number(bound.get("high_95"))
    if low is not None and high is not None:
        return f"{mean:+.1f} [{low:+.1f}, {high:+.1f}]"
    return f"{mean:+.1f} ± {_number(bound.get('half_width_95')) or 0:.1f}"


def _entrants(document: Mapping[str, Any]) -> str:
    rows = []
    for e in document["entrants"]:
        faults = e.get("faults") if isinstance(e.get("faults"), Mapping) else {}
        counted = ", ".join(f"{_esc(k)} {_esc(v)}" for k, v in faults.items() if v)
        lbr = e.get("lbr")
        bound = lbr.get("bound") if isinstance(lbr, Mapping) else None
        lbr_text = (_bound_text(bound) if isinstance(bound, Mapping) else _esc(lbr.get("reason", "")) if isinstance(lbr, Mapping) else "")
        status = f"disqualified: {_esc(e.get('reason', ''))}" if e.get("disqualified") else ""
        rows.append(f"<tr><th>{_esc(e['name'])}</th><td><code>{_esc(e.get('spec', ''))}</code></td>"
                    f"<td>{counted}</td><td>{lbr_text}</td><td>{status}</td></tr>")
    return ("<table><tr><th>entrant</th><th>bot</th><th>faults</th><th>LBR lower bound (mbb/g)</th>"
            f"<th></th></tr>{''.join(rows)}</table>")


STYLE = """body{font-family:system-ui,sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse;
margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:right}th{background:#f6f6f6}
.heat td{min-width:6em}.line td{text-align:center;font-size:80%;color:#555;border-top:2px solid #333}
code{font-size:85%}"""


def render(document: Mapping[str, Any], names: Sequence[str] = ()) -> str:
    """The page of one tournament document."""
    check(document)
    game = document["game"]
    event: Mapping[str, Any] = document["event"] if isinstance(document.get("event"), Mapping) else {}
    headline = "all-in expectation" if document.get("headline") == "allin" else "chips"
    title = f"Tournament: {game.get('name', '')}, {len(document['entrants'])} entrants"
    matches: Mapping[str, Any] = document["matches"] if isinstance(document.get("matches"), Mapping) else {}
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1"><title>{_esc(title)}</title>
<style>{STYLE}</style></head><body>
<h1>{_esc(title)}</h1>
<p>{_esc(event.get('matches', '?'))} duplicate matches of {_esc(event.get('hands', '?'))} deals per pairing,
seed {_esc(event.get('seed', '?'))}, {_esc(event.get('format', ''))};
matches played {_esc(matches.get('played', '?'))} of {_esc(matches.get('total', '?'))},
given up {_esc(matches.get('failed', 0))}. {_esc(' '.join(names))}</p>
<h2>Crosstable</h2>
<p>mbb/g of the row entrant, ± the 95% half-width, per duplicate deal ({_esc(headline)}).
Bright: the interval excludes 0; pale: it does not.</p>
{_crosstable(document)}
<h2>Total bankroll</h2>{_ranking(document, 'bankroll')}{_above(document, 'bankroll')}
<h2>Series instant run-off</h2>{_ranking(document, 'instant_runoff')}{_above(document, 'instant_runoff')}
<h2>Entrants</h2>{_entrants(document)}
<p>How to read this page: docs/tournament.md.</p>
</body></html>
"""
