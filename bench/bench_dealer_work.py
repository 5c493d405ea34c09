"""The dealer's own work per hand, in memory: no sockets, no wake-ups, no other processes.

``bench/bench_dealer.py`` measures what users see -- the dealer and its bots as
separate processes on loopback -- but on a virtual machine its figures move
with the host's wake-up costs (docs/dealer.md, "Busy polling"). This bench
isolates the part that is the dealer's code alone: a ``Match`` whose seats are
in-memory transports (Twisted's ``StringTransport``) on a fake clock, with two
bots in the same process playing the reference example player's mix (fold
0.06 when legal, the rest split evenly between call and raise, the raise size
uniform over the legal range; seeded, so both sides of a comparison see the
same lines). Only the dealer's handling of each bot line is timed: framing,
reading the action, the rules, the next lines and their (in-memory) sends,
the end of a hand and the start of the next. ``-q -l``-like: no trace, no
logs, no events.

Part of that work is on the bots' path and part is not: from a bot's line to
the dealer's next send, the match waits on the dealer; after the send, the
dealer works while the bot thinks (setting up the wait, recording the hand
just finished, drawing the next one). So the bench also reports the time from
each line to the first send it causes ("to the send"), summed per hand.

``--baseline`` times the same workload, in the same run and alternating, with
other code, and prints the ratio baseline / current per round: above 1.0 means
the current code does less work. Either ``--baseline VENV``, another install of
the project (a virtual environment holding another revision, as for
``bench/bench_dealer.py --baseline``; compiled or pure, as its ``acpc-lbr
--version`` says), or ``--baseline DIR``, the ``dealer`` package found in DIR
(e.g. ``git archive REV dealer | tar -x -C DIR``), run from its sources with
this install's protocol core.

Usage::

    .venv/bin/python bench/bench_dealer_work.py [--hands 3000] [--repeats 5]
        [--rounds 3] [--seed 1] [--baseline VENV|DIR] [--read-step] [--events] [--cpu]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_dealer import example_mix_action  # the same bots' mix (this script's folder)
from twisted.internet import task
from twisted.internet.testing import StringTransport

import protocol
from dealer import seatio
from dealer.busypoll import BusyPoll
from dealer.match import Match, MatchConfig
from protocol.gamedef import load_game
from protocol.wire import parse_matchstate


#: The clock of the timings: wall time, or with ``--cpu`` the thread's CPU time (on a loaded
#: machine the wall time holds the other processes' turns; a CPU-time read costs more).
_CLOCK = {"wall": time.perf_counter_ns, "cpu": time.thread_time_ns}
now_ns = _CLOCK["wall"]


class _StampedTransport(StringTransport):
    """A StringTransport that notes when the first write after :attr:`stamp` was cleared came."""

    def __init__(self, stamp: list[int]) -> None:
        super().__init__()
        self.stamp = stamp

    def write(self, data: bytes) -> None:
        if not self.stamp[0]:
            self.stamp[0] = now_ns()
        super().write(data)


class _PollEveryWait(BusyPoll):
    """A busy poll that polls for every wait (and never spins: there is no loop here)."""

    def __init__(self) -> None:
        super().__init__(lambda _: None, 1.0)

    def decide(self) -> bool:
        return True


def dealer_work(hands: int, seed: int, read_step: bool = False, events: bool = False) -> dict[str, float]:
    """Play ``hands`` hands in memory; the dealer's time per hand and per action (µs),
    and the part of it from each line to the first send it causes.

    With ``read_step`` (and code that has it), bytes are delivered as the CLI
    reactor's read step does: the state made ready for the reply is sent first
    (``dealer.seatio.answer_ahead``), and the match polls for every wait, so it
    makes the states ready (as with fast bots and one match per process).
    With ``events``, the match writes its events file (in a temporary folder), as
    a dealer does at its defaults.
    """
    game = load_game("nolimit")
    folder = tempfile.TemporaryDirectory() if events else None
    name = str(Path(folder.name) / "work") if folder is not None else "work"
    config = MatchConfig(name=name, game_arg="nolimit", game=game, hands=hands, seed=seed,
                         names=("a", "b"), write_log=False, trace_messages=False, events=events)
    answer_ahead = getattr(seatio, "answer_ahead", None) if read_step else None
    match = Match(config, reactor=None, clock=task.Clock(),
                  busy_poll=_PollEveryWait() if answer_ahead is not None else None)
    done = match.start()
    seats: list[Any] = []
    transports: list[StringTransport] = []
    stamp = [0]  # when the handling of the current line first wrote (0: not yet)
    for factory in _seat_factories(match):
        seat_protocol = factory.buildProtocol(None)
        transport = _StampedTransport(stamp)
        seat_protocol.makeConnection(transport)
        seats.append(seat_protocol)
        transports.append(transport)
    rng = random.Random(seed)
    clock = now_ns
    spent = 0
    to_send = 0
    actions = 0
    pending: list[tuple[int, bytes]] = [(0, b"VERSION:2.0.0\r\n"), (1, b"VERSION:2.0.0\r\n")]
    while pending:
        for index, data in pending:
            stamp[0] = 0
            seat_protocol = seats[index]
            start = clock()
            if answer_ahead is not None and seat_protocol.ahead is not None:
                # The connection's per-line state (``io``), or the connection in code before it.
                answer_ahead(getattr(seat_protocol, "io", seat_protocol), seat_protocol.ahead, data)
            seat_protocol.dataReceived(data)
            spent += clock() - start
            if stamp[0]:
                to_send += stamp[0] - start
        actions += len(pending)
        pending = []
        for index, transport in enumerate(transports):
            raw = transport.value()
            transport.clear()
            for line in raw.decode("ascii").split("\r\n")[:-1]:
                view = parse_matchstate(line, game)
                state = view.to_state(game)
                if state.finished or state.current_player != view.position:
                    continue
                action = example_mix_action(state, game.is_limit, rng)
                pending.append((index, f"{line}:{action}\r\n".encode()))
    if not done.called:
        raise SystemExit("the in-memory match did not finish")
    if folder is not None:
        folder.cleanup()
    actions -= 2  # the VERSION lines
    return {"us_per_hand": spent / 1000 / hands, "us_per_action": spent / 1000 / actions,
            "us_to_send_per_hand": to_send / 1000 / hands,
            "actions_per_hand": actions / hands, "variant": protocol.variant(),
            "read_step": answer_ahead is not None, "events": events}


def _seat_factories(match: Any) -> list[Any]:
    """The match's port factories, one per seat: ``match.seating.factories``, or in a
    ``--baseline`` from before the dealer was made of parts, each seat's ``factory``."""
    seating = getattr(match, "seating", None)
    if seating is not None:
        return list(seating.factories)
    return [seat.factory for seat in match.seats]


def best_of(hands: int, seed: int, repeats: int, read_step: bool = False,
            events: bool = False) -> dict[str, float]:
    """The fastest of ``repeats`` runs (the others met the machine's noise)."""
    runs = [dealer_work(hands, seed, read_step, events) for _ in range(repeats)]
    return min(runs, key=lambda run: run["us_per_hand"])


def in_subprocess(baseline: Path | None, hands: int, seed: int, repeats: int,
                  read_step: bool = False, events: bool = False, cpu: bool = False) -> dict[str, Any]:
    """:func:`best_of` in a fresh interpreter: this install's, or ``baseline``'s
    (a virtual environment's Python, or this one with ``dealer`` from a directory)."""
    env = dict(os.environ)
    python = sys.executable
    if baseline is not None and (baseline / "bin" / "python").exists():
        python = str(baseline / "bin" / "python")
    elif baseline is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(baseline), env.get("PYTHONPATH", "")])
    out = subprocess.run([python, __file__, "--child", "--hands", str(hands), "--seed",
                          str(seed), "--repeats", str(repeats), *(["--read-step"] if read_step else []),
                          *(["--events"] if events else []), *(["--cpu"] if cpu else [])],
                         env=env, check=True, capture_output=True, text=True).stdout
    result: dict[str, Any] = json.loads(out.splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hands", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--baseline", type=Path,
                        help="another install (a virtual environment), or a directory holding a dealer/ package")
    parser.add_argument("--read-step", dest="read_step", action="store_true",
                        help="deliver bytes as the CLI reactor's read step does, which sends the "
                             "state made ready for a reply first (an install without it: as before)")
    parser.add_argument("--events", action="store_true",
                        help="the match writes its events file (the dealer's default; in a "
                             "temporary folder), on both sides of a comparison")
    parser.add_argument("--cpu", action="store_true",
                        help="time with the thread's CPU time instead of the wall clock (a loaded machine)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        global now_ns
        now_ns = _CLOCK["cpu" if options.cpu else "wall"]
        print(json.dumps(best_of(options.hands, options.seed, options.repeats, options.read_step,
                                 options.events)))
        return 0
    if options.baseline is not None and not (options.baseline / "bin" / "python").exists() \
            and not (options.baseline / "dealer" / "match.py").is_file():
        parser.error(f"--baseline {options.baseline}: neither a virtual environment nor a dealer/ package")
    current: list[float] = []
    current_to_send: list[float] = []
    baseline: list[float] = []
    baseline_to_send: list[float] = []
    for number in range(1, options.rounds + 1):
        run = in_subprocess(None, options.hands, options.seed, options.repeats, options.read_step,
                            options.events, options.cpu)
        current.append(run["us_per_hand"])
        current_to_send.append(run["us_to_send_per_hand"])
        line = (f"round {number}: current {run['us_per_hand']:.1f} µs/hand "
                f"({run['us_per_action']:.2f} µs/action, {run['actions_per_hand']:.2f} actions/hand; "
                f"to the send {run['us_to_send_per_hand']:.1f} µs/hand)")
        if options.baseline is not None:
            base = in_subprocess(options.baseline, options.hands, options.seed, options.repeats,
                                 options.read_step, options.events, options.cpu)
            baseline.append(base["us_per_hand"])
            baseline_to_send.append(base["us_to_send_per_hand"])
            line += (f"; baseline {base['us_per_hand']:.1f} µs/hand (to the send "
                     f"{base['us_to_send_per_hand']:.1f}); "
                     f"baseline/current {base['us_per_hand'] / run['us_per_hand']:.2f}")
        print(line, flush=True)
    print(f"\nnolimit, {options.hands} hands x best of {options.repeats}, {options.rounds} rounds; "
          f"protocol core {run['variant']}; read step: {'on' if run['read_step'] else 'off'}; "
          f"events file: {'on' if options.events else 'off'}; "
          f"clock: {'CPU' if options.cpu else 'wall'}")
    print(f"  current : median {statistics.median(current):.1f} µs of dealer work per hand, "
          f"{statistics.median(current_to_send):.1f} of it from a line to the send it causes")
    if baseline:
        ratios = [b / c for b, c in zip(baseline, current)]
        print(f"  baseline: median {statistics.median(baseline):.1f} µs per hand, "
              f"{statistics.median(baseline_to_send):.1f} to the send")
        print(f"  baseline/current: median {statistics.median(ratios):.2f} "
              f"(per round {', '.join(f'{r:.2f}' for r in ratios)})")
        to_send = [b / c for b, c in zip(baseline_to_send, current_to_send)]
        print(f"  baseline/current to the send: median {statistics.median(to_send):.2f} "
              f"(per round {', '.join(f'{r:.2f}' for r in to_send)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
