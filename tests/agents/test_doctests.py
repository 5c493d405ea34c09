"""The examples in the agents package docstrings run (pytest's doctest paths cover protocol/ only)."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize("module", ["agents.tracking", "agents.sdk", "agents.bots"])
def test_docstring_examples(module: str) -> None:
    """Every docstring example of the module gives the output shown."""
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
