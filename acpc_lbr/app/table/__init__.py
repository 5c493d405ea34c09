"""``acpc-lbr table``: a person plays an ACPC bot in the browser, through the real dealer.

Usage::

    acpc-lbr table [--port P] [--bind ADDR] [--out DIR] [--seconds S]
                   [--opponent BOT_OR_SPEC ...] [--opponent-cmd "[NAME=]PROG {host} {port}" ...]
                   [--game FILE ...] [--max-tables N] [--seed S]

The first line on stdout is the address of the page, the second the folder of
the logs. On the page a person picks a heads-up game and a bot and plays it;
each table is an ordinary match of the dealer (the person's seat is an ACPC
client inside this server), with a second match for the duplicate baseline
(:mod:`acpc_lbr.app.table.session`). docs/table.md has the details.

Layer L4 (``acpc_lbr/app/``): may import every layer below it; never
``acpc_lbr/cli/`` (the options and ``main`` are in :mod:`acpc_lbr.cli.table`).
"""

from __future__ import annotations
