"""The application: what the subcommands do, apart from reading their options.

Layer L4 (``acpc_lbr/app/``): may import every layer below it --
``protocol/`` (L0), the compute core, ``acpc_lbr/results/`` and
``acpc_lbr/runtime/`` (L1), ``agents/`` (L2) and ``dealer/`` (L3) -- and never
``acpc_lbr/cli/`` (L5) (docs/architecture.md, "Folders are the layers").

* :mod:`acpc_lbr.app.evaluate` -- ``acpc-lbr evaluate``: LBR against a bot.
* :mod:`~acpc_lbr.app.seating`, :mod:`~acpc_lbr.app.scaleout`,
  :mod:`~acpc_lbr.app.summary` -- evaluate's mirrored seating in a second
  process, its scale-out on Dask, and the summary lines both print.
* :mod:`acpc_lbr.app.tournament` -- bots against bots.
* :mod:`acpc_lbr.app.table` -- a person plays a bot in the browser.
* :mod:`~acpc_lbr.app.report` -- the HTML report of results documents.
"""
