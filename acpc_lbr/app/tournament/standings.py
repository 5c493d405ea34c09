"""Who won: total bankroll and series instant run-off, with their uncertainty.

Both rules are the ACPC's:

* **Total bankroll**: an entrant's score is the mean of its results (mbb/g)
  over the pairings it played; higher ranks first. Equal scores share a rank.
* **Series instant run-off**: each series (a pairing's duplicate matches) is
  won by the entrant whose result in it is higher: +1 to the winner, -1 to
  the loser, 0 for a tie. Every entrant still in totals its points over the
  series among those still in; the entrants with the lowest total are ranked
  below the rest, tied with each other, and removed with their series. Repeat
  until no one is left. With three players a series is a triple, and each
  entrant of it scores +1/-1/0 against each of the other two; when two are
  left (no triple of theirs remains), the last round's points order them.

Uncertainty (:func:`bootstrap`): the matches are resampled with replacement,
the same match indices for every pairing, which keeps the common-seed
structure (match ``k`` of every pairing dealt the same cards); each resample
is ranked by both rules. That gives P(rank) for every entrant and P(A above
B) for every two. Places are *separated* where everyone above a line finishes
above everyone below it in at least 95% of the resamples; entrants between two
such lines are statistically tied.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

#: Fraction of resamples in which a place must hold to count as separated.
SEPARATION = 0.95
#: Matches per pairing below which no place is called separated: a bootstrap of
#: two matches has three distinct resamples, and agrees with itself 100% of the time.
MIN_MATCHES_TO_SEPARATE = 10

#: One pairing's result per member: name -> mean (mbb/g or chips; only the order matters).
PairingMeans = Mapping[str, float]


def bankroll_scores(entrants: Sequence[str], pairings: Sequence[tuple[str, ...]],
                    means: Sequence[PairingMeans | None]) -> dict[str, float]:
    """Each entrant's mean result over the pairings it played (NaN: none played)."""
    totals = {e: 0.0 for e in entrants}
    counts = dict.fromkeys(entrants, 0)
    for names, result in zip(pairings, means):
        if result is None:
            continue
        for name in names:
            if name in totals:
                totals[name] += result[name]
                counts[name] += 1
    return {e: totals[e] / counts[e] if counts[e] else math.nan for e in entrants}


def ranks_by_score(scores: Mapping[str, float]) -> dict[str, int]:
    """Competition ranking, higher first: equal scores share the best place (1, 2, 2, 4); NaN last."""
    key = {e: (-s if not math.isnan(s) else math.inf) for e, s in scores.items()}
    return {e: 1 + sum(1 for other in key.values() if other < key[e]) for e in key}


def instant_runoff(entrants: Sequence[str], pairings: Sequence[tuple[str, ...]],
                   means: Sequence[PairingMeans | None]) -> dict[str, int]:
    """Series instant run-off places (1 best); entrants eliminated together share a place.

    >>> pairings = [("a", "b"), ("a", "c"), ("b", "c")]
    >>> means = [{"a": 5, "b": -5}, {"a": -1, "c": 1}, {"b": 2, "c": -2}]
    >>> instant_runoff(["a", "b", "c"], pairings, means)  # a rock-paper-scissors: all tied
    {'a': 1, 'b': 1, 'c': 1}
    >>> means[1] = {"a": 3, "c": -3}
    >>> instant_runoff(["a", "b", "c"], pairings, means)
    {'a': 1, 'b': 2, 'c': 3}
    """
    remaining = set(entrants)
    place: dict[str, int] = {}
    last: dict[str, int] = {}
    while remaining:
        points = dict.fromkeys(remaining, 0)
        series = 0
        for names, result in zip(pairings, means):
            if result is None or not remaining.issuperset(names):
                continue
            series += 1
            for x, y in itertools.combinations(names, 2):
                if result[x] > result[y]:
                    points[x] += 1
                    points[y] -= 1
                elif result[y] > result[x]:
                    points[y] += 1
                    points[x] -= 1
        if not series and last:
            # Fewer left than a series seats (three players, two left): they are
            # ordered by the points of the last round that scored them.
            points = {e: last[e] for e in remaining}
        last = points
        lowest = min(points.values())
        out = {e for e in remaining if points[e] == lowest}
        for e in out:
            place[e] = len(remaining) - len(out) + 1
        remaining -= out
    return {e: place[e] for e in entrants}


RULES = ("bankroll", "instant_runoff")


def rank(rule: str, entrants: Sequence[str], pairings: Sequence[tuple[str, ...]],
         means: Sequence[PairingMeans | None]) -> dict[str, int]:
    """Places under one rule."""
    if rule == "bankroll":
        return ranks_by_score(bankroll_scores(entrants, pairings, means))
    return instant_runoff(entrants, pairings, means)


@dataclass(frozen=True)
class MatchTable:
    """Per pairing, per match, per member: the match's mean unit value and its unit count.

    ``means[p]`` has shape (M, members of pairing p); a match not played has n = 0.
    """

    pairings: tuple[tuple[str, ...], ...]
    means: tuple[npt.NDArray[np.float64], ...]
    units: tuple[npt.NDArray[np.int64], ...]

    def pooled(self, weights: npt.NDArray[np.float64] | None = None) -> list[dict[str, float] | None]:
        """Each pairing's unit-weighted mean per member, optionally with match weights."""
        result: list[dict[str, float] | None] = []
        for names, means, units in zip(self.pairings, self.means, self.units):
            w = units.astype(np.float64) * (1.0 if weights is None else weights)
            total = w.sum()
            if total <= 0:
                result.append(None)
                continue
            safe = np.where(units[:, None] > 0, means, 0.0)
            pooled = (w[:, None] * safe).sum(axis=0) / total
            result.append({name: float(v) for name, v in zip(names, pooled)})
        return result


@dataclass(frozen=True)
class Uncertainty:
    """Bootstrap results of one rule."""

    p_rank: dict[str, list[float]]
    p_above: dict[str, dict[str, float]]


def bootstrap(rule: str, entrants: Sequence[str], table: MatchTable, resamples: int,
              seed: int) -> Uncertainty | None:
    """Resample the matches (common indices across pairings) and rank each resample.

    None when there is nothing to resample: fewer than two matches, or no resamples asked.
    """
    matches = max((len(u) for u in table.units), default=0)
    if matches < 2 or resamples < 1:
        return None
    rng = np.random.default_rng(np.random.SeedSequence([seed & 0xFFFFFFFF, 0xB0075]))
    n = len(entrants)
    counts = {e: np.zeros(n) for e in entrants}
    above = {a: dict.fromkeys(entrants, 0) for a in entrants}
    for _ in range(resamples):
        picks = np.bincount(rng.integers(0, matches, matches), minlength=matches).astype(np.float64)
        places = rank(rule, entrants, table.pairings, table.pooled(picks))
        for e, place in places.items():
            counts[e][place - 1] += 1
        for a, b in itertools.permutations(entrants, 2):
            if places[a] < places[b]:
                above[a][b] += 1
    return Uncertainty({e: [float(c) / resamples for c in counts[e]] for e in entrants},
                       {a: {b: above[a][b] / resamples for b in entrants if b != a} for a in entrants})


def separated_after(order: Sequence[str], uncertainty: Uncertainty | None, matches: int) -> list[bool]:
    """For each position of ``order`` (best first): is it separated from everyone below it?

    A line after position j holds when each entrant above finishes above each
    entrant below in at least :data:`SEPARATION` of the resamples. Without a
    bootstrap, or with fewer than :data:`MIN_MATCHES_TO_SEPARATE` matches per
    pairing, nothing is claimed separated.
    """
    flags = []
    for j in range(len(order)):
        below = order[j + 1:]
        if uncertainty is None or not below or matches < MIN_MATCHES_TO_SEPARATE:
            flags.append(False)
            continue
        flags.append(all(uncertainty.p_above[a][b] >= SEPARATION for a in order[: j + 1] for b in below))
    return flags
