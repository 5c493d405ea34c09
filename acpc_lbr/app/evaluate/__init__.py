"""``acpc-lbr evaluate``: LBR against a bot, over loopback TCP, with the dealer in process.

Layer L4 (``acpc_lbr/app/``): may import every layer below it; never
``acpc_lbr/cli/``. The command line's options are in :mod:`acpc_lbr.cli.evaluate`.
"""
