"""The results of matches, gathered in one home (issue 29, item 3): the document so far."""

from acpc_lbr.results.document import *  # noqa: F403 (the names of the former acpc_lbr/results.py)
