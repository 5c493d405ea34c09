"""An in-process match: LBR against a strategy, hands turned into outcomes as the dealer does.

:func:`simulate_lbr_match` deals and seats hands as the dealer does, plays LBR
(:class:`acpc_lbr.lbr.LbrPlayer`) against a bot that samples a
:data:`~acpc_lbr.policy.Strategy`, writes each finished hand as the ``STATE``
record the dealer would log, and hands it to the results' one step from a hand
to its outcome (:class:`acpc_lbr.results.outcomes.HandAccountant`), with the σ
rows answered in process. No sockets and no dealer: the statistical tests and
``bench/bench_variance.py`` play tens of thousands of hands through the same
IO and AIVAT code as a real match.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from acpc_lbr.aivat import AivatSetup
from acpc_lbr.estimators import HandOutcome
from acpc_lbr.lbr import ActiveRounds, BettingOptions, LbrPlayer, equity_function
from acpc_lbr.policy import Strategy, probabilities_at
from acpc_lbr.results.outcomes import HandAccountant, aivat_requests, log_values, opponent_decisions
from acpc_lbr.strategies import default_actions
from protocol.arrays import FloatArray
from protocol.deal import Deal, DealSource
from protocol.gamedef import GameDef
from protocol.rules import Action, State
from protocol.wire import LogState, log_state_for


def simulate_lbr_match(
    game: GameDef,
    policy: Strategy,
    options: BettingOptions,
    hands: int,
    seed: int,
    rng_seed: int,
    *,
    duplicate: bool = False,
    answers: Strategy | None = None,
    active_rounds: ActiveRounds | None = None,
    sample: Callable[[State, Sequence[int], int, np.random.Generator], Action] | None = None,
    aivat: bool = False,
    timings: dict[str, float] | None = None,
    aivat_setup: AivatSetup | None = None,
) -> list[HandOutcome]:
    """LBR against a bot playing ``policy``, dealt and seated as the dealer does.

    The measured player is LBR ("lbr", seat 0); the bot ("bot", seat 1)
    samples its actions from ``policy``. Each finished hand becomes the
    ``STATE`` record the dealer would log, and its IO comes from the dealer's
    own pipeline (:class:`acpc_lbr.results.outcomes.HandAccountant`) with σ rows answered by
    ``answers`` (default ``policy``; a different one makes a lying bot).

    Args:
        game: a heads-up game (small enough for :func:`acpc_lbr.lbr.equity_function`).
        policy: the bot's strategy (:data:`acpc_lbr.policy.Strategy`).
        options: LBR's :class:`~acpc_lbr.lbr.BettingOptions`.
        hands: hands per match.
        seed: the deal seed (as the dealer's).
        rng_seed: seed of the bot's action sampling.
        duplicate: also play every deal with the seats reversed (half 1).
        answers: the bot's range answers (default: ``policy``).
        active_rounds: LBR's active rounds (default: all).
        sample: ``sample(state, board, hand, rng) -> Action``, the bot's play
            (default: drawn from ``policy`` over
            :func:`acpc_lbr.strategies.default_actions`); e.g. an SDK
            strategy's own ``sample`` for no-limit raise sizes.
        aivat: also compute each hand's AIVAT value
            (:func:`acpc_lbr.results.outcomes.hand_aivat_value`, rows from ``answers``).
        timings: when given, seconds are added to ``aivat_answers`` (the
            bot answering AIVAT's rows) and ``aivat_compute`` (the estimator).
        aivat_setup: AIVAT's value function and settings (None: this version's for ``game``).

    Returns:
        One :class:`HandOutcome` per hand played, with its IO value (and AIVAT value).
    """
    lbr = LbrPlayer(game, options, active_rounds if active_rounds is not None else ActiveRounds(), equity_function(game))
    bot = _SimulatedBot(policy, answers if answers is not None else policy, sample, np.random.default_rng(rng_seed))
    # Each seating's hands become outcomes as the dealer's do (measured: LBR).
    accountants = tuple(HandAccountant(game, "lbr", half, io=True, aivat=aivat, aivat_setup=aivat_setup, seed=seed,
                                       equity=lbr.equity, timings=timings) for half in (0, 1))
    match = _SimulatedMatch(game, lbr, bot, accountants, timings)
    source = DealSource(seed)
    outcomes: list[HandOutcome] = []
    for hand_id in range(hands):
        deal = source.deal(game)
        for half in (0, 1) if duplicate else (0,):
            outcomes.append(match.outcome(deal, hand_id, half))
    return outcomes


@dataclass
class _SimulatedBot:
    """The bot of :func:`simulate_lbr_match`: plays ``policy`` (or ``sample``), answers with ``answer``."""

    policy: Strategy
    answer: Strategy
    sample: Callable[[State, Sequence[int], int, np.random.Generator], Action] | None
    #: The bot's action sampling (the only draws of the match besides the deal).
    rng: np.random.Generator

    def fold_probs(self, lbr: LbrPlayer, state: State, shown: Sequence[int]) -> dict[Action, FloatArray]:
        """The answered fold probabilities after each raise LBR considers at ``state``."""
        folds = {}
        for raise_ in lbr.candidates(state):
            after = state.clone()
            after.apply(raise_)
            folds[raise_] = probabilities_at(self.answer, after, shown, [Action.FOLD])[0]
        return folds

    def play(self, state: State, shown: Sequence[int], hand: int) -> Action:
        """The bot's action at ``state`` holding ``hand`` (its hand index)."""
        if self.sample is not None:
            return self.sample(state, shown, hand, self.rng)
        actions = default_actions(state)
        probs = probabilities_at(self.policy, state, shown, actions)[:, hand]
        return actions[int(self.rng.choice(len(actions), p=probs / probs.sum()))]


@dataclass
class _SimulatedMatch:
    """LBR and the bot of :func:`simulate_lbr_match`, and what each hand's outcome needs."""

    game: GameDef
    lbr: LbrPlayer
    bot: _SimulatedBot
    #: Each seating's step from a finished hand to its outcome (the dealer's and ``acpc-lbr results``').
    accountants: tuple[HandAccountant, ...]
    timings: dict[str, float] | None

    def outcome(self, deal: Deal, hand_id: int, half: int) -> HandOutcome:
        """Play ``deal`` in seating ``half``; the hand's chips, IO value and AIVAT value."""
        game, answer = self.game, self.bot.answer
        names_by_seat = ("lbr", "bot") if half == 0 else ("bot", "lbr")
        # Seat s plays position (s - h) mod 2, as the dealer rotates them.
        position_names = tuple(names_by_seat[(p + hand_id) % 2] for p in range(2))
        me = position_names.index("lbr")
        state = self.play(deal, hand_id, me)
        values = log_values(state.values(deal.hole, deal.board_cards))
        record = log_state_for(state, deal, values, position_names)
        rows = [
            probabilities_at(answer, d.state.to_state(game), d.state.board_cards, [d.action])[0]
            for d in opponent_decisions(game, record, 1 - me)
        ]
        accountant = self.accountants[half]
        aivat_rows = self.aivat_rows(record, me) if accountant.aivat else None
        outcome, _ = accountant.outcome(record, rows, aivat_rows)
        return outcome

    def play(self, deal: Deal, hand_id: int, me: int) -> State:
        """One hand of LBR (at position ``me``) against the bot, played to its end."""
        game, lbr, bot = self.game, self.lbr, self.bot
        opponent_hand = game.hand_of(deal.hole[1 - me])
        lbr.start_hand(me, deal.hole[me])
        state = State(game, hand_id)
        while not state.finished:
            shown = deal.board_cards[: game.board_cards_visible(state.round)]
            if state.current_player == me:
                state.apply(lbr.decide(state, shown, bot.fold_probs(lbr, state, shown)).action)
            else:
                lbr.observe_board(shown)
                played = bot.play(state, shown, opponent_hand)
                lbr.observe_opponent(probabilities_at(bot.answer, state, shown, [played])[0])
                state.apply(played)
        return state

    def aivat_rows(self, record: LogState, me: int) -> list[dict[str, FloatArray]]:
        """AIVAT's rows of the hand, answered by the bot; the seconds go into ``timings``."""
        game = self.game
        began = time.perf_counter()
        aivat_rows = []
        for d, actions in aivat_requests(game, record, 1 - me):
            said = probabilities_at(self.bot.answer, d.state.to_state(game), d.state.board_cards, actions)
            aivat_rows.append({a.text(): said[j] for j, a in enumerate(actions)})
        if self.timings is not None:
            self.timings["aivat_answers"] = self.timings.get("aivat_answers", 0.0) + time.perf_counter() - began
        return aivat_rows
