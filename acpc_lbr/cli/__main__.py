"""``python -m acpc_lbr.cli``: the ``acpc-lbr`` program, as the installed script runs it."""

from acpc_lbr.cli import run

if __name__ == "__main__":
    run()
