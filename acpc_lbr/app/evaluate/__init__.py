"""``acpc-lbr evaluate``: LBR against a bot, over loopback TCP, with the dealer in process.

* :mod:`~acpc_lbr.app.evaluate.evaluation` -- what an evaluation is
  (:class:`~acpc_lbr.app.evaluate.evaluation.EvaluationConfig`) and what it
  measured (:class:`~acpc_lbr.app.evaluate.evaluation.Evaluation`, with the
  rule that refuses a bound).
* :mod:`~acpc_lbr.app.evaluate.run` -- running it: the seatings, the mirror
  process, gathering the results document.
* :mod:`~acpc_lbr.app.evaluate.processes` -- the ``--opponent-cmd`` programs.
* :mod:`~acpc_lbr.app.evaluate.output` -- the progress line, the report
  printed at the end, ``--json`` and ``--report``.

Layer L4 (``acpc_lbr/app/``): may import every layer below it; never
``acpc_lbr/cli/``. The command line's options are in :mod:`acpc_lbr.cli.evaluate`.
"""
