"""What a process of acpc-lbr runs on: the reactor, the progress line, exit codes, child processes, bounded reads.

Layer L1 (``acpc_lbr/runtime/``), beside the compute core: may import
``protocol/`` (L0) and the compute core (``acpc_lbr/*.py``); never ``agents/``,
``dealer/``, ``acpc_lbr/app/`` or ``acpc_lbr/cli/`` (docs/architecture.md,
"Folders are the layers").

* :mod:`~acpc_lbr.runtime.reactor` -- installing Twisted's asyncio reactor.
* :mod:`~acpc_lbr.runtime.eventloop` -- which asyncio event loop, uvloop's or the standard one.
* :mod:`~acpc_lbr.runtime.progress` -- the progress line of a long run.
* :mod:`~acpc_lbr.runtime.exit_codes` -- every program's exit statuses.
* :mod:`~acpc_lbr.runtime.children` -- processes we start die with us.
* :mod:`~acpc_lbr.runtime.bounded` -- reading users' files within stated bounds.
* :mod:`~acpc_lbr.runtime.stdout` -- a standard output whose reader has gone.
"""
