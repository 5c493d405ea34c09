"""Every estimator of finished matches, from their files alone (``acpc-lbr results``).

:func:`results_from_files` reads each match's ``.log`` (:mod:`acpc_lbr.results.matchlog`)
and ``.queries`` file (:mod:`acpc_lbr.results.querylog`), checks that they belong
together (one game, one set of players, the mirror of a duplicate pair, no deals
counted twice), turns every hand into its outcome with the same step the live
dealer takes (:class:`acpc_lbr.results.outcomes.HandAccountant`) and builds the
results document (:func:`acpc_lbr.results.document.results_document`). The
dealer's live pipeline and this give the same document, byte for byte
(tests/acpc_lbr/test_results_fixtures.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from acpc_lbr.aivat import AivatRecord, AivatSetup, NotComputed
from acpc_lbr.estimators import HandOutcome
from acpc_lbr.results.document import (
    LbrOptions,
    ResultsConfig,
    ResultsDocument,
    estimates_from_outcomes,
    player_results,
    results_document,
)
from acpc_lbr.results.matchlog import checked_state, read_log_header, read_match_log
from acpc_lbr.results.outcomes import HandAccountant, Tally
from acpc_lbr.results.querylog import (
    QueryLogHeader,
    actions_per_hand,
    check_query_log,
    read_query_log,
)
from protocol.arrays import FloatArray
from protocol.gamedef import GameDef, load_game
from protocol.wire import LogState


def outcomes_of_hands(
    hands: Iterable[LogState],
    accountant: HandAccountant,
    rows: Mapping[int, list[FloatArray] | None] | None,
    aivat_rows: Mapping[int, list[dict[str, FloatArray]] | None] | None = None,
) -> list[HandOutcome]:
    """Outcomes of one match's hands from the measured player's seat, each checked against the rules.

    Args:
        accountant: the match's :class:`~acpc_lbr.results.outcomes.HandAccountant` (its ``io``
            and ``aivat`` say whether ``rows`` and ``aivat_rows`` are given).
        rows: per showdown hand its σ rows (None: failed); None for a match
            without range answers (then there is no IO at all).
        aivat_rows: per hand its AIVAT rows (None or missing: failed); None
            for a match without AIVAT.
    """
    game = accountant.game
    outcomes = []
    for hand in hands:
        hand_rows = None if rows is None else rows.get(hand.hand_id)
        hand_aivat = None if aivat_rows is None else aivat_rows.get(hand.hand_id)
        outcome, _ = accountant.outcome(hand, hand_rows, hand_aivat, checked_state(game, hand))
        outcomes.append(outcome)
    return outcomes


def _match_base(path: Path) -> tuple[str, int]:
    """('dir/MATCH', half) of a ``.log`` path (``MATCH.dup.log`` is half 1)."""
    text = str(path)
    if not text.endswith(".log"):
        raise ValueError(f"{path}: a match log ends in .log")
    stem = text[: -len(".log")]
    if stem.endswith(".dup"):
        return stem[: -len(".dup")], 1
    return stem, 0


class _AivatSetups:
    """The AIVAT setup of a set of query logs: the one they all record, or why AIVAT is not recomputed.

    A log that records no setup (version 1), an unknown or altered one, or
    logs that differ: recomputing with any one function could print figures
    the run did not have, so no AIVAT figure is given, and the reason is.
    """

    def __init__(self) -> None:
        self.setup: AivatSetup | None = None
        self.first = ""
        self.refused: str | None = None
        self.seen = False

    def setup_of(self, path: Path, header: QueryLogHeader) -> AivatSetup | None:
        """The setup to recompute ``path``'s AIVAT with (None: refused)."""
        self.seen = True
        if self.refused is not None:
            return None
        try:
            record = header.get("aivat_setup")
            if record is None:
                raise ValueError(f"records no AIVAT value function (query log version {header.get('version')}, "
                                 f"written before it was recorded); this version's could give other figures")
            setup = AivatSetup.from_record(record)
        except ValueError as error:
            self.refused = f"{path.name}: {error}"
            return None
        if self.setup is None:
            self.setup, self.first = setup, path.name
        elif setup != self.setup:
            self.refused = (f"{path.name} and {self.first} used different AIVAT setups (value functions "
                            f"{setup.value.digest()} and {self.setup.value.digest()})")
            return None
        return setup

    def config(self) -> AivatRecord | NotComputed | None:
        """``config.aivat``: None without AIVAT, the setup, or ``{"not_computed": reason}``."""
        if not self.seen:
            return None
        if self.refused is not None or self.setup is None:
            return {"not_computed": self.refused or "no AIVAT setup"}
        return self.setup.record()


def results_from_files(
    paths: Sequence[Path], measured: str | None = None, lbr: LbrOptions | None = None
) -> ResultsDocument:
    """The results document of finished matches, from their files alone.

    Args:
        paths: ``.log`` files, optionally with ``.queries`` files; a log's
            query file is also found next to it (``MATCH.queries`` beside
            ``MATCH.log``). ``MATCH.log`` and ``MATCH.dup.log`` are the two
            halves of a duplicate match, paired by hand number.
        measured: the measured player (default: the query log's, else the
            first seat's name).
        lbr: LBR options to record in the configuration, if known.

    Raises:
        ValueError: unreadable or inconsistent files.
    """
    groups, explicit = _log_groups(paths)
    found = _FoundResults(measured)
    offset = 1 << 32 if len(groups) > 1 else 0
    for group_index, (_, members) in enumerate(sorted(groups.items())):
        group_hands = 0
        for half, log in sorted(members):
            query_path = explicit.get(str(log)[: -len(".log")]) or Path(str(log)[: -len(".log")] + ".queries")
            group_hands = max(group_hands, found.add_log(log, half, query_path, group_index * offset))
        found.hands += group_hands
    return found.document(lbr)


def _log_groups(paths: Sequence[Path]) -> tuple[dict[str, list[tuple[int, Path]]], dict[str, Path]]:
    """The ``.log`` files by match (``{'dir/MATCH': [(half, log)]}``) and the ``.queries`` files
    given explicitly (by ``'dir/MATCH'``).

    Raises:
        ValueError: a file that is neither, or no ``.log``.
    """
    logs = [Path(p) for p in paths if str(p).endswith(".log")]
    explicit = {str(p)[: -len(".queries")]: Path(p) for p in paths if str(p).endswith(".queries")}
    others = [p for p in paths if not str(p).endswith((".log", ".queries"))]
    if others:
        raise ValueError(f"not a .log or .queries file: {others[0]}")
    if not logs:
        raise ValueError("no .log file given")
    groups: dict[str, list[tuple[int, Path]]] = {}
    seen: dict[Path, Path] = {}
    for log in logs:
        first = seen.setdefault(log.resolve(), log)
        if first is not log:
            raise ValueError(f"{log} is given twice (as {first}): its hands would count twice")
        base, half = _match_base(log)
        groups.setdefault(base, []).append((half, log))
    return groups, explicit


@dataclass
class _FoundResults:
    """What :func:`results_from_files` gathers, log by log (in group and half order)."""

    measured: str | None
    game_arg: str | None = None
    game: GameDef | None = None
    seed: int | None = None
    hands: int = 0
    players: tuple[str, ...] = ()
    tally: Tally = field(default_factory=Tally)
    errors: int = 0
    any_io: bool = False
    duplicate: bool = False
    outcomes: list[HandOutcome] = field(default_factory=list)
    matches: list[str] = field(default_factory=list)
    setups: _AivatSetups = field(default_factory=lambda: _AivatSetups())
    #: The log of each (match name, seed) added.
    headers: dict[tuple[str, int], Path] = field(default_factory=dict)
    #: The log of each (seed, seat names) added.
    seatings: dict[tuple[int, tuple[str, ...]], Path] = field(default_factory=dict)
    #: The first log of each match (by its deal offset): seed, seat names, path.
    halves: dict[int, tuple[int, tuple[str, ...], Path]] = field(default_factory=dict)
    #: Per hand, the names and values by position (each player's raw result, more than two players).
    player_values: list[tuple[tuple[str, ...], tuple[float, ...]]] = field(default_factory=list)

    def add_log(self, log: Path, half: int, query_path: Path, deal_offset: int) -> int:
        """Add one ``.log`` (and its ``.queries`` file, if there is one); returns its header's hands.

        Raises:
            ValueError: its game differs from the first log's, or a file is unreadable.
        """
        name, this_game, hands, this_seed = read_log_header(log)
        if (name, this_seed) in self.headers:
            raise ValueError(f"{log} and {self.headers[name, this_seed]} are the same match ({name}, seed "
                             f"{this_seed}): its hands would count twice")
        self.headers[name, this_seed] = log
        if self.game_arg is None:
            self.game_arg, self.game, self.seed = this_game, load_game(this_game), this_seed
        elif load_game(this_game) != self.game:
            raise ValueError(f"{log}: game {this_game} differs from {self.game_arg}")
        game = self.game
        assert game is not None
        data = read_match_log(log, game)
        if not self.players:
            self.players = data.seat_names
        elif sorted(data.seat_names) != sorted(self.players):
            raise ValueError(f"{log}: players {'|'.join(data.seat_names)}, not {'|'.join(self.players)}: "
                             "the results of other players do not merge into one figure")
        self._check_seating(log, this_seed, data.seat_names, deal_offset)
        self.errors += len(data.errors)
        self.duplicate = self.duplicate or half == 1
        self.player_values.extend((hand.names, tuple(hand.values)) for hand in data.hands)
        rows: dict[int, list[FloatArray] | None] | None = None
        aivat_rows: dict[int, list[dict[str, FloatArray]] | None] | None = None
        setup: AivatSetup | None = None
        who = self.measured
        if query_path.exists():
            queries = read_query_log(query_path, game.num_hands, actions_per_hand(data.hands))
            check_query_log(query_path, queries, name, half, who or queries.header.get("measured") or
                            self.players[0], game, data.hands)
            rows = queries.rows
            if queries.header.get("aivat"):
                setup = self.setups.setup_of(query_path, queries.header)
                aivat_rows = None if setup is None else queries.aivat
            self.tally.dealer_queries += queries.queries
            self.tally.query_errors += queries.failures
            self.tally.range_inconsistencies += queries.not_strategies
            who = who or queries.header.get("measured")
            self.any_io = True
        who = who or self.players[0]
        if self.measured is None:
            self.measured = who
        accountant = HandAccountant(game, who, half, io=rows is not None, aivat=aivat_rows is not None,
                                    aivat_setup=setup, seed=this_seed, tally=self.tally)
        for outcome in outcomes_of_hands(data.hands, accountant, rows, aivat_rows):
            self.outcomes.append(replace(outcome, deal=outcome.deal + deal_offset))
        self.matches.append(name)
        return hands

    def _check_seating(self, log: Path, seed: int, seat_names: tuple[str, ...], deal_offset: int) -> None:
        """Refuse a second half that is not the first's mirror, or two logs of the same deals.

        Raises:
            ValueError: which logs, and why.
        """
        first = self.halves.setdefault(deal_offset, (seed, seat_names, log))
        if first[2] != log and (first[0] != seed or tuple(reversed(first[1])) != seat_names):
            raise ValueError(f"{log} is not the mirror of {first[2]} (seed {seed}, seats "
                             f"{'|'.join(seat_names)}; against seed {first[0]}, seats {'|'.join(first[1])}): "
                             "a duplicate pair is the same deal with the seats reversed")
        seating = self.seatings.setdefault((seed, seat_names), log)
        if seating != log:
            raise ValueError(f"{log} and {seating} were dealt from the same seed {seed} to the same seats: "
                             "the same deals, not independent samples (give each match its own seed)")

    def document(self, lbr: LbrOptions | None) -> ResultsDocument:
        """The results document of every log added."""
        assert self.game is not None
        if self.setups.refused is not None:  # no AIVAT figure from any of the logs
            self.outcomes = [replace(o, aivat_chips=None) for o in self.outcomes]
            self.tally.aivat_fallbacks = 0
        config: ResultsConfig = {
            "game": self.game_arg,
            "players": list(self.players),
            "measured": self.measured,
            "seed": self.seed,
            "hands": self.hands,
            "duplicate": self.duplicate,
            "lbr": lbr,
            "matches": self.matches,
            "aivat": self.setups.config(),
        }
        tally = self.tally
        counts = {
            "hands": len(self.outcomes),
            "errors": self.errors,
            "dealer_queries": tally.dealer_queries,
            "query_errors": tally.query_errors,
            "range_inconsistencies": tally.range_inconsistencies,
            "showdowns": tally.showdowns,
            "io_fallbacks": tally.io_fallbacks if self.any_io else 0,
            "aivat_fallbacks": tally.aivat_fallbacks,
        }
        players = None
        if self.game.num_players > 2:
            players = player_results(self.player_values, self.game.big_blind, self.players)
        return results_document(config, estimates_from_outcomes(self.outcomes), self.game.big_blind, counts, {},
                                players)
