"""The dealer's fast paths agree with the slow, obviously correct ones.

The fast paths (a card-text table, the betting string a State extends as it
goes, ``matchstate_text``/``log_state_text`` with the cards rendered once per
deal, ``read_reply_action`` handing out shared records, ``State.clone``
without deepcopy) are each compared with a naive rebuild written here from
the definitions, on seeded random play in every bundled game.
"""

from __future__ import annotations

import copy
import random
import re
import subprocess
import sys
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from protocol.cards import (
    CARD_TEXT,
    DECK_SIZE,
    RANKS,
    SUITS,
    card_from_text,
    card_to_text,
    cards_to_text,
)
from protocol.deal import Deal, DealSource
from protocol.errors import ParseError
from protocol.gamedef import GameDef, bundled_games, load_game
from protocol.rules import Action, ActionType, State
from protocol.wire import (
    _CARD_BY_TEXT,
    BAD_FORMAT,
    INVALID,
    MatchState,
    ReplayCache,
    _parse_betting,
    _replay,
    log_state_for,
    log_state_text,
    matchstate_for,
    matchstate_text,
    parse_matchstate,
    parse_matchstate_replayed,
    parse_reply,
    read_reply_action,
)
from tests.work import in_a_fork, source_module, work_of

GAMES = {name: load_game(name) for name in bundled_games()}
HANDS_PER_GAME = 150


# -- slow twins ----------------------------------------------------------------


def naive_card_text(card: int) -> str:
    """A card's text straight from the definition: rank letter, suit letter."""
    return "23456789TJQKA"[card // 4] + "cdhs"[card % 4]


def naive_action_text(action: Action) -> str:
    """The wire token from the enum's letter (``r<size>`` for a sized raise)."""
    if action.type is ActionType.RAISE and action.size:
        return "r" + str(action.size)
    return action.type.value


def naive_betting(actions: Sequence[Sequence[Action]]) -> str:
    """The betting string re-joined from every action."""
    return "/".join("".join(naive_action_text(a) for a in acts) for acts in actions)


def naive_cards(hole: Sequence[Sequence[int]], board: Sequence[Sequence[int]]) -> str:
    """The cards field: hole fields joined by ``|``, then the boards joined by ``/``."""
    text = "|".join("".join(naive_card_text(c) for c in h) for h in hole)
    return text + "/".join("".join(naive_card_text(c) for c in b) for b in board)


def naive_matchstate_text(state: State, deal: Deal, position: int) -> str:
    """What the dealer must send, rebuilt from acpc.md's rules for visible cards."""
    live = [not f for f in state.folded]
    showdown = state.finished and sum(live) > 1
    hole = [
        deal.hole[p] if p == position or (showdown and live[p]) else ()
        for p in range(state.game.num_players)
    ]
    board = deal.board[: state.round + 1]
    return (
        f"MATCHSTATE:{position}:{state.hand_id}:{naive_betting(state.actions)}:"
        f"{naive_cards(hole, board)}"
    )


def naive_current_player(state: State) -> int:
    """The next player after the last actor (or before the round's first) who can act."""
    game = state.game
    n = game.num_players
    actors = state.actors[state.round]
    p = actors[-1] if actors else game.first_player[state.round] + n - 1
    for _ in range(n):
        p = (p + 1) % n
        if not state.folded[p] and state.spent[p] < game.stack[p]:
            return p
    raise AssertionError("nobody can act in a live hand")


def random_action(state: State, rng: random.Random) -> Action:
    """A legal action: some folds, raises of every size (all-ins included), else calls."""
    legal = state.legal_actions()
    roll = rng.random()
    if ActionType.FOLD in legal and roll < 0.12:
        return Action.FOLD
    if ActionType.RAISE in legal and roll < 0.45:
        if state.game.is_limit:
            return Action.RAISE
        bounds = state.raise_range()
        assert bounds is not None
        low, high = bounds
        return Action.raise_to(rng.choice([low, high, rng.randint(low, high)]))
    return Action.CALL


def random_play(game: GameDef, hands: int, seed: int) -> Iterator[tuple[State, Deal]]:
    """Every state (each decision point and each hand's end) of seeded random play."""
    rng = random.Random(seed)
    deals = DealSource(seed)
    for hand_id in range(hands):
        deal = deals.deal(game)
        state = State(game, rng.randrange(2**32))
        yield state, deal
        while not state.finished:
            state.apply(random_action(state, rng))
            yield state, deal


# -- tests ---------------------------------------------------------------------


def test_card_text_table_matches_card_to_text() -> None:
    """The card-text table holds card_to_text of every index, and agrees with the definition."""
    assert len(CARD_TEXT) == DECK_SIZE
    for card in range(DECK_SIZE):
        assert CARD_TEXT[card] == card_to_text(card) == naive_card_text(card)
    assert {text[0] for text in CARD_TEXT} == set(RANKS)
    assert {text[1] for text in CARD_TEXT} == set(SUITS)


def test_cards_to_text_matches_per_card_text() -> None:
    """Joined card text equals card_to_text card by card, for tuples, lists and iterators."""
    rng = random.Random(7)
    for _ in range(500):
        cards = rng.sample(range(DECK_SIZE), rng.randint(0, 7))
        expected = "".join(card_to_text(c) for c in cards)
        assert cards_to_text(cards) == expected
        assert cards_to_text(tuple(cards)) == expected
        assert cards_to_text(iter(cards)) == expected


@pytest.mark.parametrize("card", [-1, DECK_SIZE, 10**6])
def test_cards_to_text_rejects_off_deck_like_card_to_text(card: int) -> None:
    """An index off the deck raises the same ParseError as card_to_text (no wrap-around)."""
    with pytest.raises(ParseError) as slow:
        card_to_text(card)
    with pytest.raises(ParseError) as fast:
        cards_to_text([0, card])
    assert str(fast.value) == str(slow.value)


@pytest.mark.parametrize("name", sorted(GAMES))
def test_state_fast_queries_match_naive_on_random_play(name: str) -> None:
    """The kept betting string and the player to act equal their naive rebuilds at every step."""
    game = GAMES[name]
    rounds_seen = set()
    for state, _ in random_play(game, HANDS_PER_GAME, seed=11):
        assert state.betting_string() == naive_betting(state.actions)
        if not state.finished:
            assert state.current_player == naive_current_player(state)
        rounds_seen.add(state.round)
    assert rounds_seen == set(range(game.num_rounds))  # the play reaches every round


@pytest.mark.parametrize("name", sorted(GAMES))
def test_matchstate_text_matches_full_rebuild_on_random_play(name: str) -> None:
    """matchstate_text and matchstate_for().text() equal the naive line, which parses back."""
    game = GAMES[name]
    showdowns = 0
    for state, deal in random_play(game, HANDS_PER_GAME, seed=12):
        showdowns += state.is_showdown
        for position in range(game.num_players):
            expected = naive_matchstate_text(state, deal, position)
            assert matchstate_text(state, deal, position) == expected
            view = matchstate_for(state, deal, position)
            assert view.text() == expected
            # A record built field by field (no cached text) prints the same.
            rebuilt = MatchState(view.position, view.hand_id, view.betting, view.hole, view.board)
            assert rebuilt.text() == expected and rebuilt == view
            assert parse_matchstate(expected, game) == view
    assert showdowns > 0


@pytest.mark.parametrize("name", sorted(GAMES))
def test_log_state_text_matches_record_on_random_play(name: str) -> None:
    """log_state_text equals log_state_for().text() for every finished hand."""
    game = GAMES[name]
    names = [f"seat{p}" for p in range(game.num_players)]
    finished = 0
    for state, deal in random_play(game, HANDS_PER_GAME, seed=13):
        if state.finished:
            values = state.values(deal.hole, deal.board_cards)
            expected = log_state_for(state, deal, values, names).text()
            assert log_state_text(state, deal, values, names) == expected
            finished += 1
    assert finished == HANDS_PER_GAME


def test_matchstate_text_with_many_deals_interleaved() -> None:
    """Lines for more deals than the render cache holds, visited in turn, stay right."""
    game = GAMES["holdem.nolimit.2p.reverse_blinds"]
    deals = DealSource(3)
    hands = [(State(game, h), deals.deal(game)) for h in range(200)]
    for _ in range(2):
        for state, deal in hands:
            for position in range(game.num_players):
                assert matchstate_text(state, deal, position) == naive_matchstate_text(
                    state, deal, position
                )
        for state, _ in hands:
            state.apply(Action.CALL)
            state.apply(Action.CALL)


def test_matchstate_text_off_the_table_position_falls_back() -> None:
    """A position outside the table prints as matchstate_for does (no own cards shown)."""
    game = GAMES["holdem.nolimit.2p.reverse_blinds"]
    state, deal = State(game, 5), DealSource(1).deal(game)
    for position in (-1, 2):
        expected = matchstate_for(state, deal, position).text()
        assert matchstate_text(state, deal, position) == expected
        assert matchstate_text(state, deal, position).endswith(":|")


def test_state_built_from_fields_keeps_its_betting_string() -> None:
    """A State given its actions directly prints them, and extends them correctly."""
    game = GAMES["holdem.nolimit.2p.reverse_blinds"]
    played = State(game, 9)
    for action in (Action.raise_to(300), Action.CALL, Action.CALL):
        played.apply(action)
    built = State(
        game, 9, played.round, played.finished, list(played.spent), list(played.folded),
        played.max_spent, played.min_raise_to,
        [list(a) for a in played.actions], [list(a) for a in played.actors],
    )
    assert built == played and built.betting_string() == "r300c/c"
    built.actions[-1].append(Action.CALL)  # grown by hand, not by apply: rebuilt on demand
    assert built.betting_string() == "r300c/cc"


def test_clone_is_equal_and_independent_like_deepcopy() -> None:
    """clone() equals a deepcopy, shares the game, and does not follow the original."""
    rng = random.Random(5)
    for name, game in GAMES.items():
        for state, _ in random_play(game, 20, seed=14):
            twin, deep = state.clone(), copy.deepcopy(state)
            assert twin == deep == state and twin.game is state.game
            assert twin.betting_string() == state.betting_string(), name
            if not state.finished:
                before = deep.betting_string()
                twin.apply(random_action(twin, rng))
                assert state == deep and state.betting_string() == before


REPLY_LETTERS = "fcrkbFCRKBxz:1 "


@pytest.mark.parametrize(
    "name", ["holdem.nolimit.2p.reverse_blinds", "holdem.limit.2p.reverse_blinds"]
)
def test_read_reply_action_matches_parse_reply(name: str) -> None:
    """read_reply_action reads every action part as parse_reply does, and as the spec says."""
    game = GAMES[name]
    prefix = "MATCHSTATE:1:0::|Td4d:"
    rng = random.Random(8)
    suffixes = ["", "c", "r", "r300", "R 300", "b-5", "r+7", "r99999999999", "k", "x"]
    suffixes += [
        "".join(rng.choice(REPLY_LETTERS) for _ in range(rng.randint(0, 6))) for _ in range(400)
    ]
    for suffix in suffixes:
        action, problem = read_reply_action(suffix, game)
        reply = parse_reply(prefix + suffix, game)
        assert reply is not None
        assert (action, problem) == (reply.action, reply.problem)
        letter = suffix[:1].lower()
        if letter not in ("f", "c", "k", "r", "b"):
            assert (action, problem) == (None, INVALID)
        elif letter in ("f", "c", "k") or game.is_limit:
            kind = {"f": "f", "c": "c", "k": "c", "r": "r", "b": "r"}[letter]
            assert action == Action(ActionType(kind)) and problem is None
        else:
            assert problem in (None, BAD_FORMAT)


def test_card_lookup_reads_what_card_from_text_reads() -> None:
    """The parser's card table accepts exactly the printable pairs card_from_text accepts."""
    for first in map(chr, range(32, 127)):
        for second in map(chr, range(32, 127)):
            try:
                card = card_from_text(first + second)
            except ParseError:
                assert first + second not in _CARD_BY_TEXT
            else:
                assert _CARD_BY_TEXT[first + second] == card


@pytest.mark.parametrize("name", sorted(GAMES))
def test_parse_matchstate_reads_case_mangled_cards(name: str) -> None:
    """Lines with card letters in either case parse to the record the canonical line gives."""
    game = GAMES[name]
    rng = random.Random(15)
    for state, deal in random_play(game, 40, seed=16):
        line = matchstate_text(state, deal, 0)
        head, cards = line.rsplit(":", 1)
        mangled = "".join(c.swapcase() if rng.random() < 0.5 else c for c in cards)
        assert parse_matchstate(f"{head}:{mangled}", game) == parse_matchstate(line, game)


@pytest.mark.parametrize(
    ("name", "card", "message"),
    [
        ("leduc.limit.2p", "2c", "is not a card of this game"),
        ("kuhn.limit.2p", "Zs", "is not a card"),
    ],
)
def test_parse_matchstate_names_a_bad_card(name: str, card: str, message: str) -> None:
    """A card off the game's deck, or no card at all, is refused with the slow path's message."""
    with pytest.raises(ParseError, match=message):
        parse_matchstate(f"MATCHSTATE:0:0::{card}|", GAMES[name])


def _replayed(replay: Callable[[], State]) -> object:
    """A replayed state's every field, or the message the replay raises."""
    try:
        state = replay()
    except ParseError as error:
        return f"ParseError: {error}"
    return (state.hand_id, state.round, state.finished, state.spent, state.folded,
            state.max_spent, state.min_raise_to, state.actions, state.actors, state.betting_string())


@pytest.mark.parametrize("name", sorted(GAMES))
def test_replay_cache_matches_full_replay(name: str) -> None:
    """ReplayCache.replay gives what a replay from scratch gives, errors included.

    The bettings are every prefix of seeded random hands, asked in shuffled
    runs (as an agent's range queries come), with illegal steps past them (a
    raise out of range, an action after the end, a wrong round separator),
    through a cache small enough to evict; the states handed out are changed
    afterwards, which must not reach the cache.
    """
    game = GAMES[name]
    rng = random.Random(23)
    cache = ReplayCache(size=40)
    texts: list[tuple[int, str]] = []
    for state, _ in random_play(game, 40, seed=24):
        text = state.betting_string()
        texts.append((state.hand_id, text))
        for bad in ("r1", "r2147483647", "f", "/c", "c/", "cc", "//", "r"):
            texts.append((state.hand_id, text + bad))
    for start in range(0, len(texts), 25):
        run = texts[start : start + 25]
        rng.shuffle(run)
        for hand_id, text in run:
            try:
                betting = _parse_betting(text, game, text)
            except ParseError:
                continue

            def full(b: Any = betting, h: int = hand_id, t: str = text) -> State:
                return _replay(b, game, h, t)

            def cached(b: Any = betting, h: int = hand_id, t: str = text) -> State:
                return cache.replay(t, b, game, h, t)

            expected = _replayed(full)
            got = _replayed(cached)
            assert got == expected, text
            if not isinstance(got, str):  # scribble on the copy handed out
                handed = cached()
                handed.spent[0] = -1
                handed.actions[-1].append(Action.FOLD)
                assert _replayed(cached) == expected


def test_protocol_benchmark_runs() -> None:
    """bench/bench_protocol.py times every row in the variant at hand, on a few hands."""
    script = Path(__file__).resolve().parents[2] / "bench" / "bench_protocol.py"
    run = subprocess.run(
        [sys.executable, str(script), "--variant-run", "--hands", "5", "--repeats", "1",
         "--game", "limit", "--dealer-hands", "5"],
        capture_output=True, text=True, timeout=120, check=True,
    )
    rows = [line for line in run.stdout.splitlines() if re.search(r"^(protocol|dealer)\.\S+.* [0-9]+\.[0-9]{2}$", line)]
    modules = {row.split(":")[0].split()[0] for row in rows}
    assert modules == {"protocol.cards", "protocol.ranking", "protocol.deal", "protocol.rules",
                       "protocol.wire", "protocol.lines", "dealer.match"}, run.stdout
    assert len(rows) == 11, run.stdout


def test_hand_lines_follow_the_hand_as_matchstate_for_prints_it() -> None:
    """HandLines, built once per hand, prints every position's line at every point of the
    hand as matchstate_for does (the slow, obvious printer), in every bundled game."""
    from protocol.wire import HandLines

    for name, game in GAMES.items():
        lines: HandLines | None = None
        for state, deal in random_play(game, 30, seed=21):
            if not state.actions[0] and state.round == 0:
                lines = HandLines(state, deal)  # a new hand
            assert lines is not None
            expected = [matchstate_for(state, deal, p).text() for p in range(game.num_players)]
            assert lines.texts() == expected, name
            assert [lines.text(p) for p in range(game.num_players)] == expected, name


def test_lines_after_a_call_or_a_raise_are_the_lines_the_applied_action_gives() -> None:
    """What the dealer makes ready while a bot thinks (dealer.seatio.Ahead): the next
    line after a call (text_after a copy played on), after a raise of any size the line
    cut around the action (around_next_action) with the player to act next_to_act_after
    the raiser, and after a fold that leaves one player in (fold_leaves_one) the same cut line;
    each equals the line of the state with the action applied, in every bundled game,
    and a raise never ends the round."""
    from protocol.wire import HandLines

    raises = folds = 0
    for name, game in GAMES.items():
        rng = random.Random(5)
        lines: HandLines | None = None
        for state, deal in random_play(game, 40, seed=22):
            if not state.actions[0] and state.round == 0:
                lines = HandLines(state, deal)
            assert lines is not None
            if state.finished:
                continue
            actor = state.current_player
            if state.can_fold():
                folded = state.clone()
                folded.apply(Action.FOLD)
                if state.fold_leaves_one():
                    assert folded.finished and not folded.is_showdown, name
                    folds += 1
                    for position in range(game.num_players):
                        head, tail = lines.around_next_action(state, position)
                        assert head + "f" + tail == matchstate_for(folded, deal, position).text()
            called = state.clone()
            called.apply(Action.CALL)
            for position in range(game.num_players):
                assert lines.text_after(called, position) == matchstate_for(called, deal, position).text()
            sizes = state.raise_range()
            if sizes is None:
                continue
            low, high = sizes
            for size in {low, high, rng.randint(low, high)}:
                raised = state.clone()
                raised.apply(Action.RAISE if game.is_limit else Action.raise_to(size))
                assert not raised.finished and raised.round == state.round, name
                after = state.next_to_act_after(actor)
                assert raised.current_player == after, name
                expected = matchstate_for(raised, deal, after).text()
                assert lines.text_after(raised, after) == expected
                if not game.is_limit:
                    head, tail = lines.around_next_action(state, after)
                    assert head + "r" + str(size) + tail == expected
                raises += 1
            assert lines.texts() == [matchstate_for(state, deal, p).text()
                                     for p in range(game.num_players)]  # the look ahead left it as it was
    assert raises > 500 and folds > 100


def test_draws_are_numpys_outputs_one_by_one() -> None:
    """DealSource draws from Python's MT19937 set to init_genrand(seed)'s state; the stream
    it hands out, in pieces of any size, is numpy's RandomState(seed)'s (one uint32 draw
    each), the one the dealer's deals were checked against the reference's logs with."""
    import numpy as np

    for seed in (0, 42, 2**32 - 1):
        plain = np.random.RandomState(seed)
        source = DealSource(seed)
        rng = random.Random(seed)
        for _ in range(400):
            count = rng.choice([1, 2, 9, 17, 300, 5000])
            expected = [int(plain.randint(0, 2**32, dtype=np.uint32)) for _ in range(count)]
            assert source.draws(count) == expected


def naive_apply(state: State, action: Action) -> None:
    """A legal ``action`` applied to ``state`` step by step, as acpc.md states the rules
    (the slow twin of State.apply's inline player-to-act and end-of-round test)."""
    game = state.game
    n = game.num_players
    p = naive_current_player(state)
    state.actions[state.round].append(action)
    state.actors[state.round].append(p)
    if action.type is ActionType.CALL:
        state.spent[p] = min(state.max_spent, game.stack[p])
    elif action.type is ActionType.FOLD:
        state.folded[p] = True
    else:
        if game.is_limit:
            state.max_spent = min(state.max_spent + game.raise_size[state.round], game.stack[p])
        else:
            state.min_raise_to = max(state.min_raise_to, 2 * action.size - state.max_spent)
            state.max_spent = action.size
        state.spent[p] = state.max_spent
    if sum(state.folded) + 1 >= n:
        state.finished = True
        return
    can_act = [not state.folded[q] and state.spent[q] < game.stack[q] for q in range(n)]
    # Calls since the round's last raise by players who can still act, and the raiser.
    called = 0
    for done, q in reversed(list(zip(state.actions[state.round], state.actors[state.round]))):
        if done.type is ActionType.RAISE:
            called += can_act[q]
            break
        if done.type is ActionType.CALL:
            called += can_act[q]
    if called < sum(can_act):
        return
    if sum(can_act) > 1 and state.round + 1 < game.num_rounds:
        state.round += 1
        state.actions.append([])
        state.actors.append([])
        state.min_raise_to = max(max(game.blind), 1) + state.max_spent
        return
    while state.round + 1 < game.num_rounds:  # all-in (or the last round): showdown
        state.round += 1
        state.actions.append([])
        state.actors.append([])
    state.finished = True


@pytest.mark.parametrize("name", sorted(GAMES))
def test_apply_matches_naive_rules_on_random_play(name: str) -> None:
    """State.apply leaves every field as the naive step-by-step rules do, at every action
    of seeded random play (folds, all-ins, every round), in every bundled game."""
    game = GAMES[name]
    rng = random.Random(31)
    finished = all_in = 0
    for hand_id in range(HANDS_PER_GAME):
        state = State(game, hand_id)
        twin = State(game, hand_id)
        while not state.finished:
            action = random_action(state, rng)
            state.apply(action)
            naive_apply(twin, action)
            assert state == twin, (name, state.betting_string())
            assert state.betting_string() == naive_betting(twin.actions)
        finished += 1
        all_in += any(s >= st for s, st in zip(state.spent, game.stack))
    assert finished == HANDS_PER_GAME
    assert all_in > 0 or game.is_limit  # no-limit play reaches all-ins


def test_replay_cache_on_a_long_betting_matches_full_replay() -> None:
    """Bettings longer than the cache looks back (a min-raise war: 198 raises in one round)
    replay as from scratch, errors included, whether a near prefix was seen or none was."""
    game = GAMES["holdem.nolimit.2p.reverse_blinds"]
    tokens = [f"r{size}" for size in range(200, 20_001, 100)] + ["c/"]
    texts = ["".join(tokens[:i]) for i in range(0, len(tokens) + 1, 7)] + ["".join(tokens)]
    texts += [texts[-1] + bad for bad in ("cc", "r1", "f", "/")] + [texts[-2] + "r1"]
    rng = random.Random(5)
    for order in (texts, rng.sample(texts, len(texts))):
        cache = ReplayCache(size=100)
        for text in order:
            betting = _parse_betting(text, game, text)
            expected = _replayed(partial(_replay, betting, game, 3, text))
            assert _replayed(partial(cache.replay, text, betting, game, 3, text)) == expected, text


def _peak_bytes(function: Callable[[], object]) -> int:
    """The most memory ``function()`` held at once (tracemalloc: allocations counted, not
    timed), in a forked child where no other thread allocates beside it (tests/work.py): the
    least of three calls, so that what a first call does once is not counted."""

    def peaks() -> int:
        held = []
        for _ in range(3):
            tracemalloc.start()
            try:
                function()
                held.append(tracemalloc.get_traced_memory()[1])
            finally:
                tracemalloc.stop()
        return min(held)

    return in_a_fork(peaks)


@pytest.mark.parametrize(("unit", "small"), [("c/", 500), ("/", 8000), ("cr300/", 200)])
def test_replay_cache_reads_hostile_betting_in_linear_time_and_memory(unit: str, small: int) -> None:
    """A range query's betting is bot text up to a line long: with the cache, 8x the betting
    costs at most 3x8 times the steps and allocated bytes (counted on the source, see
    tests/work.py), and the cache holds at most 4x the memory of a
    replay without it (the cache once kept a text prefix per action -- quadratic memory: a
    dealer killed for it at 320 KB -- and copied the text once per trailing '/')."""
    game = GAMES["holdem.nolimit.2p.reverse_blinds"]

    def read(k: int, cache: bool = True, source: bool = False) -> Callable[[], object]:
        line = "MATCHSTATE:0:0:" + unit * k + ":Td4d|"
        wire = source_module("protocol.wire") if source else None
        replay = wire.parse_matchstate_replayed if wire else parse_matchstate_replayed
        make_cache = wire.ReplayCache if wire else ReplayCache

        def go() -> object:
            try:
                return replay(line, game, make_cache() if cache else None)
            except ParseError:
                return None

        return go

    assert _peak_bytes(read(small * 32)) <= 4 * _peak_bytes(read(small * 32, cache=False))
    factor, small = 8, 300 // len(unit)  # 300 bytes, then 2.4 KB: each traced step is slow to count
    large_work, small_work = work_of(read(small * factor, source=True)), work_of(read(small, source=True))
    assert large_work.within(small_work, factor), (small_work, large_work)
