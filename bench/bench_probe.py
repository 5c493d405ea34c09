"""Throughput of the probe adapter (agents/probe.py) with a fast C bot, and LBR's speed through it.

Two measurements, on loopback (127.0.0.1), with the plain C bot of
docs/examples/plain_bot.c (compiled here with ``cc -O2``):

1. **Probes per second.** A scripted dealer sends the adapter hold'em
   queries one after another (a preflop and a turn decision point, each
   asking ``f,c`` and a raise), and the adapter answers each by probing
   ``--instances`` copies of the bot (one plays, the others are probed)
   ``--samples`` times per private hand. The rate is probe lines answered
   per second of wall time, queries back to back. Baseline, in the same
   run: the same probes in lock-step (one line out, its reply back, then
   the next), which is what a prober without pipelining gets; the ratio is
   pipelined over lock-step.
2. **LBR hands per second** through ``acpc-lbr evaluate --probe K`` against
   the C bot (one seating, no IO), against the same strategy written with
   the SDK and asked real range queries (tests/data/bots/blind_random.py)
   as the baseline.

The goal of issue 9: at least 50,000 probes per second with N = 2 on this
2-core machine. Both cores are shared (the adapter, the bot copies, the
dealer), so the figure depends on what else runs.

Usage::

    .venv/bin/python bench/bench_probe.py [--samples 100] [--instances 2] [--queries 6]
                                          [--hands 20] [--bot random|threshold] [--no-lbr]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

QUERIES = ["QUERY:q{n}:1:0::|:f,c,r200", "QUERY:q{n}:1:0:cc/r300c/c:|/Ks7d2c/9h:f,c,r600"]


def compile_bot(directory: Path) -> Path:
    cc = shutil.which("cc")
    if cc is None:
        sys.exit("bench_probe: no C compiler (cc) to build docs/examples/plain_bot.c")
    binary = directory / "plain_bot"
    subprocess.run([cc, "-O2", "-std=c99", "-o", str(binary),
                    str(REPO / "docs" / "examples" / "plain_bot.c")], check=True)
    return binary


def probes_per_second(binary: Path, strategy: str, samples: int, instances: int,
                      queries: int) -> tuple[float, int]:
    """(probes per second, probes) of ``queries`` queries answered back to back."""
    from twisted.internet import defer, protocol, reactor
    from twisted.internet.endpoints import TCP4ServerEndpoint
    from twisted.protocols.basic import LineReceiver

    # lazy: after main() installed the asyncio reactor (the adapter imports twisted's reactor)
    from agents.probe import ProbeAdapter, run_adapter
    from protocol.gamedef import load_game  # lazy: as above

    game = load_game("nolimit")
    adapter = ProbeAdapter(game, samples, instances, reactor, probe_timeout=600.0, check=False)
    result: dict[str, Any] = {}

    class Dealer(LineReceiver):
        delimiter = b"\n"
        MAX_LENGTH = 1 << 22

        def __init__(self) -> None:
            self.sent = 0

        def ask(self) -> None:
            self.sent += 1
            self.sendLine(QUERIES[self.sent % len(QUERIES)].format(n=self.sent).encode())

        def lineReceived(self, line: bytes) -> None:
            if line.startswith(b"# range-query "):
                self.sendLine(b"# range-query-version 2")
                result["start"] = time.perf_counter()
                self.ask()
            elif line.startswith(b"RANGEERROR"):
                result["error"] = line.decode()[:200]
                self.transport.loseConnection()  # type: ignore[attr-defined]
            elif line.startswith(b"RANGE:"):
                if self.sent < queries:
                    self.ask()
                else:
                    result["seconds"] = time.perf_counter() - result["start"]
                    self.transport.loseConnection()  # type: ignore[attr-defined]

    async def go() -> None:
        listening = await TCP4ServerEndpoint(reactor, 0, interface="127.0.0.1").listen(
            protocol.Factory.forProtocol(Dealer))

        def launch(port: int) -> list[subprocess.Popen[bytes]]:
            return [subprocess.Popen([str(binary), strategy, "127.0.0.1", str(port)])
                    for _ in range(instances)]

        try:
            await run_adapter(adapter, "127.0.0.1", listening.getHost().port, launch)
        finally:
            await listening.stopListening()
            reactor.stop()  # type: ignore[attr-defined]

    reactor.callWhenRunning(lambda: defer.ensureDeferred(go()))  # type: ignore[attr-defined]
    reactor.run()  # type: ignore[attr-defined]
    if "error" in result or "seconds" not in result:
        sys.exit(f"bench_probe: the run failed: {result.get('error', 'no answer')}")
    return adapter.stats.probes / result["seconds"], adapter.stats.probes


def lockstep_per_second(binary: Path, strategy: str, count: int) -> float:
    """Probe lines per second, one at a time (write, wait for the reply), to one copy."""
    import socket

    server = socket.create_server(("127.0.0.1", 0))
    process = subprocess.Popen([str(binary), strategy, "127.0.0.1", str(server.getsockname()[1])])
    try:
        connection, _ = server.accept()
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        reader = connection.makefile("rb")
        reader.readline()  # VERSION
        lines = [f"MATCHSTATE:1:{n}::|AhKs\r\n".encode() for n in range(count)]
        start = time.perf_counter()
        for line in lines:
            connection.sendall(line)
            reader.readline()
        seconds = time.perf_counter() - start
        connection.shutdown(socket.SHUT_RDWR)
        reader.close()
        connection.close()
    finally:
        process.wait(timeout=10)
        server.close()
    return count / seconds


def lbr_hands_per_second(binary: Path, samples: int, hands: int, directory: Path) -> dict[str, float]:
    """evaluate's hands per second: the C bot probed, and its SDK twin queried."""
    acpc_lbr = Path(sys.executable).parent / "acpc-lbr"
    twin = REPO / "tests" / "data" / "bots" / "blind_random.py"
    runs = {
        "probed C bot": [f"{binary} random {{host}} {{port}}", "--probe", str(samples)],
        "SDK twin, real queries": [f"{acpc_lbr} play {twin}:strategy {{host}} {{port}} --game nolimit"],
    }
    rates = {}
    for name, (command, *extra) in runs.items():
        out = directory / name.split()[0]
        start = time.perf_counter()
        done = subprocess.run([str(acpc_lbr), "evaluate", "--opponent-cmd", command, *extra,
                               "--hands", str(hands), "--no-duplicate", "--no-io", "--quiet",
                               "--out", str(out), "--json", str(out) + ".json"],
                              capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            sys.exit(f"bench_probe: evaluate failed ({name}): {done.stderr[-500:]}")
        document = json.loads(Path(str(out) + ".json").read_text())
        rates[name] = document["counts"]["hands"] / seconds
        if "probe" in document:
            rates["probes in that run"] = document["probe"]["probes"]
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=100, help="K (default 100)")
    parser.add_argument("--instances", type=int, default=2, help="N (default 2)")
    parser.add_argument("--queries", type=int, default=6, help="queries back to back (default 6)")
    parser.add_argument("--bot", default="random", choices=("random", "threshold"))
    parser.add_argument("--hands", type=int, default=20, help="LBR hands per run (default 20)")
    parser.add_argument("--no-lbr", dest="lbr", action="store_false", help="skip the LBR runs")
    args = parser.parse_args()
    from acpc_lbr.runtime.reactor import install_asyncio_reactor  # lazy: --help stays fast

    install_asyncio_reactor()
    with tempfile.TemporaryDirectory() as temp:
        binary = compile_bot(Path(temp))
        lockstep = lockstep_per_second(binary, args.bot, 20_000)
        rate, probes = probes_per_second(binary, args.bot, args.samples, args.instances,
                                         args.queries)
        print(f"probes: {probes} for {args.queries} hold'em queries, K {args.samples}, "
              f"N {args.instances}, bot {args.bot}")
        print(f"  pipelined through the adapter: {rate:,.0f} probes/s "
              f"(goal 50,000: {'met' if rate >= 50_000 else 'not met'})")
        print(f"  baseline, lock-step to one copy: {lockstep:,.0f} probes/s; ratio {rate / lockstep:.1f}x")
        if args.lbr:
            rates = lbr_hands_per_second(binary, min(args.samples, 20), args.hands, Path(temp))
            probed, queried = rates["probed C bot"], rates["SDK twin, real queries"]
            print(f"LBR (fcpa, rounds 3-4), {args.hands} hands, one seating, K {min(args.samples, 20)}:")
            print(f"  through the adapter: {probed:.2f} hands/s "
                  f"({rates['probes in that run']:,.0f} probes)")
            print(f"  baseline, SDK twin with real queries: {queried:.2f} hands/s; "
                  f"ratio {queried / probed:.1f}x slower through probes")


if __name__ == "__main__":
    main()
