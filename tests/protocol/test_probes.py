"""The reference dealer's edge-case probes, replayed through protocol/.

Source of truth: ``tests/data/acpc-reference/probes/<case>.{err,log}`` (acpc.md
§3, §4): each is a small match of the reference dealer against a scripted
client. The ``.err`` trace holds the replies as received (FROM lines) and the
dealer's reactions (WARNING lines); the ``.log`` holds the outcome. For each
reply we do what the reference dealer does -- skip comments, reject an
unparsable state, ignore a stale one, correct the action -- and compare our
warnings and our log lines with the reference's. Game, hands and seed come
from each probe's header line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from protocol.deal import DealSource
from protocol.errors import ParseError
from protocol.gamedef import GameDef, load_game
from protocol.rules import Action, ActionType, State, correct_action
from protocol.wire import (
    Score,
    log_state_for,
    matchstate_for,
    parse_reply,
    parse_score,
    same_decision_point,
)
from tests.reference import REFERENCE_DIR

REFERENCE = REFERENCE_DIR
PROBES = REFERENCE / "probes"

# Probes about reply handling, and the connection-handling probes whose
# replies (if any) are still checked. The rest of the connection behaviour
# (timeouts, closes, versions, start) is the dealer's tests' business.
ACTION_PROBES = [
    "A_fold_free",
    "B_minraise",
    "B2_reraise_min",
    "B3_flop_min",
    "B4_bigraise",
    "B5_flop_min",
    "C_overstack",
    "D_nosize",
    "E_badchar",
    "F_aliases",
    "F2_upper",
    "F3_fold_sb",
    "G_stale",
    "H_comment",
    "I_lf",
    "M_limit_maxraises",
    "M2_limit_r300",
    "N_T",
    "N_fixed",
    "O_respond_all",
    "R_resume",
    "U_bare_action",
    "V_raise_overflow",
    "W_lenient_echo",
    "X_max_actions",
    "J_version_old",
    "J2_version_minor",
    "K_timeout",
    "L_close_acting",
    "L2_close_nonacting",
    "L3_actclose",
    "L4_helloclose",
]
#: Probes run with ``-f`` (seat s is always position s).
FIXED_SEATS = {"N_fixed"}

STALE = "ignoring un-requested response"
BAD_STATE = "bad state format in response"


@dataclass
class Probe:
    name: str
    game: GameDef
    hands: int
    seed: int
    replies: list[tuple[int, str]]  # (1-based seat, line as received)
    warnings: list[str]  # the text after 'WARNING: ', in order
    log_states: list[str]
    score: str | None
    # Actions replayed from the transaction log before the run (R_resume).
    resumed: list[tuple[int, Action]] = field(default_factory=list)


@dataclass
class Outcome:
    warnings: list[str] = field(default_factory=list)
    log_states: list[str] = field(default_factory=list)
    totals: list[float] = field(default_factory=list)


def read_probe(name: str) -> Probe:
    err_path, log_path = PROBES / f"{name}.err", PROBES / f"{name}.log"
    if not err_path.is_file():
        pytest.fail(f"probe {err_path} not found")
    err = err_path.read_bytes().decode().split("\n")
    log = log_path.read_text().splitlines() if log_path.is_file() else []
    _, _, _, game_arg, hands, seed = err[0].split(" ")
    resumed = []
    tlog_path = PROBES / f"{name}.tlog.firstrun"
    if tlog_path.is_file():
        # A resumed run re-deals and replays the first run's tlog (acpc.md §12).
        for line in tlog_path.read_text().splitlines():
            token, hand, *_ = line.split(" ")
            action = Action.raise_to(int(token[1:])) if token[1:] else Action(ActionType(token))
            resumed.append((int(hand), action))
    replies = []
    for line in err:
        if line.startswith("FROM "):
            _, seat, _at, _time, text = line.split(" ", 4)
            replies.append((int(seat), text))
    return Probe(
        name=name,
        game=load_game(game_arg.removesuffix(".game")),
        hands=int(hands),
        seed=int(seed),
        replies=replies,
        warnings=[line.removeprefix("WARNING: ") for line in err if line.startswith("WARNING: ")],
        log_states=[line for line in log if line.startswith("STATE:")],
        score=next((line for line in log if line.startswith("SCORE:")), None),
        resumed=resumed,
    )


def seat_of(position: int, hand: int, num_players: int, fixed: bool) -> int:
    """0-based seat of ``position`` in ``hand`` (acpc.md §10)."""
    return position if fixed else (position + hand) % num_players


def play_like_the_reference(probe: Probe, names: tuple[str, ...]) -> Outcome:
    """Feed the probe's replies, in the order the dealer read them, to our rules."""
    game, n = probe.game, probe.game.num_players
    fixed = probe.name in FIXED_SEATS
    source = DealSource(probe.seed)
    outcome = Outcome(totals=[0.0] * n)
    replies = iter(probe.replies)
    for hand in range(probe.hands):
        deal = source.deal(game)
        state = State(game, hand)
        for action in [a for h, a in probe.resumed if h == hand]:
            state.apply(action)
        while not state.finished:
            actor = state.current_player
            received = next(replies, None)
            if received is None:
                return outcome  # the match ended early (timeout, close)
            seat, line = received
            # The reference reads only from the seat to act.
            assert seat - 1 == seat_of(actor, hand, n, fixed), line
            try:
                reply = parse_reply(line, game)
            except ParseError:
                outcome.warnings.append(BAD_STATE)
                continue
            if reply is None:
                continue  # a comment
            if not same_decision_point(reply.state, matchstate_for(state, deal, actor)):
                outcome.warnings.append(STALE)
                continue
            action, correction = correct_action(state, reply.action, reply.problem)
            if correction is not None:
                outcome.warnings += [*correction.notes, correction.message]
            state.apply(action)
        values = state.values(deal.hole, deal.board_cards)
        position_names = tuple(names[seat_of(p, hand, n, fixed)] for p in range(n))
        outcome.log_states.append(log_state_for(state, deal, values, position_names).text())
        for position, value in enumerate(values):
            outcome.totals[seat_of(position, hand, n, fixed)] += value
    assert next(replies, None) is None, "replies left after the last hand"
    return outcome


@pytest.mark.parametrize("name", ACTION_PROBES)
def test_probe_replays_like_the_reference(name: str) -> None:
    """Our reply handling gives the reference's warnings, in order, and its log lines."""
    probe = read_probe(name)
    names = parse_score(probe.score).names if probe.score else ("s1", "s2")
    outcome = play_like_the_reference(probe, names)
    assert outcome.warnings == probe.warnings
    assert outcome.log_states == probe.log_states
    if probe.score is not None:
        assert Score(tuple(outcome.totals), names).text() == probe.score


def test_bare_action_is_a_bad_state() -> None:
    """U_bare_action: a reply of just 'c' has no state, so it cannot be parsed."""
    probe = read_probe("U_bare_action")
    assert [text.removesuffix("\r") for _, text in probe.replies] == ["c"]
    assert probe.warnings == [BAD_STATE]
    with pytest.raises(ParseError):
        parse_reply("c", probe.game)


def test_respond_all_rejects_every_early_reply() -> None:
    """O_respond_all: each reply sent out of turn is stale when finally read."""
    probe = read_probe("O_respond_all")
    outcome = play_like_the_reference(probe, ("s1", "s2"))
    assert outcome.warnings.count(STALE) == probe.warnings.count(STALE) > 0
