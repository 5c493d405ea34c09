"""The exit statuses of every program of the project, one meaning per number.

The one home of these numbers: ``acpc-lbr dealer`` (and
``dealer.match.MatchResult.exit_code``), ``evaluate``, ``play`` (the SDK
bots and ``lbr``) and the other subcommands return them. README.md ("Exit
codes") is the table for users; ``tests/test_exit_codes.py`` keeps it in step
with this module.
"""

from __future__ import annotations

from typing import Final

#: Done: every match played to the end, the bound given.
EXIT_OK: Final = 0
#: Failed, for the reason the one-line message gives (the dealer: bad arguments,
#: as the reference, or a match that could not start).
EXIT_FAILED: Final = 1
#: A usage error or unreadable input (every program but the dealer).
EXIT_USAGE: Final = 2
#: Dealer: a match ended early because of a bot.
EXIT_BOT_FAILURE: Final = 3
#: Dealer: an internal error, a log that could not be written mid-match, or a stopped dealer.
EXIT_INTERNAL: Final = 4
#: evaluate, ``play lbr``: the opponent does not answer range queries.
EXIT_NOT_QUERYABLE: Final = 5
#: evaluate: no bound (no active LBR decision, failed range queries, or an inconsistent probed bot).
EXIT_NO_BOUND: Final = 6
