"""The scale-out options of ``acpc-lbr evaluate`` (``--workers``, ``--scheduler``, ``--cluster``, ...).

What they do -- batches on Dask, each a whole evaluation in a subprocess --
is :mod:`acpc_lbr.app.scaleout`; docs/scale-out.md has the user's view.
"""

from __future__ import annotations

import argparse

from acpc_lbr.app.scaleout import DEFAULT_BATCH_HANDS, DEFAULT_MAX_RETRIES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The scale-out options of ``evaluate``."""
    group = parser.add_argument_group("scale-out on Dask (optional extra: pip install -e '.[dask]')")
    group.add_argument("--workers", type=int, default=None, metavar="N",
                       help="run the batches on a local Dask cluster of N worker processes")
    group.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="run the batches on an existing Dask scheduler (tcp://host:port)")
    group.add_argument("--cluster", choices=["slurm"], default=None,
                       help="start workers through dask-jobqueue (see docs/scale-out.md)")
    group.add_argument("--cluster-option", action="append", default=[], metavar="KEY=VALUE",
                       help="a dask-jobqueue cluster argument, e.g. queue=short (repeatable)")
    group.add_argument("--batch-hands", type=int, default=None, metavar="N",
                       help=f"deals per batch (default: hands / workers, at most {DEFAULT_BATCH_HANDS}, so "
                       "every worker gets a batch; give it to get the same result with any number of workers)")
    group.add_argument("--max-retries", type=int, default=DEFAULT_MAX_RETRIES, metavar="N",
                       help=f"reruns of a batch whose worker died (default {DEFAULT_MAX_RETRIES})")
    group.add_argument("--dry-run", action="store_true",
                       help="with --cluster slurm: print the job script and exit")


def wanted(args: argparse.Namespace) -> bool:
    """True when the options ask for a scale-out run."""
    return bool(args.workers or args.scheduler or args.cluster)
