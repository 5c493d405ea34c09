"""``acpc-lbr tournament``: bots against bots, in duplicate, with common seeds.

Usage::

    acpc-lbr tournament --game G --entrant NAME=SPEC [--entrant ...] --matches M --hands H
                        --seed S [--format round-robin|gauntlet] [--concurrency K] --out DIR
                        [--json FILE] [--event FILE.toml]

See docs/tournament.md. The pieces live in :mod:`acpc_lbr.app.tournament`; this
module reads the options, runs the driver, prints progress and the tables,
and writes the JSON and CSV.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from acpc_lbr.app.tournament import seating
from acpc_lbr.app.tournament.event import Event, EventError, Limits, build_event, read_toml
from acpc_lbr.app.tournament.run import PROG, executor_for, game_text, play
from acpc_lbr.app.tournament.store import EventStore, check_writable
from acpc_lbr.runtime.exit_codes import EXIT_USAGE


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Play a tournament of ACPC bots: duplicate matches with common seeds, "
        "results in mbb/g with 95% intervals, total bankroll and instant run-off rankings.")
    parser.add_argument("--event", type=Path, default=None, metavar="FILE.toml",
                        help="read the event from a TOML file (options given here override it)")
    parser.add_argument("--game", default=None, help="a bundled game (acpc-lbr games) or a game file")
    parser.add_argument("--entrant", action="append", default=None, metavar="NAME=SPEC",
                        help="a built-in bot, FILE.py:FUNCTION, or a command with {host} {port} "
                        "({game} {seed} {seat} too); repeat per entrant")
    parser.add_argument("--matches", type=int, default=None, metavar="M",
                        help="duplicate matches per pairing (default 10)")
    parser.add_argument("--hands", type=int, default=None, metavar="H", help="deals per match (default 1000)")
    parser.add_argument("--seed", type=int, default=None, metavar="S", help="the event's seed (default 1)")
    parser.add_argument("--format", choices=["round-robin", "gauntlet"], default=None,
                        help="every pair (or triple) meets, or one candidate meets the rest")
    parser.add_argument("--candidate", default=None, metavar="NAME",
                        help="the gauntlet's candidate (default: the first entrant)")
    parser.add_argument("--players", type=int, default=None, metavar="N",
                        help="seats per match; must equal the game's players (a check)")
    parser.add_argument("--concurrency", type=int, default=None, metavar="K",
                        help="seatings played at once on this machine (default 1)")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="the event's directory: logs, records; run again to resume")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE",
                        help="the results document (default DIR/results.json)")
    parser.add_argument("--retries", type=int, default=None, metavar="R",
                        help="reruns of a failed seating from its seed (default 2)")
    parser.add_argument("--max-failures", type=int, default=None, metavar="F",
                        help="matches an entrant may lose to its own faults before it is "
                        "disqualified (default 2)")
    parser.add_argument("--resamples", type=int, default=None, metavar="B",
                        help="bootstrap resamples of the matches, 0 to 1,000,000 (default 1000; 0: no "
                        "bootstrap, so no P(rank) and no places tested)")
    _add_groups(parser)
    return parser


def _add_groups(parser: argparse.ArgumentParser) -> None:
    """Time limits, output, metrics, scale-out and the LBR column."""
    limits = parser.add_argument_group("time limits in milliseconds (the ACPC's, passed to every dealer)")
    limits.add_argument("--t-response", type=int, default=None, metavar="MS", help="per action (60000)")
    limits.add_argument("--t-hand", type=int, default=None, metavar="MS", help="per hand (180000)")
    limits.add_argument("--t-per-hand", type=int, default=None, metavar="MS",
                        help="average per hand over the match (7000)")
    limits.add_argument("--start-timeout", type=int, default=None, metavar="MS",
                        help="for every seat to connect (20000)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines and no tables")
    parser.add_argument("--metrics-port", type=int, default=None, metavar="PORT",
                        help="serve Prometheus metrics labelled by entrant on PORT (0: any free port)")
    parser.add_argument("--metrics-bind", default="127.0.0.1", metavar="ADDR",
                        help="interface of the metrics endpoint (default 127.0.0.1)")
    scale = parser.add_argument_group("scale-out on Dask (optional extra: pip install -e '.[dask]')")
    scale.add_argument("--workers", type=int, default=None, metavar="N",
                       help="play the seatings on a local Dask cluster of N worker processes")
    scale.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="play them on an existing Dask scheduler (the event's directory must be "
                       "shared with its workers)")
    scale.add_argument("--cluster", choices=["slurm"], default=None,
                       help="start workers through dask-jobqueue")
    scale.add_argument("--cluster-option", action="append", default=[], metavar="KEY=VALUE",
                       help="a dask-jobqueue cluster argument (repeatable)")
    lbr = parser.add_argument_group("exploitability column")
    lbr.add_argument("--lbr", action="store_true",
                     help="measure each entrant with LBR (acpc-lbr evaluate) and add its lower bound")
    lbr.add_argument("--lbr-hands", type=int, default=500, metavar="N", help="deals per LBR evaluation (500)")
    lbr.add_argument("--lbr-probe", type=int, default=None, metavar="K",
                     help="measure command entrants that do not answer range queries through the "
                     "probe adapter with K samples")


DEFAULTS: dict[str, Any] = {"matches": 10, "hands": 1000, "seed": 1, "format": "round-robin",
                            "concurrency": 1, "retries": 2, "max_failures": 2, "resamples": 1000}


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    """The options, over the event file's settings, over the defaults."""
    settings = dict(DEFAULTS)
    base = None
    if args.event is not None:
        settings.update(read_toml(args.event))
        base = args.event.resolve().parent
    for key, value in vars(args).items():
        if key == "entrant" and value is not None:
            settings["entrants"] = value
        elif value is not None and key not in ("event", "entrant"):
            settings[key] = value
    settings["base"] = base
    return settings


def build(settings: dict[str, Any]) -> Event:
    if not settings.get("game"):
        raise EventError("no game: give --game (or game in the event file)")
    defaults = Limits()
    limits = Limits(settings.get("t_response", defaults.t_response), settings.get("t_hand", defaults.t_hand),
                    settings.get("t_per_hand", defaults.t_per_hand),
                    settings.get("start_timeout", defaults.start_timeout))
    for name, value in vars(limits).items():
        if value <= 0:
            raise EventError(f"--{name.replace('_', '-')} must be positive, got {value}")
    for name in ("concurrency", "workers"):
        if settings.get(name) is not None and settings[name] < 1:
            raise EventError(f"--{name} must be at least 1, got {settings[name]}")
    port = settings.get("metrics_port")
    if port is not None and not 0 <= port <= 65535:
        raise EventError(f"--metrics-port must be in 0..65535, got {port}")
    return build_event(settings["game"], settings.get("entrants") or [], matches=settings["matches"],
                       hands=settings["hands"], seed=settings["seed"], format=settings["format"],
                       candidate=settings.get("candidate"), players=settings.get("players"), limits=limits,
                       retries=settings["retries"], max_failures=settings["max_failures"],
                       resamples=settings["resamples"], base=settings.get("base"))


def main(argv: Sequence[str]) -> int:
    """Run ``acpc-lbr tournament``; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(list(argv))
    try:
        settings = _settings(args)
        event = build(settings)
        out = settings.get("out")
        if out is None:
            raise EventError("no event directory: give --out DIR (run the same command again to resume)")
        out = Path(out)
        if event.players == 3 and args.lbr:
            raise EventError("--lbr measures heads-up bots only; this is a 3-player game")
        store = EventStore(out, event)
        resuming = store.open(game_text(event))
        json_path = Path(settings.get("json") or out / "results.json")
        check_writable(json_path, "--json")
        executor, slots, stack = executor_for(args, settings["concurrency"])
    except EventError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        with stack:
            return play(args, event, store, executor, slots, resuming, json_path, out)
    finally:
        seating.kill_tagged(seating.seating_tag(out))  # what Dask workers stopped mid-seating left


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
