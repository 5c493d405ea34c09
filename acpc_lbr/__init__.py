"""acpc-lbr compute core: hand evaluation, equities, ranges, LBR, estimators.

The folders of this package are layers (docs/architecture.md, "Folders are
the layers"); a module imports only its own layer and those below:

* L1, this folder's own modules (the compute core), ``acpc_lbr/results/``
  (the results home) and ``acpc_lbr/runtime/`` (process plumbing): may import
  ``protocol/`` (L0) only.
* L4, ``acpc_lbr/app/``: the application (evaluate, scale-out, tournaments,
  the table, the report); may import ``agents/`` (L2) and ``dealer/`` (L3).
* L5, ``acpc_lbr/cli/``: the command line, one module per subcommand.
"""

__version__ = "0.1.0"
