"""The results of matches, in one home: the document, the readers of match files, merges, tables.

Layer L1 (beside the compute core): it imports only ``protocol/`` (L0) and the
core's own modules, and is free of Twisted, the dealer and the agents
(tests/acpc_lbr/test_results_home.py):
the live dealer (``dealer/results.py``: asking the opponent, the query log as hands
finish, the running estimators) and ``acpc-lbr results`` (the files of finished
matches) both build their documents here, with the same step from a finished hand
to its outcome.

===================  ======================================================================
module               what it holds
===================  ======================================================================
``document``         the results document: its typed dicts, JSON Schema, reading
                     (:func:`read_document`, within :data:`MAX_DOCUMENT_BYTES`), building
                     (:func:`results_document`) and writing (:func:`dumps`)
``outcomes``         from a finished hand to its outcome: IO, AIVAT, the counts
                     (:class:`~acpc_lbr.results.outcomes.HandAccountant`: the one step,
                     live, offline and simulated)
``matchlog``         reading a ``MATCH.log`` back, within its bounds, checked
``querylog``         the ``MATCH.queries`` format: its writer, its reader, its checks
``files``            every estimator from the files of finished matches
                     (:func:`results_from_files`: ``acpc-lbr results``)
``merge``            merging documents of several batches (:func:`merge_documents`)
``table``            the results as text: the table, the honesty check's line
===================  ======================================================================

The names most callers need are importable from the package itself.
"""

from __future__ import annotations

from acpc_lbr.results.document import (
    COUNT_KEYS,
    DOCUMENT_SCHEMA,
    MAX_DOCUMENT_BYTES,
    READABLE_VERSIONS,
    SCHEMA,
    SCHEMA_VERSION,
    LbrOptions,
    ResultsConfig,
    ResultsDocument,
    SoftwareInfo,
    dumps,
    estimates_from_outcomes,
    player_results,
    read_document,
    results_document,
    software_version,
)
from acpc_lbr.results.files import results_from_files
from acpc_lbr.results.merge import document_estimates, merge_documents
from acpc_lbr.results.table import (
    MULTIPLAYER_NOT_COMPUTED,
    HonestyVerdict,
    aivat_not_computed,
    format_table,
    honesty_line,
    honesty_verdict,
    proven_lies,
)

__all__ = [
    "COUNT_KEYS",
    "DOCUMENT_SCHEMA",
    "MAX_DOCUMENT_BYTES",
    "MULTIPLAYER_NOT_COMPUTED",
    "READABLE_VERSIONS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "HonestyVerdict",
    "LbrOptions",
    "ResultsConfig",
    "ResultsDocument",
    "SoftwareInfo",
    "aivat_not_computed",
    "document_estimates",
    "dumps",
    "estimates_from_outcomes",
    "format_table",
    "honesty_line",
    "honesty_verdict",
    "merge_documents",
    "player_results",
    "proven_lies",
    "read_document",
    "results_document",
    "results_from_files",
    "software_version",
]
