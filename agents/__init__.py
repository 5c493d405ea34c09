"""Bots for ACPC dealers: the client base, the strategy SDK and the reference bots.

* :mod:`agents.sdk` -- write one strategy function (``PublicView -> Policy``);
  :class:`~agents.sdk.Mix` and :class:`~agents.sdk.UniformRaise` build policies
  (the vocabulary of :mod:`acpc_lbr.policy`, re-exported for bot authors).
* :mod:`agents.client` -- :class:`~agents.client.AcpcClient` (the ACPC client
  on Twisted, with range queries of its own via ``ask``) and
  :class:`~agents.client.StrategyBot` (plays and answers range queries).
* :mod:`agents.tracking` -- the incremental MATCHSTATE follower.
* :mod:`agents.bots` -- ``always-call``, ``always-raise``, ``always-fold``,
  ``call-raise``, ``random``.
* :mod:`agents.players` -- the players seated by name (``acpc-lbr play``);
  :mod:`agents.probe` -- the probe adapter; :mod:`agents.bench` -- timing.

See docs/bot-sdk.md and docs/range-query.md.

Layer L2 (``agents/``): may import ``protocol/`` (L0) and the compute core
and runtime of ``acpc_lbr/`` (L1); never the dealer, the application or the
command line (docs/architecture.md, "Folders are the layers").
"""
