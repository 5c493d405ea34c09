"""``acpc-lbr report``: one self-contained HTML page from results documents.

Usage::

    acpc-lbr report RESULTS.json [MORE.json ...] [--out report.html] [--headline NAME]

The documents are the results JSON of ``acpc-lbr evaluate --json``,
``acpc-lbr dealer --results-json`` or ``acpc-lbr results -o`` (docs/results.md);
several give a table of bounds side by side. The page embeds its plots
(matplotlib: ``pip install 'acpc-lbr[report]'``) and loads nothing from
anywhere (acpc_lbr/app/report.py). Exit status 0 written, 2 bad input or no
matplotlib.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from acpc_lbr.app.report import HEADLINE_ORDER, render, require_matplotlib
from acpc_lbr.app.tournament import html as tournament_html
from acpc_lbr.results import read_document
from acpc_lbr.runtime.exit_codes import EXIT_OK, EXIT_USAGE


def main(argv: Sequence[str]) -> int:
    """Write the report; 0 on success, 2 on bad input or a missing matplotlib."""
    parser = argparse.ArgumentParser(
        prog="acpc-lbr report",
        description="Write one self-contained HTML report (settings, bound, running estimate with its "
        "95% band, time, counts, honesty check) from results documents, or a tournament's (crosstable heat "
        "map, rank probabilities) from its results.json.",
    )
    parser.add_argument("files", nargs="+", metavar="RESULTS.json", help="results documents (docs/results.md)")
    parser.add_argument("-o", "--out", default="report.html", metavar="FILE",
                        help="the HTML file to write (default report.html)")
    parser.add_argument("--headline", default=None, metavar="NAME",
                        help="the estimator of the headline bound (default: the first computed of "
                        f"{', '.join(HEADLINE_ORDER)}; docs/results.md)")
    args = parser.parse_args(list(argv))
    tournament = _tournament(args.files)
    if tournament is not None:
        return _write(args.out, tournament)
    try:
        require_matplotlib()
    except ImportError as missing:
        print(f"acpc-lbr report: {missing}", file=sys.stderr)
        return EXIT_USAGE
    try:
        docs = [read_document(f) for f in args.files]
        page = render(docs, list(args.files), args.headline)
        Path(args.out).write_text(page, encoding="utf-8")
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError) as error:
        # (a document's field of another type than the schema's: a list for a mapping, a string for a number)
        print(f"acpc-lbr report: {error}", file=sys.stderr)
        return EXIT_USAGE
    print(f"report written to {args.out}", file=sys.stderr)
    return EXIT_OK


def _tournament(files: Sequence[str]) -> tuple[dict[str, object], str] | None:
    """A single tournament document (acpc-lbr tournament --json), or None: results documents."""
    if len(files) != 1:
        return None
    try:
        with open(files[0], encoding="utf-8") as handle:
            head = handle.read(256)
    except OSError:
        return None  # read_document says why
    if '"acpc-lbr-tournament"' not in head:
        return None
    try:
        document = json.loads(Path(files[0]).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return {"error": f"{files[0]}: {error}"}, files[0]
    return (document if isinstance(document, dict) else {"error": f"{files[0]}: not a JSON object"}), files[0]


def _write(out: str, tournament: tuple[dict[str, object], str]) -> int:
    document, name = tournament
    try:
        if "error" in document:
            raise ValueError(document["error"])
        Path(out).write_text(tournament_html.render(document, [name]), encoding="utf-8")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        print(f"acpc-lbr report: {error}", file=sys.stderr)
        return EXIT_USAGE
    print(f"report written to {out}", file=sys.stderr)
    return EXIT_OK
