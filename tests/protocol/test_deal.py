"""The deal stream without numpy: the same MT19937 outputs as numpy's RandomState(seed).

The dealer's deals were checked against the reference's logs with numpy's
``RandomState(seed).randint(0, 2**32, dtype=uint32)`` (one tempered output per
draw); :class:`protocol.deal.DealSource` now draws from Python's own MT19937 set
to ``init_genrand(seed)``'s state, so that a plain dealer does not import numpy. The stream itself, drawn in pieces of
any size, is checked against numpy's in tests/protocol/test_fast_paths.py
(``test_draws_are_numpys_outputs_one_by_one``).
"""

from __future__ import annotations

import numpy as np
import pytest

from protocol.deal import DealSource, init_genrand
from protocol.gamedef import load_game


def test_init_genrand_is_numpy_seeding() -> None:
    state = np.random.RandomState(2026).get_state()
    assert state[2] == 624  # numpy's position: the next output regenerates the state
    assert list(init_genrand(2026)) == state[1].tolist()


def test_deals_follow_the_stream() -> None:
    game = load_game("holdem.limit.2p.reverse_blinds")
    source = DealSource(42)
    assert source.deal(game).text() == "7d3d|2hAc/5sKs7s/9s/6h"
    skipped = DealSource(42)
    skipped.skip(game, 1)
    assert skipped.deal(game) == source.deal(game)


def test_seed_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="unsigned 32-bit"):
        DealSource(2**32)
