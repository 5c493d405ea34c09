"""What a round trip over loopback costs on this machine, and how much of it is wake-ups.

A C client sends a 60-byte line and waits for it to come back, ``--trips``
times, against four echo servers, one after the other, ``--repeats`` times
(alternating), and the median microseconds per round trip of each is printed:

* ``C, sleeps``: a C server that blocks in ``read`` (as the reference dealer does);
* ``C, polls``: a C server that polls its socket without sleeping;
* ``Twisted/uvloop``: a Python server on the dealer's own reactor
  (``acpc_lbr.runtime.reactor``: Twisted's asyncio reactor on uvloop) that answers
  from ``dataReceived`` with a direct ``send``, as the dealer does;
* ``C, sleeps, one CPU``: the first again, client and server pinned to the
  same processor (a wake-up there is a context switch, not an interrupt).

The gap between the first two is what waking a sleeping process costs here;
it is the reason for the dealer's busy poll (dealer/busypoll.py), which keeps
polling while a fast bot is to answer when that is measured to pay. The third
against the first is the price of Python and Twisted per message. The C
programs are this project's own, compiled with ``cc`` into a temporary
directory.

Usage::

    .venv/bin/python bench/bench_wakeup.py [--trips 20000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLIENT_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/tcp.h>
int main(int argc, char **argv) {
    int port = atoi(argv[1]), trips = atoi(argv[2]), one = 1;
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET; a.sin_port = htons(port); a.sin_addr.s_addr = htonl(0x7f000001);
    if (connect(s, (struct sockaddr *)&a, sizeof a)) { perror("connect"); return 1; }
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const char *line = "MATCHSTATE:0:17:cr300c/cr900c:9s8h|/8c5d4h/Kc:r1200 padding..\r\n";
    size_t n = strlen(line);
    char buf[4096];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < trips; i++) {
        if (write(s, line, n) != (ssize_t)n) return 2;
        size_t got = 0;
        while (got < n) { ssize_t r = read(s, buf + got, sizeof buf - got); if (r <= 0) return 3; got += r; }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%.3f\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / trips);
    return 0;
}
"""

# argv: port, then "poll" to poll instead of sleeping in read.
SERVER_C = r"""
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
int main(int argc, char **argv) {
    int port = atoi(argv[1]), poll = argc > 2 && !strcmp(argv[2], "poll"), one = 1;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET; a.sin_port = htons(port); a.sin_addr.s_addr = htonl(0x7f000001);
    if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1)) return 1;
    write(1, "ready\n", 6);
    int s = accept(l, 0, 0);
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char buf[4096];
    for (;;) {
        ssize_t r = recv(s, buf, sizeof buf, poll ? MSG_DONTWAIT : 0);
        if (r == 0) break;
        if (r < 0) { if (errno == EAGAIN || errno == EINTR) continue; break; }
        if (write(s, buf, r) != r) break;
    }
    return 0;
}
"""

TWISTED_SERVER = r"""
import sys
from acpc_lbr.runtime.reactor import install_asyncio_reactor
install_asyncio_reactor(prefer_uvloop=True)
from twisted.internet import protocol, reactor

class Echo(protocol.Protocol):
    def connectionMade(self):
        self.transport.setTcpNoDelay(True)
    def dataReceived(self, data):
        self.transport.socket.send(data)
    def connectionLost(self, reason=None):
        reactor.stop()

factory = protocol.Factory.forProtocol(Echo)
reactor.listenTCP(int(sys.argv[1]), factory, interface="127.0.0.1")
reactor.callWhenRunning(lambda: (sys.stdout.write("ready\n"), sys.stdout.flush()))
reactor.run()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def one_run(server: list[str], extra: list[str], client: Path, trips: int, cpu: int | None) -> float:
    """Microseconds per round trip of ``client`` against ``server`` PORT ``extra``
    (both pinned to processor ``cpu`` unless it is None)."""
    port = free_port()
    proc = subprocess.Popen([*server, str(port), *extra], stdout=subprocess.PIPE, text=True)
    try:
        if cpu is not None:
            os.sched_setaffinity(proc.pid, {cpu})
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "ready":
            raise SystemExit(f"echo server {server} did not start")
        trip = subprocess.Popen([str(client), str(port), str(trips)], stdout=subprocess.PIPE, text=True)
        if cpu is not None:  # its first few trips may run before this: negligible
            os.sched_setaffinity(trip.pid, {cpu})
        out, _ = trip.communicate(timeout=600)
        if trip.returncode != 0:
            raise SystemExit(f"the client failed against {server}")
        return float(out)
    finally:
        proc.wait(timeout=60)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trips", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name, source in (("client", CLIENT_C), ("server", SERVER_C)):
            (work / f"{name}.c").write_text(source)
            subprocess.run(["cc", "-O2", "-o", str(work / name), str(work / f"{name}.c")], check=True)
        (work / "twisted_server.py").write_text(TWISTED_SERVER)
        server = [str(work / "server")]
        servers: dict[str, tuple[list[str], list[str], int | None]] = {
            "C, sleeps": (server, [], None),
            "C, polls": (server, ["poll"], None),
            "Twisted/uvloop": ([sys.executable, str(work / "twisted_server.py")], [], None),
            "C, sleeps, one CPU": (server, [], min(os.sched_getaffinity(0))),
        }
        figures: dict[str, list[float]] = {label: [] for label in servers}
        for repeat in range(options.repeats):
            for label, (argv, extra, cpu) in servers.items():
                us = one_run(argv, extra, work / "client", options.trips, cpu)
                figures[label].append(us)
                print(f"repeat {repeat + 1} {label:20}: {us:7.1f} us per round trip", flush=True)
    load = os.getloadavg()[0]
    print(f"\n{options.trips} round trips x {options.repeats} repeats, load {load:.1f} "
          f"({time.strftime('%Y-%m-%d %H:%M')}); median us per round trip:")
    base = statistics.median(figures["C, sleeps"])
    for label, values in figures.items():
        median = statistics.median(values)
        print(f"  {label:20}: {median:7.1f}  ({median / base:.2f} x C, sleeps)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
