"""``acpc-lbr results``: every estimator of finished matches, from their files alone.

Usage::

    acpc-lbr results MATCH.log [MATCH.queries] [MATCH.dup.log ...] [--measure NAME] [--json] [-o FILE]
    acpc-lbr results --merge RESULTS.json [RESULTS.json ...] [--json]

A ``.log``'s query log is found next to it (``MATCH.queries``); ``MATCH.log``
and ``MATCH.dup.log`` are the two halves of a duplicate match. Several
matches given together merge into one result; ``--merge`` merges results
documents (JSON) from separate runs instead. The JSON schema is in
docs/results.md.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from acpc_lbr.runtime.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from acpc_lbr.results import dumps, format_table, merge_documents, read_document, results_from_files


def main(argv: Sequence[str]) -> int:
    """Print (or write) the results of the given matches; 0 on success, 2 on bad input."""
    parser = argparse.ArgumentParser(
        prog="acpc-lbr results",
        description="Recompute the estimators (raw, duplicate, imaginary observations, "
        "duplicate + IO) of finished matches from their .log and .queries files, "
        "or merge results documents.",
    )
    parser.add_argument("files", nargs="+", help=".log and .queries files (or JSON documents with --merge)")
    parser.add_argument("--measure", metavar="NAME", help="the measured player (default: the dealer's, else the first seat)")
    parser.add_argument("--merge", action="store_true", help="the files are results documents to merge")
    parser.add_argument("--json", action="store_true", help="print the JSON document instead of the table")
    parser.add_argument("-o", "--output", metavar="FILE", help="also write the JSON document to FILE")
    args = parser.parse_args(argv)
    try:
        if args.merge:
            docs = [read_document(f) for f in args.files]
            doc = merge_documents(docs)
        else:
            doc = results_from_files([Path(f) for f in args.files], measured=args.measure)
    except (OSError, ValueError, KeyError, TypeError) as error:  # TypeError: a document's field of another type
        print(f"acpc-lbr results: {error}", file=sys.stderr)
        return EXIT_USAGE
    text = dumps(doc)
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as error:
            print(f"acpc-lbr results: cannot write {args.output}: {error.strerror or error}", file=sys.stderr)
            return EXIT_FAILED
    sys.stdout.write(text if args.json else format_table(doc))
    return EXIT_OK
