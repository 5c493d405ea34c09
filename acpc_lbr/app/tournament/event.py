"""The frozen definition of a tournament: who plays, what, how often, from which seeds.

An event is read once (from the command line or a TOML file), checked, and
never changed: :class:`Event`. From it :meth:`Event.schedule` derives every
duplicate match to play, in one canonical order that does not depend on how
many run at once. Match ``k`` of every pairing deals from the same seed
(:func:`match_seed`), as the ACPC did from 2013: each entrant's results are
compared on identical cards.

Entrants are given as ``NAME=SPEC`` (the name may be left out for a built-in
bot or a strategy file):

* a built-in bot of ``acpc-lbr play`` (``random``, ``call-raise``, ...);
* a bot-SDK strategy, ``path/to/file.py:function`` or ``module:function``;
* any ACPC program, as a command line holding ``{port}`` (and usually
  ``{host}``); ``{game}`` is replaced by the path of the event's game file,
  ``{seed}`` by a seed for the bot's own generator, ``{seat}`` by its seat.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import shlex
import shutil
import tomllib
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from protocol.errors import ProtocolError
from protocol.gamedef import GameDef, load_game

#: Bots of ``acpc-lbr play`` an entrant may name (``lbr`` needs range queries: not an entrant).
BUILTIN_BOTS = ("always-call", "always-raise", "always-fold", "call-raise", "random")
#: A name is a field of the ACPC log: no ``:``, ``|`` or blanks (and a file name here).
NAME_PATTERN = re.compile(r"[A-Za-z0-9_.+-]{1,40}")
#: The most bootstrap resamples an event takes (each ranks the whole event again; 0: no bootstrap).
MAX_RESAMPLES = 1_000_000
#: The placeholders of an entrant command.
PLACEHOLDERS = ("{host}", "{port}", "{game}", "{seed}", "{seat}")

Format = Literal["round-robin", "gauntlet"]
Kind = Literal["builtin", "sdk", "command"]


class EventError(ValueError):
    """The event cannot be run as described: one line saying why."""


@dataclass(frozen=True)
class Entrant:
    """One bot of the event.

    Attributes:
        name: its player name in the logs and the results.
        spec: as given: a built-in bot, an SDK strategy, or a command template.
        kind: which of the three ``spec`` is.
    """

    name: str
    spec: str
    kind: Kind

    def argv(self, python: str, game_arg: str, game_file: str, host: str, port: str,
             seed: int, seat: int) -> list[str]:
        """The command line that seats this entrant at ``host:port`` (``port`` may stay ``{port}``)."""
        if self.kind != "command":
            return [python, "-m", "acpc_lbr.cli", "play", self.spec, host, port,
                    "--game", game_arg, "--seed", str(seed)]
        values = {"{host}": host, "{port}": port, "{game}": game_file,
                  "{seed}": str(seed), "{seat}": str(seat)}
        words = []
        for word in shlex.split(self.spec):
            for key, value in values.items():
                word = word.replace(key, value)
            words.append(word)
        return words


def parse_entrant(text: str, base: Path | None = None) -> Entrant:
    """An entrant from ``NAME=SPEC`` (or a bare built-in bot or strategy spec).

    ``base``: where relative strategy files of a TOML event are found.

    >>> parse_entrant("rnd=random")
    Entrant(name='rnd', spec='random', kind='builtin')
    >>> parse_entrant("call-raise").name
    'call-raise'
    >>> parse_entrant("c=./bot {host} {port}").kind
    'command'
    """
    name, sep, spec = text.partition("=")
    if sep and not NAME_PATTERN.fullmatch(name):
        if "{" not in name and not _nameless_spec(text):
            # Meant as a name (the '=' is not inside a command or a strategy's path) but not one
            # the logs and the event's folders can carry: a blank, a '/', nothing at all...
            raise EventError(f"entrant name {name!r}: use 1 to 40 of A-Z a-z 0-9 _ . + - (NAME=SPEC)")
        name, spec = "", text
    elif not sep:
        name, spec = "", text
    spec = spec.strip()
    if not spec:
        raise EventError(f"entrant {text!r} has no bot: give NAME=SPEC")
    if "{port}" in spec:
        kind: Kind = "command"
    elif spec in BUILTIN_BOTS:
        kind = "builtin"
    elif ":" in spec and " " not in spec:
        kind = "sdk"
        where, _, _ = spec.rpartition(":")
        if (where.endswith(".py") or "/" in where) and base is not None and not Path(where).is_absolute():
            spec = f"{(base / where).resolve()}:{spec.rpartition(':')[2]}"
    elif spec == "lbr":
        raise EventError("lbr needs its opponent's range answers and is no entrant; "
                         "use --lbr for an exploitability column")
    else:
        raise EventError(
            f"entrant {text!r}: not a built-in bot ({', '.join(BUILTIN_BOTS)}), not a strategy "
            "FILE.py:FUNCTION, and not a command with {host} {port}")
    if not name:
        if kind == "command":
            raise EventError(f"entrant {text!r}: a command needs a name: NAME=CMD")
        name = spec if kind == "builtin" else Path(spec.rpartition(":")[0]).stem + "." + spec.rpartition(":")[2]
        name = re.sub(r"[^A-Za-z0-9_.+-]", "_", name)[:40]
    if not NAME_PATTERN.fullmatch(name):
        raise EventError(f"entrant name {name!r}: use 1 to 40 of A-Z a-z 0-9 _ . + -")
    return Entrant(name, spec, kind)


def _nameless_spec(text: str) -> bool:
    """Whether ``text`` as a whole is a built-in bot or a strategy (whose path may hold an ``=``)."""
    text = text.strip()
    return text in BUILTIN_BOTS or (":" in text and " " not in text)


def _absolute_program(spec: str, base: Path | None) -> str:
    """The command with a relative program path (``./bot``) made absolute.

    Bots run in their seating's folder, where ``./bot`` is not; the path is
    taken from where the event was given (the TOML file's folder, or here).
    """
    try:
        words = shlex.split(spec)
    except ValueError:
        return spec  # check_runnable says why
    program = words[0] if words else ""
    if "/" not in program or "{" in program or Path(program).is_absolute():
        return spec
    absolute = str(((base or Path.cwd()) / program).resolve())
    stripped = spec.lstrip()
    if stripped.startswith(program):
        return shlex.quote(absolute) + stripped[len(program):]
    return shlex.join([absolute, *words[1:]])


def check_runnable(entrant: Entrant) -> None:
    """Refuse at the start an entrant that cannot even start: a missing program or file."""
    if entrant.kind == "command":
        try:
            words = shlex.split(entrant.spec)
        except ValueError as error:
            raise EventError(f"entrant {entrant.name}: cannot split its command: {error}") from None
        program = words[0] if words else ""
        if "{" in program:
            return  # a placeholder names the program: known only per match
        found = shutil.which(program) if "/" not in program else (program if Path(program).is_file() else None)
        if found is None:
            raise EventError(f"entrant {entrant.name}: no such program {program!r}")
        if "/" in program and not shutil.which(program):
            raise EventError(f"entrant {entrant.name}: {program!r} is not executable")
    elif entrant.kind == "sdk":
        where = entrant.spec.rpartition(":")[0]
        if (where.endswith(".py") or "/" in where) and not Path(where).is_file():
            raise EventError(f"entrant {entrant.name}: no such strategy file {where!r}")
        if where.endswith(".py"):
            _check_compiles(entrant.name, Path(where))


def _check_compiles(name: str, path: Path) -> None:
    """Refuse a strategy file that cannot even compile (it would crash every match).

    Compiled only, never run: the bot's code runs in its own processes.
    """
    try:
        compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
    except SyntaxError as error:
        raise EventError(f"entrant {name}: {path} line {error.lineno}: {error.msg}") from None
    except (OSError, ValueError) as error:
        raise EventError(f"entrant {name}: cannot read {path}: {error}") from None


def match_seed(event_seed: int, match: int) -> int:
    """The deal seed of match ``match`` of every pairing: a fixed function of both, below 2**31.

    >>> match_seed(7, 0) == match_seed(7, 0) != match_seed(7, 1)
    True
    """
    words = np.random.SeedSequence([event_seed & 0xFFFFFFFF, match, 0x70A1]).generate_state(1, dtype=np.uint32)
    return int(words[0]) & 0x7FFFFFFF


def bot_seed(event_seed: int, match: int, seating: int, name: str) -> int:
    """The seed of one entrant's own generator in one seating of one match.

    It differs between the seatings of a duplicate match: a card-blind random
    bot seeded alike in both would replay its actions and cancel its own luck
    to exactly zero, a duplicate result that says nothing.
    """
    words = np.random.SeedSequence([event_seed & 0xFFFFFFFF, match, seating,
                                    zlib.crc32(name.encode())]).generate_state(1, dtype=np.uint32)
    return int(words[0]) & 0x7FFFFFFF


@dataclass(frozen=True)
class Limits:
    """The time limits, in milliseconds, given to every dealer (and how long bots get to connect).

    ``t_per_hand`` is the ACPC's 7 s average per hand. The reference dealer's
    600 s per action and per hand would let one stuck bot hold a match for ten
    minutes, and an event plays hundreds of matches: here a stuck bot is
    stopped after 60 s (``--t-response``), 180 s within a hand.
    """

    t_response: int = 60_000
    t_hand: int = 180_000
    t_per_hand: int = 7_000
    start_timeout: int = 20_000

    def dealer_options(self) -> list[str]:
        return ["--t_response", str(self.t_response), "--t_hand", str(self.t_hand),
                "--t_per_hand", str(self.t_per_hand), "--start_timeout", str(self.start_timeout)]


def pairing_folder(names: Sequence[str]) -> str:
    """The folder of a pairing's matches in the event directory (checked distinct: :func:`check_folders`)."""
    return "-vs-".join(names)


@dataclass(frozen=True)
class MatchJob:
    """One duplicate match: ``hands`` deals from ``seed``, played in every seating of ``names``."""

    pairing: int
    names: tuple[str, ...]
    match: int
    seed: int
    hands: int

    @property
    def pairing_id(self) -> str:
        return pairing_folder(self.names)

    @property
    def key(self) -> str:
        """The match's name in the event directory (unique within the event)."""
        return f"{self.pairing_id}/m{self.match:03d}"

    def seatings(self) -> list[tuple[str, ...]]:
        """Every seat order of the names: 2 heads-up, 6 with three players (the duplicate rotation)."""
        return [tuple(order) for order in itertools.permutations(self.names)]


@dataclass(frozen=True)
class Event:
    """A checked, frozen tournament definition.

    Attributes:
        game_arg: the game as given (a bundled name or a file).
        game: its definition.
        entrants: in the order given.
        format: round-robin (every pair or triple) or gauntlet (``candidate`` against the rest).
        matches: duplicate matches per pairing (M).
        hands: deals per match (H).
        seed: the event seed; match k's deals come from ``match_seed(seed, k)``.
        candidate: the gauntlet's candidate.
        limits: time limits.
        retries: reruns of a failed match from its seed.
        max_failures: failed matches (after retries) past which an entrant is disqualified.
        resamples: bootstrap resamples of the matches.
    """

    game_arg: str
    game: GameDef = field(compare=False, repr=False)
    entrants: tuple[Entrant, ...]
    matches: int
    hands: int
    seed: int
    format: Format = "round-robin"
    candidate: str | None = None
    limits: Limits = Limits()
    retries: int = 2
    max_failures: int = 2
    resamples: int = 1000

    @property
    def players(self) -> int:
        return self.game.num_players

    def entrant(self, name: str) -> Entrant:
        return next(e for e in self.entrants if e.name == name)

    def pairings(self) -> list[tuple[str, ...]]:
        """The groups that meet, in canonical order (entrant order)."""
        names = [e.name for e in self.entrants]
        if self.format == "round-robin":
            return [tuple(c) for c in itertools.combinations(names, self.players)]
        assert self.candidate is not None
        others = [n for n in names if n != self.candidate]
        return [(self.candidate, *rest) for rest in itertools.combinations(others, self.players - 1)]

    def schedule(self) -> list[MatchJob]:
        """Every duplicate match, match index first: the first matches of all pairings come first."""
        pairings = self.pairings()
        return [MatchJob(p, names, k, match_seed(self.seed, k), self.hands)
                for k in range(self.matches) for p, names in enumerate(pairings)]

    def identity(self) -> dict[str, Any]:
        """What fixes the results: a resumed event must have the same (see store.py)."""
        return {"game": self.game_arg, "game_hash": hashlib.sha256(repr(self.game).encode()).hexdigest()[:16],
                "entrants": [[e.name, e.spec] for e in self.entrants], "format": self.format,
                "candidate": self.candidate, "matches": self.matches, "hands": self.hands,
                "seed": self.seed, "limits": asdict(self.limits), "retries": self.retries,
                "max_failures": self.max_failures, "resamples": self.resamples}

    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(self.identity(), sort_keys=True).encode()).hexdigest()[:16]


def build_event(game_arg: str, entrant_texts: Sequence[str], *, matches: int, hands: int, seed: int,
                format: str = "round-robin", candidate: str | None = None, players: int | None = None,
                limits: Limits | None = None, retries: int = 2, max_failures: int = 2,
                resamples: int = 1000, base: Path | None = None) -> Event:
    """Check everything that can be checked before any process starts, and freeze it.

    Raises:
        EventError: one line saying what is wrong.
    """
    try:
        game = load_game(game_arg)
    except (ProtocolError, OSError) as error:
        raise EventError(f"cannot load game {game_arg!r}: {error}") from None
    if game_arg and Path(game_arg).is_file():
        game_arg = str(Path(game_arg).resolve())
    if game.num_players not in (2, 3):
        raise EventError(f"{game_arg} has {game.num_players} players; tournaments take 2- or 3-player games")
    if players is not None and players != game.num_players:
        raise EventError(f"the event asks for {players}-player seats but {game_arg} is a "
                         f"{game.num_players}-player game")
    entrants = tuple(parse_entrant(t, base) for t in entrant_texts)
    entrants = tuple(replace(e, spec=_absolute_program(e.spec, base)) if e.kind == "command" else e
                     for e in entrants)
    seen: set[str] = set()
    for e in entrants:
        if e.name in seen:
            raise EventError(f"two entrants are named {e.name!r}; names must differ (NAME=SPEC)")
        seen.add(e.name)
        check_runnable(e)
    if format not in ("round-robin", "gauntlet"):
        raise EventError(f"unknown format {format!r}: round-robin or gauntlet")
    if format == "gauntlet":
        candidate = candidate or (entrants[0].name if entrants else None)
        if candidate not in seen:
            raise EventError(f"the gauntlet's candidate {candidate!r} is not an entrant")
    else:
        candidate = None
    if len(entrants) < game.num_players:
        raise EventError(f"{len(entrants)} entrant(s) for a {game.num_players}-player game: "
                         f"give at least {game.num_players}")
    for what, value, low in (("--matches", matches, 1), ("--hands", hands, 1), ("--retries", retries, 0),
                             ("--max-failures", max_failures, 0), ("--resamples", resamples, 0)):
        if value < low:
            raise EventError(f"{what} must be at least {low}, got {value}")
    if resamples > MAX_RESAMPLES:
        raise EventError(f"--resamples must be at most {MAX_RESAMPLES:,}, got {resamples} "
                         "(each resample ranks the whole event again; 0: no bootstrap)")
    if not 0 <= seed < 2**32:
        raise EventError(f"--seed must be in 0..4294967295, got {seed}")
    event = Event(game_arg, game, entrants, matches, hands, seed, format,  # type: ignore[arg-type]
                  candidate, limits or Limits(), retries, max_failures, resamples)
    check_folders(event)
    return event


def check_folders(event: Event) -> None:
    """Refuse names that give two pairings one folder (and so one match key).

    A pairing's folder is its names joined by ``-vs-``, and a name may hold
    ``-vs-`` itself: entrants ``a``, ``b-vs-c``, ``a-vs-b`` and ``c`` give
    (a, b-vs-c) and (a-vs-b, c) the folder ``a-vs-b-vs-c``, and the second
    would wipe the first's logs. Distinct folders are exactly what is needed,
    so that is what is checked, ignoring case (a case-insensitive file system
    would merge ``A-vs-b`` and ``a-vs-b``): a match key is its pairing's folder
    and ``/mNNN``, and a name holds no ``/``, so distinct folders give distinct
    keys.
    """
    seen: dict[str, tuple[str, ...]] = {}
    for names in event.pairings():
        folder = pairing_folder(names)
        first = seen.setdefault(folder.casefold(), names)
        if first != names:
            raise EventError(f"pairings ({', '.join(first)}) and ({', '.join(names)}) would share the match "
                             f"folder {folder!r}; rename an entrant")


#: Keys of a TOML event file, and the command-line option each stands for.
TOML_KEYS = {"game": "--game", "entrants": "--entrant", "matches": "--matches", "hands": "--hands",
             "seed": "--seed", "format": "--format", "candidate": "--candidate", "players": "--players",
             "retries": "--retries", "max_failures": "--max-failures", "resamples": "--resamples",
             "t_response": "--t-response", "t_hand": "--t-hand", "t_per_hand": "--t-per-hand",
             "start_timeout": "--start-timeout", "concurrency": "--concurrency", "out": "--out",
             "json": "--json"}


def read_toml(path: Path) -> dict[str, Any]:
    """An event file's settings, checked for unknown keys and types.

    ``entrants`` is a table ``NAME = "SPEC"`` (or a list of ``"NAME=SPEC"``);
    strategy files are found relative to the event file.

    Raises:
        EventError: unreadable, not TOML, an unknown key or a wrong type.
    """
    try:
        data = tomllib.loads(path.read_text())
    except OSError as error:
        raise EventError(f"cannot read {path}: {error.strerror or error}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise EventError(f"{path}: not a TOML event file: {error}") from None
    event = data.get("event", data)
    if not isinstance(event, Mapping):
        raise EventError(f"{path}: [event] must be a table")
    outside = sorted(set(data) - {"event"}) if event is not data else []
    if outside:  # a top-level [entrants], or game = ... above [event]: not read, so refused
        raise EventError(f"{path}: unknown top-level key(s) {', '.join(outside)}; the settings go in [event] "
                         f"(entrants in [event.entrants]): {', '.join(TOML_KEYS)}")
    unknown = sorted(set(event) - set(TOML_KEYS))
    if unknown:
        raise EventError(f"{path}: unknown key(s) {', '.join(unknown)}; known: {', '.join(TOML_KEYS)}")
    settings: dict[str, Any] = {}
    for key, value in event.items():
        if key == "entrants":
            settings[key] = _toml_entrants(path, value)
        elif key in ("game", "format", "candidate", "out", "json"):
            if not isinstance(value, str):
                raise EventError(f"{path}: {key} must be a string")
            settings[key] = value
        elif isinstance(value, bool) or not isinstance(value, int):
            raise EventError(f"{path}: {key} must be an integer")
        else:
            settings[key] = value
    return settings


def _toml_entrants(path: Path, value: object) -> list[str]:
    if isinstance(value, Mapping):
        items = list(value.items())
        if not all(isinstance(v, str) for _, v in items):
            raise EventError(f"{path}: each entrant is NAME = \"SPEC\"")
        return [f"{k}={v}" for k, v in items]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise EventError(f"{path}: entrants is a table of NAME = \"SPEC\" or a list of \"NAME=SPEC\"")
