"""``acpc-lbr evaluate``: a lower bound on a bot's exploitability, with a 95% interval.

Usage::

    acpc-lbr evaluate [--opponent BOT | --opponent-cmd "CMD {host} {port}"]
                      [--game nolimit] [--bets fcpa] [--rounds 3-4]
                      [--hands N] [--seed S] [--no-duplicate] [--no-io] [--out DIR] [--keep-logs] [--json FILE]

It starts an in-process dealer (:class:`dealer.match.Match`), the LBR agent
(:class:`agents.lbr.LbrAgent`) and the opponent, and plays over loopback TCP
(127.0.0.1). By default the evaluation is *duplicate*: the match and its
mirror (seats swapped, the same deals) run concurrently, and each deal's two
outcomes are averaged, which removes most of the luck of the cards. The
mirror runs in a second process with its own dealer, LBR agent and opponent
(:mod:`acpc_lbr.app.seating`), so the two seatings use two cores;
``--one-process`` keeps both in this one. The
opponent is a built-in bot by name (``acpc-lbr play`` knows them), or any
program given by ``--opponent-cmd``, launched once per half with ``{host}``
and ``{port}`` filled in, the way ACPC start-up scripts take them; it must
answer range queries (docs/range-query.md).

The result is LBR's win rate in milli-big-blinds per game (mbb/g): a lower
bound on what a best response would win, i.e. on the opponent's
exploitability (docs/lbr.md). Raw (per hand) and duplicate (per pair)
estimators are printed side by side with the imaginary-observation ones (IO
and duplicate + IO, from the dealer's results: the opponent answers range
queries, or LBR could not play it); ``--no-io`` leaves the IO ones out.

With no options it runs a demonstration (2-3 minutes on a busy 2-core machine; README):
LBR (fcpa, rounds 3-4, the last two of the game) against ``call-raise`` in heads-up
no-limit hold'em.

Exit status (:mod:`acpc_lbr.runtime.exit_codes`): 0 done; 1 a match failed or evaluate
was interrupted; 2 usage; 5 the opponent does not answer range queries; 6 no
bound: LBR took no active
decision, some of its range queries failed (:data:`MAX_FAILED_QUERY_SHARE`), or a
probed bot (``--probe``) played unlike its probes.
Logs are kept in every case.
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from acpc_lbr.app import scaleout, seating
from acpc_lbr.app.evaluate.evaluation import (
    DEFAULT_HANDS,
    DEFAULT_OPPONENT,
    PROBE_SAMPLES,
    Evaluation,
    EvaluationConfig,
    default_opponent_name,
)
from acpc_lbr.app.evaluate.output import format_report, write_results
from acpc_lbr.app.evaluate.run import mirror_main, play
from acpc_lbr.app.report import require_matplotlib
from acpc_lbr.cli import scaleout as scaleout_options
from acpc_lbr.lbr import ActiveRounds, BettingOptions
from acpc_lbr.runtime.exit_codes import (
    EXIT_NOT_QUERYABLE,
    EXIT_OK,
    EXIT_USAGE,
)
from agents.bots import BOTS
from dealer.budget import BotBudget
from protocol.errors import ProtocolError
from protocol.gamedef import load_game


def _add_log_options(parser: argparse.ArgumentParser) -> None:
    """``--out`` and ``--keep-logs``: where the logs go, and whether the default folder stays (docs/lbr.md, Logs)."""
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="directory for the logs, always kept (default: a new folder "
                        f"{tempfile.gettempdir()}/acpc-lbr-evaluate-*, removed after a run that gave a bound, "
                        "kept after any other; docs/lbr.md)")
    parser.add_argument("--keep-logs", dest="keep_logs", action="store_true",
                        help="keep the default log folder after a run that gave a bound too")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acpc-lbr evaluate",
        description="Measure a lower bound on a bot's exploitability with Local Best Response.",
        epilog="With no options: LBR (fcpa, rounds 3-4) against call-raise in no-limit hold'em, "
               "2-3 minutes (README). See docs/lbr.md.",
    )
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--opponent", default=None, metavar="BOT",
                     help=f"a built-in bot (default {DEFAULT_OPPONENT})")
    who.add_argument("--opponent-cmd", default=None, metavar="CMD",
                     help="a program to launch per half, e.g. './bot {host} {port}'")
    parser.add_argument("--probe", type=int, nargs="?", const=PROBE_SAMPLES, default=None,
                        metavar="K", help="the --opponent-cmd bot speaks only plain ACPC: answer "
                        "LBR's range queries by probing copies of it, K samples per hand "
                        f"(default {PROBE_SAMPLES}; acpc-lbr probe, docs/range-query.md)")
    parser.add_argument("--opponent-name", dest="opponent_name", default=None, metavar="NAME",
                        help="the opponent's player name in the logs, file names and metrics "
                        "(default: the bot's name, or the script/program of --opponent-cmd)")
    parser.add_argument("--game", default="nolimit", help="game name or .game file (default nolimit)")
    parser.add_argument("--bets", default="fcpa", help="LBR's raises: fc, fcpa, 56bets or e.g. 0.5,1,min,allin")
    parser.add_argument("--rounds", default=None,
                        help="LBR's active rounds, 1-based, within the game's rounds "
                        "(default: the game's last two, e.g. 3-4 in hold'em, 1-2 in Leduc)")
    parser.add_argument("--hands", type=int, default=DEFAULT_HANDS,
                        help=f"deals to play; duplicate plays each twice (default {DEFAULT_HANDS})")
    parser.add_argument("--seed", type=int, default=1, help="deal seed (default 1)")
    parser.add_argument("--no-duplicate", dest="duplicate", action="store_false",
                        help="play one seating only")
    parser.add_argument("--one-process", dest="one_process", action="store_true",
                        help="play both seatings in this process (by default the mirrored one "
                        "runs in a process of its own, so that the two use two cores)")
    _add_log_options(parser)
    parser.add_argument("--json", default=None, metavar="FILE", help="write the results document here")
    parser.add_argument("--report", default=None, metavar="FILE",
                        help="write the HTML report here at the end (needs matplotlib: "
                        "pip install 'acpc-lbr[report]')")
    parser.add_argument("--no-io", dest="io", action="store_false",
                        help="leave out the imaginary-observation estimators (on by default: the "
                        "dealer asks the opponent for its range after each showdown it did not see)")
    parser.add_argument("--io", dest="io", action="store_true", default=True,
                        help=argparse.SUPPRESS)  # the default now; kept for old command lines
    parser.add_argument("--aivat", action="store_true",
                        help="also compute the AIVAT estimators (uses the dealer's queries even with --no-io; "
                        "docs/results.md)")
    _add_time_limits(parser)
    parser.add_argument("--progress-every", type=int, default=0, metavar="N",
                        help="without a TTY, print a progress line every N hands (default: 10 lines)")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.add_argument("--metrics-port", dest="metrics_port", type=int, default=None, metavar="PORT",
                        help="serve Prometheus metrics on PORT while it runs (0: any free port; "
                        "the address is printed on stderr; docs/metrics.md)")
    parser.add_argument("--metrics-bind", dest="metrics_bind", default="127.0.0.1", metavar="ADDR",
                        help="interface of the metrics endpoint (default 127.0.0.1)")
    scaleout_options.add_arguments(parser)
    return parser


def _add_time_limits(parser: argparse.ArgumentParser) -> None:
    """The opponent's time limits: per query, per action, and for all its queries in a match."""
    parser.add_argument("--t_query", type=int, default=10_000, metavar="MS",
                        help="the opponent's time limit per range query (default 10000)")
    parser.add_argument("--t_response", type=int, default=600_000, metavar="MS",
                        help="the opponent's time limit per action, as the dealer's: a bot that "
                        "hangs ends the match after MS (default 600000)")
    parser.add_argument("--t_query_match", type=int, default=int(BotBudget.query_seconds_match * 1000),
                        metavar="MS", help="the most time the opponent may spend answering range "
                        "queries in one match, as the dealer's (default 3600000: an hour)")


def config_from_args(args: argparse.Namespace) -> EvaluationConfig:
    """Check the options.

    Raises:
        ValueError: an unusable option.
        ProtocolError: a --game that is no bundled game and no readable game file.
    """
    game = load_game(args.game)
    if game.num_players != 2:
        raise ValueError("LBR plays heads-up games only")
    opponent = args.opponent
    if opponent is None and args.opponent_cmd is None:
        opponent = DEFAULT_OPPONENT
    if opponent is not None and opponent not in BOTS:
        raise ValueError(f"unknown bot {opponent!r} (known: {', '.join(BOTS)}); "
                         "use --opponent-cmd for your own program")
    name = args.opponent_name
    if args.probe is not None:
        probed = _probe_command(args)
        if name is None:
            name = default_opponent_name(None, args.opponent_cmd)
        args.opponent_cmd = probed
    if args.opponent_cmd is not None:
        _check_opponent_cmd(args.opponent_cmd)
    if args.opponent_name is not None and (
            not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", args.opponent_name) or args.opponent_name == "lbr"):
        raise ValueError(f"--opponent-name {args.opponent_name!r}: use 1-64 letters, digits, "
                         "'-', '_' or '.', and not 'lbr' (LBR's own name)")
    if args.hands < 1:
        raise ValueError("--hands must be positive")
    if args.t_response < 1 or args.t_query_match < 1:
        raise ValueError("--t_response and --t_query_match must be positive (milliseconds)")
    if not 0 <= args.seed < 2**32:
        raise ValueError("--seed must be an unsigned 32-bit integer")
    for written in (args.json, args.report):  # found out now, not after the whole run
        folder = Path(written).parent if written else None
        if folder is not None and not folder.is_dir():
            raise ValueError(f"cannot write {written}: no such folder {str(folder)!r}")
    rounds = (ActiveRounds.parse(args.rounds, game) if args.rounds is not None
              else ActiveRounds.last_two(game))
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="acpc-lbr-evaluate-"))
    try:  # now, not as an internal error once the players are starting
        out.mkdir(parents=True, exist_ok=True)
    except OSError as problem:
        raise ValueError(f"--out {args.out}: cannot make the log folder: {problem.strerror}") from None
    return EvaluationConfig(
        game_arg=args.game, game=game, opponent=opponent, opponent_cmd=args.opponent_cmd,
        bets=BettingOptions.parse(args.bets), rounds=rounds,
        hands=args.hands, seed=args.seed, duplicate=args.duplicate, out=out,
        t_query_ms=args.t_query, t_response_ms=args.t_response, t_query_match_ms=args.t_query_match,
        io=args.io or args.aivat, aivat=args.aivat,
        metrics_port=args.metrics_port, metrics_bind=args.metrics_bind, name=name,
        probe=args.probe,
    )


def _probe_command(args: argparse.Namespace) -> str:
    """``--probe``: the probe adapter's command line, around the bot of ``--opponent-cmd``.

    Raises:
        ValueError: no ``--opponent-cmd``, K < 1, or a bot command that cannot run.
    """
    if args.opponent_cmd is None:
        raise ValueError("--probe measures a program given by --opponent-cmd")
    if args.probe < 1:
        raise ValueError("--probe K needs K >= 1")
    try:
        bot = shlex.split(args.opponent_cmd)
    except ValueError as error:
        raise ValueError(f"--opponent-cmd: cannot read {args.opponent_cmd!r}: {error}") from None
    if not bot or shutil.which(bot[0]) is None:  # the adapter's copies would all fail
        raise ValueError(f"--opponent-cmd: no such program {bot[0] if bot else ''!r}")
    # The bot's own {host} and {port} are the adapter's to fill in.
    inner = args.opponent_cmd.replace("{host}", "{{host}}").replace("{port}", "{{port}}")
    # The adapter refuses a query before the dealer's t_query does, with its reason.
    return (f"{shlex.quote(sys.executable)} -m acpc_lbr.cli probe {{host}} "
            f"{{port}} --game {shlex.quote(args.game)} --samples {args.probe} "
            f"--probe-timeout {args.t_query * 0.0009:g} --stats {{stats}} "
            f"-- {inner}")


def _check_opponent_cmd(command: str) -> None:
    """An ``--opponent-cmd`` names ``{port}`` and a program that exists.

    Raises:
        ValueError: it does not.
    """
    if "{port}" not in command:
        raise ValueError("--opponent-cmd needs {port} (and usually {host}) in it")
    try:
        words = shlex.split(command.format(host="127.0.0.1", port=0, stats="x"))
    except (ValueError, KeyError, IndexError) as error:
        raise ValueError(f"--opponent-cmd: cannot read {command!r}: {error}") from None
    if not words or shutil.which(words[0]) is None:
        raise ValueError(f"--opponent-cmd: no such program {words[0] if words else ''!r}")


def main(argv: Sequence[str]) -> int:
    """Run ``acpc-lbr evaluate``; returns the exit status."""
    if list(argv[:1]) == [seating.MIRROR_FLAG]:  # not a user's option: evaluate's own second process
        return mirror_main(list(argv[1:]))
    parser = _parser()
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exit_:
        return int(exit_.code or 0)
    try:
        config = config_from_args(args)
        if args.report:
            require_matplotlib()  # before hours of play, not after
    except (ValueError, ProtocolError, OSError, ImportError) as problem:  # ProtocolError: --game
        print(f"acpc-lbr evaluate: {problem}", file=sys.stderr)
        return EXIT_USAGE
    if scaleout_options.wanted(args) or args.dry_run:
        return scaleout.run(args, list(argv))

    evaluation = play(config, None if args.quiet else sys.stderr, args.progress_every,
                      split=not args.one_process)
    if not isinstance(evaluation, Evaluation):
        return evaluation
    if evaluation.not_queryable:
        print(f"acpc-lbr evaluate: the opponent {config.opponent_name!r} does not answer range "
              "queries, which LBR needs: implement them (docs/range-query.md), or rerun with "
              "--probe to have copies of the bot probed for its ranges.", file=sys.stderr)
        return EXIT_NOT_QUERYABLE
    code = write_results(evaluation, args.json, args.report)
    # The default folder (no --out) goes after a run that gave its bound; any other run keeps its
    # logs for the post-mortem, and says where (docs/lbr.md, "Logs").
    remove = args.out is None and not args.keep_logs and code == EXIT_OK
    print(format_report(evaluation, logs_removed=remove))
    if remove:
        shutil.rmtree(config.out, ignore_errors=True)
    return code
