"""The dealer's start-up to its port line, in instructions: a count a loaded machine does not move.

Usage::

    .venv/bin/python bench/startup_instructions.py [--baseline VENV] [-- DEALER ARGS]

Runs ``acpc-lbr dealer`` (by default ``m nolimit 10 1 a b -q -l``, the plain
dealer) under valgrind's callgrind and stops it at its port line, then prints the
instructions it ran to that line; the same for the dealer of another install
(``--baseline``), for this Python printing a line (the interpreter's own start,
``site`` included) and for this Python importing Twisted's asyncio reactor and
printing a line (the floor the dealer had while it loaded Twisted first). The
dealer runs in this process's interpreter, its standard output wrapped so that
the first line it flushes ends the process. Each is run once first, unmeasured, so
that the bytecode caches are written (where Python may write them; with
``PYTHONDONTWRITEBYTECODE`` set, modules without a cache are compiled at each
start and counted: ``PYTHONPYCACHEPREFIX=DIR`` with that variable unset keeps the
caches outside the trees). Wall and CPU times are the bench's (``bench/bench_dealer.py
--runs 0 --starts N``); a count does not depend on the load.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# What main() alone needs (argparse, re, shutil, subprocess, tempfile) is imported there: the
# dealer counted runs in this process, and the script's own imports would be counted with it.

PLAIN = ["m", "nolimit", "10", "1", "a", "b", "-q", "-l"]


class _ExitAtLine:
    """Standard output that ends the process once a whole line was flushed (the port line)."""

    def __init__(self, stream: object) -> None:
        self.stream = stream
        self.seen = ""

    def write(self, text: str) -> int:
        self.seen += text
        return self.stream.write(text)  # type: ignore[attr-defined, no-any-return]

    def flush(self) -> None:
        self.stream.flush()  # type: ignore[attr-defined]
        if "\n" in self.seen:
            os._exit(0)

    def __getattr__(self, name: str) -> object:
        return getattr(self.stream, name)


def run_dealer_to_port_line(args: list[str]) -> None:
    """``acpc-lbr dealer ARGS`` in this process, ended at its port line."""
    sys.stdout = _ExitAtLine(sys.stdout)  # type: ignore[assignment]
    sys.argv = ["acpc-lbr", "dealer", *args]
    from acpc_lbr.cli import run  # lazy: the dealer's own start, counted

    run()
    raise SystemExit("the dealer printed no port line")


def instructions(command: list[str], workdir: Path) -> int:
    """The instructions callgrind counts for ``command`` (run once before, unmeasured)."""
    import re
    import subprocess

    subprocess.run(command, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    done = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={workdir / 'cg.out'}",
                           *command], cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, check=False)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"callgrind counted nothing for {command}:\n{done.stderr[-2000:]}")
    return int(found[1])


def main() -> int:
    """Count and print."""
    if sys.argv[1:2] == ["--in-process"]:
        run_dealer_to_port_line(sys.argv[2:])
    import argparse
    import shutil
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, default=None, metavar="VENV",
                        help="also count the dealer of this virtual environment's install")
    parser.add_argument("dealer_args", nargs="*", metavar="DEALER ARGS", help=f"default: {' '.join(PLAIN)}")
    options = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    args = options.dealer_args or PLAIN
    rows = [("ours", [sys.executable, __file__, "--in-process", *args])]
    if options.baseline is not None:
        rows.append(("baseline", [str(options.baseline / "bin" / "python"), __file__, "--in-process", *args]))
    rows.append(("python printing a line", [sys.executable, "-c", "print('0 0', flush=True)"]))
    rows.append(("python importing Twisted's asyncio reactor, then a line",
                 [sys.executable, "-c", "import twisted.internet.asyncioreactor; print('0 0', flush=True)"]))
    print(f"instructions to the port line of `acpc-lbr dealer {' '.join(args)}` (callgrind):")
    with tempfile.TemporaryDirectory() as tmp:
        for label, command in rows:
            print(f"  {label:55} {instructions(command, Path(tmp)) / 1e6:8.1f} M", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
