"""Soak: honest and hostile matches in one dealer process (issue 14).

One ``acpc-lbr dealer`` process plays ``--matches`` heads-up no-limit matches
of ``--hands`` hands (``--matches FILE``, ``-q``, events on, ``--t_response
3000``). Half of them (``--hostile``) seat a hostile bot, one of the kinds
below, against an always-call bot; the rest seat two always-call bots. The
honest bots run in one driver process and the hostile matches' bots in another
(both asyncio, loopback). Then the same honest matches run again without the
hostile ones, as the baseline of the same run.

Reported: the dealer's RSS high-water mark (``ru_maxrss`` from ``wait4``), the
hands missing from the honest matches' logs (must be 0), and the honest
matches' hands/s with and without the hostile ones (hands in the honest logs /
time from the port lines to the honest driver's end).

Hostile kinds, in turn (the first four stay within their budgets and play to
the end; the others go over one and are ended):

* ``comments`` -- 60 comment lines of 100 bytes before every reply;
* ``unsolicited`` -- 20 unsolicited ``RANGE`` lines before every reply;
* ``queries`` -- 10 ``QUERY`` lines (refused) before every reply;
* ``squat`` -- 30 silent connections on its seat's port first, then plays;
* ``out_of_turn`` -- 2,000 junk lines while not its turn (``max_queued_lines``);
* ``no_read`` -- stops reading and floods ``QUERY`` lines (back-pressure, then
  ``t_response``);
* ``long_line`` -- one 5,000-byte line (``--max_line``);
* ``big_query`` -- announces range queries, then a 100 KB ``QUERY`` line
  (``max_query_bytes``).

Usage::

    .venv/bin/python bench/bench_soak.py [--hands 10000] [--matches 16] [--hostile 8]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ACPC_LBR = Path(sys.executable).parent / "acpc-lbr"
KINDS = ["comments", "unsolicited", "queries", "squat", "out_of_turn", "no_read", "long_line", "big_query"]


def my_turn(line: bytes) -> bool:
    """With only calls in heads-up reverse-blinds hold'em, whether the viewer is to act."""
    _, position, _, betting, _ = line.split(b":", 4)
    rounds = betting.split(b"/")
    done = len(rounds[-1])
    if len(rounds) == 4 and done == 2 or b"f" in betting:
        return False
    first = 1 if len(rounds) == 1 else 0
    return (first + done) % 2 == int(position)


async def honest(port: int) -> None:
    """Always call."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"VERSION:2.0.0\r\n")
    while line := await reader.readline():
        line = line.rstrip(b"\r\n")
        if line.startswith(b"MATCHSTATE:") and my_turn(line):
            writer.write(line + b":c\r\n")
    writer.close()


async def hostile(port: int, kind: str) -> None:
    """One hostile bot of ``kind`` (see the module docstring)."""
    squatters = []
    if kind == "squat":
        for _ in range(30):
            squatters.append(await asyncio.open_connection("127.0.0.1", port))
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return
    writer.write(b"VERSION:2.0.0\r\n")
    if kind == "big_query":
        writer.write(b"# range-query 1\r\n")
        writer.write(b"QUERY:a:1:0::|:" + b"c," * 50_000 + b"c\r\n")
    if kind == "no_read":
        transport = writer.transport
        transport.pause_reading()
        for _ in range(20_000):
            if writer.is_closing():
                break
            writer.write(b"QUERY:a:1:0::|:c\r\n" * 50)
            await asyncio.sleep(0.001)
        transport.resume_reading()
    sent_junk = False
    try:
        while line := await reader.readline():
            line = line.rstrip(b"\r\n")
            if not line.startswith(b"MATCHSTATE:"):
                continue
            if not my_turn(line):
                if kind == "out_of_turn" and not sent_junk:
                    writer.write(b"junk\r\n" * 2000)
                    sent_junk = True
                continue
            if kind == "comments":
                writer.write((b"# " + b"x" * 98 + b"\r\n") * 60)
            elif kind == "unsolicited":
                writer.write(b"RANGE:zz:c=1\r\n" * 20)
            elif kind == "queries":
                writer.write(b"QUERY:q:1:0::|:c\r\n" * 10)
            elif kind == "long_line":
                writer.write(b"x" * 5000 + b"\r\n")
            writer.write(line + b":c\r\n")
    except (ConnectionError, OSError):
        pass
    writer.close()
    for _, squatter in squatters:
        squatter.close()


async def drive(specs: list[tuple[int, str]]) -> None:
    """Run one bot per (port, kind); kind ``honest`` is always-call."""
    await asyncio.gather(*(honest(port) if kind == "honest" else hostile(port, kind)
                           for port, kind in specs), return_exceptions=True)


def driver_main(args: list[str]) -> None:
    """``--driver port:kind ...``: run bots until all connections close."""
    specs = [(int(a.split(":")[0]), a.split(":")[1]) for a in args]
    asyncio.run(drive(specs))


def run(hands: int, matches: int, hostile_count: int, workdir: Path) -> dict[str, float]:
    """One dealer with ``matches`` matches, ``hostile_count`` of them hostile; returns the figures."""
    names = [f"h{i}" for i in range(matches - hostile_count)] + [f"x{i}" for i in range(hostile_count)]
    lines = [f"{name} nolimit {hands} {100 + i} {name}a {name}b" for i, name in enumerate(names)]
    (workdir / "matches.txt").write_text("\n".join(lines) + "\n")
    with open(workdir / "dealer.err", "wb") as err:
        dealer = subprocess.Popen([str(ACPC_LBR), "dealer", "--matches", "matches.txt", "-q",
                                   "--t_response", "3000"], cwd=workdir, stdout=subprocess.PIPE,
                                  stderr=err)
        assert dealer.stdout is not None
        ports = [dealer.stdout.readline().split() for _ in names]
        start = time.perf_counter()
        honest_specs = [f"{int(p)}:honest" for name, pair in zip(names, ports) if name.startswith("h")
                        for p in pair]
        hostile_specs = [spec for i, (name, pair) in enumerate(zip(names, ports)) if name.startswith("x")
                         for spec in (f"{int(pair[0])}:{KINDS[(i - (matches - hostile_count)) % len(KINDS)]}",
                                      f"{int(pair[1])}:honest")]
        drivers = [subprocess.Popen([sys.executable, __file__, "--driver", *honest_specs])]
        if hostile_specs:
            drivers.append(subprocess.Popen([sys.executable, __file__, "--driver", *hostile_specs]))
        drivers[0].wait()
        honest_wall = time.perf_counter() - start
        _, status, usage = os.wait4(dealer.pid, 0)
        for driver in drivers[1:]:
            driver.wait(timeout=120)
    honest_hands = sum(
        sum(line.startswith("STATE:") for line in (workdir / f"{name}.log").read_text().splitlines())
        for name in names if name.startswith("h"))
    hostile_hands = sum(
        sum(line.startswith("STATE:") for line in (workdir / f"{name}.log").read_text().splitlines())
        for name in names if name.startswith("x"))
    return {"rss_mb": usage.ru_maxrss / 1024, "honest_hands": honest_hands,
            "lost": (matches - hostile_count) * hands - honest_hands, "hostile_hands": hostile_hands,
            "honest_rate": honest_hands / honest_wall, "wall": honest_wall,
            "exit": os.waitstatus_to_exitcode(status)}


def main() -> int:
    """Run the soak with and without the hostile matches and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hands", type=int, default=10_000)
    parser.add_argument("--matches", type=int, default=16)
    parser.add_argument("--hostile", type=int, default=8)
    parser.add_argument("--driver", nargs="*", default=None, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.driver is not None:
        driver_main(options.driver)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        mixed = run(options.hands, options.matches, options.hostile, Path(tmp))
    with tempfile.TemporaryDirectory() as tmp:
        alone = run(options.hands, options.matches - options.hostile, 0, Path(tmp))
    print(f"{options.matches} matches x {options.hands} hands, {options.hostile} hostile: "
          f"dealer RSS high-water {mixed['rss_mb']:.0f} MB (honest only: {alone['rss_mb']:.0f} MB); "
          f"honest hands lost {mixed['lost']:.0f} (honest only: {alone['lost']:.0f}); "
          f"honest hands/s {mixed['honest_rate']:.0f} with the hostile matches, "
          f"{alone['honest_rate']:.0f} without (ratio {mixed['honest_rate'] / alone['honest_rate']:.2f}); "
          f"hands played in hostile matches {mixed['hostile_hands']:.0f}; dealer exit {mixed['exit']}")
    return 0 if mixed["lost"] == 0 and alone["lost"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
