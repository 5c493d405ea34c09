"""Tournaments: bots against bots, as the ACPC competition ran them.

The package is the application layer of ``acpc-lbr tournament``; each
module has one job:

* :mod:`~acpc_lbr.app.tournament.event` -- the frozen event definition: entrants,
  game, format, the schedule of duplicate matches and their common seeds
  (from the command line or a TOML file).
* :mod:`~acpc_lbr.app.tournament.seating` -- one seating of one duplicate match:
  a dealer process and fresh entrant processes, with the faults classified.
* :mod:`~acpc_lbr.app.tournament.scoring` -- the logs of a duplicate match read
  into per-deal unit values, raw and all-in-expectation.
* :mod:`~acpc_lbr.app.tournament.standings` -- crosstable figures, total bankroll
  and series instant run-off, and the bootstrap over matches.
* :mod:`~acpc_lbr.app.tournament.store` -- the event's directory: manifest,
  finished-match records, resume.
* :mod:`~acpc_lbr.app.tournament.report` -- the results document, its CSV and
  the terminal tables.

The driver (:mod:`~acpc_lbr.app.tournament.driver`, run by
:mod:`~acpc_lbr.app.tournament.run` for ``acpc_lbr/cli/tournament.py``) ties them together. Every
dealer and bot runs as a process of its own: a crashing bot, or a dealer
that dies, takes nothing else with it.

Layer L4 (``acpc_lbr/app/``): may import every layer below it; never
``acpc_lbr/cli/``.
"""
